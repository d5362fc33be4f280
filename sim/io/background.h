#pragma once
// Background traffic beside a training job (a scenario's `background:`): TCP flows between hosts
// of the cluster, each with a number of parallel connections, an optional rate cap and a
// schedule in steps or in time. One description for both modes: the simulator runs every
// connection as a flow of the network model (simulate/sim_env), a live run on the testbed as real
// TCP streams of adaptsim-traffic between the hosts' namespaces (hw/runner, hw/testbed/traffic).
//
//   background:
//     - {from: x0, to: s0, connections: 4, rate: 1Gbps, start_step: 10, stop_step: 20}
//     - {from: s3, to: s1, start: 2s, stop: 5s}
//
// Hosts: "s<i>" is server i of the topology (0-based, where the job's ranks run); "x<i>" is an
// extra host outside the job, built like a server of the topology (its NIC, its place in the
// fabric) but running no rank: naming x<i> adds hosts x0..x<i> to the cluster.
//
// Schedule, the same in both modes: the job's clock starts when rank 0 starts step 0. A flow
// runs from the start of rank 0's step `start_step` (or `start` after the clock's start) until
// the start of rank 0's step `stop_step` (or `stop`); without a stop, until the job ends. It
// starts once and stops once.

#include <optional>
#include <string>
#include <vector>

#include "sim/core/time.h"
#include "sim/io/yaml_reader.h"

namespace adaptsim::io {

struct BackgroundSchedule {
  std::optional<int> start_step, stop_step;  // or
  std::optional<TimeNs> start_ns, stop_ns;   // since rank 0 started step 0
  bool by_step() const { return start_step.has_value(); }
  // Whether the flow runs during rank 0's step `step`, begun `since_start_ns` after step 0 began
  // (a step-scheduled flow looks at the step only, a time-scheduled one at the time only).
  bool active(int step, TimeNs since_start_ns) const;
  // "steps 10-20", "from step 10", "2 s-5 s", "from 2 s".
  std::string describe() const;
};

struct BackgroundFlow {
  std::string from, to;  // as written: "s0", "x1"
  int from_host = 0;     // host index: servers first, then the extra hosts
  int to_host = 0;
  int connections = 1;
  double rate_Bps = 0;  // the total over the connections; 0: uncapped
  BackgroundSchedule when;
};

struct BackgroundSpec {
  std::vector<BackgroundFlow> flows;
  int extra_hosts = 0;  // hosts outside the job the flows name (x0..x<extra_hosts - 1>)
  bool empty() const { return flows.empty(); }
};

// Reads the optional `background:` list of `r` for a cluster of `servers` servers. Throws
// InputError naming the file, line and key: a host the cluster lacks ("s9" of 8 servers, a name
// that is neither s<i> nor x<i>), a flow from a host to itself, connections below 1, a rate that
// is not a bandwidth, a schedule with no start, with both a step and a time start, a stop of the
// other kind, or a stop not after the start.
BackgroundSpec read_background(MapReader& r, int servers);

}  // namespace adaptsim::io
