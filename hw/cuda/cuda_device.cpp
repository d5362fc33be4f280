#include "hw/cuda/cuda_device.h"

#include <stdexcept>
#include <string>
#include <utility>

#include "hw/cuda/cuda_check.h"

namespace adaptsim::hw {

CudaAvailability probe_cuda() {
  CudaAvailability result;
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    // cudaErrorInsufficientDriver (no or old driver), cudaErrorNoDevice, ...: not sticky, clear it.
    cudaGetLastError();
    result.reason = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(status) + " (" +
                    cudaGetErrorName(status) + ")";
    return result;
  }
  result.device_count = count;
  if (count == 0) result.reason = "cudaGetDeviceCount: no CUDA device";
  return result;
}

int cuda_device_count() {
  return probe_cuda().device_count;
}

std::string cuda_driver_version() {
  // cudaDriverGetVersion gives 1000 x major + 10 x minor (13000 = 13.0), 0 without a driver.
  int code = 0;
  if (cudaDriverGetVersion(&code) != cudaSuccess || code <= 0) {
    cudaGetLastError();
    return "";
  }
  return std::to_string(code / 1000) + "." + std::to_string(code % 1000 / 10);
}

CudaDeviceInfo cuda_device_info(int device) {
  cudaDeviceProp prop{};
  ADAPTSIM_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  CudaDeviceInfo info;
  info.index = device;
  info.name = prop.name;
  info.compute_capability_major = prop.major;
  info.compute_capability_minor = prop.minor;
  info.sm_count = prop.multiProcessorCount;
  info.memory_bus_width_bits = prop.memoryBusWidth;
  info.total_memory_bytes = prop.totalGlobalMem;
  // Clock rates left cudaDeviceProp in CUDA 13; the attributes exist in every version.
  ADAPTSIM_CUDA_CHECK(cudaDeviceGetAttribute(&info.sm_clock_kHz, cudaDevAttrClockRate, device));
  ADAPTSIM_CUDA_CHECK(
      cudaDeviceGetAttribute(&info.memory_clock_kHz, cudaDevAttrMemoryClockRate, device));
  info.peak_memory_bandwidth_Bps =
      2.0 * info.memory_clock_kHz * 1e3 * info.memory_bus_width_bits / 8;
  return info;
}

CudaDeviceGuard::CudaDeviceGuard(int device) {
  ADAPTSIM_CUDA_CHECK(cudaGetDevice(&previous_));
  ADAPTSIM_CUDA_CHECK(cudaSetDevice(device));
}

CudaDeviceGuard::~CudaDeviceGuard() {
  cudaSetDevice(previous_);
}

CudaStream::CudaStream() {
  ADAPTSIM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
}

CudaStream::~CudaStream() {
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

CudaStream::CudaStream(CudaStream&& other) noexcept
    : stream_(std::exchange(other.stream_, nullptr)) {}

CudaStream& CudaStream::operator=(CudaStream&& other) noexcept {
  if (this != &other) {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
    stream_ = std::exchange(other.stream_, nullptr);
  }
  return *this;
}

void CudaStream::synchronize() const {
  ADAPTSIM_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

DeviceAllocation::DeviceAllocation(std::size_t bytes) : bytes_(bytes) {
  // cudaMalloc(0) returns a null pointer; keep it so, as an empty allocation.
  if (bytes > 0) ADAPTSIM_CUDA_CHECK(cudaMalloc(&data_, bytes));
}

DeviceAllocation::~DeviceAllocation() {
  if (data_ != nullptr) cudaFree(data_);
}

DeviceAllocation::DeviceAllocation(DeviceAllocation&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

DeviceAllocation& DeviceAllocation::operator=(DeviceAllocation&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) cudaFree(data_);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void DeviceAllocation::copy_from_host(const void* src, std::size_t bytes) {
  if (bytes > bytes_) throw_too_large(bytes, bytes_);
  if (bytes > 0) ADAPTSIM_CUDA_CHECK(cudaMemcpy(data_, src, bytes, cudaMemcpyHostToDevice));
}

void DeviceAllocation::copy_to_host(void* dst, std::size_t bytes) const {
  if (bytes > bytes_) throw_too_large(bytes, bytes_);
  if (bytes > 0) ADAPTSIM_CUDA_CHECK(cudaMemcpy(dst, data_, bytes, cudaMemcpyDeviceToHost));
}

void throw_too_large(std::size_t count, std::size_t capacity) {
  throw std::invalid_argument("device copy of " + std::to_string(count) +
                              " exceeds the buffer's capacity of " + std::to_string(capacity));
}

}  // namespace adaptsim::hw
