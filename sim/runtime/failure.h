#pragma once
// Worker failures (issue 15): a worker's process dies (`kill`) or hangs (`silent`) when it would
// start a given step. The others find it by the config store's leases (a worker's lease lives
// ElasticSpec::failure_timeout_ns after its process last ran, as an etcd lease with that TTL lapses
// without keep-alives), once a step of theirs has made no progress for that long; they shrink the
// cluster without it and redo the step they were in (trainer.h, "Failures").
//
//   failures:
//     - {worker: 2, step: 7, mode: kill}

#include <vector>

namespace adaptsim::io {
class MapReader;
}

namespace adaptsim::runtime {

struct WorkerFailure {
  enum class Mode { kKill, kSilent };
  int worker = 0;  // the environment's worker id
  int step = 0;    // it dies as it would start this step
  Mode mode = Mode::kKill;
  bool operator==(const WorkerFailure&) const = default;
};

// Reads the workload's `failures:` list (absent: none); bad input names the item's key (a worker
// that does not exist, a negative step, an unknown mode, a worker failing twice).
std::vector<WorkerFailure> read_failures(io::MapReader& workload, int workers);

}  // namespace adaptsim::runtime
