#include "sim/runtime/failure.h"

#include <string>

#include "sim/io/yaml_reader.h"

namespace adaptsim::runtime {

std::vector<WorkerFailure> read_failures(io::MapReader& workload, int workers) {
  std::vector<WorkerFailure> out;
  if (!workload.has("failures")) {
    workload.accept("failures");
    return out;
  }
  const auto items = workload.list("failures");
  for (std::size_t i = 0; i < items.size(); ++i) {
    io::MapReader r = io::MapReader::item_map(workload, "failures", i, items[i]);
    WorkerFailure f;
    f.worker = static_cast<int>(r.integer("worker", 0, 1 << 30));
    if (f.worker >= workers) {
      r.fail("worker", "worker " + std::to_string(f.worker) + " does not exist: the topology has " +
                           std::to_string(workers) + " (0 to " + std::to_string(workers - 1) + ")");
    }
    for (const WorkerFailure& g : out) {
      if (g.worker == f.worker)
        r.fail("worker", "worker " + std::to_string(f.worker) + " already fails at step " +
                             std::to_string(g.step));
    }
    f.step = static_cast<int>(r.integer("step", 0, 1 << 30));
    const std::string mode = r.choice_or("mode", {"kill", "silent", "pause"}, "kill");
    f.mode = mode == "silent"  ? WorkerFailure::Mode::kSilent
             : mode == "pause" ? WorkerFailure::Mode::kPause
                               : WorkerFailure::Mode::kKill;
    if (f.mode == WorkerFailure::Mode::kPause) {
      if (!r.has("for"))
        r.fail("for", "missing: a paused worker runs again after this duration (e.g. for: 3s)");
      f.pause_ns = r.duration_ns("for");
      if (f.pause_ns <= 0) r.fail("for", "must be > 0: how long the worker's process stops");
    } else if (r.has("for")) {
      r.fail("for", "only a pause lasts a while: expected mode: pause");
    }
    r.finish();
    out.push_back(f);
  }
  return out;
}

std::string failure_yaml(const WorkerFailure& f) {
  std::string mode = f.mode == WorkerFailure::Mode::kKill     ? "kill"
                     : f.mode == WorkerFailure::Mode::kSilent ? "silent"
                                                              : "pause";
  if (f.mode == WorkerFailure::Mode::kPause) mode += ", for: " + std::to_string(f.pause_ns) + "ns";
  return "{worker: " + std::to_string(f.worker) + ", step: " + std::to_string(f.step) +
         ", mode: " + mode + "}";
}

}  // namespace adaptsim::runtime
