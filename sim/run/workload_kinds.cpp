#include "sim/run/workload.h"

namespace adaptsim::run {

net::Sharing read_sharing(io::MapReader& w) {
  return w.choice_or("sharing", {"max-min", "bottleneck"}, "max-min") == "bottleneck"
             ? net::Sharing::kBottleneck
             : net::Sharing::kMaxMin;
}

const std::vector<WorkloadKind>& workload_kinds() {
  static const std::vector<WorkloadKind> kKinds = {
      {"allreduce", "nccl-tests-style all-reduce size sweep over strategies",
       parse_allreduce_workload},
      {"training", "data-parallel training steps of zoo models under the compared systems",
       parse_training_workload},
  };
  return kKinds;
}

}  // namespace adaptsim::run
