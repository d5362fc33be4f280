// Whole simulated all-reduces: simulator wall time per collective, for the scaling story.

#include <benchmark/benchmark.h>

#include "sim/run/allreduce_sim.h"
#include "sim/topo/cluster_spec.h"

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

// Issue 18's table (scripts/bench-scale.sh runs the same cases through simctl at full size): one
// 1 GiB all-reduce on one switch with 50 GB/s NICs, as the allreduce scenario runs it (host
// endpoints, 1 MiB chunks, one serialized connection per peer pair). The smaller sizes are the
// CI smoke run (ctest bench_smoke); the growth with ranks is the point.
template <coll::StrategyKind kind>
static void BM_AllReduce1GiB(benchmark::State& state) {
  topo::ClusterSpec c;
  c.name = "bench";
  c.servers = static_cast<int>(state.range(0));
  c.server.pcie = {12e9, 1000};
  c.server.nic = {50e9, 12500};
  const topo::Topology t = topo::build_cluster(c);
  const run::AllReduceSimOptions options;  // host endpoints, serialized, 1 MiB chunks
  std::uint64_t events = 0;
  for (auto _ : state) {
    auto r = run::simulate_allreduce(t, kind, std::uint64_t{1} << 30, options);
    events += r.events;
    benchmark::DoNotOptimize(r.time_ns);
  }
  state.counters["events_per_s"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
}
static void BM_Ring1GiB(benchmark::State& state) {
  BM_AllReduce1GiB<coll::StrategyKind::kClassicRing>(state);
}
static void BM_Mbts1GiB(benchmark::State& state) {
  BM_AllReduce1GiB<coll::StrategyKind::kMultiBinaryTreeStar>(state);
}
BENCHMARK(BM_Ring1GiB)->Arg(64)->Arg(256)->Arg(1024)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_Mbts1GiB)->Arg(16)->Arg(32)->Arg(64)->Unit(benchmark::kMillisecond)->Iterations(1);
