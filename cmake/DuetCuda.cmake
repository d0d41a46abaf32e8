# Decides whether the CUDA backend is built (DUET_CUDA = AUTO | ON | OFF) and sets DUET_HAS_CUDA.
# AUTO builds it whenever nvcc and cuBLAS are found, so CI compiles every CUDA source even
# without a GPU; ON stops the configure, saying what is missing.
#
# cuDNN is optional (DUET_CUDNN = AUTO | ON | OFF, default AUTO): DUET_HAS_CUDNN (and the imported
# target duet::cudnn) is set when cudnn.h and libcudnn are found beside the toolkit, under
# Debian's paths or under CUDNN_ROOT. Without it convolution runs through im2col + cuBLAS and
# batch norm on duet's own kernels (kernels/cuda/cudnn_unavailable.cpp); ON stops the configure
# when cuDNN is missing, OFF builds without it even where it is installed.
#
# With CUDA, NCCL is optional: DUET_HAS_NCCL (and the imported target duet::nccl) is set when
# nccl.h and libnccl are found beside the toolkit, under Debian's paths or under NCCL_ROOT.
# Without it, make_nccl_group throws "built without NCCL" (parallel/comm/nccl_unavailable.cpp).
include(CheckLanguage)

set(DUET_CUDNN AUTO CACHE STRING "Use cuDNN in the CUDA backend: AUTO (when found), ON or OFF")
set_property(CACHE DUET_CUDNN PROPERTY STRINGS AUTO ON OFF)

set(DUET_HAS_CUDA OFF)
set(DUET_HAS_CUDNN OFF)
set(DUET_HAS_NCCL OFF)

# Stops the configure under DUET_CUDA=ON; under AUTO says why CUDA is left out.
macro(duet_cuda_unavailable reason)
  if(DUET_CUDA STREQUAL "ON")
    message(FATAL_ERROR "DUET_CUDA=ON but ${reason}")
  endif()
  message(STATUS "duet: building without CUDA: ${reason}")
endmacro()

# cuDNN and NCCL ship apart from the toolkit: finds HEADER and libLIBRARY beside it
# (/usr/local/cuda), under Debian's paths, or wherever the CMake or environment variable
# ROOT_VAR points, into the cache variables DUET_<NAME>_INCLUDE_DIR and DUET_<NAME>_LIBRARY.
macro(duet_find_beside_toolkit name header library root_var)
  find_path(DUET_${name}_INCLUDE_DIR ${header}
            HINTS ${${root_var}} $ENV{${root_var}} ${CUDAToolkit_INCLUDE_DIRS}
            PATH_SUFFIXES include)
  find_library(DUET_${name}_LIBRARY ${library}
               HINTS ${${root_var}} $ENV{${root_var}} ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}
               PATH_SUFFIXES lib lib64 lib/x86_64-linux-gnu)
endmacro()

# The imported target duet::<target> for what duet_find_beside_toolkit(NAME ...) found.
function(duet_import_found target name)
  add_library(duet::${target} UNKNOWN IMPORTED)
  set_target_properties(duet::${target} PROPERTIES IMPORTED_LOCATION ${DUET_${name}_LIBRARY}
                                                   INTERFACE_INCLUDE_DIRECTORIES ${DUET_${name}_INCLUDE_DIR})
endfunction()

if(NOT DUET_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(NOT CMAKE_CUDA_COMPILER)
    duet_cuda_unavailable("no CUDA compiler (nvcc) was found")
  else()
    find_package(CUDAToolkit)
    if(NOT DUET_CUDNN STREQUAL "OFF")
      duet_find_beside_toolkit(CUDNN cudnn.h cudnn CUDNN_ROOT)
    endif()
    if(NOT CUDAToolkit_FOUND)
      duet_cuda_unavailable("the CUDA toolkit (FindCUDAToolkit) was not found")
    elseif(NOT TARGET CUDA::cublas)
      duet_cuda_unavailable("cuBLAS (CUDA::cublas) was not found in the CUDA toolkit")
    elseif(DUET_CUDNN STREQUAL "ON" AND (NOT DUET_CUDNN_INCLUDE_DIR OR NOT DUET_CUDNN_LIBRARY))
      message(FATAL_ERROR "DUET_CUDNN=ON but cuDNN was not found (cudnn.h: ${DUET_CUDNN_INCLUDE_DIR}, libcudnn: \
${DUET_CUDNN_LIBRARY}); set CUDNN_ROOT to its install prefix, or DUET_CUDNN=AUTO to build without it")
    else()
      # Real sm_90 code for H100/H200 by default; -DCMAKE_CUDA_ARCHITECTURES=80 etc. overrides.
      if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
        set(CMAKE_CUDA_ARCHITECTURES 90)
      endif()
      enable_language(CUDA)
      set(CMAKE_CUDA_STANDARD 20)
      set(CMAKE_CUDA_STANDARD_REQUIRED ON)
      set(DUET_HAS_CUDA ON)

      if(NOT DUET_CUDNN STREQUAL "OFF" AND DUET_CUDNN_INCLUDE_DIR AND DUET_CUDNN_LIBRARY)
        set(DUET_HAS_CUDNN ON)
        duet_import_found(cudnn CUDNN)
      endif()

      duet_find_beside_toolkit(NCCL nccl.h nccl NCCL_ROOT)
      if(DUET_NCCL_INCLUDE_DIR AND DUET_NCCL_LIBRARY)
        set(DUET_HAS_NCCL ON)
        duet_import_found(nccl NCCL)
      endif()
    endif()
  endif()
endif()
message(STATUS "duet: CUDA backend ${DUET_HAS_CUDA}")
if(DUET_HAS_CUDA)
  if(DUET_HAS_CUDNN)
    message(STATUS "duet: cuDNN ON (cudnn.h: ${DUET_CUDNN_INCLUDE_DIR}, libcudnn: ${DUET_CUDNN_LIBRARY})")
  else()
    message(STATUS "duet: cuDNN OFF (DUET_CUDNN=${DUET_CUDNN}): convolution through im2col + cuBLAS, batch norm \
on duet's kernels")
  endif()
  message(STATUS "duet: NCCL ${DUET_HAS_NCCL} (nccl.h: ${DUET_NCCL_INCLUDE_DIR}, libnccl: ${DUET_NCCL_LIBRARY})")
endif()
