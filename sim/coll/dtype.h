#pragma once
// Element types and reduction operators of collectives, and the CPU reduction kernels that both
// the simulator (when it carries real data, in tests) and the live runtime use.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace adaptsim::coll {

enum class DType { kF32, kF64, kF16, kBF16, kI32, kI64, kU8 };
enum class ReduceOp { kSum, kMin, kMax };

std::size_t dtype_size(DType t);
std::string_view dtype_name(DType t);  // "float32", ...
std::optional<DType> parse_dtype(std::string_view name);
std::string_view reduce_op_name(ReduceOp op);  // "sum", "min", "max"
std::optional<ReduceOp> parse_reduce_op(std::string_view name);

// out[i] = op(a[i], b[i]) for i < count. `out` may alias `a` or `b`. float16/bfloat16 are
// combined in float32 and rounded to nearest-even on store.
void reduce_elements(std::byte* out, const std::byte* a, const std::byte* b, std::size_t count,
                     DType dtype, ReduceOp op);

// IEEE half and bfloat16 conversions (round to nearest even).
std::uint16_t float_to_half(float f);
float half_to_float(std::uint16_t h);
std::uint16_t float_to_bfloat16(float f);
float bfloat16_to_float(std::uint16_t b);

}  // namespace adaptsim::coll
