#pragma once
// DeviceSpan<T>: a pointer + element count into GPU memory. The type, not a naming convention,
// says which side of the bus the data are on, so that a host pointer cannot be passed where a
// kernel expects device memory (the kernels' host-memory wrappers take std::span instead).

#include <cstddef>
#include <type_traits>

namespace adaptsim::hw {

template <class T>
class DeviceSpan {
 public:
  DeviceSpan() = default;
  DeviceSpan(T* data, std::size_t size) : data_(data), size_(size) {}
  // DeviceSpan<float> -> DeviceSpan<const float>, as std::span.
  template <class U>
  requires std::is_convertible_v<U (*)[], T (*)[]> DeviceSpan(DeviceSpan<U> other)
      : data_(other.data()), size_(other.size()) {}

  T* data() const { return data_; }
  std::size_t size() const { return size_; }
  std::size_t size_bytes() const { return size_ * sizeof(T); }
  bool empty() const { return size_ == 0; }
  // Elements [offset, offset + count); the caller keeps it in range.
  DeviceSpan subspan(std::size_t offset, std::size_t count) const {
    return DeviceSpan(data_ + offset, count);
  }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace adaptsim::hw
