// Whole simulated all-reduces: simulator wall time per collective, for the scaling story.

#include <benchmark/benchmark.h>

#include "sim/topo/cluster_spec.h"
#include "sim/run/allreduce_sim.h"

using namespace adaptsim;

static void BM_SimulatedAllReduce(benchmark::State& state) {
  topo::ClusterSpec c;
  c.name = "bench";
  c.servers = static_cast<int>(state.range(0));
  c.server.pcie = {12e9, 1000};
  c.server.nic = {1.25e9, 12500};
  const topo::Topology t = topo::build_cluster(c);
  const auto kind = static_cast<coll::StrategyKind>(state.range(1));
  std::uint64_t events = 0;
  for (auto _ : state) {
    auto r = run::simulate_allreduce(t, kind, 100 << 20, {});
    events += r.events;
    benchmark::DoNotOptimize(r.time_ns);
  }
  state.counters["events_per_s"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  state.SetLabel(std::string(coll::strategy_name(kind)) + " 100MiB");
}
BENCHMARK(BM_SimulatedAllReduce)
    ->Args({8, static_cast<int>(coll::StrategyKind::kMultiBinaryTreeStar)})
    ->Args({32, static_cast<int>(coll::StrategyKind::kMultiBinaryTreeStar)})
    ->Args({32, static_cast<int>(coll::StrategyKind::kClassicRing)})
    ->Args({128, static_cast<int>(coll::StrategyKind::kMultiBinaryTreeStar)})
    ->Unit(benchmark::kMillisecond);
