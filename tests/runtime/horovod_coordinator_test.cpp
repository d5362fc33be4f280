// Horovod's coordinator: the message table and tensor fusion as pure functions, and the whole
// mechanism (background cycle, rank 0's table, fusion, in-order execution) driven through the
// System interface on a toy with known ready times.

#include "sim/runtime/horovod_coordinator.h"

#include <doctest/doctest.h>

#include <map>
#include <vector>

#include "sim/runtime/system.h"
#include "sim/simulate/sim_env.h"
#include "sim/topo/cluster_spec.h"
#include "tests/support/toy_model.h"

using namespace adaptsim;
using namespace adaptsim::runtime;
using adaptsim::train::GpuArch;
using adaptsim::train::Model;

namespace {

using train::testing::toy_model;

// The step loop's side of a system, without the step loop: the test hands gradients to the
// system at chosen times and records, per worker, when each collective was launched and
// finished (activity +1/-1) and when each tensor came back reduced.
class ProbeSink final : public StepSink {
 public:
  struct Group {
    TimeNs launch_ns = -1;
    TimeNs done_ns = -1;
    std::vector<std::size_t> tensors;
  };

  ProbeSink(const TrainingEnv& env, int workers) : env_(env), groups_(workers) {}
  // With horovod-nccl a fused group is one activity interval (the NCCL all-reduce) followed by
  // gradient_reduced for each of its tensors.
  void activity(int w, int delta) override {
    if (delta > 0) {
      groups_[w].push_back({env_.now(), -1, {}});
    } else {
      groups_[w].back().done_ns = env_.now();
    }
  }
  void gradient_reduced(int w, std::size_t t) override { groups_[w].back().tensors.push_back(t); }

  const std::vector<Group>& groups(int w) const { return groups_[w]; }

 private:
  const TrainingEnv& env_;
  std::vector<std::vector<Group>> groups_;
};

}  // namespace

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

TEST_CASE("Horovod coordinator toy: fused groups per cycle and each tensor's cycle delay") {
  // Two 1-GPU servers on a free network (1e15 B/s, no latency): negotiation messages take ~1 ns,
  // so every delay below is the coordinator's. horovod-nccl, so each fused group is one NCCL
  // all-reduce; the coordinator (cycle, table, fusion) is the same code as Horovod over MPI.
  topo::ClusterSpec c;
  c.name = "toy";
  c.servers = 2;
  c.server.pcie = {1e15, 0};
  c.server.cpu_loopback_bandwidth_Bps = 1e15;
  c.server.nic = {1e15, 0};
  const topo::Topology topo = topo::build_cluster(c);
  // float32 tensors: t0 2 MB, t1 2 MB, t2 3 MB, t3 1 MB.
  const Model m = toy_model({500'000, 500'000, 750'000, 250'000});
  constexpr TimeNs ms = kNsPerMs;

  SystemConfig hvd;
  hvd.kind = SystemKind::kHorovodNccl;
  hvd.cycle_time_ns = 5 * ms;    // Horovod 0.16's default
  hvd.fusion_bytes = 5'000'000;  // small: at most 5 MB per fused buffer
  simulate::SimEnv env(topo, m, {.host_transport = {.endpoint = fabric::Endpoint::kHost}});
  ProbeSink sink(env, 2);
  std::unique_ptr<System> sys = make_system(hvd);
  std::vector<std::uint64_t> bytes;
  for (const train::Tensor& t : m.backward_order)
    bytes.push_back(t.elements * 4);
  // One step: every worker's loop stops after the cycle that reduced its last gradient.
  sys->attach({.env = &env, .sink = &sink, .model = &m, .tensor_bytes = bytes, .total_steps = 1});
  // Ready times: t0, t1, t2 at 1, 2, 3 ms on both workers; t3 at 6 ms on worker 0 but 11 ms on
  // worker 1.
  const std::map<std::size_t, std::vector<TimeNs>> ready = {
      {0, {1 * ms, 1 * ms}}, {1, {2 * ms, 2 * ms}}, {2, {3 * ms, 3 * ms}}, {3, {6 * ms, 11 * ms}}};
  for (const auto& [t, at] : ready) {
    for (int w = 0; w < 2; ++w) {
      env.engine().schedule_at(at[w], [&sys, w, t = t] { sys->gradient_ready(w, 0, t); });
    }
  }
  env.engine().run();

  // Every worker's background loop wakes at 0, 5, 10, 15 ms (nothing it runs lasts a cycle):
  //   cycle  5 ms: both report t0, t1, t2 -> all three ready everywhere, in report order.
  //                Fusion, threshold 5 MB: 2 + 2 = 4 MB <= 5; 4 + 3 = 7 MB > 5 -> {t0, t1}, {t2}.
  //   cycle 10 ms: worker 0 reports t3 (ready at 6 ms); worker 1 has not -> count 1 of 2, nothing.
  //   cycle 15 ms: worker 1 reports t3 (ready at 11 ms) -> {t3}.
  // Each group is one NCCL all-reduce of NCCL's predicted time d(bytes); groups of a cycle run one
  // after another. Cycle delay = the cycle that released the tensor - its ready time:
  //   t0: 5 - 1 = 4 ms, t1: 5 - 2 = 3 ms, t2: 5 - 3 = 2 ms (+ d(4 MB) queued behind {t0, t1}),
  //   t3: 15 - 6 = 9 ms on worker 0, 15 - 11 = 4 ms on worker 1.
  const train::NcclCommParams params =
      train::nccl_params_from_topology(topo, {0, 1}, GpuArch::kVolta);
  auto d = [&](std::uint64_t b) {
    return to_seconds(seconds_to_ns_ceil(
        train::nccl_predict(train::NcclColl::kAllReduce, b, params).time_us * 1e-6));
  };
  const double d01 = d(4'000'000), d2 = d(3'000'000), d3 = d(1'000'000);
  // 2 nodes x 1 GPU, 1 channel of 1e6 GB/s: Ring/Simple wins at these sizes with
  // d = 8.4 + 2 x 9.6 us + bytes / (1e3 x 1e6 GB/s): 27.604 us for 4 MB.
  CHECK(d01 == doctest::Approx(27.604e-6).epsilon(1e-9));
  // doctest's Approx scales epsilon by (1 + |value|): for seconds it is an absolute tolerance.
  const double tol = 1e-7;  // 100 ns: negotiation messages take a few ns on this network
  for (int w = 0; w < 2; ++w) {
    CAPTURE(w);
    const std::vector<ProbeSink::Group>& g = sink.groups(w);
    REQUIRE(g.size() == 3);
    CHECK(g[0].tensors == std::vector<std::size_t>{0, 1});
    CHECK(g[1].tensors == std::vector<std::size_t>{2});
    CHECK(g[2].tensors == std::vector<std::size_t>{3});
    // {t0, t1} launches at the 5 ms cycle: cycle delays 4 and 3 ms.
    CHECK(to_seconds(g[0].launch_ns) - to_seconds(ready.at(0)[w]) ==
          doctest::Approx(0.004).epsilon(tol));
    CHECK(to_seconds(g[0].launch_ns) - to_seconds(ready.at(1)[w]) ==
          doctest::Approx(0.003).epsilon(tol));
    CHECK(to_seconds(g[0].done_ns) == doctest::Approx(0.005 + d01).epsilon(tol));
    // {t2}: released by the same cycle (2 ms delay), launched when {t0, t1} finished.
    CHECK(to_seconds(g[1].launch_ns) == doctest::Approx(0.005 + d01).epsilon(tol));
    CHECK(to_seconds(g[1].done_ns) == doctest::Approx(0.005 + d01 + d2).epsilon(tol));
    // {t3}: released at 15 ms, when the last worker reported it.
    CHECK(to_seconds(g[2].launch_ns) == doctest::Approx(0.015).epsilon(tol));
    CHECK(to_seconds(g[2].done_ns) == doctest::Approx(0.015 + d3).epsilon(tol));
  }
  // t3's cycle delay differs by worker: 9 ms on worker 0, 4 ms on worker 1.
  CHECK(to_seconds(sink.groups(0)[2].launch_ns) - 0.006 == doctest::Approx(0.009).epsilon(tol));
  CHECK(to_seconds(sink.groups(1)[2].launch_ns) - 0.011 == doctest::Approx(0.004).epsilon(tol));
}
