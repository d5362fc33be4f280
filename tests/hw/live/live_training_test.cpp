// Live training with ranks as threads of this process, each with its own runtime over loopback:
// the mechanisms complete with exact gradients, the measurements follow the simulator's
// definitions, and a lost rank fails the others naming it.

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <span>
#include <vector>

#include "hw/cuda/reference_kernels.h"
#include "hw/live/gradient_buffers.h"
#include "hw/live/live_training.h"
#include "sim/core/error.h"
#include "sim/runtime/trainer.h"
#include "tests/hw/live/live_test_support.h"
#include "tests/hw/tcp/tcp_test_support.h"

using namespace adaptsim;
using namespace adaptsim::live;
using namespace adaptsim::live::testing;

namespace {

std::string all_errors(const ClusterRun& run) {
  std::string s;
  for (std::size_t r = 0; r < run.errors.size(); ++r) {
    if (!run.errors[r].empty()) s += "rank " + std::to_string(r) + ": " + run.errors[r] + "\n";
  }
  return s;
}

// The checks every successful run must pass.
void check_run(const ClusterRun& run, const LiveConfig& c, int n) {
  INFO(all_errors(run));
  for (const std::string& e : run.errors)
    REQUIRE(e.empty());
  const LiveResult& r = run.results[0];
  const runtime::TrainingResult& t = r.training;
  CHECK(r.n_ranks == n);
  CHECK(static_cast<int>(t.step_s.size()) == c.measured_steps);
  CHECK(r.training.worker_step_mean_s.size() == static_cast<std::size_t>(n));
  const bool verifies = c.verify && c.system.kind != runtime::SystemKind::kIdeal;
  CHECK(r.verified_steps == (verifies ? c.warmup_steps + c.measured_steps : 0));
  // A step is compute plus exposed communication, and without jitter the compute can only take
  // longer than its emulated duration (sleeps overshoot).
  CHECK(t.step_mean_s >= t.compute_s - 1e-12);
  if (c.step_time_cv == 0) CHECK(t.compute_s >= c.compute(c.batch_per_gpu).total_s() * (1 - 1e-9));
  CHECK(t.exposed_link_s >= 0);
  CHECK(t.exposed_wait_s >= 0);
  // compute + link + wait = mean step (both are means over the same worker-steps).
  CHECK(t.compute_s + t.exposed_link_s + t.exposed_wait_s == doctest::Approx(t.step_mean_s));
  // Throughput as the simulator defines it.
  CHECK(t.samples_per_s_per_gpu > 0);
  if (c.seam.empty()) {
    CHECK(t.samples_per_s_per_gpu == doctest::Approx(c.batch_per_gpu / t.step_mean_s));
  }
  CHECK(t.samples_per_s_total == doctest::Approx(n * t.samples_per_s_per_gpu));
  // Every rank returns the same aggregate.
  for (int k = 1; k < n; ++k) {
    CHECK(run.results[static_cast<std::size_t>(k)].training.step_s == t.step_s);
  }
}

}  // namespace

TEST_CASE("kungfu MULTI_BINARY_TREE_STAR on 4 one-rank hosts: completes with exact gradients") {
  const train::Model model = synthetic_model();
  LiveConfig c = small_config(runtime::SystemKind::kKungFu);
  c.system.strategy = coll::StrategyKind::kMultiBinaryTreeStar;
  const ClusterRun run = run_cluster(4, {0, 1, 2, 3}, model, c);
  check_run(run, c, 4);
  // Communication is in flight after backward: the last layer's gradients are reduced after it.
  CHECK(run.results[0].training.exposed_link_s > 0);
  CHECK(run.results[0].training.exposed_wait_s == doctest::Approx(0).epsilon(1e-3));
}

TEST_CASE("kungfu BINARY_TREE_STAR on 2 hosts of 2 ranks (host masters): exact gradients") {
  const train::Model model = synthetic_model();
  LiveConfig c = small_config(runtime::SystemKind::kKungFu);
  c.system.strategy = coll::StrategyKind::kBinaryTreeStar;
  c.system.chunk_bytes = 256 << 10;  // many chunks per tensor, spread over the graphs
  check_run(run_cluster(4, {0, 0, 1, 1}, model, c), c, 4);
}

TEST_CASE("horovod on 4 ranks: cycles, fusion and ring all-reduce give exact gradients") {
  const train::Model model = synthetic_model();
  LiveConfig c = small_config(runtime::SystemKind::kHorovod);
  const ClusterRun run = run_cluster(4, {0, 1, 2, 3}, model, c);
  check_run(run, c, 4);
  // After backward the worker waits at least for the next cycle's negotiation.
  const runtime::TrainingResult& t = run.results[0].training;
  CHECK(t.exposed_link_s + t.exposed_wait_s > 0);
}

TEST_CASE(
    "ideal: no communication, the step is the emulated compute with the simulator's "
    "jitter") {
  const train::Model model = synthetic_model();
  LiveConfig c = small_config(runtime::SystemKind::kIdeal);
  c.step_time_cv = 0.2;
  c.seed = 9;
  const int n = 3;
  const ClusterRun run = run_cluster(n, {}, model, c);
  check_run(run, c, n);
  const runtime::TrainingResult& t = run.results[0].training;
  CHECK(t.exposed_link_s == 0);
  // The ideal system reports a gradient reduced on the loop's next turn (as the simulator's
  // does at the same instant): live, that turn takes microseconds.
  CHECK(t.exposed_wait_s < 1e-3);
  // Step k = mean over workers of total compute x jitter(worker, k), as the simulator computes;
  // live sleeps only overshoot, by wake-up latencies (a few per step; more on a loaded machine).
  double expected_sum = 0;
  for (int k = 0; k < c.measured_steps; ++k) {
    const int step = c.warmup_steps + k;
    double expected = 0;
    for (int w = 0; w < n; ++w)
      expected += c.compute(c.batch_per_gpu).total_s() * runtime::step_jitter(c.seed, 0.2, w, step);
    expected /= n;
    expected_sum += expected;
    INFO("step " << step);
    CHECK(t.step_s[static_cast<std::size_t>(k)] >= expected * (1 - 1e-6));
    CHECK(t.step_s[static_cast<std::size_t>(k)] < expected + 0.025);
  }
  CHECK(t.step_mean_s < expected_sum / c.measured_steps + 0.005);
}

TEST_CASE("the same configuration twice gives step times within a loose tolerance") {
  const train::Model model = synthetic_model();
  LiveConfig c = small_config(runtime::SystemKind::kKungFu);
  c.system.strategy = coll::StrategyKind::kMultiBinaryTreeStar;
  // 52 ms of compute per step, so that the step is mostly emulated compute and the noise of a
  // shared 2-core machine (which falls on the communication) stays a fraction of it.
  c.compute = fixed_compute(split_compute(model, 0.016, 0.032, 0.004), c.batch_per_gpu);
  const ClusterRun a = run_cluster(4, {0, 1, 2, 3}, model, c);
  const ClusterRun b = run_cluster(4, {0, 1, 2, 3}, model, c);
  INFO(all_errors(a) << all_errors(b));
  REQUIRE(a.errors == std::vector<std::string>(4));
  REQUIRE(b.errors == std::vector<std::string>(4));
  const double ta = a.results[0].training.step_mean_s, tb = b.results[0].training.step_mean_s;
  INFO("run 1 " << ta << " s, run 2 " << tb << " s");
  // Real timing: on a quiet machine the two agree within a few percent; under load the
  // communication part can take several times longer, hence the loose bound. Both include the
  // 52 ms of emulated compute.
  CHECK(std::max(ta, tb) / std::min(ta, tb) < 1.5);
  CHECK(std::min(ta, tb) >= 0.052);
}

TEST_CASE("a rank that drops its connections mid-run fails the others, naming it") {
  const train::Model model = synthetic_model();
  for (auto kind : {runtime::SystemKind::kKungFu, runtime::SystemKind::kHorovod}) {
    LiveConfig c = small_config(kind);
    c.measured_steps = 50;
    INFO(runtime::system_kind_name(kind));
    const ClusterRun run = run_cluster(4, {0, 1, 2, 3}, model, c, 2, 30);
    CHECK(run.errors[2].find("fault injection") != std::string::npos);
    for (int r : {0, 1, 3}) {
      const std::string& e = run.errors[static_cast<std::size_t>(r)];
      INFO("rank " << r << ": " << e);
      CHECK(e.find("rank " + std::to_string(r) + ": ") == 0);
      CHECK(e.find("rank 2 (127.0.0.1:") != std::string::npos);
    }
  }
}

TEST_CASE("GPU-only systems and inconsistent configurations are refused before any step") {
  const train::Model model = synthetic_model();
  LiveConfig c = small_config(runtime::SystemKind::kNcclScheduled);
  CHECK_THROWS_WITH_AS(validate_live_config(model, c), doctest::Contains("needs GPUs and NCCL"),
                       InputError);
  c = small_config(runtime::SystemKind::kKungFu);
  train::ComputeProfile short_profile = c.compute(c.batch_per_gpu);
  short_profile.backward_layer_s.pop_back();
  c.compute = fixed_compute(short_profile, c.batch_per_gpu);
  CHECK_THROWS_WITH_AS(validate_live_config(model, c),
                       doctest::Contains("4 backward layers for model 'synthetic' of 5"),
                       InputError);
  c = small_config(runtime::SystemKind::kKungFu);
  c.gradient_element_bytes = 2;
  CHECK_THROWS_AS(validate_live_config(model, c), InputError);
  c = small_config(runtime::SystemKind::kKungFu);
  c.measured_steps = 0;
  CHECK_THROWS_AS(validate_live_config(model, c), InputError);
}

TEST_CASE("abort_cluster: a rank's own failure reaches every peer at once with its reason") {
  tcp::testing::ThreadCluster cluster(3);
  const std::vector<std::string> errors = cluster.run_all([](int r, tcp::Runtime& rt) {
    if (r == 1) {
      abort_cluster(rt, "rank 1: step 3: gradient 'fc.weight' is wrong");
      CHECK(rt.failed());
      abort_cluster(rt, "again");  // a no-op once failed
      return;
    }
    rt.barrier(10 * kNsPerSecond);  // would wait for rank 1 until the timeout
  });
  CHECK(errors[1].empty());
  for (int r : {0, 2}) {
    const std::string& e = errors[static_cast<std::size_t>(r)];
    INFO(e);
    CHECK(e.find("rank 1 (127.0.0.1:") != std::string::npos);
    CHECK(e.find("gradient 'fc.weight' is wrong") != std::string::npos);
  }
}

TEST_CASE("live policy: switch-strategy after step 5 runs MULTI_BINARY_TREE_STAR from step 6") {
  // The same policy object as the simulation's (runtime::make_seam of the same spec): every rank
  // agrees on each step, decides alone, and switches at its own step boundary; the gradients of
  // every step, before and after, are checked exact.
  const train::Model model = synthetic_model();
  LiveConfig c = small_config(runtime::SystemKind::kKungFu);
  c.system.strategy = coll::StrategyKind::kStar;
  c.warmup_steps = 1;
  c.measured_steps = 7;
  c.seam.policy_yaml = "{name: switch-strategy, step: 5, strategy: MULTI_BINARY_TREE_STAR}";
  c.seam.changes.strategy = true;
  const ClusterRun run = run_cluster(4, {0, 1, 2, 3}, model, c);
  check_run(run, c, 4);
  const std::vector<runtime::StepRow>& rows = run.results[0].training.steps;
  REQUIRE(rows.size() == 8);
  for (const runtime::StepRow& row : rows) {
    CAPTURE(row.step);
    CHECK(row.strategy == (row.step <= 5 ? "STAR" : "MULTI_BINARY_TREE_STAR"));
    CHECK(row.decision == (row.step == 5 ? "strategy MULTI_BINARY_TREE_STAR" : ""));
    CHECK(row.workers == 4);
  }
  for (int k = 1; k < 4; ++k)
    CHECK(run.results[static_cast<std::size_t>(k)].training.steps == rows);
}

TEST_CASE("live policy: scale-batch doubles the batch after step 5, the compute follows") {
  const train::Model model = synthetic_model();
  LiveConfig c = small_config(runtime::SystemKind::kHorovod);
  c.warmup_steps = 1;
  c.measured_steps = 7;
  c.seam.policy_yaml = "{name: scale-batch, step: 5, factor: 2}";
  c.seam.changes.batch = true;
  const ClusterRun run = run_cluster(3, {0, 1, 2}, model, c);
  INFO(all_errors(run));
  for (const std::string& e : run.errors)
    REQUIRE(e.empty());
  const runtime::TrainingResult& t = run.results[0].training;
  REQUIRE(t.steps.size() == 8);
  for (const runtime::StepRow& row : t.steps) {
    CAPTURE(row.step);
    CHECK(row.batch_per_gpu == (row.step <= 5 ? 16 : 32));
    CHECK(row.decision == (row.step == 5 ? "batch 32" : ""));
  }
  CHECK(run.results[0].verified_steps == 8);
  // Forward and backward double (12 -> 24 ms); a step can only take longer than its compute.
  CHECK(t.steps[7].time_s >= 0.025 * (1 - 1e-9));
  // Throughput: the mean batch over the measured steps (steps 1-7: 5 x 16 + 2 x 32) over the
  // mean step time.
  CHECK(t.samples_per_s_per_gpu == doctest::Approx((5 * 16 + 2 * 32) / 7.0 / t.step_mean_s));
}

TEST_CASE("live gradient norms: the monitor's readings are the real gradients' squared norms") {
  // Rank r's gradient element i of tensor t is GradientBuffers::value(r, t, i); the reduced one
  // is the sum over ranks. The monitor reports the mean over ranks of |g_r|^2 and |G|^2 of the
  // averaged gradient G = sum_r g_r / n, computed on the real buffers by the compute thread.
  const train::Model model = synthetic_model();
  const int n = 3;
  LiveConfig c = small_config(runtime::SystemKind::kKungFu);
  c.seam.monitors_yaml = "[{name: gradient-norms}]";
  const ClusterRun run = run_cluster(n, {0, 1, 2}, model, c);
  check_run(run, c, n);
  // The values are small integers: every sum below is exact in double, whatever its order.
  double local_sum = 0, global_sum = 0;
  for (std::size_t t = 0; t < model.backward_order.size(); ++t) {
    for (std::size_t i = 0; i < model.backward_order[t].elements; ++i) {
      double sum = 0;
      for (int r = 0; r < n; ++r) {
        const double v = GradientBuffers::value(r, t, i);
        local_sum += v * v;
        sum += v;
      }
      global_sum += sum * sum;
    }
  }
  const double local = local_sum / n, global = global_sum / (n * n);
  for (const runtime::StepRow& row : run.results[0].training.steps) {
    CAPTURE(row.step);
    CHECK(row.readings.at("gradient-norms.local_sq") == doctest::Approx(local).epsilon(1e-12));
    CHECK(row.readings.at("gradient-norms.global_sq") == doctest::Approx(global).epsilon(1e-12));
  }
}

TEST_CASE("live gradient variance: a second all-reduce of the squares, and KungFu's variance") {
  // Every rank squares its real gradients, all-reduces the squares over TCP as it does the
  // gradients, and computes, per tensor, Var = E[g^2] - E[g]^2 over the ranks and its L2 norm;
  // the reading is the sum over tensors. Expected here straight from the ranks' values
  // (hw::gradient_variance, in double); the run's float means round, hence the tolerance. The
  // gradients are still checked after every step, and the step rows show the doubled bytes.
  const train::Model model = synthetic_model();
  const int n = 3;
  LiveConfig c = small_config(runtime::SystemKind::kKungFu);
  c.seam.monitors_yaml = "[{name: gradient-variance, interval: 2}]";
  const ClusterRun run = run_cluster(n, {0, 1, 2}, model, c);
  check_run(run, c, n);
  double expected = 0;
  std::uint64_t bytes = 0;
  for (std::size_t t = 0; t < model.backward_order.size(); ++t) {
    const std::size_t count = model.backward_order[t].elements;
    bytes += count * 4;
    std::vector<std::vector<float>> g(n, std::vector<float>(count));
    std::vector<std::span<const float>> spans;
    for (int r = 0; r < n; ++r) {
      for (std::size_t i = 0; i < count; ++i)
        g[r][i] = GradientBuffers::value(r, t, i);
      spans.emplace_back(g[r]);
    }
    std::vector<float> var(count);
    expected += hw::gradient_variance(var, spans);
  }
  REQUIRE(expected > 0);
  for (const runtime::StepRow& row : run.results[0].training.steps) {
    CAPTURE(row.step);
    CHECK(row.readings.at("gradient-variance.norm_sum") == doctest::Approx(expected).epsilon(1e-5));
    CHECK(row.allreduce_bytes == static_cast<double>(bytes) * (row.step % 2 == 0 ? 2 : 1));
  }
}
