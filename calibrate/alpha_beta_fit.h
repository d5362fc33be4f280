#pragma once
// The alpha-beta (Hockney) fit of a size sweep: t(m) = a + b m, a the latency of an empty message
// and 1/b the bandwidth at large sizes (FACTS 2.4, 2.5).
//
// Sizes span many decades (8 B .. 1 GiB), so an unweighted least-squares line is set by the
// largest sizes alone: a 1% error on a 1 s point is 10 ms, a thousand times a 10 us latency, and
// the intercept comes out as noise. The calibration fit therefore minimises the relative error,
// sum_i ((t_i - a - b m_i) / t_i)^2, i.e. weights w_i = 1/t_i^2 (FACTS 2.5 step 3), solved with
// Eigen's QR on the weighted design matrix. a and b are constrained to be >= 0: when the free
// solution has a < 0 the line is refitted through the origin, when b < 0 as a constant
// (non-negative least squares with two unknowns).

#include <span>
#include <stdexcept>

namespace adaptsim::calibrate {

struct SizeTime {
  double size_bytes = 0;
  double time_us = 0;  // > 0
};

enum class FitWeighting {
  kRelative,  // w = 1/t^2: every point counts by its relative error (the calibration fit)
  kUniform,   // w = 1: ordinary least squares (for comparison only)
};

struct AlphaBetaFit {
  double latency_us = 0;   // a >= 0
  double us_per_byte = 0;  // b >= 0
  int points = 0;
  // sqrt(mean(((t - fit) / t)^2)): the RMS relative error, whatever the weighting.
  double residual_rms = 0;
  // 1 - sum w (t - fit)^2 / sum w (t - tbar_w)^2 with the fit's own weights (tbar_w the weighted
  // mean): the share of the weighted variance the line explains; 1 for a perfect line.
  double r2 = 0;
  bool latency_clamped = false;  // the free fit had a < 0
  bool slope_clamped = false;    // the free fit had b < 0

  // 1/b in bytes per second; +inf when b == 0.
  double bandwidth_Bps() const;
  double predict_us(double size_bytes) const { return latency_us + us_per_byte * size_bytes; }
};

// Throws std::invalid_argument when fewer than two distinct sizes are given, or a time is not
// positive and finite.
AlphaBetaFit fit_alpha_beta(std::span<const SizeTime> points,
                            FitWeighting weighting = FitWeighting::kRelative);

// Two regimes (FACTS 2.5 step 4): real paths are not one line. Shaped links let a burst through
// faster than their rate, TCP windows and socket buffers have knees, protocols switch with size.
// The sweep is split at the breakpoint that minimises the total squared relative error of a
// line on each side (at least 3 sizes each): relative weights below the break, where latency
// matters, and ordinary least squares above it, so the largest transfers set the bandwidth. The
// latency comes from the small sizes' line, the bandwidth from the large sizes' line.
// With fewer than 6 sizes, or when a single line is already within 1% RMS, both come from the
// single line; otherwise the best split is used even if noise keeps it from lowering the error.
struct PiecewiseFit {
  AlphaBetaFit small;      // fit of the sizes below the break (or the single line)
  AlphaBetaFit large;      // fit of the sizes from the break up (or the single line)
  double break_bytes = 0;  // smallest size of the large regime; 0 when not split
  bool split = false;
  double residual_rms = 0;  // RMS relative error of the piecewise model over all sizes
  double r2 = 0;            // relative-weighted R^2 of the piecewise model

  double latency_us() const { return small.latency_us; }
  double bandwidth_Bps() const { return large.bandwidth_Bps(); }
};
PiecewiseFit fit_piecewise(std::span<const SizeTime> points);

}  // namespace adaptsim::calibrate
