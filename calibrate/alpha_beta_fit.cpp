#include "calibrate/alpha_beta_fit.h"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <vector>

namespace adaptsim::calibrate {
namespace {

double weight(const SizeTime& p, FitWeighting weighting) {
  return weighting == FitWeighting::kRelative ? 1.0 / (p.time_us * p.time_us) : 1.0;
}

}  // namespace

double AlphaBetaFit::bandwidth_Bps() const {
  return us_per_byte > 0 ? 1e6 / us_per_byte : std::numeric_limits<double>::infinity();
}

AlphaBetaFit fit_alpha_beta(std::span<const SizeTime> points, FitWeighting weighting) {
  std::set<double> sizes;
  for (const SizeTime& p : points) {
    if (!(p.time_us > 0) || !std::isfinite(p.time_us)) {
      throw std::invalid_argument("fit_alpha_beta: time " + std::to_string(p.time_us) +
                                  " us is not positive");
    }
    if (!(p.size_bytes >= 0) || !std::isfinite(p.size_bytes)) {
      throw std::invalid_argument("fit_alpha_beta: negative size");
    }
    sizes.insert(p.size_bytes);
  }
  if (sizes.size() < 2) {
    throw std::invalid_argument("fit_alpha_beta: needs at least two distinct sizes, got " +
                                std::to_string(sizes.size()));
  }

  // Weighted least squares as an ordinary one on rows scaled by sqrt(w): sqrt(w) [1 m] [a b]' =
  // sqrt(w) t. Sizes are scaled to [0, 1] first so the two columns are of comparable magnitude
  // (8 B and 1 GiB in one column would make the QR needlessly ill-conditioned).
  const double m_scale = *sizes.rbegin() > 0 ? *sizes.rbegin() : 1.0;
  const auto n = static_cast<Eigen::Index>(points.size());
  Eigen::MatrixXd x(n, 2);
  Eigen::VectorXd y(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const SizeTime& p = points[static_cast<std::size_t>(i)];
    const double s = std::sqrt(weight(p, weighting));
    x(i, 0) = s;
    x(i, 1) = s * p.size_bytes / m_scale;
    y(i) = s * p.time_us;
  }
  const Eigen::Vector2d free = x.colPivHouseholderQr().solve(y);

  AlphaBetaFit fit;
  fit.points = static_cast<int>(points.size());
  double a = free(0);
  double b = free(1) / m_scale;
  if (a < 0 || b < 0) {
    // Non-negative least squares with two unknowns: the optimum lies on the boundary a = 0 or
    // b = 0; take the better feasible one-parameter fit.
    double swmm = 0, swmt = 0, sw = 0, swt = 0;
    for (const SizeTime& p : points) {
      const double w = weight(p, weighting);
      swmm += w * p.size_bytes * p.size_bytes;
      swmt += w * p.size_bytes * p.time_us;
      sw += w;
      swt += w * p.time_us;
    }
    auto cost = [&](double ca, double cb) {
      double c = 0;
      for (const SizeTime& p : points) {
        const double r = p.time_us - ca - cb * p.size_bytes;
        c += weight(p, weighting) * r * r;
      }
      return c;
    };
    const double b_origin = swmm > 0 ? std::max(swmt / swmm, 0.0) : 0.0;  // a = 0
    const double a_const = std::max(swt / sw, 0.0);                       // b = 0
    if (cost(0, b_origin) <= cost(a_const, 0)) {
      fit.latency_clamped = true;
      a = 0;
      b = b_origin;
    } else {
      fit.slope_clamped = true;
      a = a_const;
      b = 0;
    }
  }
  fit.latency_us = a;
  fit.us_per_byte = b;

  double sw = 0, swt = 0, rel2 = 0;
  for (const SizeTime& p : points) {
    const double w = weight(p, weighting);
    sw += w;
    swt += w * p.time_us;
    const double rel = (p.time_us - fit.predict_us(p.size_bytes)) / p.time_us;
    rel2 += rel * rel;
  }
  const double mean_w = swt / sw;
  double ss_res = 0, ss_tot = 0;
  for (const SizeTime& p : points) {
    const double w = weight(p, weighting);
    const double r = p.time_us - fit.predict_us(p.size_bytes);
    ss_res += w * r * r;
    ss_tot += w * (p.time_us - mean_w) * (p.time_us - mean_w);
  }
  fit.residual_rms = std::sqrt(rel2 / static_cast<double>(points.size()));
  fit.r2 = ss_tot > 0 ? 1.0 - ss_res / ss_tot : (ss_res == 0 ? 1.0 : 0.0);
  return fit;
}

namespace {

// Sum of squared relative errors of `fit` over `pts`.
double relative_sse(const AlphaBetaFit& fit, std::span<const SizeTime> pts) {
  double sse = 0;
  for (const SizeTime& p : pts) {
    const double e = (p.time_us - fit.predict_us(p.size_bytes)) / p.time_us;
    sse += e * e;
  }
  return sse;
}

}  // namespace

PiecewiseFit fit_piecewise(std::span<const SizeTime> points) {
  std::vector<SizeTime> pts(points.begin(), points.end());
  std::sort(pts.begin(), pts.end(),
            [](const SizeTime& a, const SizeTime& b) { return a.size_bytes < b.size_bytes; });
  PiecewiseFit best;
  best.small = best.large = fit_alpha_beta(pts, FitWeighting::kRelative);
  double best_sse = relative_sse(best.small, pts);
  const double single_sse = best_sse;
  constexpr std::size_t kMinSide = 3;
  if (pts.size() >= 2 * kMinSide) {
    for (std::size_t k = kMinSide; k + kMinSide <= pts.size(); ++k) {
      if (pts[k - 1].size_bytes == pts[k].size_bytes) continue;  // a break between equal sizes
      const std::span<const SizeTime> lo(pts.data(), k), hi(pts.data() + k, pts.size() - k);
      AlphaBetaFit a, b;
      try {
        a = fit_alpha_beta(lo, FitWeighting::kRelative);
        // The large regime's slope is the bandwidth big transfers get: least squares in absolute
        // time, so the largest sizes set it (mid sizes that still ride a burst or an empty queue
        // would pull a relative fit towards a rate the link does not sustain).
        b = fit_alpha_beta(hi, FitWeighting::kUniform);
      } catch (const std::invalid_argument&) {
        continue;  // one side has a single distinct size
      }
      if (!(b.us_per_byte > 0)) continue;  // the large regime must grow with size
      const double sse = relative_sse(a, lo) + relative_sse(b, hi);
      if (sse < best_sse || !best.split) {
        best_sse = sse;
        best.small = a;
        best.large = b;
        best.break_bytes = pts[k].size_bytes;
        best.split = true;
      }
    }
    // One line within 1% RMS needs no second regime. Otherwise the split stands even when noise
    // keeps it from reducing the error much: the large sizes must set the bandwidth, which a
    // relative-weighted single line lets the (noisier, latency-bound) small sizes decide.
    const bool line_fits = single_sse <= 1e-4 * static_cast<double>(pts.size());
    if (best.split && line_fits) {
      best.small = best.large = fit_alpha_beta(pts, FitWeighting::kRelative);
      best.split = false;
      best.break_bytes = 0;
      best_sse = single_sse;
    }
  }
  best.residual_rms = std::sqrt(best_sse / static_cast<double>(pts.size()));
  // R^2 with the relative weights: 1 - SSE_w / SST_w, SST_w about the weighted mean.
  double sw = 0, swt = 0;
  for (const SizeTime& p : pts) {
    const double w = 1 / (p.time_us * p.time_us);
    sw += w;
    swt += w * p.time_us;
  }
  const double mean = swt / sw;
  double sst = 0;
  for (const SizeTime& p : pts)
    sst += (p.time_us - mean) * (p.time_us - mean) / (p.time_us * p.time_us);
  best.r2 = sst > 0 ? 1 - best_sse / sst : 1;
  return best;
}

}  // namespace adaptsim::calibrate
