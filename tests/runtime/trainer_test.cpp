// The step loop's seam (agreement, monitors, policy) in the simulated environment: per-step rows,
// changes applied from the step after the decision, the agreement's cost by hand.

#include "sim/runtime/trainer.h"

#include <doctest/doctest.h>

#include <cmath>

#include "sim/simulate/simulate_training.h"
#include "sim/topo/cluster_spec.h"
#include "tests/support/toy_model.h"

using namespace adaptsim;
using namespace adaptsim::runtime;

namespace {

using train::testing::toy_model;

// `servers` 1-GPU servers behind one switch: NIC bandwidth 1e9 B/s and 10 us per hop (host to
// host alpha = 20 us); PCIe, loopback and reductions effectively free.
topo::Topology cluster(int servers) {
  topo::ClusterSpec c;
  c.name = "toy";
  c.servers = servers;
  c.server.pcie = {1e15, 0};
  c.server.cpu_loopback_bandwidth_Bps = 1e15;
  c.server.nic = {1e9, 10'000};
  return topo::build_cluster(c);
}

train::ComputeProfile profile(double forward_s, std::vector<double> backward_s, double update_s) {
  train::ComputeProfile p;
  p.forward_s = forward_s;
  p.backward_layer_s = std::move(backward_s);
  p.optimizer_s = update_s;
  return p;
}

simulate::TrainingOptions options(int warmup, int steps, std::string policy,
                                  std::string monitors = "") {
  simulate::TrainingOptions o;
  o.compute.batch_per_gpu = 32;
  o.warmup_steps = warmup;
  o.measured_steps = steps;
  o.seam.policy_yaml = std::move(policy);
  o.seam.monitors_yaml = std::move(monitors);
  return o;
}

SystemConfig kungfu(coll::StrategyKind strategy) {
  SystemConfig s;
  s.kind = SystemKind::kKungFu;
  s.label = "kungfu";
  s.strategy = strategy;
  return s;
}

TrainingResult run(const topo::Topology& t, const train::Model& m, const train::ComputeProfile& p,
                   const SystemConfig& s, const simulate::TrainingOptions& o) {
  return simulate::simulate_training(t, m, p, 0.0, train::GpuArch::kVolta, s, o).result;
}

// Two half-K80 workers training ResNet-50 (25,557,032 parameters), ideal, with `monitors`; and
// one norm kernel's time there: two passes over its 4-byte gradients at the device's memory
// bandwidth.
const train::DeviceProfile& k80_half() {
  static const train::DeviceProfile device = train::load_device_profile(
      std::string(ADAPTSIM_SOURCE_DIR) + "/traces/devices/k80-half.yaml");
  return device;
}
TrainingResult resnet50_ideal(const std::string& monitors) {
  SystemConfig ideal;
  ideal.kind = SystemKind::kIdeal;
  return simulate::simulate_training(cluster(2), train::model("resnet50"), k80_half(), ideal,
                                     options(1, 3, "", monitors))
      .result;
}
double resnet50_norm_kernel_s() {
  return to_seconds(
      seconds_to_ns_ceil(2 * 25'557'032.0 * 4 / k80_half().memory_bandwidth_Bps().value));
}

}  // namespace

TEST_CASE("switch-strategy after step 5: STAR up to step 5, MULTI_BINARY_TREE_STAR from step 6") {
  const topo::Topology t = cluster(4);
  const train::Model m = toy_model({1 << 20, 1 << 16});
  const train::ComputeProfile p = profile(0.002, {0.004, 0.004}, 0.001);
  const TrainingResult r =
      run(t, m, p, kungfu(coll::StrategyKind::kStar),
          options(1, 8, "{name: switch-strategy, step: 5, strategy: MULTI_BINARY_TREE_STAR}"));
  REQUIRE(r.steps.size() == 9);
  for (const StepRow& row : r.steps) {
    CAPTURE(row.step);
    CHECK(row.strategy == (row.step <= 5 ? "STAR" : "MULTI_BINARY_TREE_STAR"));
    CHECK(row.decision == (row.step == 5 ? "strategy MULTI_BINARY_TREE_STAR" : ""));
    CHECK(row.batch_per_gpu == 32);
    CHECK(row.workers == 4);
    CHECK(row.measured == (row.step >= 1));
  }
  // STAR funnels 4.2 MB through rank 0's NIC; MULTI_BINARY_TREE_STAR spreads it over every NIC:
  // the steps after the switch are shorter.
  CHECK(r.steps[7].time_s < r.steps[4].time_s);
}

TEST_CASE("a star rooted elsewhere: STAR@2 after the switch") {
  const topo::Topology t = cluster(4);
  const train::Model m = toy_model({1 << 18});
  const TrainingResult r =
      run(t, m, profile(0.001, {0.002}, 0.0), kungfu(coll::StrategyKind::kBinaryTreeStar),
          options(0, 4,
                  "{name: switch-strategy, step: 1, strategy: STAR, "
                  "root: 2}"));
  CHECK(r.steps[1].strategy == "BINARY_TREE_STAR");
  CHECK(r.steps[1].decision == "strategy STAR@2");
  CHECK(r.steps[2].strategy == "STAR@2");
}

TEST_CASE(
    "a strategy switch costs KungFu's protocol: a consensus and a barrier, in the next step") {
  // Two workers, KungFu, STAR; the same run with and without a switch after step 2 to the same
  // STAR (so the gradients' traffic is unchanged). The switch adds two control all-reduces of one
  // double over the agreement's STAR after the step agreement: rank 1 reaches each alpha after
  // the root, so each costs rank 1 (its send, the root's reply) 2 alpha + 2 x 8 / B, and the
  // root, which waits for rank 1's message, the same. Step 3 is longer by 4 alpha + 32 / B on
  // both workers; the workers keep their offsets, so step 4 on is unchanged.
  const topo::Topology t = cluster(2);
  const train::Model m = toy_model({1 << 16});
  const train::ComputeProfile p = profile(0.002, {0.004}, 0.001);
  const SystemConfig star = kungfu(coll::StrategyKind::kStar);
  const TrainingResult plain = run(t, m, p, star, options(1, 5, "", "[{name: throughput}]"));
  const TrainingResult switched = run(
      t, m, p, star,
      options(1, 5, "{name: switch-strategy, step: 2, strategy: STAR}", "[{name: throughput}]"));
  CHECK(switched.steps[2].decision == "strategy STAR");
  const double alpha = 20e-6, B = 1e9;
  for (int k = 0; k < 6; ++k) {
    CAPTURE(k);
    const double extra = switched.steps[k].time_s - plain.steps[k].time_s;
    CHECK(std::abs(extra - (k == 3 ? 4 * alpha + 32 / B : 0.0)) < 2e-9);
  }
}

TEST_CASE("scale-batch doubles the batch after step 5: the compute doubles from step 6") {
  // Ideal system (no gradient traffic) on 2 workers: a step is forward + backward + update plus
  // the agreement on the previous step. Doubling the batch doubles forward and backward (the
  // update is per parameter): 10 + 20 + 5 ms -> 20 + 40 + 5 ms.
  const topo::Topology t = cluster(2);
  const train::Model m = toy_model({1000});
  SystemConfig ideal;
  ideal.kind = SystemKind::kIdeal;
  const TrainingResult r = run(t, m, profile(0.010, {0.020}, 0.005), ideal,
                               options(1, 8, "{name: scale-batch, step: 5, factor: 2}"));
  REQUIRE(r.steps.size() == 9);
  CHECK(r.steps[5].decision == "batch 64");
  for (const StepRow& row : r.steps)
    CHECK(row.batch_per_gpu == (row.step <= 5 ? 32 : 64));
  const double agreement = r.steps[3].time_s - 0.035;
  CHECK(agreement > 0);
  CHECK(agreement < 100e-6);
  CHECK(r.steps[7].time_s == doctest::Approx(0.065 + agreement).epsilon(1e-9));
  // The mean batch over the measured steps (steps 1-8: 5 x 32 + 3 x 64) over the mean step.
  const double mean_batch = (5 * 32 + 3 * 64) / 8.0;
  CHECK(r.samples_per_s_per_gpu == doctest::Approx(mean_batch / r.step_mean_s));
}

TEST_CASE("the agreement on a step is one STAR all-reduce of 64 bytes, charged to the next step") {
  // Two workers, ideal (no gradient traffic), no jitter: both end step 0 at T. The agreement
  // (8 doubles = 64 B, a STAR rooted at rank 0): rank 1 sends to the root, alpha + 64 / B; the
  // root adds and sends the sum back, alpha + 64 / B. The root is done when its send's last byte
  // left (T + alpha + 2 x 64 / B), rank 1 when the sum arrived (T + 2 alpha + 2 x 64 / B), and
  // each starts step 1's compute then; the step's clock started at T. So step 1 = compute + the
  // mean of the two, 1.5 alpha + 128 / B. From then on rank 1 ends its steps alpha later than the
  // root, and the root's agreement waits for rank 1's message: both spend 2 alpha + 128 / B, and
  // steps 2, 3 = compute + 2 alpha + 128 / B. The agreement is exposed link time; step 0 has none.
  const topo::Topology t = cluster(2);
  const train::Model m = toy_model({1000});
  SystemConfig ideal;
  ideal.kind = SystemKind::kIdeal;
  const double alpha = 20e-6, B = 1e9, tol = 1e-11;  // 10 ps: exact up to ns rounding of 35 ms
  const TrainingResult r = run(t, m, profile(0.010, {0.020}, 0.005), ideal,
                               options(1, 3, "", "[{name: throughput, window: 2}]"));
  REQUIRE(r.steps.size() == 4);
  CHECK(r.steps[0].time_s == doctest::Approx(0.035).epsilon(tol));
  const double first = 1.5 * alpha + 128 / B, later = 2 * alpha + 128 / B;
  CHECK(r.steps[1].time_s == doctest::Approx(0.035 + first).epsilon(tol));
  CHECK(r.steps[2].time_s == doctest::Approx(0.035 + later).epsilon(tol));
  CHECK(r.steps[3].time_s == doctest::Approx(0.035 + later).epsilon(tol));
  CHECK(r.exposed_link_s == doctest::Approx((first + 2 * later) / 3).epsilon(tol));
  // Without a seam, no agreement: every step is the compute alone.
  const TrainingResult plain = run(t, m, profile(0.010, {0.020}, 0.005), ideal, options(1, 3, ""));
  CHECK(plain.steps[2].time_s == doctest::Approx(0.035).epsilon(tol));
  CHECK(plain.exposed_link_s == 0);
}

TEST_CASE("a policy run is deterministic: the same rows twice") {
  const topo::Topology t = cluster(4);
  const train::Model m = toy_model({1 << 20, 1 << 10});
  const train::ComputeProfile p = profile(0.002, {0.004, 0.001}, 0.001);
  simulate::TrainingOptions o = options(1, 6, "{name: switch-strategy, step: 2, strategy: CLIQUE}",
                                        "[{name: allreduce-throughput, window: 3}]");
  const auto a = simulate::simulate_training(t, m, p, 0.05, train::GpuArch::kVolta,
                                             kungfu(coll::StrategyKind::kStar), o);
  const auto b = simulate::simulate_training(t, m, p, 0.05, train::GpuArch::kVolta,
                                             kungfu(coll::StrategyKind::kStar), o);
  CHECK(a.result == b.result);
  CHECK(a.events == b.events);
}

TEST_CASE("gradient norms: a norm kernel over the local and reduced gradients, paid every step") {
  // Two half-K80 workers, ResNet-50 (25,557,032 parameters), ideal. The gradient-norms monitor
  // makes every worker run a norm kernel over its local and its reduced gradient before the
  // update: two passes over 4-byte elements at the device's memory bandwidth BW, i.e.
  // ceil(2 x 25,557,032 x 4 / BW) ns. Jitter moves every worker's compute, but the kernel adds
  // the same time to every worker and step, so each step is longer by exactly that; the values
  // are unknown simulated (NaN).
  const TrainingResult plain = resnet50_ideal("[{name: throughput}]");
  const TrainingResult normed = resnet50_ideal("[{name: throughput}, {name: gradient-norms}]");
  const double kernel_s = resnet50_norm_kernel_s();
  CHECK(kernel_s > 0);
  REQUIRE(normed.steps.size() == plain.steps.size());
  for (std::size_t k = 0; k < plain.steps.size(); ++k) {
    CAPTURE(k);
    CHECK(normed.steps[k].time_s - plain.steps[k].time_s ==
          doctest::Approx(kernel_s).epsilon(1e-9));
    CHECK(std::isnan(normed.steps[k].readings.at("gradient-norms.local_sq")));
    CHECK(std::isnan(normed.steps[k].readings.at("gradient-norms.global_sq")));
  }
}

TEST_CASE("the noise scale monitor's interval: the norm kernel is paid on its steps only") {
  // As above with gradient-noise-scale, interval 2: steps 0, 2 (of 0..3) are longer by the
  // kernel, steps 1, 3 are not; readings are NaN throughout (no gradient values simulated).
  const TrainingResult plain = resnet50_ideal("[{name: throughput}]");
  const TrainingResult gns =
      resnet50_ideal("[{name: throughput}, {name: gradient-noise-scale, interval: 2}]");
  const double kernel_s = resnet50_norm_kernel_s();
  REQUIRE(gns.steps.size() == 4);
  for (std::size_t k = 0; k < plain.steps.size(); ++k) {
    CAPTURE(k);
    const double extra = gns.steps[k].time_s - plain.steps[k].time_s;
    if (k % 2 == 0) {
      CHECK(extra == doctest::Approx(kernel_s).epsilon(1e-9));
    } else {
      CHECK(extra == doctest::Approx(0).epsilon(1e-12));
    }
    CHECK(std::isnan(gns.steps[k].readings.at("gradient-noise-scale.b_simple")));
  }
}

TEST_CASE(
    "the variance monitor: squares, a second all-reduce (bytes doubled) and a variance kernel") {
  // Two workers, one tensor of 2^20 float32 (4 MiB), no jitter; kernels at c = 0.05 ns per
  // element and pass: squaring reads and writes every element (2 passes), the variance reads two
  // and writes one (3). Ideal: communication is free, so each step is longer by exactly
  // ceil(2 P c) + ceil(3 P c) ns. Simulated values are unknown (NaN); bytes double on its steps.
  const topo::Topology t = cluster(2);
  const std::uint64_t P = 1 << 20;
  const train::Model m = toy_model({P});
  const train::ComputeProfile p = profile(0.002, {0.004}, 0.001);
  const double c = 0.05;
  const auto run_c = [&](const SystemConfig& s, const std::string& monitors) {
    simulate::TrainingOptions o = options(1, 3, "", monitors);
    o.kernel_ns_per_element = c;
    return simulate::simulate_training(t, m, p, 0.0, train::GpuArch::kVolta, s, o).result;
  };
  SystemConfig ideal;
  ideal.kind = SystemKind::kIdeal;
  const TrainingResult plain = run_c(ideal, "[{name: throughput}]");
  const TrainingResult var = run_c(ideal, "[{name: throughput}, {name: gradient-variance}]");
  const double kernels = to_seconds(seconds_to_ns_ceil(2 * P * c * 1e-9)) +
                         to_seconds(seconds_to_ns_ceil(3 * P * c * 1e-9));
  REQUIRE(var.steps.size() == 4);
  for (std::size_t k = 0; k < 4; ++k) {
    CAPTURE(k);
    CHECK(var.steps[k].time_s - plain.steps[k].time_s == doctest::Approx(kernels).epsilon(1e-9));
    CHECK(plain.steps[k].allreduce_bytes == 4.0 * P);
    CHECK(var.steps[k].allreduce_bytes == 8.0 * P);
    CHECK(std::isnan(var.steps[k].readings.at("gradient-variance.norm_sum")));
  }
  // KungFu, STAR: the squares' all-reduce runs alone after the gradients', on an idle network,
  // so it costs what the gradients' all-reduce costs on its own; every step is longer by the
  // kernels plus that. The gradients' all-reduce alone: a step without a seam less its compute
  // (7 ms), the same in every step.
  const SystemConfig star = kungfu(coll::StrategyKind::kStar);
  const TrainingResult bare =
      simulate::simulate_training(t, m, p, 0.0, train::GpuArch::kVolta, star, options(1, 3, ""))
          .result;
  const double allreduce = bare.steps[1].time_s - 0.007;
  CHECK(allreduce > 0.004);  // 4 MiB through a 1 GB/s NIC each way
  const TrainingResult kf_plain = run_c(star, "[{name: throughput}]");
  const TrainingResult kf_var = run_c(star, "[{name: gradient-variance, interval: 2}]");
  for (std::size_t k = 0; k < 4; ++k) {
    CAPTURE(k);
    const double extra = kf_var.steps[k].time_s - kf_plain.steps[k].time_s;
    CHECK(kf_var.steps[k].allreduce_bytes == (k % 2 == 0 ? 8.0 : 4.0) * P);
    if (k % 2 == 0) {
      CHECK(extra == doctest::Approx(kernels + allreduce).epsilon(1e-6));
    } else {
      CHECK(extra == doctest::Approx(0).epsilon(1e-9));
    }
  }
  // The second all-reduce is communication: exposed link time, not compute.
  // (Measured steps 1-3; the monitor ran in step 2 only: a third of its all-reduce per step.)
  CHECK(kf_var.exposed_link_s - kf_plain.exposed_link_s ==
        doctest::Approx(allreduce / 3).epsilon(1e-6));
  CHECK(kf_var.compute_s - kf_plain.compute_s == doctest::Approx(kernels / 3).epsilon(1e-6));
}
