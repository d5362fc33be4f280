// Issue 18's training rows as Google Benchmark cases: the shipped Figure 9 scenario (ResNet-50,
// MULTI_BINARY_TREE_STAR, 10 Gbit/s egress, one thread) at a given VM count and sharing mode,
// run through the runner exactly as `simctl run` does, nothing written. The full sizes (256 and
// 1024 VMs) are scripts/bench-scale.sh's train* cases; these sizes show the growth.

#include <benchmark/benchmark.h>

#include <string>

#include "sim/run/runner.h"
#include "sim/run/scenario.h"

using namespace adaptsim;

static void fig9_training(benchmark::State& state, const std::string& sharing) {
  run::LoadOptions load;
  load.overrides = {
      "sweep.topology.params.servers=[" + std::to_string(state.range(0)) + "]",
      "sweep.topology.params.nic_egress_bandwidth=[10Gbps]", "workload.sharing=" + sharing,
      "workload.models=[resnet50]",
      "workload.systems=[{label: kungfu-mbts, kind: kungfu, strategy: MULTI_BINARY_TREE_STAR}]"};
  const run::Scenario scenario =
      run::load_scenario(std::string(ADAPTSIM_SOURCE_DIR) + "/scenarios/fig9.yaml", load);
  run::RunOptions options;
  options.threads = 1;
  for (auto _ : state) {
    const run::Tables tables = run::collect_rows(scenario, options);
    benchmark::DoNotOptimize(tables.summary);
  }
}
static void BM_Fig9TrainingMaxMin(benchmark::State& state) {
  fig9_training(state, "max-min");
}
static void BM_Fig9TrainingBottleneck(benchmark::State& state) {
  fig9_training(state, "bottleneck");
}
BENCHMARK(BM_Fig9TrainingMaxMin)
    ->Arg(16)
    ->Arg(64)
    ->Arg(256)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK(BM_Fig9TrainingBottleneck)
    ->Arg(16)
    ->Arg(64)
    ->Arg(256)
    ->Arg(1024)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
