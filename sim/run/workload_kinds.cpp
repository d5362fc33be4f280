#include "sim/run/workload.h"

namespace adaptsim::run {

net::Sharing read_sharing(io::MapReader& w) {
  const std::string s = w.choice_or("sharing", {"max-min", "bottleneck", "tcp"}, "max-min");
  return s == "bottleneck" ? net::Sharing::kBottleneck
         : s == "tcp"      ? net::Sharing::kTcp
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
