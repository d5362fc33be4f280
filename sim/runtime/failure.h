#pragma once
// Worker failures (issue 15): a worker's process dies (`kill`), hangs (`silent`) or stops running
// for a while and then runs on (`pause`, for: a duration: a process stopped by SIGSTOP, a
// preempted VM, a long stall) when it would start a given step. The others find it by the config
// store's leases (a worker's lease lives ElasticSpec::failure_timeout_ns after its process last
// ran, as an etcd lease with that TTL lapses without keep-alives), once a step of theirs has made
// no progress for that long; they shrink the cluster without it and redo the step they were in
// (trainer.h, "Failures"). A paused worker whose lease lapsed meanwhile finds, once it runs again,
// that the cluster went on without it, and leaves; one back sooner only made the others wait.
//
//   failures:
//     - {worker: 2, step: 7, mode: kill}
//     - {worker: 3, step: 9, mode: pause, for: 3s}

#include <string>
#include <vector>

#include "sim/core/time.h"

namespace adaptsim::io {
class MapReader;
}

namespace adaptsim::runtime {

struct WorkerFailure {
  enum class Mode { kKill, kSilent, kPause };
  int worker = 0;  // the environment's worker id
  int step = 0;    // it dies (or pauses) as it would start this step
  Mode mode = Mode::kKill;
  TimeNs pause_ns = 0;  // Mode::kPause: how long its process does not run
  bool operator==(const WorkerFailure&) const = default;
};

// Reads the workload's `failures:` list (absent: none); bad input names the item's key (a worker
// that does not exist, a negative step, an unknown mode, a worker failing twice, a pause without
// a positive `for`, `for` with another mode).
std::vector<WorkerFailure> read_failures(io::MapReader& workload, int workers);
// One item of that list as read_failures reads it back (a flow map, e.g. for a live run's config).
std::string failure_yaml(const WorkerFailure& f);

}  // namespace adaptsim::runtime
