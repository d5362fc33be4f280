#include "hw/cuda/kernel_cost.h"

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

}  // namespace adaptsim::hw
