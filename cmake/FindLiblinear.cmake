# FindLiblinear: liblinear (Fan et al., the optimum of seed 003's logistic-regression study, core/linear/optimum.hpp)
# ships no CMake package or pkg-config file on Debian (liblinear-dev: /usr/include/linear.h,
# /usr/lib/x86_64-linux-gnu/liblinear.so), so find its header and library, under LIBLINEAR_ROOT first.
#
# Defines the imported target Liblinear::Liblinear and Liblinear_FOUND / Liblinear_VERSION (LIBLINEAR_VERSION 230
# in linear.h reads as 2.30; Debian's package calls it 2.3.0).
find_path(Liblinear_INCLUDE_DIR NAMES linear.h
  HINTS ${LIBLINEAR_ROOT} $ENV{LIBLINEAR_ROOT}
  PATH_SUFFIXES include include/liblinear)
# The shared library: the static liblinear.a would also need BLAS on the link line.
find_library(Liblinear_LIBRARY NAMES linear
  HINTS ${LIBLINEAR_ROOT} $ENV{LIBLINEAR_ROOT}
  PATH_SUFFIXES lib lib64 lib/x86_64-linux-gnu)

set(Liblinear_VERSION "")
if(Liblinear_INCLUDE_DIR AND EXISTS "${Liblinear_INCLUDE_DIR}/linear.h")
  file(STRINGS "${Liblinear_INCLUDE_DIR}/linear.h" _liblinear_line REGEX "^#define LIBLINEAR_VERSION +[0-9]+")
  if(_liblinear_line)
    string(REGEX REPLACE ".*LIBLINEAR_VERSION +([0-9]+).*" "\\1" _liblinear_number "${_liblinear_line}")
    math(EXPR _liblinear_major "${_liblinear_number} / 100")
    math(EXPR _liblinear_minor "${_liblinear_number} % 100")
    set(Liblinear_VERSION "${_liblinear_major}.${_liblinear_minor}")
  endif()
endif()

include(${CMAKE_CURRENT_LIST_DIR}/DsgdImportedLibrary.cmake)
dsgd_imported_library(Liblinear Liblinear::Liblinear)
