#include "sim/coll/dtype.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

namespace adaptsim::coll {

std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::kF32:
      return 4;
    case DType::kF64:
      return 8;
    case DType::kF16:
      return 2;
    case DType::kBF16:
      return 2;
    case DType::kI32:
      return 4;
    case DType::kI64:
      return 8;
    case DType::kU8:
      return 1;
  }
  return 1;
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::kF32:
      return "float32";
    case DType::kF64:
      return "float64";
    case DType::kF16:
      return "float16";
    case DType::kBF16:
      return "bfloat16";
    case DType::kI32:
      return "int32";
    case DType::kI64:
      return "int64";
    case DType::kU8:
      return "uint8";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view name) {
  for (DType t : {DType::kF32, DType::kF64, DType::kF16, DType::kBF16, DType::kI32, DType::kI64,
                  DType::kU8}) {
    if (dtype_name(t) == name) return t;
  }
  return std::nullopt;
}

std::string_view reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "sum";
    case ReduceOp::kMin:
      return "min";
    case ReduceOp::kMax:
      return "max";
  }
  return "?";
}

std::optional<ReduceOp> parse_reduce_op(std::string_view name) {
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax}) {
    if (reduce_op_name(op) == name) return op;
  }
  return std::nullopt;
}

std::uint16_t float_to_half(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const std::uint32_t abs = x & 0x7FFFFFFFu;
  if (abs >= 0x7F800000u) {  // inf or nan
    return static_cast<std::uint16_t>(sign | 0x7C00u | (abs > 0x7F800000u ? 0x200u : 0));
  }
  if (abs >= 0x477FF000u) return static_cast<std::uint16_t>(sign | 0x7C00u);  // overflow -> inf
  if (abs < 0x38800000u) {
    // Subnormal half (or zero): the value in units of 2^-24, rounded half to even. Scaling by a
    // power of two is exact in float, and the result is below 1024.
    const float scaled = std::bit_cast<float>(abs) * 16777216.0f;
    return static_cast<std::uint16_t>(sign | static_cast<std::uint32_t>(std::nearbyint(scaled)));
  }
  std::uint32_t h = ((abs - 0x38000000u) >> 13);
  const std::uint32_t rem = abs & 0x1FFFu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return static_cast<std::uint16_t>(sign | h);
}

float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = (static_cast<std::uint32_t>(h) & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1Fu;
  std::uint32_t mant = h & 0x3FFu;
  std::uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      bits = sign | ((112 - e) << 23) | ((mant & 0x3FFu) << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7F800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  }
  return std::bit_cast<float>(bits);
}

std::uint16_t float_to_bfloat16(float f) {
  std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40u);
  x += 0x7FFFu + ((x >> 16) & 1u);
  return static_cast<std::uint16_t>(x >> 16);
}

float bfloat16_to_float(std::uint16_t b) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

namespace {

template <typename T>
T apply(ReduceOp op, T x, T y) {
  switch (op) {
    case ReduceOp::kSum:
      return static_cast<T>(x + y);
    case ReduceOp::kMin:
      return std::min(x, y);
    case ReduceOp::kMax:
      return std::max(x, y);
  }
  return x;
}

template <typename T, typename Op>
void reduce_loop(T* out, const T* a, const T* b, std::size_t count, Op op) {
  // Plain indexed loop: GCC vectorises it, with a run-time overlap check since `out` may alias
  // `a` or `b` (element-wise aliasing is safe here: each element is read before it is written).
  for (std::size_t i = 0; i < count; ++i)
    out[i] = op(a[i], b[i]);
}

template <typename T>
void reduce_typed(std::byte* out, const std::byte* a, const std::byte* b, std::size_t count,
                  ReduceOp op) {
  // Buffers hold arrays of T (the collective's dtype), so viewing them as T* is their real type.
  T* o = reinterpret_cast<T*>(out);
  const T* x = reinterpret_cast<const T*>(a);
  const T* y = reinterpret_cast<const T*>(b);
  switch (op) {
    case ReduceOp::kSum:
      return reduce_loop(o, x, y, count, [](T p, T q) { return static_cast<T>(p + q); });
    case ReduceOp::kMin:
      return reduce_loop(o, x, y, count, [](T p, T q) { return std::min(p, q); });
    case ReduceOp::kMax:
      return reduce_loop(o, x, y, count, [](T p, T q) { return std::max(p, q); });
  }
}

template <float (*ToF)(std::uint16_t), std::uint16_t (*FromF)(float)>
void reduce_half(std::byte* out, const std::byte* a, const std::byte* b, std::size_t count,
                 ReduceOp op) {
  for (std::size_t i = 0; i < count; ++i) {
    std::uint16_t x, y;
    std::memcpy(&x, a + 2 * i, 2);
    std::memcpy(&y, b + 2 * i, 2);
    const std::uint16_t r = FromF(apply(op, ToF(x), ToF(y)));
    std::memcpy(out + 2 * i, &r, 2);
  }
}

}  // namespace

void reduce_elements(std::byte* out, const std::byte* a, const std::byte* b, std::size_t count,
                     DType dtype, ReduceOp op) {
  switch (dtype) {
    case DType::kF32:
      return reduce_typed<float>(out, a, b, count, op);
    case DType::kF64:
      return reduce_typed<double>(out, a, b, count, op);
    case DType::kI32:
      return reduce_typed<std::int32_t>(out, a, b, count, op);
    case DType::kI64:
      return reduce_typed<std::int64_t>(out, a, b, count, op);
    case DType::kU8:
      return reduce_typed<std::uint8_t>(out, a, b, count, op);
    case DType::kF16:
      return reduce_half<half_to_float, float_to_half>(out, a, b, count, op);
    case DType::kBF16:
      return reduce_half<bfloat16_to_float, float_to_bfloat16>(out, a, b, count, op);
  }
}

}  // namespace adaptsim::coll
