// The flow model's spread of TCP connection rates in an all-to-all, to hold against the live
// testbed's (scripts/testbed-alltoall.sh; docs/validation.md, "What the model still misses"):
// N one-GPU hosts on one switch, every host sending one long flow to every other under
// Sharing::kTcp with log-normal connection shares of coefficient of variation CV; prints the
// coefficient of variation and min / mean of the N(N-1) rates one second in, averaged over
// SEEDS share draws.
//   build/bench/adaptsim_share_spread [N=4] [CV=0.52] [SEEDS=32] [NIC_MBps=59.8] [QUEUE_ms=100]
// Defaults: the 500 Mbit/s testbed profile's 59.8 MB/s (traces/calibration/testbed-500Mbps.yaml),
// its 100 ms buffers and 15 us NIC latency (topologies/testbed-leaves.yaml), and
// validate-testbed.yaml's share_cv.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "sim/core/event_engine.h"
#include "sim/topo/cluster_spec.h"
#include "sim/net/network.h"

namespace {

using adaptsim::EventEngine;
namespace net = adaptsim::net;
namespace topo = adaptsim::topo;

struct Spread {
  double cv = 0;
  double min_over_mean = 0;
};

Spread all_to_all(int hosts, double share_cv, std::uint64_t seed, double nic_Bps,
                  adaptsim::TimeNs queue_ns) {
  topo::ClusterSpec c;
  c.name = "share-spread";
  c.servers = hosts;
  c.server.gpus = 1;
  c.server.pcie = {1e15, 0};
  c.server.cpu_loopback_bandwidth_Bps = 1e15;
  c.server.nic = {nic_Bps, 15'000, queue_ns};
  const topo::Topology topo = topo::build_cluster(c);
  EventEngine engine;
  net::Network network(engine, topo, net::Sharing::kTcp);
  network.set_share_dispersion(share_cv, seed);
  std::vector<net::Network::FlowId> flows;
  for (int s = 0; s < hosts; ++s) {
    for (int d = 0; d < hosts; ++d) {
      if (s != d) flows.push_back(network.transfer(topo.rank_host(s), topo.rank_host(d), 1e12, {}));
    }
  }
  engine.run_until(1'000'000'000);
  std::vector<double> rates;
  for (auto id : flows)
    rates.push_back(network.flows().rate(id));
  double mean = 0;
  for (double r : rates)
    mean += r;
  mean /= static_cast<double>(rates.size());
  double var = 0;
  for (double r : rates)
    var += (r - mean) * (r - mean);
  var /= static_cast<double>(rates.size() - 1);
  return {std::sqrt(var) / mean, *std::min_element(rates.begin(), rates.end()) / mean};
}

}  // namespace

int main(int argc, char** argv) {
  const int hosts = argc > 1 ? std::atoi(argv[1]) : 4;
  const double share_cv = argc > 2 ? std::atof(argv[2]) : 0.52;
  const int seeds = argc > 3 ? std::atoi(argv[3]) : 32;
  const double nic_Bps = (argc > 4 ? std::atof(argv[4]) : 59.8) * 1e6;
  const auto queue_ns = static_cast<adaptsim::TimeNs>((argc > 5 ? std::atof(argv[5]) : 100) * 1e6);
  if (hosts < 2 || seeds < 1 || !(share_cv >= 0) || !(nic_Bps > 0) || queue_ns < 0) {
    std::fprintf(
        stderr,
        "usage: adaptsim_share_spread [N>=2] [CV>=0] [SEEDS>=1] [NIC_MBps>0] [QUEUE_ms>=0]\n");
    return 2;
  }
  Spread sum;
  for (int seed = 1; seed <= seeds; ++seed) {
    const Spread s =
        all_to_all(hosts, share_cv, static_cast<std::uint64_t>(seed), nic_Bps, queue_ns);
    sum.cv += s.cv;
    sum.min_over_mean += s.min_over_mean;
  }
  std::printf(
      "all-to-all, %d hosts, share CV %.2f: stream CV %.3f, min / mean %.2f (mean of %d seeds)\n",
      hosts, share_cv, sum.cv / seeds, sum.min_over_mean / seeds, seeds);
  return 0;
}
