#include "sim/runtime/straggler.h"

#include <string>

#include "sim/io/yaml_reader.h"

namespace adaptsim::runtime {

std::vector<Straggler> read_stragglers(io::MapReader& workload, int workers) {
  std::vector<Straggler> out;
  if (!workload.has("stragglers")) {
    workload.accept("stragglers");
    return out;
  }
  const auto items = workload.list("stragglers");
  for (std::size_t i = 0; i < items.size(); ++i) {
    io::MapReader r = io::MapReader::item_map(workload, "stragglers", i, items[i]);
    Straggler s;
    s.worker = static_cast<int>(r.integer("worker", 0, 1 << 30));
    if (s.worker >= workers) {
      r.fail("worker", "worker " + std::to_string(s.worker) + " does not exist: the topology has " +
                           std::to_string(workers) + " (0 to " + std::to_string(workers - 1) + ")");
    }
    s.from_step = static_cast<int>(r.integer("from_step", 0, 1 << 30));
    s.compute_factor = r.number_or("compute", 1.0);
    if (!(s.compute_factor > 0 && s.compute_factor <= 1000))
      r.fail("compute", "expected a factor in (0, 1000]");
    if (r.has("nic_bandwidth")) {
      s.nic_bandwidth_Bps = r.bandwidth_Bps("nic_bandwidth");
      if (!(*s.nic_bandwidth_Bps > 0)) r.fail("nic_bandwidth", "expected a bandwidth > 0");
    } else {
      r.accept("nic_bandwidth");
    }
    if (s.compute_factor == 1 && !s.nic_bandwidth_Bps)
      r.fail_here("a straggler needs `compute` (a factor) or `nic_bandwidth`");
    r.finish();
    out.push_back(s);
  }
  return out;
}

double compute_factor(const std::vector<Straggler>& stragglers, int worker, int step) {
  double f = 1;
  for (const Straggler& s : stragglers)
    if (s.worker == worker && step >= s.from_step) f *= s.compute_factor;
  return f;
}

}  // namespace adaptsim::runtime
