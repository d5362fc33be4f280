#include "hw/nccl/nccl_check.h"

#include <string>
#include <string_view>

#include "sim/core/error.h"

namespace adaptsim::hw {

void check_nccl(ncclResult_t status, const char* call, const char* file, int line) {
  if (status == ncclSuccess || status == ncclInProgress) return;
  std::string message = std::string(call) + " failed: " + ncclGetErrorString(status);
  if (const char* detail = ncclGetLastError(nullptr); detail != nullptr && detail[0] != '\0') {
    message += " (" + std::string(detail) + ")";
  }
  std::string_view path(file);
  if (auto pos = path.rfind("/hw/"); pos != std::string_view::npos) path.remove_prefix(pos + 1);
  throw RuntimeFailure(message + " at " + std::string(path) + ":" + std::to_string(line));
}

}  // namespace adaptsim::hw
