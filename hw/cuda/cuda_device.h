#pragma once
// GPUs at run time: how many there are (0, not a crash, on a machine without driver or GPU),
// what they are, and RAII owners for the device resources the kernels and probes use (memory,
// streams, the current-device setting). Everything here acts on the calling thread's current
// device unless a device index is given.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <span>
#include <string>

#include "hw/cuda/device_span.h"

namespace adaptsim::hw {

struct CudaAvailability {
  int device_count = 0;
  std::string reason;  // why device_count is 0 ("cudaGetDeviceCount: CUDA driver version is
                       // insufficient for CUDA runtime version"); empty when devices exist
};

// Never throws: a missing driver, an old driver or no GPU all give device_count 0 with a reason.
CudaAvailability probe_cuda();
int cuda_device_count();  // probe_cuda().device_count
// The installed driver's CUDA version ("13.0"); empty when no driver is installed. Never throws.
std::string cuda_driver_version();

struct CudaDeviceInfo {
  int index = 0;
  std::string name;                  // "NVIDIA H100 80GB HBM3"
  int compute_capability_major = 0;  // 8 = Ampere, 9 = Hopper
  int compute_capability_minor = 0;
  int sm_count = 0;
  int sm_clock_kHz = 0;  // peak SM clock (cudaDevAttrClockRate); clock64() counts at the actual one
  int memory_clock_kHz = 0;
  int memory_bus_width_bits = 0;
  std::size_t total_memory_bytes = 0;
  // 2 (double data rate) x memory clock x bus width: H100 SXM 2 x 2.619 GHz x 640 B = 3.35 TB/s.
  double peak_memory_bandwidth_Bps = 0;
};

CudaDeviceInfo cuda_device_info(int device);

// Makes `device` current for the guard's lifetime, then restores the previous one.
class CudaDeviceGuard {
 public:
  explicit CudaDeviceGuard(int device);
  ~CudaDeviceGuard();
  CudaDeviceGuard(const CudaDeviceGuard&) = delete;
  CudaDeviceGuard& operator=(const CudaDeviceGuard&) = delete;

 private:
  int previous_ = 0;
};

// A non-blocking stream on the current device (does not synchronise with the legacy default
// stream, as NCCL and nccl-tests use).
class CudaStream {
 public:
  CudaStream();
  ~CudaStream();
  CudaStream(CudaStream&& other) noexcept;
  CudaStream& operator=(CudaStream&& other) noexcept;
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;

  cudaStream_t get() const { return stream_; }
  void synchronize() const;

 private:
  cudaStream_t stream_ = nullptr;
};

// Untyped device memory from cudaMalloc on the current device; freed on destruction.
class DeviceAllocation {
 public:
  DeviceAllocation() = default;
  explicit DeviceAllocation(std::size_t bytes);
  ~DeviceAllocation();
  DeviceAllocation(DeviceAllocation&& other) noexcept;
  DeviceAllocation& operator=(DeviceAllocation&& other) noexcept;
  DeviceAllocation(const DeviceAllocation&) = delete;
  DeviceAllocation& operator=(const DeviceAllocation&) = delete;

  void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }
  // Synchronous copies; `bytes` must fit.
  void copy_from_host(const void* src, std::size_t bytes);
  void copy_to_host(void* dst, std::size_t bytes) const;

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// Throws std::invalid_argument: a copy of `count` elements (or bytes) into a buffer of `capacity`.
[[noreturn]] void throw_too_large(std::size_t count, std::size_t capacity);

// `size` elements of T in device memory.
template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t size) : memory_(size * sizeof(T)), size_(size) {}

  T* data() const { return static_cast<T*>(memory_.data()); }
  std::size_t size() const { return size_; }
  DeviceSpan<T> span() const { return DeviceSpan<T>(data(), size_); }

  void copy_from_host(std::span<const T> src) {
    memory_.copy_from_host(src.data(), checked_bytes(src.size()));
  }
  void copy_to_host(std::span<T> dst) const {
    memory_.copy_to_host(dst.data(), checked_bytes(dst.size()));
  }

 private:
  std::size_t checked_bytes(std::size_t count) const {
    if (count > size_) throw_too_large(count, size_);
    return count * sizeof(T);
  }

  DeviceAllocation memory_;
  std::size_t size_ = 0;
};

}  // namespace adaptsim::hw
