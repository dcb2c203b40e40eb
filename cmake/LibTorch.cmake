# LibTorch's CPU libraries from the torch wheel, as one target: tfm_libtorch.
#
# Why not find_package(Torch): TorchConfig links libtorch_cuda into every program, so a CPU run maps
# cuBLAS, cuDNN, NCCL and the rest (488 MB resident and 1.4 s for `tfm --version`), and it needs the
# CUDA toolkit at configure time. tfm links libc10 + libtorch_cpu only and opens libtorch_cuda at run
# time when a CUDA device is asked for (runtime/cuda_library.cpp), so one build serves both.
#
# Where: -DTFM_TORCH_ROOT=<site-packages/torch>, else the CMake prefix that scripts/bootstrap writes
# to $TFM_HOME/torch-prefix (default ~/.cache/tfm).
set(TFM_TORCH_ROOT "" CACHE PATH "The torch package directory (site-packages/torch); default: from scripts/bootstrap")
if(NOT TFM_TORCH_ROOT)
  if(DEFINED ENV{TFM_HOME})
    set(_tfm_home "$ENV{TFM_HOME}")
  else()
    set(_tfm_home "$ENV{HOME}/.cache/tfm")
  endif()
  if(NOT EXISTS "${_tfm_home}/torch-prefix")
    message(FATAL_ERROR "LibTorch not found: run scripts/bootstrap (writes ${_tfm_home}/torch-prefix) "
                        "or pass -DTFM_TORCH_ROOT=<site-packages/torch>")
  endif()
  file(READ "${_tfm_home}/torch-prefix" _torch_cmake_prefix)
  string(STRIP "${_torch_cmake_prefix}" _torch_cmake_prefix)
  get_filename_component(_torch_root "${_torch_cmake_prefix}/../.." ABSOLUTE)
  set(TFM_TORCH_ROOT "${_torch_root}" CACHE PATH "The torch package directory (site-packages/torch)" FORCE)
endif()

foreach(required include/torch/csrc/api/include/torch/torch.h lib/libtorch_cpu.so lib/libc10.so)
  if(NOT EXISTS "${TFM_TORCH_ROOT}/${required}")
    message(FATAL_ERROR "LibTorch at ${TFM_TORCH_ROOT} lacks ${required}: run scripts/bootstrap")
  endif()
endforeach()
message(STATUS "LibTorch CPU libraries at ${TFM_TORCH_ROOT}")

add_library(tfm_libtorch INTERFACE)
target_include_directories(tfm_libtorch SYSTEM INTERFACE
  "${TFM_TORCH_ROOT}/include" "${TFM_TORCH_ROOT}/include/torch/csrc/api/include")
# What libtorch_cpu was built with (its exported target says so); its headers read these macros.
target_compile_definitions(tfm_libtorch INTERFACE USE_C10D_GLOO USE_DISTRIBUTED USE_RPC USE_TENSORPIPE)
# LibTorch 2.15's headers need C++20; our own code stays C++17.
target_compile_features(tfm_libtorch INTERFACE cxx_std_20)
target_link_libraries(tfm_libtorch INTERFACE "${TFM_TORCH_ROOT}/lib/libtorch_cpu.so" "${TFM_TORCH_ROOT}/lib/libc10.so")
# libtorch_cpu needs libcudart/libcupti (it was built with CUDA); the wheel ships them under
# site-packages/nvidia/*/lib, found through its $ORIGIN rpath at run time; the linker is told too.
file(GLOB _torch_cuda_lib_dirs LIST_DIRECTORIES true "${TFM_TORCH_ROOT}/../nvidia/*/lib")
foreach(dir ${_torch_cuda_lib_dirs})
  target_link_options(tfm_libtorch INTERFACE "-Wl,-rpath-link,${dir}")
endforeach()
# ATen's at::parallel_for is inline: its `#pragma omp parallel` is compiled into our code, and
# without -fopenmp it silently runs on one thread. Our kernels (dropout masks, beam top-k, step
# attention) are compiled with OpenMP and call the libgomp that libtorch_cpu uses (the wheel's,
# one runtime and one thread pool in the process). Clang would need its own libomp: there the
# loops stay serial, with the same results.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND EXISTS "${TFM_TORCH_ROOT}/lib/libgomp.so.1")
  target_compile_options(tfm_libtorch INTERFACE -fopenmp)
  target_link_libraries(tfm_libtorch INTERFACE "${TFM_TORCH_ROOT}/lib/libgomp.so.1")
endif()
