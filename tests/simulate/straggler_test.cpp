// Stragglers in the simulated environment (runtime/straggler.h): a slower worker's compute and a
// slower NIC from a given step on, against hand calculations.

#include <doctest/doctest.h>

#include "sim/simulate/simulate_training.h"
#include "tests/support/toy_cluster.h"
#include "tests/support/toy_model.h"

using namespace adaptsim;
using namespace adaptsim::runtime;

namespace {

// Two 1-GPU servers (NIC 1e9 B/s, 10 us per hop) and a one-tensor model of 2e6 float32 (8 MB):
// forward 10 ms, backward 20 ms; KungFu's classic ring
// (2 ranks: 2 x 20 us + 8 MB / 1e9 B/s = 8.04 ms after backward).
std::vector<double> step_times(std::vector<Straggler> stragglers) {
  const train::Model m = train::testing::toy_model({2'000'000});
  const train::ComputeProfile p = train::testing::toy_compute(0.010, {0.020});
  SystemConfig system;
  system.kind = SystemKind::kKungFu;
  system.strategy = coll::StrategyKind::kClassicRing;
  system.chunk_bytes = 1ull << 30;
  simulate::TrainingOptions o;
  o.compute.batch_per_gpu = 32;
  o.warmup_steps = 0;
  o.measured_steps = 4;
  o.stragglers = std::move(stragglers);
  const TrainingResult r = simulate::simulate_training(topo::testing::one_gpu_servers(2, 1e9), m, p,
                                                       0.0, train::GpuArch::kVolta, system, o)
                               .result;
  std::vector<double> out;
  for (const StepRow& s : r.steps)
    out.push_back(s.time_s);
  return out;
}

}  // namespace

TEST_CASE("a compute straggler from step 2: both workers wait for its doubled compute") {
  const double ar = 2 * 20e-6 + 8e6 / 1e9;
  const std::vector<double> t = step_times(
      {{.worker = 1, .from_step = 2, .compute_factor = 2, .nic_bandwidth_Bps = std::nullopt}});
  REQUIRE(t.size() == 4);
  // Steps 0, 1: 30 ms of compute, then the all-reduce.
  CHECK(t[0] == doctest::Approx(0.030 + ar).epsilon(1e-6));
  CHECK(t[1] == doctest::Approx(0.030 + ar).epsilon(1e-6));
  // From step 2 worker 1 computes 60 ms; the all-reduce cannot end before it: both steps 60 ms +
  // the all-reduce. (Step 2's mean over the two workers is off by up to a one-way latency: their
  // step 1 ended 20 us apart.)
  CHECK(t[2] == doctest::Approx(0.060 + ar).epsilon(5e-4));
  CHECK(t[3] == doctest::Approx(0.060 + ar).epsilon(1e-6));
}

TEST_CASE("a NIC straggler from step 1: the ring runs at the slower NIC's rate") {
  const std::vector<double> t =
      step_times({{.worker = 0, .from_step = 1, .nic_bandwidth_Bps = 0.25e9}});
  CHECK(t[0] == doctest::Approx(0.030 + 2 * 20e-6 + 8e6 / 1e9).epsilon(1e-6));
  // Server 0's NIC at 0.25e9 B/s both ways bounds both ring directions: 8 MB / 0.25e9.
  CHECK(t[1] == doctest::Approx(0.030 + 2 * 20e-6 + 8e6 / 0.25e9).epsilon(1e-6));
}
