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

// Max-min fair shares of `total` units among demands (water-filling): every demand gets
// min(demand, level), the level as high as the total allows, the units a rounded level leaves
// going one each to the earliest jobs still below their demand.
std::vector<int> max_min_shares(int total, const std::vector<int>& demands) {
  std::vector<int> share(demands.size(), 0);
  int left = total;
  std::vector<std::size_t> open;
  for (std::size_t i = 0; i < demands.size(); ++i)
    open.push_back(i);
  while (left > 0 && !open.empty()) {
    const int level = std::max(1, left / static_cast<int>(open.size()));
    std::vector<std::size_t> still;
    for (std::size_t i : open) {
      const int give = std::min({level, demands[i] - share[i], left});
      share[i] += give;
      left -= give;
      if (share[i] < demands[i]) still.push_back(i);
    }
    open = std::move(still);
  }
  return share;
}

class FairScheduler final : public JobScheduler {
 public:
  std::string_view name() const override { return "elastic-fair"; }
  std::vector<Allocation> schedule(const SchedulerView& view) const override {
    int total = view.free_gpus + view.releasing_gpus;
    for (const SchedJob& j : view.running)
      total += j.allocated;
    // The jobs that share: every running one, then queued ones while a GPU each remains.
    std::vector<const SchedJob*> jobs;
    std::vector<int> demands;
    for (const SchedJob& j : view.running) {
      jobs.push_back(&j);
      demands.push_back(j.requested);
    }
    for (const SchedJob& j : view.queued) {
      if (static_cast<int>(jobs.size()) >= total) break;
      jobs.push_back(&j);
      demands.push_back(j.requested);
    }
    const std::vector<int> share = max_min_shares(total, demands);
    std::vector<Allocation> out;
    int free = view.free_gpus;
    const std::size_t running = view.running.size();
    for (std::size_t i = 0; i < running; ++i) {  // shrinks need no free GPU
      if (jobs[i]->allocated > share[i]) out.push_back({jobs[i]->job, share[i]});
    }
    for (std::size_t i = running; i < jobs.size(); ++i) {  // queued, in arrival order
      if (free < 1) break;
      // While GPUs are still being given back, a job waits for its whole share rather than
      // start smaller and pay a resize to grow moments later; the free GPUs are kept for it.
      if (free < share[i] && view.releasing_gpus > 0) return out;
      const int gpus = std::min(share[i], free);
      out.push_back({jobs[i]->job, gpus});
      free -= gpus;
    }
    for (std::size_t i = 0; i < running; ++i) {  // growth, oldest first
      if (free < 1) break;
      if (jobs[i]->allocated >= share[i]) continue;
      const int gpus = std::min(share[i], jobs[i]->allocated + free);
      out.push_back({jobs[i]->job, gpus});
      free -= gpus - jobs[i]->allocated;
    }
    return out;
  }
};

}  // namespace

const std::vector<std::string>& job_scheduler_names() {
  static const std::vector<std::string> kNames = {"fifo", "elastic", "elastic-fair"};
  return kNames;
}

std::unique_ptr<JobScheduler> make_job_scheduler(std::string_view name) {
  if (name == "fifo") return std::make_unique<FifoScheduler>();
  if (name == "elastic") return std::make_unique<ElasticScheduler>();
  if (name == "elastic-fair") return std::make_unique<FairScheduler>();
  throw std::invalid_argument("unknown job scheduler '" + std::string(name) + "'");
}

}  // namespace adaptsim::runtime
