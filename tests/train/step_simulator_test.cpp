// The step model against hand calculations on toy models and clusters.

#include "sim/train/step_simulator.h"

#include <doctest/doctest.h>

#include <cmath>

#include "sim/net/cluster_spec.h"
#include "sim/train/horovod_coordinator.h"

using namespace adaptsim;
using namespace adaptsim::train;

namespace {

// A model whose layers each own one tensor of the given element counts, in backward order.
Model toy_model(const std::vector<std::uint64_t>& elements) {
  Model m;
  m.name = "toy";
  m.sample_unit = "img";
  for (std::size_t i = 0; i < elements.size(); ++i) {
    Layer l;
    l.name = "layer" + std::to_string(i);
    l.forward_flops = l.backward_flops = 1;
    l.first_tensor = i;
    l.tensor_count = 1;
    m.layers.push_back(l);
    m.backward_order.push_back({"tensor" + std::to_string(i), elements[i], i});
  }
  return m;
}

ComputeProfile profile(double forward_s, std::vector<double> backward_s, double optimizer_s = 0) {
  ComputeProfile p;
  p.forward_s = forward_s;
  p.backward_layer_s = std::move(backward_s);
  p.optimizer_s = optimizer_s;
  return p;
}

// `servers` x `gpus` behind one switch: NIC bandwidth B and per-hop latency; PCIe, loopback and
// reductions effectively free.
net::Topology cluster(int servers, int gpus, double nic_Bps, TimeNs hop_ns) {
  net::ClusterSpec c;
  c.name = "toy";
  c.servers = servers;
  c.server.gpus = gpus;
  c.server.pcie = {1e15, 0};
  c.server.cpu_loopback_bandwidth_Bps = 1e15;
  c.server.nvswitch = net::LinkParams{1e15, 0};
  c.server.nic = {nic_Bps, hop_ns};
  return net::build_cluster(c);
}

TrainingOptions options(int warmup = 1, int steps = 3) {
  TrainingOptions o;
  o.batch_per_gpu = 32;
  o.warmup_steps = warmup;
  o.measured_steps = steps;
  return o;
}

SystemConfig system(SystemKind kind, coll::StrategyKind strategy = coll::StrategyKind::kBinaryTreeStar) {
  SystemConfig c;
  c.kind = kind;
  c.strategy = strategy;
  c.chunk_bytes = 1ull << 30;  // one chunk per tensor: closed forms stay simple
  return c;
}

double step_of(const net::Topology& t, const Model& m, const ComputeProfile& p, const SystemConfig& s,
               const TrainingOptions& o = options()) {
  return simulate_training(t, m, p, 0.0, GpuArch::kVolta, s, o).step_mean_s;
}

}  // namespace

TEST_CASE("a single GPU: every system equals ideal (Horovod's cycle aside)") {
  // One worker, no peer: staging copies are free here and every collective is a local copy, so
  // the step is forward + backward + update = 10 + (20 + 30) + 5 ms = 65 ms.
  const net::Topology t = cluster(1, 1, 1.25e9, 10'000);
  const Model m = toy_model({1 << 20, 1 << 18});
  const ComputeProfile p = profile(0.010, {0.020, 0.030}, 0.005);
  const double ideal = step_of(t, m, p, system(SystemKind::kIdeal));
  CHECK(ideal == doctest::Approx(0.065).epsilon(1e-6));
  for (SystemKind k : {SystemKind::kKungFu, SystemKind::kNcclScheduled, SystemKind::kHierarchical,
                       SystemKind::kHorovodNccl}) {
    SystemConfig s = system(k);
    s.cycle_time_ns = 10'000;  // Horovod's negotiation still quantizes; keep the cycle short
    CHECK_MESSAGE(step_of(t, m, p, s) == doctest::Approx(ideal).epsilon(2e-4), system_kind_name(k));
  }
}

TEST_CASE("infinite bandwidth and no latency: every system equals ideal") {
  // 2 servers x 2 GPUs with (near) infinite links. KungFu and Horovod become exactly ideal (up to
  // nanosecond rounding and a 10 us Horovod cycle); NCCL keeps its model's microsecond latency
  // per collective, a negligible share of the 300 ms step.
  const net::Topology t = cluster(2, 2, 1e15, 0);
  const Model& m = model("resnet50");
  std::vector<double> backward(m.layers.size(), 0.2 / static_cast<double>(m.layers.size()));
  const ComputeProfile p = profile(0.1, backward, 0.0);
  const double ideal = step_of(t, m, p, system(SystemKind::kIdeal));
  CHECK(ideal == doctest::Approx(0.3).epsilon(1e-6));
  for (SystemKind k : {SystemKind::kKungFu, SystemKind::kHorovod, SystemKind::kNcclScheduled,
                       SystemKind::kHorovodNccl, SystemKind::kHierarchical}) {
    SystemConfig s = system(k);
    s.cycle_time_ns = 10'000;
    s.nccl_poll_ns = 0;
    const double got = step_of(t, m, p, s);
    CHECK_MESSAGE(std::abs(got - ideal) / ideal < 5e-3, system_kind_name(k) << ": " << got);
  }
}

TEST_CASE("two workers: communication-bound and compute-bound limits match the hand calculation") {
  // Two 1-GPU servers, NIC B = 1e9 B/s and 10 us per hop, so host-to-host alpha = 20 us.
  // Classic ring on 2 ranks: reduce-scatter and all-gather steps each move S/2 both ways:
  // t_ar = 2 (alpha + S / (2 B)) = 2 alpha + S / B.
  const double B = 1e9, alpha = 20e-6, S = 8e6;
  const net::Topology t = cluster(2, 1, B, 10'000);
  const SystemConfig ring = system(SystemKind::kKungFu, coll::StrategyKind::kClassicRing);

  // Communication-bound: the only gradient is ready when backward ends, nothing overlaps it.
  // step = F + B0 + t_ar = 10 ms + 20 ms + (40 us + 8 ms) = 38.04 ms.
  const double comm_bound = step_of(t, toy_model({2'000'000}), profile(0.010, {0.020}), ring);
  CHECK(comm_bound == doctest::Approx(0.010 + 0.020 + 2 * alpha + S / B).epsilon(1e-6));

  // Compute-bound: the 8 MB gradient is ready first and its 8.04 ms all-reduce hides under the
  // last layer's 50 ms; only the 4-byte gradient's all-reduce is exposed: 2 alpha + 4 / B.
  // step = 10 + 20 + 50 ms + 40 us + 4 ns.
  const double compute_bound =
      step_of(t, toy_model({2'000'000, 1}), profile(0.010, {0.020, 0.050}), ring);
  CHECK(compute_bound == doctest::Approx(0.080 + 2 * alpha + 4 / B).epsilon(1e-6));
}

TEST_CASE("Horovod's message table releases a tensor once every rank reported it, in rank order") {
  HorovodMessageTable table(3);
  // Cycle 1: rank 0 reports a, b; rank 1 reports b; rank 2 reports b, a.
  // Counting rank by rank: b reaches 3 on rank 2's report of b, then a reaches 2 only.
  CHECK(table.add_cycle({{0, 1}, {1}, {1, 0}}) == std::vector<std::size_t>{1});
  CHECK(table.pending() == 1);
  // Cycle 2: rank 1 reports a: a reaches 3.
  CHECK(table.add_cycle({{}, {0}, {}}) == std::vector<std::size_t>{0});
  CHECK(table.pending() == 0);
}

TEST_CASE("Horovod tensor fusion packs consecutive tensors up to the threshold") {
  const std::vector<std::uint64_t> mib = {10, 20, 30, 5, 100, 40, 30};
  auto bytes = [&](std::size_t t) { return mib[t] << 20; };
  // 10+20+30 = 60 <= 64; +5 = 65 > 64 -> new group; 5 + 100 > 64 -> 100 alone (over the
  // threshold on its own); 40 + 30 = 70 > 64 -> separate.
  const auto groups = fuse_tensors({0, 1, 2, 3, 4, 5, 6}, bytes, 64ull << 20);
  CHECK(groups == std::vector<std::vector<std::size_t>>{{0, 1, 2}, {3}, {4}, {5}, {6}});
}

TEST_CASE("Horovod's cycle quantizes the step: ready tensors wait for the next cycle") {
  // Two workers, free network, cycle 5 ms, no update time. The gradient is ready at
  // F + B0 after the step starts; the background loop reports it at the next cycle start
  // (cycles begin at 0, 5, 10, ... ms) and the all-reduce takes ~0, so each step lasts the
  // cycle-aligned wait: ready at 2 ms -> 5 ms steps (3 ms waiting); ready at 6 ms -> 10 ms steps.
  const net::Topology t = cluster(2, 1, 1e15, 0);
  const Model m = toy_model({1000});
  SystemConfig hvd = system(SystemKind::kHorovod);
  hvd.cycle_time_ns = 5'000'000;
  const TrainingResult fast = simulate_training(t, m, profile(0.001, {0.001}), 0.0,
                                                GpuArch::kVolta, hvd, options());
  CHECK(fast.step_mean_s == doctest::Approx(0.005).epsilon(1e-5));
  CHECK(fast.exposed_wait_s == doctest::Approx(0.003).epsilon(1e-3));
  const TrainingResult slow = simulate_training(t, m, profile(0.001, {0.005}), 0.0,
                                                GpuArch::kVolta, hvd, options());
  CHECK(slow.step_mean_s == doctest::Approx(0.010).epsilon(1e-5));
}

TEST_CASE("jitter: the same seed gives the same steps, another seed others") {
  const net::Topology t = cluster(2, 1, 1.25e9, 10'000);
  const Model m = toy_model({1 << 20});
  const ComputeProfile p = profile(0.01, {0.02});
  TrainingOptions a = options(1, 5), b = a;
  b.seed = 2;
  const auto r1 = simulate_training(t, m, p, 0.05, GpuArch::kVolta, system(SystemKind::kKungFu), a);
  const auto r2 = simulate_training(t, m, p, 0.05, GpuArch::kVolta, system(SystemKind::kKungFu), a);
  const auto r3 = simulate_training(t, m, p, 0.05, GpuArch::kVolta, system(SystemKind::kKungFu), b);
  CHECK(r1.step_s == r2.step_s);
  CHECK(r1.step_s != r3.step_s);
  CHECK(r1.step_std_s > 0);
}
