# All third-party lookups in one place. Every package comes from Debian (scripts/setup.sh),
# except CUDA and NCCL, which are optional and come from /usr/local/cuda where present.
find_package(Threads REQUIRED)
find_package(Boost 1.74 REQUIRED COMPONENTS graph)
find_package(Eigen3 3.3 REQUIRED NO_MODULE)
find_package(ZLIB REQUIRED)             # the IDX reader (sim/learn) reads gzip-compressed data
find_package(yaml-cpp REQUIRED)          # 0.7: the target is plain `yaml-cpp`
find_package(CLI11 REQUIRED)
find_package(fmt REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(OpenSSL 3 REQUIRED COMPONENTS Crypto)  # libcrypto: the live runtime's frame authentication
find_package(MPI COMPONENTS CXX)         # optional: only the mpirun rendezvous needs it
if(ADAPTSIM_BUILD_TESTS)
  find_package(doctest REQUIRED)
endif()
if(ADAPTSIM_BUILD_BENCHMARKS)
  find_package(benchmark REQUIRED)
endif()

set(ADAPTSIM_HAVE_CUDA OFF)
set(ADAPTSIM_HAVE_CUDA_STATUS "off (ADAPTSIM_CUDA=OFF)")
if(NOT ADAPTSIM_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  find_package(CUDAToolkit QUIET)
  find_package(NCCL QUIET)
  if(CMAKE_CUDA_COMPILER AND CUDAToolkit_FOUND AND NCCL_FOUND)
    # No GPU on the build machine, so never "native": Ampere (A100) and Hopper (H100/H200).
    # CUDA 13 no longer builds for Volta (sm_70); older toolkits may add 70 on the command line.
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 80 90)
    endif()
    enable_language(CUDA)
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    set(ADAPTSIM_HAVE_CUDA ON)
    set(ADAPTSIM_HAVE_CUDA_STATUS "on (CUDA ${CUDAToolkit_VERSION}, NCCL ${NCCL_VERSION}, archs ${CMAKE_CUDA_ARCHITECTURES})")
  elseif(ADAPTSIM_CUDA STREQUAL "ON")
    message(FATAL_ERROR "ADAPTSIM_CUDA=ON but nvcc, the CUDA toolkit or NCCL was not found")
  else()
    set(ADAPTSIM_HAVE_CUDA_STATUS "off (nvcc, CUDA toolkit or NCCL not found)")
  endif()
endif()
