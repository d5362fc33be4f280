#include "hw/cuda/cuda_check.h"

#include <string>
#include <string_view>

#include "sim/core/error.h"

namespace adaptsim::hw {

void check_cuda(cudaError_t status, const char* call, const char* file, int line) {
  if (status == cudaSuccess) return;
  // Clear the error so that later, unrelated calls do not report it again (sticky errors, such as
  // an illegal address, stay and are reported by every call; nothing can clear them).
  cudaGetLastError();
  std::string_view path(file);
  // Keep the message short: from the project's top folder (hw/...) on.
  if (auto pos = path.rfind("/hw/"); pos != std::string_view::npos) path.remove_prefix(pos + 1);
  throw RuntimeFailure(std::string(call) + " failed: " + cudaGetErrorString(status) + " (" +
                       cudaGetErrorName(status) + ") at " + std::string(path) + ":" +
                       std::to_string(line));
}

}  // namespace adaptsim::hw
