#pragma once
// Helpers of the root-only testbed tests: background processes with deadlines, iperf3 between
// hosts, a UDP ping (no ping binary needed), and the adaptsim-testbed tool.

#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "hw/testbed/testbed.h"
#include "sim/core/time.h"
#include "sim/topo/cluster_spec.h"
#include "tests/support/background_process.h"

namespace adaptsim::testbed::test {

// A topology from topologies/ with parameter overrides ("servers" -> "4").
topo::ClusterSpec load_spec(const std::string& file,
                           const std::vector<std::pair<std::string, std::string>>& params);

// Background programs with deadlines (tests/support).
using test_support::BackgroundProcess;

// Receiver-side goodput of iperf3 flows (client host -> server host, TCP, `seconds` long after
// one omitted second of slow start) run at the same time, in Mbit/s (1e6 bit/s), in the order
// given. `during`, if given, runs while the
// flows are on (after half a second). Throws when iperf3 fails.
std::vector<double> iperf3_goodput_Mbps(const Testbed& tb,
                                        const std::vector<std::pair<int, int>>& flows, int seconds,
                                        bool reverse = false,
                                        const std::function<void()>& during = {});

bool have_iperf3();

struct RttStats {
  double min_us = 0, median_us = 0, max_us = 0;
  int lost = 0;
};
// `count` UDP echo round trips of 64-byte datagrams from host `from` to host `to`.
RttStats udp_rtt(const Testbed& tb, int from, int to, int count);

// Runs the tool to completion; returns its exit code, stdout and stderr.
struct ToolResult {
  int exit_code = -1;
  std::string out, err;
};
ToolResult run_tool(const std::vector<std::string>& args, TimeNs timeout_ns = 60 * kNsPerSecond);
std::string tool_path();

// Whether a testbed object with this prefix exists, or its state file.
bool leftovers(const std::string& prefix, std::string* what);

}  // namespace adaptsim::testbed::test
