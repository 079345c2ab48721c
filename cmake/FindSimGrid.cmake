# FindSimGrid: Debian's libsimgrid-dev ships only simgrid.pc (no CMake package), so wrap pkg-config.
#
# Defines the imported target SimGrid::SimGrid and SimGrid_FOUND / SimGrid_VERSION.
# Note: libsimgrid.so also defines the MPI_* symbols (SMPI); never link it into an executable that links OpenMPI.
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(PC_SIMGRID QUIET simgrid)
endif()

find_path(SimGrid_INCLUDE_DIR NAMES simgrid/s4u.hpp HINTS ${PC_SIMGRID_INCLUDE_DIRS})
find_library(SimGrid_LIBRARY NAMES simgrid HINTS ${PC_SIMGRID_LIBRARY_DIRS})
set(SimGrid_VERSION "${PC_SIMGRID_VERSION}")
if(NOT SimGrid_VERSION AND SimGrid_INCLUDE_DIR AND EXISTS "${SimGrid_INCLUDE_DIR}/simgrid/version.h")
  file(STRINGS "${SimGrid_INCLUDE_DIR}/simgrid/version.h" _sg_lines REGEX "#define SIMGRID_VERSION_(MAJOR|MINOR)")
  string(REGEX REPLACE ".*MAJOR ([0-9]+).*" "\\1" _sg_major "${_sg_lines}")
  string(REGEX REPLACE ".*MINOR ([0-9]+).*" "\\1" _sg_minor "${_sg_lines}")
  set(SimGrid_VERSION "${_sg_major}.${_sg_minor}")
endif()

include(${CMAKE_CURRENT_LIST_DIR}/DsgdImportedLibrary.cmake)
dsgd_imported_library(SimGrid SimGrid::SimGrid)
