// The training runtime in the simulated environment against hand calculations on toy models and
// clusters.

#include "sim/simulate/simulate_training.h"

#include <doctest/doctest.h>

#include <cmath>

#include "sim/topo/cluster_spec.h"
#include "tests/support/toy_model.h"

using namespace adaptsim;
using namespace adaptsim::train;
using namespace adaptsim::runtime;
using adaptsim::simulate::TrainingOptions;

namespace {

template <typename... Args>
TrainingResult run_training(Args&&... args) {
  return simulate::simulate_training(std::forward<Args>(args)...).result;
}

using testing::toy_model;

ComputeProfile profile(double forward_s, std::vector<double> backward_s, double optimizer_s = 0) {
  ComputeProfile p;
  p.forward_s = forward_s;
  p.backward_layer_s = std::move(backward_s);
  p.optimizer_s = optimizer_s;
  return p;
}

// `servers` x `gpus` behind one switch: NIC bandwidth B and per-hop latency; PCIe, loopback and
// reductions effectively free.
topo::Topology cluster(int servers, int gpus, double nic_Bps, TimeNs hop_ns) {
  topo::ClusterSpec c;
  c.name = "toy";
  c.servers = servers;
  c.server.gpus = gpus;
  c.server.pcie = {1e15, 0};
  c.server.cpu_loopback_bandwidth_Bps = 1e15;
  c.server.nvswitch = topo::LinkParams{1e15, 0};
  c.server.nic = {nic_Bps, hop_ns};
  return topo::build_cluster(c);
}

TrainingOptions options(int warmup = 1, int steps = 3) {
  TrainingOptions o;
  o.compute.batch_per_gpu = 32;
  o.warmup_steps = warmup;
  o.measured_steps = steps;
  return o;
}

SystemConfig system(SystemKind kind,
                    coll::StrategyKind strategy = coll::StrategyKind::kBinaryTreeStar) {
  SystemConfig c;
  c.kind = kind;
  c.strategy = strategy;
  c.chunk_bytes = 1ull << 30;  // one chunk per tensor: closed forms stay simple
  return c;
}

double step_of(const topo::Topology& t, const Model& m, const ComputeProfile& p,
               const SystemConfig& s, const TrainingOptions& o = options()) {
  return run_training(t, m, p, 0.0, GpuArch::kVolta, s, o).step_mean_s;
}

}  // namespace

TEST_CASE("a single GPU: every system equals ideal, Horovod's cycle aside") {
  // One worker, no peer: staging copies are free here and every collective is a local copy, so
  // the step is forward + backward + update = 10 + (20 + 30) + 5 ms = 65 ms.
  const topo::Topology t = cluster(1, 1, 1.25e9, 10'000);
  const Model m = toy_model({1 << 20, 1 << 18});
  const ComputeProfile p = profile(0.010, {0.020, 0.030}, 0.005);
  const double ideal = step_of(t, m, p, system(SystemKind::kIdeal));
  CHECK(ideal == doctest::Approx(0.065).epsilon(1e-6));
  // Horovod's background loop runs on one rank too (Horovod 0.16's RunLoopOnce has no size-1
  // shortcut: it sleeps to the next cycle, then negotiates with itself); with a 10 us cycle a
  // tensor waits < 10 us, 1.5e-4 of the step.
  for (SystemKind k : {SystemKind::kKungFu, SystemKind::kHorovod, SystemKind::kNcclScheduled,
                       SystemKind::kHierarchical, SystemKind::kHorovodNccl}) {
    SystemConfig s = system(k);
    s.cycle_time_ns = 10'000;
    CHECK_MESSAGE(step_of(t, m, p, s) == doctest::Approx(ideal).epsilon(2e-4), system_kind_name(k));
  }
}

TEST_CASE("a single GPU: Horovod's default 5 ms cycle delays the last gradient") {
  // Forward 10 ms, backward 21 + 31 ms, update 5 ms: ideal = 67 ms. Horovod's loop wakes every
  // 5 ms from t = 0 (nothing it runs takes a cycle, so the wake-ups stay at multiples of 5 ms):
  //   t0 ready at 31 ms -> reported at 35 ms, hidden under the second layer (ends at 62 ms);
  //   t1 ready at 62 ms -> reported at 65 ms: 3 ms exposed wait, then the 5 ms update.
  // Step = 5 ms x ceil(62 / 5) + 5 ms = 70 ms, a multiple of the cycle, so every step starts on a
  // wake-up and repeats the same 3 ms wait.
  const topo::Topology t = cluster(1, 1, 1.25e9, 10'000);
  const Model m = toy_model({1 << 20, 1 << 18});
  const ComputeProfile p = profile(0.010, {0.021, 0.031}, 0.005);
  CHECK(step_of(t, m, p, system(SystemKind::kIdeal)) == doctest::Approx(0.067).epsilon(1e-6));
  for (SystemKind k : {SystemKind::kHorovod, SystemKind::kHorovodNccl}) {
    CAPTURE(system_kind_name(k));
    const TrainingResult r = run_training(t, m, p, 0.0, GpuArch::kVolta, system(k), options());
    CHECK(r.step_mean_s == doctest::Approx(0.070).epsilon(1e-6));
    CHECK(r.exposed_wait_s == doctest::Approx(0.003).epsilon(1e-5));
  }
}

TEST_CASE("infinite bandwidth and no latency: every system equals ideal") {
  // 2 servers x 2 GPUs with (near) infinite links. KungFu and Horovod become exactly ideal (up to
  // nanosecond rounding and a 10 us Horovod cycle); NCCL keeps its model's microsecond latency
  // per collective, a negligible share of the 300 ms step.
  const topo::Topology t = cluster(2, 2, 1e15, 0);
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
  const topo::Topology t = cluster(2, 1, B, 10'000);
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

TEST_CASE("two workers, Horovod over MPI: cycle, negotiation, fusion and ring by hand") {
  // The cluster of the previous case (B = 1e9 B/s, alpha = 20 us; PCIe and CPU free), Horovod's
  // 5 ms cycle and 64 B per tensor in requests and responses (8 B header): q(k) = (8 + 64 k) / B.
  // Each list is preceded by its 4-byte length (MPI_Gather / MPI_Bcast of the length, then the
  // list), on the same connection: a list arrives alpha + (4 + bytes) / B after it is sent.
  // Rank 1 is the later worker and sets the pace. Per step, from rank 1's start:
  //   - its gradients wait for its background loop's next wake-up at 35 ms (when a ring lasts
  //     more than a cycle the loop wakes right after it, i.e. when the step starts);
  //   - request to rank 0: alpha + l + q (l = 4 / B); rank 0 answers at once (MPI_Bcast before
  //     executing): alpha + l + q, so rank 1 starts its ring 2 alpha + 2 (l + q) after the
  //     wake-up, 20 us after rank 0;
  //   - ring of S bytes on 2 ranks, rank 1 finishing 2 alpha + S / B after its own start (rank 0
  //     1 alpha earlier), so the step repeats from there.
  // step = 35 ms + 2 alpha + 2 (l + q) + (2 alpha + S / B) per fused buffer (see the ring trace
  // below). (doctest's Approx scales epsilon by 1 + |value|, so for seconds it is an absolute
  // tolerance: 1e-9 = 1 ns, below the 8 ns of the two lengths and the 272 ns of the lists.)
  // The MPI is Open MPI's ring with every message eager here (the release's own choice and
  // ob1's rendezvous are the next case).
  const double B = 1e9, alpha = 20e-6, S = 8e6;
  const topo::Topology t = cluster(2, 1, B, 10'000);
  SystemConfig hvd = system(SystemKind::kHorovod);
  hvd.mpi.forced = coll::OmpiAllreduce::kRing;
  hvd.mpi.rendezvous = false;
  const double q2 = (8 + 64 * 2) / B;  // two tensors reported in one cycle: 136 B
  const double l = 4 / B;              // a list's length

  // Communication-bound: two 4 MB gradients ready at 31 and 32 ms (F = 10, B0 = 21, B1 = 1 ms),
  // both reported at the 35 ms wake-up and fused (8 MB <= 64 MiB) into one 8 MB ring:
  // step = 35 ms + 2 alpha + 2 (l + q) + 2 alpha + S / B = 35 + 0.04 + 0.00028 + 0.04 + 8 ms
  //      = 43.08028 ms.
  const Model two = toy_model({1'000'000, 1'000'000});
  const ComputeProfile late = profile(0.010, {0.021, 0.001});
  const double fused = step_of(t, two, late, hvd);
  CHECK(fused == doctest::Approx(0.035 + 4 * alpha + 2 * (l + q2) + S / B).epsilon(1e-9));

  // Without fusion (threshold 4 MB: 4 + 4 MB > 4 MB) the two 4 MB rings run one after the other.
  // Ring 1: rank 0 starts at a0, rank 1 at a1 = a0 + alpha; with m = S / (4 B) = 2 ms per half
  // tensor, rank 0 ends at a1 + 2m + alpha and rank 1 at a1 + 2m + 2 alpha. Ring 2 starts with
  // the same 1-alpha offset and again takes rank 1 2m + 2 alpha. So rank 1 spends
  // 2 (2m + 2 alpha) = S / B + 4 alpha in rings: fusion saves one ring's 2 alpha = 40 us.
  // step = 35 ms + 2 alpha + 2 (l + q) + 4 alpha + S / B = 43.12028 ms.
  hvd.fusion_bytes = 4'000'000;
  const double unfused = step_of(t, two, late, hvd);
  CHECK(unfused == doctest::Approx(0.035 + 6 * alpha + 2 * (l + q2) + S / B).epsilon(1e-9));
  CHECK(unfused - fused == doctest::Approx(2 * alpha).epsilon(1e-3));

  // Compute-bound: a 2 MB gradient at 32 ms and a 4 B one at 82 ms (B1 = 50 ms). Every ring now
  // lasts < 5 ms (2 MB: 2 ms + 80 us), so both loops keep waking at multiples of 5 ms from t = 0:
  //   2 MB: wake-up 35 ms, done by 37.08 ms, hidden under the last layer;
  //   4 B: ready at 82 ms (+ the ~80 us by which rank 1 lags the grid) -> wake-up at 85 ms,
  //        then delta = 2 alpha + 2 (l + q(1)) + 2 alpha + 4 / B = 80.156 us of negotiation
  //        and ring.
  // Rank 1's step ends delta after a wake-up, the next wake-up comes 5 ms - delta into the next
  // step, so every step lasts 5 ms x ceil((82 ms + delta) / 5 ms) = 85 ms exactly. Exposed:
  // 2 alpha + 4 / B = 40 us of ring (link) and 3 ms - 40 us of waiting for the cycle and for
  // the negotiation messages (nothing of this worker's own in flight).
  hvd.fusion_bytes = 64ull << 20;
  const TrainingResult cb = run_training(t, toy_model({500'000, 1}), profile(0.010, {0.022, 0.050}),
                                         0.0, GpuArch::kVolta, hvd, options());
  CHECK(cb.step_mean_s == doctest::Approx(0.085).epsilon(1e-6));
  CHECK(cb.exposed_link_s == doctest::Approx(2 * alpha).epsilon(1e-3));
  CHECK(cb.exposed_wait_s == doctest::Approx(0.003 - 2 * alpha).epsilon(1e-4));
}

TEST_CASE("two workers, Horovod over Open MPI 4.0.0: its segmented ring and ob1's rendezvous") {
  // The previous case's fused 8 MB buffer on 2 ranks with the defaults: 8 MB > 2 x 1 MiB, so
  // Open MPI 4.0's decision runs the segmented ring with 1 MiB segments: 2e6 elements over
  // 2 x 262144 per phase gives 3 phases and a remainder of 427136 > 262144, so 4 phases, each
  // reducing an eighth of the buffer (m = S / 8B), then one all-gather step of half of it. The
  // bytes are the ring's; the latencies are not. Rank 0 starts alpha before rank 1 (which sets
  // the pace, previous case), so in a phase one of them receives data sent alpha before it
  // started and waits no latency: rank 1 ends its part at 3 alpha + S/B (relative to rank 0's
  // start) with the ring, at 5 alpha + S/B with the segmented ring (phase ends, rank 0 / rank 1:
  // 2a+m / a+m, 2a+2m / 3a+2m, 4a+3m / 3a+3m, 4a+4m / 5a+4m, gather 6a+S/B / 5a+S/B).
  // By rendezvous each message first sends a 40 B header and waits for the 40 B
  // acknowledgement, a round trip of 2 (alpha + h), h = 40 / B, on rank 1's path for each of
  // its messages: the ring's 2 messages end it at 7 alpha + S/B + 4h, the segmented ring's 5
  // at 15 alpha + S/B + 10h.
  const double B = 1e9, alpha = 20e-6, h = 40 / B;
  const topo::Topology t = cluster(2, 1, B, 10'000);
  const Model two = toy_model({1'000'000, 1'000'000});
  const ComputeProfile late = profile(0.010, {0.021, 0.001});
  SystemConfig ring = system(SystemKind::kHorovod);
  ring.mpi.forced = coll::OmpiAllreduce::kRing;
  ring.mpi.rendezvous = false;
  const double base = step_of(t, two, late, ring);
  SystemConfig seg = system(SystemKind::kHorovod);
  seg.mpi.rendezvous = false;
  CHECK(step_of(t, two, late, seg) - base == doctest::Approx(2 * alpha).epsilon(1e-9));
  SystemConfig ring_rndv = ring;
  ring_rndv.mpi.rendezvous = true;
  CHECK(step_of(t, two, late, ring_rndv) - base ==
        doctest::Approx(4 * alpha + 4 * h).epsilon(1e-9));
  // Open MPI 4.0.0 as shipped: both.
  const SystemConfig v400 = system(SystemKind::kHorovod);
  CHECK(step_of(t, two, late, v400) - base == doctest::Approx(12 * alpha + 10 * h).epsilon(1e-9));
}

TEST_CASE("two workers, NCCL with KungFu's scheduler: NCCL's formula time by hand") {
  // Same cluster. NCCL sees 2 nodes of 1 GPU joined by PCIe to a 1e9 B/s NIC: 1 channel of
  // min(PCIe, NIC) = 1 GB/s; Volta, 2 nodes; AllReduce ring: 2 steps, both over the network.
  //   Ring/Simple: latency 8.4 + 2 x 9.6 = 27.6 us, algbw = 1 x 2 / 2 = 1 GB/s;
  //   Ring/LL:     latency 3.6 + 2 x 2.7 = 9.0 us,  algbw = min(39, 0.5 x 1) = 0.5 GB/s;
  //   Tree/Simple: latency 2 x 50 = 100 us; Tree/LL: 4.4 + 2 x 5.0 = 14.4 us, 0.92/3.8/2 GB/s;
  //   (no LL128 on PCIe).
  // 8 MB: Ring/Simple 27.6 + 8e6 / 1e3 = 8027.6 us (LL: 9 + 16000 us).
  // 4 B: Ring/LL 9.0 + 4 / 500 = 9.008 us (Simple: 27.604 us).
  const topo::Topology t = cluster(2, 1, 1e9, 10'000);
  const NcclCommParams params = nccl_params_from_topology(t, {0, 1}, GpuArch::kVolta);
  CHECK(params.n_nodes == 2);
  CHECK(params.channels == 1);
  CHECK(params.intra == NcclIntraLink::kPcie);
  CHECK(params.inter_bw_per_channel_GBps == doctest::Approx(1.0));
  const NcclEstimate big = nccl_predict(NcclColl::kAllReduce, 8'000'000, params);
  CHECK((big.algo == NcclAlgo::kRing && big.proto == NcclProto::kSimple));
  CHECK(big.time_us == doctest::Approx(27.6 + 8000.0));
  const NcclEstimate tiny = nccl_predict(NcclColl::kAllReduce, 4, params);
  CHECK((tiny.algo == NcclAlgo::kRing && tiny.proto == NcclProto::kLL));
  CHECK(tiny.time_us == doctest::Approx(9.008));

  const SystemConfig nccl = system(SystemKind::kNcclScheduled);  // polls every 100 us

  // Communication-bound: the 8 MB gradient is ready at F + B0 = 30 ms; the scheduler's first task
  // of a step launches at once (the poll starts when the step's first gradient arrives):
  // step = 30 ms + 8027.6 us = 38.0276 ms.
  const double comm_bound = step_of(t, toy_model({2'000'000}), profile(0.010, {0.020}), nccl);
  CHECK(comm_bound == doctest::Approx(0.030 + 8027.6e-6).epsilon(1e-6));

  // Compute-bound: 8 MB at 30 ms (done at 38.03 ms, hidden), 4 B ready at 30 + 50.05 = 80.05 ms.
  // The executor polls every 100 us from its last launch (30 ms): it sees t1 at 80.1 ms.
  // step = 80.1 ms + 9.008 us = 80.109008 ms.
  const double compute_bound =
      step_of(t, toy_model({2'000'000, 1}), profile(0.010, {0.020, 0.05005}), nccl);
  CHECK(compute_bound == doctest::Approx(0.0801 + 9.008e-6).epsilon(1e-6));
}

TEST_CASE("Horovod's cycle quantizes the step: ready tensors wait for the next cycle") {
  // Two workers, free network, cycle 5 ms, no update time. The gradient is ready at
  // F + B0 after the step starts; the background loop reports it at the next cycle start
  // (cycles begin at 0, 5, 10, ... ms) and the all-reduce takes ~0, so each step lasts the
  // cycle-aligned wait: ready at 2 ms -> 5 ms steps (3 ms waiting); ready at 6 ms -> 10 ms steps.
  const topo::Topology t = cluster(2, 1, 1e15, 0);
  const Model m = toy_model({1000});
  SystemConfig hvd = system(SystemKind::kHorovod);
  hvd.cycle_time_ns = 5'000'000;
  const TrainingResult fast =
      run_training(t, m, profile(0.001, {0.001}), 0.0, GpuArch::kVolta, hvd, options());
  CHECK(fast.step_mean_s == doctest::Approx(0.005).epsilon(1e-5));
  CHECK(fast.exposed_wait_s == doctest::Approx(0.003).epsilon(1e-3));
  const TrainingResult slow =
      run_training(t, m, profile(0.001, {0.005}), 0.0, GpuArch::kVolta, hvd, options());
  CHECK(slow.step_mean_s == doctest::Approx(0.010).epsilon(1e-5));
}

TEST_CASE("jitter: the same seed gives the same steps, another seed others") {
  const topo::Topology t = cluster(2, 1, 1.25e9, 10'000);
  const Model m = toy_model({1 << 20});
  const ComputeProfile p = profile(0.01, {0.02});
  TrainingOptions a = options(1, 5), b = a;
  b.seed = 2;
  const auto r1 = run_training(t, m, p, 0.05, GpuArch::kVolta, system(SystemKind::kKungFu), a);
  const auto r2 = run_training(t, m, p, 0.05, GpuArch::kVolta, system(SystemKind::kKungFu), a);
  const auto r3 = run_training(t, m, p, 0.05, GpuArch::kVolta, system(SystemKind::kKungFu), b);
  CHECK(r1.step_s == r2.step_s);
  CHECK(r1.step_s != r3.step_s);
  CHECK(r1.step_std_s > 0);
}
