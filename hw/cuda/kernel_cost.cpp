#include "hw/cuda/kernel_cost.h"

#include <stdexcept>
#include <string>

namespace adaptsim::hw {

std::string_view kernel_kind_name(KernelKind kind) {
  switch (kind) {
    case KernelKind::kSum:
      return "sum";
    case KernelKind::kSquaredNorm:
      return "sq_norm";
    case KernelKind::kVariance:
      return "variance";
  }
  return "?";
}

std::optional<KernelKind> parse_kernel_kind(std::string_view name) {
  for (KernelKind k : kAllKernelKinds) {
    if (kernel_kind_name(k) == name) return k;
  }
  return std::nullopt;
}

std::size_t kernel_bytes_per_element(KernelKind kind) {
  switch (kind) {
    case KernelKind::kSum:
      return 12;
    case KernelKind::kSquaredNorm:
      return 4;
    case KernelKind::kVariance:
      return 12;
  }
  return 0;
}

KernelCostFit fit_kernel_cost(KernelKind kernel, std::span<const KernelTimingRow> rows) {
  // Weighted means first, then the centred normal equations: with n up to 1e9 and weights ~1/t^2,
  // the raw sums (sum w n^2) lose digits that the centred form keeps.
  double sw = 0, swn = 0, swt = 0;
  int points = 0;
  for (const auto& r : rows) {
    if (r.kernel != kernel || r.time_ns <= 0) continue;
    const double w = 1.0 / (r.time_ns * r.time_ns);
    sw += w;
    swn += w * static_cast<double>(r.n_elements);
    swt += w * r.time_ns;
    ++points;
  }
  if (points == 0) {
    throw std::invalid_argument("fit_kernel_cost: no timed rows for kernel " +
                                std::string(kernel_kind_name(kernel)));
  }
  const double n_mean = swn / sw;
  const double t_mean = swt / sw;
  double snn = 0, snt = 0;
  for (const auto& r : rows) {
    if (r.kernel != kernel || r.time_ns <= 0) continue;
    const double w = 1.0 / (r.time_ns * r.time_ns);
    const double dn = static_cast<double>(r.n_elements) - n_mean;
    snn += w * dn * dn;
    snt += w * dn * (r.time_ns - t_mean);
  }
  KernelCostFit fit;
  fit.kernel = kernel;
  fit.points = points;
  if (snn > 0) {
    fit.ns_per_element = snt / snn;
    fit.overhead_ns = t_mean - fit.ns_per_element * n_mean;
  } else {
    // One distinct size: no intercept can be separated from the slope.
    fit.ns_per_element = n_mean > 0 ? t_mean / n_mean : 0;
    fit.overhead_ns = n_mean > 0 ? 0 : t_mean;
  }
  return fit;
}

void fit_kernel_costs(KernelTimingReport& report) {
  report.fits.clear();
  for (KernelKind k : kAllKernelKinds) {
    bool present = false;
    for (const auto& r : report.rows)
      present = present || (r.kernel == k && r.time_ns > 0);
    if (present) report.fits.push_back(fit_kernel_cost(k, report.rows));
  }
}

}  // namespace adaptsim::hw
