#include "sim/coll/dtype.h"

#include <doctest/doctest.h>

#include <cstring>
#include <vector>

using namespace adaptsim::coll;

TEST_CASE("half-precision conversions hit the exact IEEE encodings") {
  CHECK(float_to_half(1.0f) == 0x3C00);
  CHECK(float_to_half(-2.0f) == 0xC000);
  CHECK(float_to_half(65504.0f) == 0x7BFF);          // largest finite half
  CHECK(float_to_half(1e6f) == 0x7C00);              // overflow -> inf
  CHECK(float_to_half(6.103515625e-05f) == 0x0400);  // 2^-14, smallest normal
  CHECK(float_to_half(5.9604645e-08f) == 0x0001);    // 2^-24, smallest subnormal
  CHECK(half_to_float(0x3555) == doctest::Approx(0.333251953125));
  for (std::uint16_t h : {0x0001, 0x03FF, 0x0400, 0x3C00, 0x7BFF, 0x8001, 0xBC00}) {
    CHECK(float_to_half(half_to_float(h)) == h);
  }
  CHECK(float_to_bfloat16(1.0f) == 0x3F80);
  CHECK(bfloat16_to_float(0x4049) == doctest::Approx(3.140625));
}

TEST_CASE("reduce_elements sums, mins and maxes, in place too") {
  std::vector<float> a = {1, 5, -3}, b = {2, 4, 7};
  std::vector<float> out(3);
  auto bytes = [](auto& v) { return reinterpret_cast<std::byte*>(v.data()); };
  reduce_elements(bytes(out), bytes(a), bytes(b), 3, DType::kF32, ReduceOp::kSum);
  CHECK(out == std::vector<float>{3, 9, 4});
  reduce_elements(bytes(a), bytes(a), bytes(b), 3, DType::kF32, ReduceOp::kMax);
  CHECK(a == std::vector<float>{2, 5, 7});
  std::vector<std::int32_t> x = {3, -1}, y = {1, 2};
  reduce_elements(bytes(x), bytes(x), bytes(y), 2, DType::kI32, ReduceOp::kMin);
  CHECK(x == std::vector<std::int32_t>{1, -1});
}
