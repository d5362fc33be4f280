#pragma once
// CPU reference implementations of the gradient kernels that hw/cuda also runs on GPUs:
//   - element-wise sums (the reduction step of an all-reduce),
//   - the squared L2 norm (the input of the gradient noise scale, sim/runtime/noise_scale.h),
//   - element-wise gradient variance E[g^2] - E[g]^2 and its L2 norm (KungFu's
//     MonitorGradientVarianceOptimizer).
// They are the ground truth of the CUDA kernels' tests and the live path on machines without a GPU.
//
// Precision contract (the CUDA kernels follow the same one, so results can be compared):
//   - data are float32; sums of arrays are done in float32, in input order;
//   - norms and variances accumulate in double. The square of a float is exact in double
//     (24-bit mantissa squared fits in 53 bits), so only the additions round;
//   - this file sums in index order 0, 1, ..., n-1; the GPU sums in a fixed tree order, so the two
//     agree to a relative ~n * 2^-53, not bit for bit.
// Size mismatches throw std::invalid_argument: they are the caller's bug, not user input.

#include <cstddef>
#include <span>

namespace adaptsim::hw {

// out[i] = a[i] + b[i]. All spans have the same size; `out` may alias `a` or `b`.
void sum_arrays(std::span<float> out, std::span<const float> a, std::span<const float> b);

// out[i] = ((inputs[0][i] + inputs[1][i]) + inputs[2][i]) + ..., in float32 and input order, so the
// result equals a chain of two-array sums bit for bit. At least one input; all of out's size;
// `out` may alias inputs[0] (only).
void sum_arrays(std::span<float> out, std::span<const std::span<const float>> inputs);

// sum_i x[i]^2, accumulated in double in index order. Units: the square of the data's unit.
double squared_l2_norm(std::span<const float> x);

// Element-wise variance across k workers' gradients (population variance, divisor k, as KungFu):
//   mean[i] = (1/k) sum_w g_w[i],  mean_sq[i] = (1/k) sum_w g_w[i]^2,
//   var_out[i] = float(mean_sq[i] - mean[i]^2), computed in double.
// Returns ||var_out||_2 = sqrt(sum_i var_out[i]^2) (of the stored float values, double
// accumulation). k >= 1; every gradient has var_out's size.
double gradient_variance(std::span<float> var_out,
                         std::span<const std::span<const float>> worker_grads);

// The same from already-reduced moments (KungFu all-reduces g^2 and g, then divides by k):
//   var_out[i] = float(double(mean_sq[i]) - double(mean[i])^2).
// Computed in double, the product is exact, so the GPU's fused multiply-add gives the same bits.
// No clamping: rounding in mean_sq can make an element slightly negative, as in KungFu.
// Returns ||var_out||_2.
double gradient_variance_from_moments(std::span<float> var_out, std::span<const float> mean_sq,
                                      std::span<const float> mean);

// The same from the reduced sums themselves, divided by the k workers in the same pass:
//   var_out[i] = float(double(float(sum_sq[i] / k)) - double(float(sum[i] / k))^2),
// bit for bit gradient_variance_from_moments of the divided moments, without their buffers (the
// live variance monitor: one pass over its two all-reduced buffers). var_out may be sum_sq.
double gradient_variance_from_sums(std::span<float> var_out, std::span<const float> sum_sq,
                                   std::span<const float> sum, float k);

}  // namespace adaptsim::hw
