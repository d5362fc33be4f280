#pragma once
// Stragglers (issue 15): from a given step on, one worker computes slower (both modes: the step
// loop stretches its compute deadlines, trainer.h) or its server's NIC runs at another rate (the
// simulated network changes the links' capacity when rank 0 starts that step, sim_env.h; live on
// the testbed, simctl's live backend changes the server namespace's tc caps at the same point,
// following rank 0's progress file).
//
//   stragglers:
//     - {worker: 2, from_step: 10, compute: 2.0}         # worker 2's compute takes 2x as long
//     - {worker: 3, from_step: 20, nic_bandwidth: 1Gbps}  # worker 3's server's NIC, both ways

#include <optional>
#include <vector>

namespace adaptsim::io {
class MapReader;
}

namespace adaptsim::runtime {

struct Straggler {
  int worker = 0;  // the environment's worker id (a rank of the topology)
  int from_step = 0;
  double compute_factor = 1;                // multiplies the worker's compute times
  std::optional<double> nic_bandwidth_Bps;  // the worker's server's NIC links, each direction
  bool operator==(const Straggler&) const = default;
};

// Reads the workload's `stragglers:` list (absent: none); `workers` bounds the worker ids.
// Bad input names the item's key: a worker that does not exist, a negative step, a factor <= 0 or
// above 1000, a bandwidth <= 0, an item that changes nothing.
std::vector<Straggler> read_stragglers(io::MapReader& workload, int workers);

// The factor worker `worker`'s compute takes in `step` (the product over its stragglers).
double compute_factor(const std::vector<Straggler>& stragglers, int worker, int step);

}  // namespace adaptsim::runtime
