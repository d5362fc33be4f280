#pragma once
// Cluster schedulers for many training jobs on one cluster (a `jobs` workload replaying a job
// trace): which queued job starts with how many GPUs, and which running job grows or shrinks. A
// policy is a pure function of what it is shown, so the same decisions come out of every run; the
// environment places the GPUs and carries a change out (a running job resizes through its config
// store by KungFu's protocol, trainer.h "Worker-set changes"; simulate_jobs.h).

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace adaptsim::runtime {

// A job as a scheduler sees it.
struct SchedJob {
  int job = 0;        // the trace's index of the job
  int requested = 0;  // the GPUs it asked for (the trace's gpu_num)
  int allocated = 0;  // the GPUs it holds now (0 while queued)
};

struct SchedulerView {
  int free_gpus = 0;
  // GPUs a shrinking job gave back whose workers have not stopped yet: free soon.
  int releasing_gpus = 0;
  std::vector<SchedJob> queued;   // in arrival order
  std::vector<SchedJob> running;  // in the order they started
};

// Start queued job `job` with `gpus` GPUs, or resize running job `job` to `gpus`.
struct Allocation {
  int job = 0;
  int gpus = 0;
  bool operator==(const Allocation&) const = default;
};

class JobScheduler {
 public:
  virtual ~JobScheduler() = default;
  virtual std::string_view name() const = 0;
  // The changes to make now, each within the free GPUs the ones before it left; a job at most
  // once.
  virtual std::vector<Allocation> schedule(const SchedulerView& view) const = 0;
};

// "fifo": jobs start in arrival order, each with the GPUs it asked for, once that many are free;
// a job that does not fit holds every job behind it back (no backfilling), as the FIFO baseline of
// cluster-scheduler studies (Tiresias, NSDI'19 §2; Pollux, OSDI'21 §5) runs. A job keeps its GPUs.
// "elastic": jobs still start in arrival order, but with the free GPUs when fewer than they asked
// for are free (at least one); then running jobs below their request grow, oldest first, into GPUs
// that became free (an elastic job is never given more than it asked for, nor shrunk).
// "elastic-fair": every job in the system gets its max-min fair share of the cluster's GPUs
// (water-filling, each job capped at what it asked for, at least one GPU each, queued jobs in
// arrival order as long as a GPU each remains): running jobs above their share shrink to it
// (through KungFu's protocol; their GPUs are free once the leaving workers stopped), queued jobs
// start with up to their share of what is free (waiting for the whole share while GPUs are
// being given back), running jobs below it grow, oldest first. Max-min
// fairness of one resource, the single-resource case of DRF (Ghodsi et al., NSDI'11); an elastic
// job shrinks to admit a newcomer, as AFS-style elastic sharing does (Hwang et al., NSDI'21).
std::unique_ptr<JobScheduler> make_job_scheduler(std::string_view name);
const std::vector<std::string>& job_scheduler_names();

}  // namespace adaptsim::runtime
