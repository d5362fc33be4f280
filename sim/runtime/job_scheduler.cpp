#include "sim/runtime/job_scheduler.h"

#include <algorithm>
#include <stdexcept>

namespace adaptsim::runtime {
namespace {

class FifoScheduler final : public JobScheduler {
 public:
  std::string_view name() const override { return "fifo"; }
  std::vector<Allocation> schedule(const SchedulerView& view) const override {
    std::vector<Allocation> out;
    int free = view.free_gpus;
    for (const SchedJob& j : view.queued) {
      if (j.requested > free) break;  // head-of-line: the jobs behind it wait too
      out.push_back({j.job, j.requested});
      free -= j.requested;
    }
    return out;
  }
};

class ElasticScheduler final : public JobScheduler {
 public:
  std::string_view name() const override { return "elastic"; }
  std::vector<Allocation> schedule(const SchedulerView& view) const override {
    std::vector<Allocation> out;
    int free = view.free_gpus;
    for (const SchedJob& j : view.queued) {
      if (free < 1) break;
      const int gpus = std::min(j.requested, free);
      out.push_back({j.job, gpus});
      free -= gpus;
    }
    for (const SchedJob& j : view.running) {
      if (free < 1) break;
      if (j.allocated >= j.requested) continue;
      const int gpus = std::min(j.requested, j.allocated + free);
      out.push_back({j.job, gpus});
      free -= gpus - j.allocated;
    }
    return out;
  }
};

}  // namespace

const std::vector<std::string>& job_scheduler_names() {
  static const std::vector<std::string> kNames = {"fifo", "elastic"};
  return kNames;
}

std::unique_ptr<JobScheduler> make_job_scheduler(std::string_view name) {
  if (name == "fifo") return std::make_unique<FifoScheduler>();
  if (name == "elastic") return std::make_unique<ElasticScheduler>();
  throw std::invalid_argument("unknown job scheduler '" + std::string(name) + "'");
}

}  // namespace adaptsim::runtime
