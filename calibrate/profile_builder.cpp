#include "calibrate/profile_builder.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <tuple>

#include "calibrate/alpha_beta_fit.h"
#include "calibrate/collective_model.h"
#include "sim/coll/collective.h"
#include "sim/core/units.h"

namespace adaptsim::calibrate {
namespace {

using GroupKey = std::tuple<std::string, std::string, coll::Collective, int>;

std::string group_name(const GroupKey& k) {
  return std::get<0>(k) + " " + std::get<1>(k) + " " +
         std::string(coll::collective_name(std::get<2>(k))) + " on " +
         std::to_string(std::get<3>(k)) + " ranks";
}

// Why a profile cannot hold `fit` (io::parse_calibration_profile checks the ranges of
// sim/core/units.h), or empty. A line that is almost flat over the sizes measured (a time that
// barely grows with size) gives a bandwidth of 10^21 B/s: no link's, and unreadable once written.
std::string profile_range_problem(const io::LinkFit& fit) {
  const auto in_range = [](double bw) { return bw >= kMinBandwidthBps && bw <= kMaxBandwidthBps; };
  if (!in_range(fit.bandwidth_Bps) || !in_range(fit.busbw_inf_Bps)) {
    return "fitted bandwidth " + io::profile_bandwidth_text(fit.bandwidth_Bps) + " (bus " +
           io::profile_bandwidth_text(fit.busbw_inf_Bps) + ") is outside 1 Kbit/s to 1 PB/s";
  }
  if (!(fit.latency_us * 1e3 <= static_cast<double>(kMaxDurationNs))) {
    return "fitted latency " + io::profile_duration_text(fit.latency_us * 1e3) +
           " is beyond 10^6 s";
  }
  if (!(fit.m_half_bytes <= static_cast<double>(kMaxSizeBytes)) || fit.max_bytes > kMaxSizeBytes) {
    return "sizes beyond 1 PiB";
  }
  if (!std::isfinite(fit.residual_rms) || !std::isfinite(fit.r2)) {
    return "the fit's residual or R^2 is not a number";
  }
  return "";
}

}  // namespace

std::vector<io::LinkFit> fit_link_groups(const std::vector<coll::SweepRow>& rows,
                                         const std::vector<int>& host_of_rank,
                                         std::vector<std::string>& notes) {
  std::vector<GroupKey> order;
  std::set<GroupKey> seen;
  for (const coll::SweepRow& r : rows) {
    GroupKey k{r.link_class, r.algorithm, r.collective, r.n_ranks};
    if (seen.insert(k).second) order.push_back(k);
  }

  std::vector<io::LinkFit> fits;
  for (const GroupKey& key : order) {
    const auto& [link_class, algorithm, collective, n] = key;
    // Compared with `key`: clang before 16 cannot capture a structured binding.
    auto in_group = [&](const coll::SweepRow& r) {
      return std::tie(r.link_class, r.algorithm, r.collective, r.n_ranks) == key;
    };
    const bool has_out_of_place =
        std::any_of(rows.begin(), rows.end(),
                    [&](const coll::SweepRow& r) { return in_group(r) && !r.in_place; });
    std::vector<SizeTime> points;
    std::uint64_t min_bytes = UINT64_MAX, max_bytes = 0;
    int dropped_wrong = 0;
    for (const coll::SweepRow& r : rows) {
      if (!in_group(r) || r.in_place == has_out_of_place) continue;
      if (r.wrong > 0) {
        ++dropped_wrong;
        continue;
      }
      if (r.size_bytes == 0 || !(r.time_us > 0)) continue;
      points.push_back({static_cast<double>(r.size_bytes), r.time_us});
      min_bytes = std::min(min_bytes, r.size_bytes);
      max_bytes = std::max(max_bytes, r.size_bytes);
    }
    if (dropped_wrong > 0) {
      notes.push_back(group_name(key) + ": " + std::to_string(dropped_wrong) +
                      " sizes with wrong results left out of the fit");
    }
    const double factor = coll::bus_bandwidth_factor(collective, n);
    if (!(factor > 0)) {
      notes.push_back(group_name(key) + ": no bus bandwidth on one rank, not fitted");
      continue;
    }
    if (min_bytes == max_bytes || points.size() < 2) {
      notes.push_back(group_name(key) + ": fewer than two sizes, not fitted");
      continue;
    }
    const PiecewiseFit pw = fit_piecewise(points);
    const AlphaBetaFit& f = pw.large;
    if (!(f.us_per_byte > 0)) {
      notes.push_back(group_name(key) +
                      ": time does not grow with size (all sizes in the latency regime), not "
                      "fitted; sweep to larger sizes");
      continue;
    }
    if (pw.split) {
      notes.push_back(group_name(key) + ": two regimes, split at " +
                      std::to_string(static_cast<long long>(pw.break_bytes)) +
                      " B (latency from the small sizes, bandwidth from the large)");
    }
    if (pw.small.latency_clamped) {
      notes.push_back(group_name(key) + ": the free fit's latency was negative; fitted through 0");
    }
    io::LinkFit fit;
    fit.link_class = link_class;
    fit.algorithm = algorithm;
    fit.collective = std::string(coll::collective_name(collective));
    fit.n_ranks = n;
    fit.points = static_cast<int>(points.size());
    fit.min_bytes = min_bytes;
    fit.max_bytes = max_bytes;
    fit.latency_us = pw.latency_us();
    fit.bandwidth_Bps = pw.bandwidth_Bps();
    const std::vector<int> hosts =
        static_cast<int>(host_of_rank.size()) == n ? host_of_rank : std::vector<int>{};
    fit.steps = algorithm_steps(algorithm, collective, n, hosts);
    fit.bus_factor = factor;
    fit.alpha_per_step_us = fit.latency_us / fit.steps;
    fit.busbw_inf_Bps = factor * fit.bandwidth_Bps;
    fit.m_half_bytes = fit.latency_us * 1e-6 * fit.bandwidth_Bps;
    fit.residual_rms = pw.residual_rms;
    fit.r2 = pw.r2;
    if (const std::string problem = profile_range_problem(fit); !problem.empty()) {
      notes.push_back(group_name(key) + ": " + problem + ", not fitted");
      continue;
    }
    fits.push_back(fit);
  }
  return fits;
}

std::vector<io::KernelCostEntry> kernel_cost_entries(const hw::KernelTimingReport& report) {
  std::vector<io::KernelCostEntry> out;
  for (hw::KernelKind kind : hw::kAllKernelKinds) {
    // The fitter's "bytes" are elements here and its microseconds stay microseconds.
    std::vector<SizeTime> points;
    std::set<std::size_t> sizes;
    for (const hw::KernelTimingRow& r : report.rows) {
      if (r.kernel != kind || !(r.time_ns > 0)) continue;
      points.push_back({static_cast<double>(r.n_elements), r.time_ns / 1e3});
      sizes.insert(r.n_elements);
    }
    if (points.empty()) continue;
    io::KernelCostEntry e;
    e.kernel = std::string(hw::kernel_kind_name(kind));
    e.points = static_cast<int>(points.size());
    if (sizes.size() == 1) {
      // One size: no fixed cost can be told from the per-element one.
      double t = 0;
      for (const SizeTime& p : points)
        t += p.time_us;
      e.per_element_ns = t / static_cast<double>(points.size()) * 1e3 / points.front().size_bytes;
    } else {
      // Two regimes, as for links: the fixed cost from the small sizes (launch- or call-bound),
      // the per-element cost from the large ones, which stream from memory as gradients do. One
      // relative-weighted line over sizes from cache-resident to memory-bound lets the small
      // sizes set the slope (an H200's sq_norm came out at 5.8 TB/s, above its 4.8 TB/s HBM).
      const PiecewiseFit fit = fit_piecewise(points);
      e.overhead_ns = fit.small.latency_us * 1e3;
      e.per_element_ns = fit.large.us_per_byte * 1e3;
    }
    if (!(e.per_element_ns > 0)) continue;
    e.bandwidth_Bps =
        static_cast<double>(hw::kernel_bytes_per_element(kind)) / e.per_element_ns * 1e9;
    out.push_back(e);
  }
  return out;
}

double sum_reduce_bandwidth_Bps(const hw::KernelTimingReport& report) {
  const hw::KernelTimingRow* largest = nullptr;
  for (const hw::KernelTimingRow& r : report.rows) {
    if (r.kernel != hw::KernelKind::kSum || !(r.time_ns > 0)) continue;
    if (!largest || r.n_elements > largest->n_elements) largest = &r;
  }
  if (!largest) return 0;
  // float32 output: 4 bytes per element.
  return 4.0 * static_cast<double>(largest->n_elements) / (largest->time_ns * 1e-9);
}

std::string describe_fit(const io::LinkFit& f) {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "%s %s %s %d ranks: latency %.2f us, %.4g GB/s, %d steps: alpha/step %.2f us, "
                "busbw_inf %.4g GB/s, m_half %.0f B, residual %.2f%%, R^2 %.4f, %d points",
                f.link_class.c_str(), f.algorithm.c_str(), f.collective.c_str(), f.n_ranks,
                f.latency_us, f.bandwidth_Bps / 1e9, f.steps, f.alpha_per_step_us,
                f.busbw_inf_Bps / 1e9, f.m_half_bytes, f.residual_rms * 100, f.r2, f.points);
  return buf;
}

}  // namespace adaptsim::calibrate
