// Whole simulated all-reduces: simulator wall time per collective, for the scaling story.

#include <benchmark/benchmark.h>

#include "sim/run/allreduce_sim.h"
#include "sim/topo/cluster_spec.h"

using namespace adaptsim;

// One all-reduce of `bytes` per iteration on `servers` one-GPU servers behind one switch with
// NICs of `nic_Bps`, host endpoints, 1 MiB chunks, serialized connections (the defaults);
// fold: a symmetric strategy folded onto one server (SimFabric::fold_servers).
static void simulate_one_switch(benchmark::State& state, int servers, double nic_Bps,
                                coll::StrategyKind kind, std::uint64_t bytes, bool fold = true) {
  topo::ClusterSpec c;
  c.name = "bench";
  c.servers = servers;
  c.server.pcie = {12e9, 1000};
  c.server.nic = {nic_Bps, 12500};
  const topo::Topology t = topo::build_cluster(c);
  std::uint64_t events = 0;
  run::AllReduceSimOptions options;
  options.fold_servers = fold;
  for (auto _ : state) {
    auto r = run::simulate_allreduce(t, kind, bytes, options);
    events += r.events;
    benchmark::DoNotOptimize(r.time_ns);
  }
  state.counters["events_per_s"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
}

static void BM_SimulatedAllReduce(benchmark::State& state) {
  const auto kind = static_cast<coll::StrategyKind>(state.range(1));
  simulate_one_switch(state, static_cast<int>(state.range(0)), 1.25e9, kind, 100 << 20);
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
static void BM_Ring1GiB(benchmark::State& state) {
  simulate_one_switch(state, static_cast<int>(state.range(0)), 50e9,
                      coll::StrategyKind::kClassicRing, std::uint64_t{1} << 30);
}
static void BM_Mbts1GiB(benchmark::State& state) {
  simulate_one_switch(state, static_cast<int>(state.range(0)), 50e9,
                      coll::StrategyKind::kMultiBinaryTreeStar, std::uint64_t{1} << 30);
}
// Every rank simulated: the per-message machinery the folded ring skips.
static void BM_Ring1GiBUnfolded(benchmark::State& state) {
  simulate_one_switch(state, static_cast<int>(state.range(0)), 50e9,
                      coll::StrategyKind::kClassicRing, std::uint64_t{1} << 30, false);
}
BENCHMARK(BM_Ring1GiB)->Arg(64)->Arg(256)->Arg(1024)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_Ring1GiBUnfolded)->Arg(64)->Arg(256)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_Mbts1GiB)->Arg(16)->Arg(32)->Arg(64)->Unit(benchmark::kMillisecond)->Iterations(1);
