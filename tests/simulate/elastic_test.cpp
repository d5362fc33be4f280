// Elastic runs in the simulated environment (trainer.h, "Worker-set changes"): the phases of
// KungFu's resize protocol and of the restart baseline against hand calculations, and random
// schedules that must all run to their end.

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "sim/core/error.h"
#include "sim/core/rng.h"
#include "sim/io/yaml_reader.h"
#include "sim/simulate/simulate_training.h"
#include "tests/support/read_yaml.h"
#include "tests/support/toy_cluster.h"
#include "tests/support/toy_model.h"

using namespace adaptsim;
using namespace adaptsim::runtime;

namespace {

// 1-GPU servers behind one switch, 10 us per NIC hop: host to host 20 us one way, a 40 us
// round trip.
using topo::testing::one_gpu_servers;
constexpr double kOneWay = 20e-6;

SeamSpec seam(const std::string& policy) {
  return testing::read_yaml(
      "policy: " + policy + "\n", [](io::MapReader& r) { return read_seam(r); }, "t.yaml");
}

struct Run {
  TrainingResult result;
  double reading(int step, const std::string& key) const {
    const auto& r = result.steps.at(static_cast<std::size_t>(step)).readings;
    const auto it = r.find(key);
    return it == r.end() ? -1.0 : it->second;
  }
};

// A one-tensor toy model of `elements` float32 gradients: forward 10 ms, backward 20 ms.
Run run(int servers, const std::string& policy, ElasticSpec elastic, int steps,
        std::uint64_t elements = 1'000'000, double nic_Bps = 1e9,
        std::vector<WorkerFailure> failures = {}, int gpus = 1) {
  const topo::Topology t = one_gpu_servers(servers, nic_Bps, 10'000, gpus);
  const train::Model m = train::testing::toy_model({elements});
  const train::ComputeProfile p = train::testing::toy_compute(0.010, {0.020});
  SystemConfig system;
  system.kind = SystemKind::kKungFu;
  system.strategy = coll::StrategyKind::kBinaryTreeStar;
  system.chunk_bytes = 1ull << 30;
  simulate::TrainingOptions o;
  o.compute.batch_per_gpu = 32;
  o.warmup_steps = 0;
  o.measured_steps = steps;
  if (!policy.empty()) o.seam = seam(policy);
  o.elastic = elastic;
  o.failures = std::move(failures);
  return {simulate::simulate_training(t, m, p, 0.0, train::GpuArch::kVolta, system, o).result};
}

}  // namespace

TEST_CASE("KungFu's resize 1 -> 4 -> 1: each phase by hand") {
  ElasticSpec e;
  e.initial_workers = 1;
  // Resizes after steps 2 (to 4) and 5 (to 1); none after the last step, 8.
  const Run r = run(4, "{name: resize-schedule, every: 3, sizes: [1, 4]}", e, 9);
  REQUIRE(r.result.steps.size() == 9);
  for (int k = 0; k < 9; ++k)
    CHECK(r.result.steps[static_cast<std::size_t>(k)].workers == (k >= 3 && k <= 5 ? 4 : 1));
  const double write = 16667e-6, read = 652e-6, start = 23e-3;

  // Scale-up. Rank 0 alone writes the next version and reads it back; the consensus over one
  // worker costs nothing: write + read.
  CHECK(r.reading(2, "resize.consensus_s") == doctest::Approx(write + read).epsilon(1e-9));
  // A new worker's process runs a one-way trip (the notice to its runner) plus the process start
  // after rank 0 notified the runners.
  CHECK(r.reading(2, "resize.join.process_start_s") ==
        doctest::Approx(kOneWay + start).epsilon(1e-6));
  // Reconnecting: the longest round trip to the other hosts.
  CHECK(r.reading(2, "resize.reconnect_s") == doctest::Approx(2 * kOneWay).epsilon(1e-6));
  // The state broadcast over BINARY_TREE_STAR's tree on 4 one-GPU hosts: 0 -> {1, 2}, 1 -> 3;
  // the slowest worker, 3, has it when rank 0's NIC has carried 4 MB to each child at B/2 (8 ms)
  // and rank 1 has sent it on at B (4 ms), a one-way latency per hop.
  CHECK(r.reading(2, "resize.broadcast_s") ==
        doctest::Approx(8e6 / 1e9 + 4e6 / 1e9 + 2 * kOneWay).epsilon(5e-3));
  // Rank 0 waits at the barrier for the new workers' start.
  CHECK(r.reading(2, "resize.barrier_s") > start);
  const double total = r.reading(2, "resize.total_s");
  CHECK(total > write + read + start + 0.012);
  CHECK(total < write + read + start + 0.012 + 0.002);

  // Scale-down. Rank 0 writes while the others read the old version, so the first consensus fails
  // and every worker reads again after the 50 ms retry: write + read + 50 ms + read, plus four
  // tiny all-reduces over 4 hosts (tens of microseconds each).
  const double down = r.reading(5, "resize.consensus_s");
  CHECK(down > write + 2 * read + 0.050);
  CHECK(down < write + 2 * read + 0.050 + 0.001);
  // Nobody joins, and one worker needs no barrier and no broadcast.
  CHECK(r.reading(5, "resize.join.process_start_s") < 0);
  CHECK(r.reading(5, "resize.broadcast_s") == 0);
  // The resize is not a step's time: the step after it is a plain step (10 + 20 ms).
  CHECK(r.result.steps[6].time_s == doctest::Approx(0.030).epsilon(1e-3));
  // Steps without a resize pay the store read and the consensus of elastic mode.
  CHECK(r.reading(7, "elastic.check_s") == doctest::Approx(read).epsilon(1e-6));
}

TEST_CASE("KungFu's resize: the state broadcast carries the optimizer's slots") {
  ElasticSpec e;
  e.initial_workers = 1;
  const double plain =
      run(2, "{name: resize, step: 1, workers: 2}", e, 4).reading(1, "resize.broadcast_s");
  e.optimizer_slots = 1;
  const double momentum =
      run(2, "{name: resize, step: 1, workers: 2}", e, 4).reading(1, "resize.broadcast_s");
  // One hop of 4 MB, then 8 MB, at 1e9 B/s.
  CHECK(plain == doctest::Approx(4e6 / 1e9 + kOneWay).epsilon(1e-3));
  CHECK(momentum == doctest::Approx(8e6 / 1e9 + kOneWay).epsilon(1e-3));
}

TEST_CASE("restart 1 -> 2: checkpoint, process start, restore, connect by hand") {
  ElasticSpec e;
  e.mechanism = ResizeMechanism::kRestart;
  e.initial_workers = 1;
  const Run r = run(2, "{name: resize, step: 1, workers: 2}", e, 4);
  CHECK(r.result.steps[2].workers == 2);
  // 4 MB of parameters at 500 MB/s written, at 520 MB/s read.
  const double write = 4e6 / 500e6, read = 4e6 / 520e6, start = 23e-3;
  CHECK(r.reading(1, "resize.checkpoint_s") == doctest::Approx(write).epsilon(1e-6));
  CHECK(r.reading(1, "resize.join.restore_s") == doctest::Approx(read).epsilon(1e-6));
  // The far runner hears of it a one-way trip after rank 0 notified.
  CHECK(r.reading(1, "resize.join.process_start_s") ==
        doctest::Approx(kOneWay + start).epsilon(1e-6));
  CHECK(r.reading(1, "resize.join.connect_s") == doctest::Approx(2 * kOneWay).epsilon(1e-6));
  // The whole: the write, then the slowest new process's start, read and connect, then the
  // barrier (one small all-reduce between the two hosts).
  const double total = r.reading(1, "resize.total_s");
  CHECK(total > write + kOneWay + start + read + 2 * kOneWay);
  CHECK(total < write + kOneWay + start + read + 2 * kOneWay + 0.0005);
  // No store reads in the baseline.
  CHECK(r.reading(2, "elastic.check_s") < 0);
}

TEST_CASE("restart 1 -> 4 on one 4-GPU server: the four processes share the server's disk") {
  ElasticSpec e;
  e.mechanism = ResizeMechanism::kRestart;
  e.initial_workers = 1;
  const Run r = run(1, "{name: resize, step: 1, workers: 4}", e, 4, 1'000'000, 1e9, {}, 4);
  CHECK(r.result.steps[2].workers == 4);
  // One writer alone; then four readers at once, each at a quarter of 520 MB/s.
  CHECK(r.reading(1, "resize.checkpoint_s") == doctest::Approx(4e6 / 500e6).epsilon(1e-6));
  CHECK(r.reading(1, "resize.join.restore_s") == doctest::Approx(4 * 4e6 / 520e6).epsilon(1e-6));
}

TEST_CASE("restart: the runner starts the new processes once the old ones have exited") {
  // process_exit 40 ms: on one 4-GPU server, 4 -> 1 restarts after the 4 old processes' exits
  // (at once: they overlap), 1 -> 4 after the lone old one's; KungFu's resize waits for none.
  ElasticSpec e;
  e.mechanism = ResizeMechanism::kRestart;
  e.initial_workers = 4;
  e.process_exit_ns = 40 * kNsPerMs;
  const double start = to_seconds(e.process_start_ns), exit = 0.040;
  const Run shrink = run(1, "{name: resize, step: 1, workers: 1}", e, 4, 1'000'000, 1e9, {}, 4);
  CHECK(shrink.result.steps[2].workers == 1);
  CHECK(shrink.reading(1, "resize.join.process_start_s") ==
        doctest::Approx(exit + start).epsilon(1e-6));
  e.initial_workers = 1;
  const Run grow = run(1, "{name: resize, step: 1, workers: 4}", e, 4, 1'000'000, 1e9, {}, 4);
  CHECK(grow.reading(1, "resize.join.process_start_s") ==
        doctest::Approx(exit + start).epsilon(1e-6));
  e.mechanism = ResizeMechanism::kKungFu;
  const Run kungfu = run(1, "{name: resize, step: 1, workers: 4}", e, 4, 1'000'000, 1e9, {}, 4);
  CHECK(kungfu.reading(1, "resize.join.process_start_s") == doctest::Approx(start).epsilon(1e-6));
}

TEST_CASE("restart with a page cache: written into memory, read back on the writer's server") {
  // Processor sharing of the server's 2 cores: the one write alone at the cache's rate; the
  // four new processes' start-ups, then their four reads, at half of a core each.
  ElasticSpec e;
  e.mechanism = ResizeMechanism::kRestart;
  e.initial_workers = 1;
  e.server_cores = 2;
  e.cache_write_Bps = 1e9;
  e.cache_read_Bps = 4e9;
  const Run r = run(1, "{name: resize, step: 1, workers: 4}", e, 4, 1'000'000, 1e9, {}, 4);
  CHECK(r.result.steps[2].workers == 4);
  CHECK(r.reading(1, "resize.checkpoint_s") == doctest::Approx(4e6 / 1e9).epsilon(1e-6));
  CHECK(r.reading(1, "resize.join.process_start_s") ==
        doctest::Approx(4 * to_seconds(e.process_start_ns) / 2).epsilon(1e-6));
  CHECK(r.reading(1, "resize.join.restore_s") == doctest::Approx(4 * 4e6 / 4e9 / 2).epsilon(1e-6));
  // On 1-GPU servers the reader on another server than the writer's reads its disk; the writer's
  // own server (worker 0's, restarted) reads the cache: the slowest is the disk's.
  const Run spread = run(2, "{name: resize, step: 1, workers: 2}", e, 4);
  CHECK(spread.reading(1, "resize.join.restore_s") == doctest::Approx(4e6 / 520e6).epsilon(1e-6));
}

TEST_CASE("elastic: a page cache needs both rates, and cores are a whole number") {
  auto fails = [](const std::string& text) {
    const io::Document doc = io::Document::parse_string(text, "e.yaml");
    io::MapReader r(doc, doc.root(), "elastic");
    try {
      read_elastic(r, 4);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK(fails("cache_write: 1GB/s\n").find("key 'elastic.cache_read': expected with the other") !=
        std::string::npos);
  CHECK(fails("server_cores: 1.5\n").find("key 'elastic.server_cores': expected a whole number") !=
        std::string::npos);
  CHECK(fails("server_cores: 2\ncache_write: 1GB/s\ncache_read: 2GB/s\n") == "accepted");
}

TEST_CASE("elastic runs are deterministic") {
  ElasticSpec e;
  e.initial_workers = 2;
  const std::string policy = "{name: resize-schedule, every: 2, sizes: [3, 1, 4]}";
  const Run a = run(4, policy, e, 10), b = run(4, policy, e, 10);
  CHECK(a.result.steps == b.result.steps);
}

TEST_CASE("1000 random resize schedules and kills run to their last step at the sizes expected") {
  // Sizes 1..4 on 4 servers, a resize every 1..3 steps, either mechanism, and in half of the
  // KungFu runs a worker killed at a random step; a small model so that each run is quick. Every
  // run must end (the engine drains) with every step's row holding the size the schedule and the
  // kill gave it. Growth order on 1-GPU servers is the identity: a cluster of n is workers 0..n-1.
  Rng rng(20261126);
  int kills = 0;
  for (int i = 0; i < 1000; ++i) {
    ElasticSpec e;
    e.mechanism = rng.below(2) ? ResizeMechanism::kRestart : ResizeMechanism::kKungFu;
    e.initial_workers = static_cast<int>((1 + rng.below(4)));
    e.failure_timeout_ns = kNsPerSecond;
    const int every = static_cast<int>((1 + rng.below(3)));
    std::vector<int> sizes;
    std::string list;
    const int count = static_cast<int>((2 + rng.below(3)));
    for (int k = 0; k < count; ++k) {
      sizes.push_back(static_cast<int>((1 + rng.below(4))));
      list += (k ? ", " : "") + std::to_string(sizes.back());
    }
    const int steps = static_cast<int>((2 + rng.below(7)));
    std::vector<WorkerFailure> failures;
    if (e.mechanism == ResizeMechanism::kKungFu && rng.below(2)) {
      failures.push_back({.worker = static_cast<int>(rng.below(4)),
                          .step = static_cast<int>(rng.below(static_cast<std::uint64_t>(steps)))});
    }
    INFO("run " << i << ": every " << every << ", sizes [" << list << "], initial "
                << e.initial_workers << ", steps " << steps << ", kill "
                << (failures.empty() ? "none"
                                     : std::to_string(failures[0].worker) + " at step " +
                                           std::to_string(failures[0].step)));
    // The expected cluster, step by step: the schedule's resize of the current cluster, less a
    // worker that dies; a job whose last worker dies fails.
    std::vector<int> cluster, expected;
    for (int w = 0; w < e.initial_workers; ++w)
      cluster.push_back(w);
    for (int k = 0; k < steps; ++k) {
      if (!failures.empty() && failures[0].step == k) {
        const auto it = std::find(cluster.begin(), cluster.end(), failures[0].worker);
        if (it != cluster.end()) {
          cluster.erase(it);
          ++kills;
        }
      }
      expected.push_back(static_cast<int>(cluster.size()));
      if (cluster.empty()) break;
      if ((k + 1) % every == 0) {
        const int n = sizes[static_cast<std::size_t>((k + 1) / every) % sizes.size()];
        cluster.resize(std::min<std::size_t>(cluster.size(), static_cast<std::size_t>(n)));
        for (int w = 0; static_cast<int>(cluster.size()) < n; ++w)
          if (std::find(cluster.begin(), cluster.end(), w) == cluster.end()) cluster.push_back(w);
      }
    }
    const std::string policy =
        "{name: resize-schedule, every: " + std::to_string(every) + ", sizes: [" + list + "]}";
    if (expected.back() == 0) {
      CHECK_THROWS_WITH_AS(run(4, policy, e, steps, 1000, 1e9, failures),
                           doctest::Contains("every worker of the cluster failed"), RuntimeFailure);
      continue;
    }
    const Run r = run(4, policy, e, steps, 1000, 1e9, failures);
    REQUIRE(r.result.steps.size() == static_cast<std::size_t>(steps));
    for (int k = 0; k < steps; ++k)
      CHECK(r.result.steps[static_cast<std::size_t>(k)].workers ==
            expected[static_cast<std::size_t>(k)]);
  }
  CHECK(kills > 100);  // the kills did happen, mid-run
}

TEST_CASE("a worker killed at step 3 of 4: the others find its lapsed lease, shrink and redo it") {
  // Killed, or paused for 3 s (SIGSTOP, a preempted VM; its lease lapses 2 s in): the others find
  // it alike. The paused one, when it runs again, finds its own lease lapsed, reads the store, sees
  // a newer cluster without it and leaves (before the store was read, it retried for ever in a
  // cluster nobody else was in: the simulation never ended).
  for (const WorkerFailure& failure :
       {WorkerFailure{.worker = 2, .step = 3}, WorkerFailure{.worker = 2,
                                               .step = 3,
                                               .mode = WorkerFailure::Mode::kPause,
                                               .pause_ns = 3 * kNsPerSecond}}) {
    CAPTURE(failure.pause_ns);
    ElasticSpec e;
    e.failure_timeout_ns = 2 * kNsPerSecond;
    const Run r = run(4, "", e, 6, 1'000'000, 1e9, {failure});
    REQUIRE(r.result.steps.size() == 6);
    for (int k = 0; k < 6; ++k)
      CHECK(r.result.steps[static_cast<std::size_t>(k)].workers == (k < 3 ? 4 : 3));
    // Detection: the watchdog fires failure_timeout after the step began; the lease lapsed as
    // long after the death (or pause) at that step's start; then a lease read, the swap and a read
    // of the store.
    const double read = 652e-6, write = 16667e-6;
    CHECK(r.reading(3, "failure.detect_s") ==
          doctest::Approx(2.0 + read + write + read).epsilon(1e-6));
    // The redone step is a plain step of 3 workers (the recovery is not its time), and the state
    // was broadcast to the survivors.
    CHECK(r.result.steps[3].time_s == doctest::Approx(r.result.steps[4].time_s).epsilon(0.01));
    CHECK(r.reading(3, "resize.broadcast_s") > 0);
  }
}

TEST_CASE(
    "a paused worker checks its lease when it runs again, so a cluster regrown after can start it "
    "anew") {
  // Worker 2 pauses at step 3 for 1.2 s with leases of 400 ms: dropped at about 0.42 s. It runs
  // again at 1.2 s, finds its own lease lapsed, reads the store and leaves at once. The policy
  // grows the cluster back to 4 at step 23 (about 1.4 s): its runner sees no process for worker 2
  // and starts a new one, which joins. Waiting for its watchdog instead (1.6 s), the old process
  // would still run at the resize, nobody would start a new one, and the resize would wait for
  // ever.
  ElasticSpec e;
  e.failure_timeout_ns = 400 * kNsPerMs;
  const Run r = run(
      4, "{name: resize, step: 23, workers: 4}", e, 30, 1'000'000, 1e9,
      {{.worker = 2, .step = 3, .mode = WorkerFailure::Mode::kPause, .pause_ns = 1200 * kNsPerMs}});
  REQUIRE(r.result.steps.size() == 30);
  for (int k = 0; k < 30; ++k) {
    CAPTURE(k);
    CHECK(r.result.steps[static_cast<std::size_t>(k)].workers == (k < 3 ? 4 : k < 24 ? 3 : 4));
  }
  CHECK(r.reading(23, "resize.join.process_start_s") > 0);  // a new process for worker 2
}

TEST_CASE("a dropped worker back while a regrown cluster waits for it joins it as a new process") {
  // Worker 2 pauses at step 3 for 800 ms with leases of 400 ms: dropped at about 0.42 s. The
  // cluster grows back to 4 at step 5 (about 0.6 s), while it still sleeps: its runner sees its
  // process and starts none, and the others wait for it at the resize's barrier. It runs again at
  // 0.8 s, before their watchdog (1.0 s), finds itself in a version two past its own, reads that
  // version's notice from the store and joins as a new process would: connections, barrier,
  // offset agreement, state broadcast. (Before, the run failed here with one line.)
  ElasticSpec e;
  e.failure_timeout_ns = 400 * kNsPerMs;
  const WorkerFailure pause{
      .worker = 2, .step = 3, .mode = WorkerFailure::Mode::kPause, .pause_ns = 800 * kNsPerMs};
  const Run r = run(4, "{name: resize, step: 5, workers: 4}", e, 12, 1'000'000, 1e9, {pause});
  REQUIRE(r.result.steps.size() == 12);
  for (int k = 0; k < 12; ++k) {
    CAPTURE(k);
    CHECK(r.result.steps[static_cast<std::size_t>(k)].workers == (k < 3 || k > 5 ? 4 : 3));
  }
  // No process started for it: it read the notice (a store read) and connected.
  CHECK(r.reading(5, "resize.join.process_start_s") == -1.0);
  CHECK(r.reading(5, "resize.join.notice_s") == doctest::Approx(652e-6).epsilon(1e-6));
  CHECK(r.reading(5, "resize.join.connect_s") > 0);
  CHECK(r.reading(5, "resize.broadcast_s") > 0);
  // The others waited at the barrier until it ran again at 0.8 s: the resize took most of the
  // time from the regrowth to then.
  CHECK(r.reading(5, "resize.barrier_s") > 0.1);
  CHECK(r.result.steps[7].time_s == doctest::Approx(r.result.steps[8].time_s).epsilon(0.01));
  // Back after the others' watchdog: dropped a second time, and the run goes on at 3.
  const Run late = run(
      4, "{name: resize, step: 5, workers: 4}", e, 12, 1'000'000, 1e9,
      {{.worker = 2, .step = 3, .mode = WorkerFailure::Mode::kPause, .pause_ns = 1200 * kNsPerMs}});
  REQUIRE(late.result.steps.size() == 12);
  for (int k = 0; k < 12; ++k)
    CHECK(late.result.steps[static_cast<std::size_t>(k)].workers == (k < 3 ? 4 : 3));
  CHECK(late.reading(6, "failure.detect_s") > 0.4);
}

TEST_CASE("a pause shorter than the lease only delays the step") {
  ElasticSpec e;
  e.failure_timeout_ns = 2 * kNsPerSecond;
  const Run plain = run(4, "", e, 6);
  const Run r = run(
      4, "", e, 6, 1'000'000, 1e9,
      {{.worker = 2, .step = 3, .mode = WorkerFailure::Mode::kPause, .pause_ns = 500 * kNsPerMs}});
  REQUIRE(r.result.steps.size() == 6);
  for (int k = 0; k < 6; ++k) {
    CAPTURE(k);
    CHECK(r.result.steps[static_cast<std::size_t>(k)].workers == 4);
    CHECK(r.reading(k, "failure.detect_s") == -1.0);
  }
  // The other three wait the 500 ms for it in step 3's all-reduce, and the paused worker's own
  // step holds its pause (its clock runs from the end of the previous step's checks): every
  // worker's step 3 is 500 ms longer.
  CHECK(r.result.steps[3].time_s - plain.result.steps[3].time_s ==
        doctest::Approx(0.5).epsilon(0.01));
  CHECK(r.result.steps[4].time_s == doctest::Approx(plain.result.steps[4].time_s).epsilon(1e-6));
}

TEST_CASE("random pauses beside kills: no hang, and every step's cluster as the leases say") {
  // 300 runs of 2-5 workers: one worker pauses at a random step, for well under its lease (only
  // a delay) or well over it (dropped; it leaves once it runs again), and in half the runs
  // another worker is killed at a random step. Each run must end, at the expected sizes.
  Rng rng(20261207);
  int drops = 0;
  for (int i = 0; i < 300; ++i) {
    const int n = static_cast<int>(2 + rng.below(4));
    const int steps = static_cast<int>(2 + rng.below(7));
    ElasticSpec e;
    e.failure_timeout_ns = static_cast<TimeNs>(200 + rng.below(800)) * kNsPerMs;
    const bool longer = rng.below(2) != 0;
    const TimeNs pause = longer ? e.failure_timeout_ns * static_cast<TimeNs>(2 + rng.below(4))
                                : e.failure_timeout_ns / static_cast<TimeNs>(2 + rng.below(4));
    std::vector<WorkerFailure> failures = {
        {.worker = static_cast<int>(rng.below(static_cast<std::uint64_t>(n))),
         .step = static_cast<int>(rng.below(static_cast<std::uint64_t>(steps))),
         .mode = WorkerFailure::Mode::kPause,
         .pause_ns = pause}};
    if (n > 2 && rng.below(2)) {
      const int killed = (failures[0].worker + 1 +
                          static_cast<int>(rng.below(static_cast<std::uint64_t>(n - 1)))) %
                         n;
      failures.push_back({.worker = killed,
                          .step = static_cast<int>(rng.below(static_cast<std::uint64_t>(steps)))});
    }
    INFO("run " << i << ": " << n << " workers, " << steps << " steps, timeout "
                << e.failure_timeout_ns << " ns, worker " << failures[0].worker << " pauses "
                << pause << " ns at step " << failures[0].step
                << (failures.size() > 1 ? ", worker " + std::to_string(failures[1].worker) +
                                              " killed at step " + std::to_string(failures[1].step)
                                        : std::string()));
    std::vector<int> expected;
    int size = n;
    for (int k = 0; k < steps; ++k) {
      if (longer && failures[0].step == k) --size;
      if (failures.size() > 1 && failures[1].step == k) --size;
      expected.push_back(size);
    }
    const Run r = run(n, "", e, steps, 1000, 1e9, failures);
    REQUIRE(r.result.steps.size() == static_cast<std::size_t>(steps));
    for (int k = 0; k < steps; ++k) {
      CAPTURE(k);
      CHECK(r.result.steps[static_cast<std::size_t>(k)].workers ==
            expected[static_cast<std::size_t>(k)]);
    }
    if (longer) ++drops;
  }
  CHECK(drops > 100);
}

TEST_CASE("random pauses beside resize schedules: no hang, and a paused worker rejoins") {
  // 200 runs of 3-5 workers with a resize every 1-3 steps to random sizes; one worker pauses at a
  // random step for 1.5-5 leases. The others drop it, and every growth that takes it back waits
  // for it at the barrier until their watchdog drops it again, or it runs again and rejoins as a
  // new process would. Each run must end with every step at the schedule's size or one less (the
  // paused worker missing until the next resize), and the rejoins must happen.
  Rng rng(20261208);
  int rejoins = 0;
  for (int i = 0; i < 200; ++i) {
    const int n = static_cast<int>(3 + rng.below(3));
    const int steps = static_cast<int>(20 + rng.below(21));
    ElasticSpec e;
    e.failure_timeout_ns = static_cast<TimeNs>(200 + rng.below(400)) * kNsPerMs;
    const int every = static_cast<int>(1 + rng.below(3));
    std::vector<int> sizes;
    std::string list;
    for (int k = 0; k < 4; ++k) {
      sizes.push_back(static_cast<int>(2 + rng.below(static_cast<std::uint64_t>(n - 1))));
      list += (k ? ", " : "") + std::to_string(sizes.back());
    }
    const WorkerFailure pause{
        .worker = static_cast<int>(rng.below(static_cast<std::uint64_t>(n))),
        .step = static_cast<int>(rng.below(static_cast<std::uint64_t>(steps / 2))),
        .mode = WorkerFailure::Mode::kPause,
        .pause_ns = e.failure_timeout_ns * static_cast<TimeNs>(15 + rng.below(36)) / 10};
    INFO("run " << i << ": " << n << " workers, " << steps << " steps, timeout "
                << e.failure_timeout_ns << " ns, every " << every << ", sizes [" << list
                << "], worker " << pause.worker << " pauses " << pause.pause_ns << " ns at step "
                << pause.step);
    // The schedule's sizes, step by step (KungFu's Cluster.Resize of the starting n).
    std::vector<int> expected;
    int size = n;
    for (int k = 0; k < steps; ++k) {
      expected.push_back(size);
      if ((k + 1) % every == 0) size = sizes[static_cast<std::size_t>((k + 1) / every) % 4];
    }
    const Run r = run(
        n, "{name: resize-schedule, every: " + std::to_string(every) + ", sizes: [" + list + "]}",
        e, steps, 1000, 1e9, {pause});
    REQUIRE(r.result.steps.size() == static_cast<std::size_t>(steps));
    for (int k = 0; k < steps; ++k) {
      CAPTURE(k);
      const int workers = r.result.steps[static_cast<std::size_t>(k)].workers;
      CHECK(workers <= expected[static_cast<std::size_t>(k)]);
      CHECK(workers >= expected[static_cast<std::size_t>(k)] - 1);
      if (r.reading(k, "resize.join.notice_s") >= 0) ++rejoins;
    }
  }
  CHECK(rejoins > 50);
}

TEST_CASE("rank 0 killed: the next survivor becomes rank 0 and training goes on") {
  ElasticSpec e;
  e.failure_timeout_ns = kNsPerSecond;
  for (const WorkerFailure::Mode mode :
       {WorkerFailure::Mode::kKill, WorkerFailure::Mode::kSilent}) {
    const Run r = run(3, "", e, 5, 1'000'000, 1e9, {{.worker = 0, .step = 2, .mode = mode}});
    REQUIRE(r.result.steps.size() == 5);
    CHECK(r.result.steps[1].workers == 3);
    CHECK(r.result.steps[2].workers == 2);
    CHECK(r.result.steps[4].workers == 2);
    CHECK(r.reading(2, "failure.detect_s") > 1.0);
  }
}

TEST_CASE("two workers fail at different steps, beside a resize schedule") {
  ElasticSpec e;
  e.initial_workers = 2;
  e.failure_timeout_ns = kNsPerSecond;
  // Grow to 4 after step 1; worker 3 dies at step 3 and worker 1 at step 5.
  const Run r = run(4, "{name: resize, step: 1, workers: 4}", e, 8, 1'000'000, 1e9,
                    {{.worker = 3, .step = 3}, {.worker = 1, .step = 5}});
  REQUIRE(r.result.steps.size() == 8);
  const std::vector<int> expected = {2, 2, 4, 3, 3, 2, 2, 2};
  for (int k = 0; k < 8; ++k)
    CHECK(r.result.steps[static_cast<std::size_t>(k)].workers ==
          expected[static_cast<std::size_t>(k)]);
}
