# dsgd_imported_library(<Package> <Target>): the end of a find module for a library that ships no CMake package.
# After the module has set <Package>_INCLUDE_DIR, <Package>_LIBRARY and <Package>_VERSION, this reports the result
# (find_package_handle_standard_args: <Package>_FOUND, REQUIRED and version checks) and defines the imported target
# <Target> over the library and its include directory. A macro, so that <Package>_FOUND lands in the caller's scope.
include_guard(GLOBAL)
include(FindPackageHandleStandardArgs)

macro(dsgd_imported_library package target)
  find_package_handle_standard_args(${package}
    REQUIRED_VARS ${package}_LIBRARY ${package}_INCLUDE_DIR
    VERSION_VAR ${package}_VERSION)

  if(${package}_FOUND AND NOT TARGET ${target})
    add_library(${target} UNKNOWN IMPORTED)
    set_target_properties(${target} PROPERTIES
      IMPORTED_LOCATION "${${package}_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${${package}_INCLUDE_DIR}")
  endif()
  mark_as_advanced(${package}_INCLUDE_DIR ${package}_LIBRARY)
endmacro()
