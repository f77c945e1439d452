# Every dependency comes from Debian's packages (scripts/setup.sh installs them).
find_package(Threads REQUIRED)
find_package(Protobuf REQUIRED)
find_package(ONNX REQUIRED CONFIG)
set(BLA_VENDOR OpenBLAS)
find_package(BLAS REQUIRED)
# oneDNN (libdnnl-dev): JIT convolution kernels for the CPU backend; it runs on OpenMP threads.
find_package(dnnl CONFIG REQUIRED)
find_package(OpenMP REQUIRED COMPONENTS CXX)
find_package(CLI11 CONFIG REQUIRED)
find_package(nlohmann_json CONFIG REQUIRED)
find_package(FlatBuffers CONFIG REQUIRED)
# libpng, libjpeg-turbo: INT8 calibration from a folder of images (engine_core/src/io/image_file.cpp).
find_package(PNG REQUIRED)
find_package(JPEG REQUIRED)

# OpenBLAS exposes cblas.h from a variant-specific folder; find the header that matches.
find_path(KILN_CBLAS_INCLUDE_DIR cblas.h
          PATHS /usr/include/x86_64-linux-gnu /usr/include
          PATH_SUFFIXES openblas-pthread openblas)
if(NOT KILN_CBLAS_INCLUDE_DIR)
  message(FATAL_ERROR "cblas.h not found: run scripts/setup.sh (installs libopenblas-dev)")
endif()

set(KILN_HAVE_QT OFF)
if(KILN_WITH_STUDIO)
  find_package(Qt6 6.4 QUIET COMPONENTS Widgets Svg Charts Test Concurrent)
  find_package(PkgConfig QUIET)
  if(PkgConfig_FOUND)
    pkg_check_modules(GRAPHVIZ QUIET IMPORTED_TARGET libgvc libcgraph)
  endif()
  if(Qt6_FOUND AND GRAPHVIZ_FOUND)
    set(KILN_HAVE_QT ON)
  else()
    message(STATUS "Kiln Studio is off: Qt 6 (Widgets, Svg, Charts) or Graphviz not found")
  endif()
endif()

set(KILN_HAVE_CUDA OFF)
if(KILN_WITH_CUDA)
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(KILN_HAVE_CUDA ON)
    # 90: sm_90 machine code plus compute_90 PTX (the H200 while developing); releases add
    # 80;86;89 (-DKILN_CUDA_ARCHITECTURES="80;86;89;90").
    set(KILN_CUDA_ARCHITECTURES "90" CACHE STRING "CUDA architectures the kernels are built for")
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES ${KILN_CUDA_ARCHITECTURES})
    endif()
    set(CMAKE_CUDA_STANDARD 17)  # CMake 3.25 knows no CUDA 20 flags for nvcc
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
  else()
    message(STATUS "CUDA backend is off: no CUDA toolkit found")
  endif()
endif()

# CPU kernels are built for AVX2/FMA machines (every x86-64 server of the last decade); override
# with -DKILN_CPU_ARCH_FLAGS=... for older ones.
set(KILN_CPU_ARCH_FLAGS "-march=x86-64-v3" CACHE STRING "Compiler flags selecting the CPU kernels' ISA")
separate_arguments(KILN_CPU_ARCH_FLAGS)

# The conformance test fails below this pass rate of the non-excluded ONNX node tests.
set(KILN_CONFORMANCE_TARGET "0.95" CACHE STRING "Minimum ONNX node-test pass rate")
