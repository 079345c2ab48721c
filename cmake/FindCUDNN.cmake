# FindCUDNN: NVIDIA's cuDNN ships no CMake package, so find its header and library beside the CUDA toolkit
# (/usr/local/cuda: include/cudnn.h, lib64/libcudnn.so) or under CUDNN_ROOT, then the system paths (Debian's and
# NVIDIA's packages put them in /usr/include[/x86_64-linux-gnu] and /usr/lib/x86_64-linux-gnu).
#
# Defines the imported target CUDNN::cudnn and CUDNN_FOUND / CUDNN_VERSION (from cudnn_version.h).
# libcudnn.so is cuDNN 9's front library: it loads libcudnn_ops, libcudnn_cnn, ... itself when first used, so those
# must be on the loader's path at run time (the CUDA packages' ld.so.conf entry, or LD_LIBRARY_PATH).
find_path(CUDNN_INCLUDE_DIR NAMES cudnn.h
  HINTS ${CUDNN_ROOT} $ENV{CUDNN_ROOT} ${CUDAToolkit_INCLUDE_DIRS} ${CUDAToolkit_LIBRARY_ROOT}
  PATH_SUFFIXES include include/x86_64-linux-gnu)
find_library(CUDNN_LIBRARY NAMES cudnn
  HINTS ${CUDNN_ROOT} $ENV{CUDNN_ROOT} ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}
  PATH_SUFFIXES lib64 lib lib/x86_64-linux-gnu)

set(CUDNN_VERSION "")
foreach(_cudnn_header cudnn_version.h cudnn.h)
  if(CUDNN_INCLUDE_DIR AND NOT CUDNN_VERSION AND EXISTS "${CUDNN_INCLUDE_DIR}/${_cudnn_header}")
    file(STRINGS "${CUDNN_INCLUDE_DIR}/${_cudnn_header}" _cudnn_lines
         REGEX "^#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) +[0-9]+")
    if(_cudnn_lines)
      string(REGEX REPLACE ".*CUDNN_MAJOR +([0-9]+).*" "\\1" _cudnn_major "${_cudnn_lines}")
      string(REGEX REPLACE ".*CUDNN_MINOR +([0-9]+).*" "\\1" _cudnn_minor "${_cudnn_lines}")
      string(REGEX REPLACE ".*CUDNN_PATCHLEVEL +([0-9]+).*" "\\1" _cudnn_patch "${_cudnn_lines}")
      set(CUDNN_VERSION "${_cudnn_major}.${_cudnn_minor}.${_cudnn_patch}")
    endif()
  endif()
endforeach()

include(${CMAKE_CURRENT_LIST_DIR}/DsgdImportedLibrary.cmake)
dsgd_imported_library(CUDNN CUDNN::cudnn)
