// Flow solver: full max-min solves, and incremental updates in a running FlowNetwork.

#include <benchmark/benchmark.h>

#include "sim/core/rng.h"
#include "sim/net/flow_network.h"
#include "sim/net/maxmin.h"

using namespace adaptsim;
using namespace adaptsim::net;

// One progressive-filling solve of F flows, each crossing 4 of L resources.
static void BM_MaxMinSolve(benchmark::State& state) {
  const int flows = static_cast<int>(state.range(0));
  const int links = flows / 2 + 4;
  Rng rng(3);
  std::vector<double> cap(links);
  for (auto& c : cap)
    c = 1e9 * (1 + rng.uniform());
  std::vector<std::vector<std::uint32_t>> paths(flows);
  for (auto& p : paths) {
    for (int k = 0; k < 4; ++k)
      p.push_back(static_cast<std::uint32_t>(rng.below(links)));
    std::sort(p.begin(), p.end());
    p.erase(std::unique(p.begin(), p.end()), p.end());
  }
  std::vector<std::span<const std::uint32_t>> spans(paths.begin(), paths.end());
  std::vector<double> caps(flows, MaxMinSolver::kUncapped), rates(flows);
  MaxMinSolver solver;
  for (auto _ : state) {
    solver.solve(cap, spans, caps, rates);
    benchmark::DoNotOptimize(rates.data());
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["flows"] = flows;
}
BENCHMARK(BM_MaxMinSolve)->Arg(16)->Arg(256)->Arg(4096);

// Incremental updates: a network of `hosts` up/down links with a steady population of flows
// between random host pairs; every completion starts a new flow. items_per_second = solver
// updates (flow starts and ends, each re-solving its component) per second.
static void BM_FlowNetworkUpdates(benchmark::State& state) {
  const int hosts = static_cast<int>(state.range(0));
  const int concurrent = static_cast<int>(state.range(1));
  for (auto _ : state) {
    EventEngine e;
    FlowNetwork net(e);
    std::vector<ResourceId> up(hosts), down(hosts);
    for (int h = 0; h < hosts; ++h) {
      up[h] = net.add_resource(1.25e9, "up");
      down[h] = net.add_resource(1.25e9, "down");
    }
    Rng rng(5);
    int started = 0;
    const int total = 20000;
    std::function<void()> launch = [&] {
      if (started >= total) return;
      ++started;
      const int a = static_cast<int>(rng.below(hosts));
      int b = static_cast<int>(rng.below(hosts - 1));
      if (b >= a) ++b;
      FlowNetwork::FlowSpec s;
      s.resources = {up[a], down[b]};
      s.bytes = 1e5 + rng.uniform() * 1e6;
      s.latency = 10000;
      s.on_complete = launch;
      net.start(std::move(s));
    };
    for (int i = 0; i < concurrent; ++i)
      launch();
    e.run();
    state.counters["solves"] = static_cast<double>(net.solves());
  }
  state.SetItemsProcessed(state.iterations() * 20000 * 2);
}
BENCHMARK(BM_FlowNetworkUpdates)->Args({8, 16})->Args({64, 256})->Args({512, 2048});
