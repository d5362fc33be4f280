// Simulated learning (SimEnvOptions::learning, sim/train/dynamics.h) and compute on shared cores
// (SimEnvOptions::compute_cores), against hand calculations: the samples, progress and accuracy
// readings, the gradient-noise-scale monitor reading the model's B_simple, the adaptive-batch
// policy growing the batch in simulation, and processor sharing of a server's cores.

#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <string>

#include "sim/io/yaml_reader.h"
#include "sim/simulate/simulate_training.h"
#include "tests/support/read_yaml.h"
#include "tests/support/toy_cluster.h"
#include "tests/support/toy_model.h"

using namespace adaptsim;
using namespace adaptsim::runtime;

namespace {

SeamSpec seam(const std::string& yaml) {
  if (yaml.empty()) return {};
  return testing::read_yaml(
      yaml, [](io::MapReader& r) { return read_seam(r); }, "t.yaml");
}

std::shared_ptr<const train::TrainingDynamics> dynamics(const std::string& noise_scale) {
  return std::make_shared<const train::TrainingDynamics>(train::parse_training_dynamics(
      "dynamics: adaptsim-dynamics/1\nmodel: fashion-mlp\nsource: test\n"
      "fitted_on: {lr: 0.05, base_batch: 64, momentum: 0.9}\nbase_batch: 64\n"
      "noise_factor: 1.5\naccuracy: {chance: 0.1, final: 0.9, tau_samples: 1000, alpha: 0.5}\n"
      "noise_scale: " +
          noise_scale + "\n",
      "d.yaml"));
}

// Two 1-GPU servers, a one-tensor model (1e5 floats): forward 1 ms, backward 2 ms; KungFu's
// BINARY_TREE_STAR.
TrainingResult run(int batch, int steps, const std::string& seam_yaml,
                   std::shared_ptr<const train::TrainingDynamics> d, int eval_every) {
  const train::Model m = train::testing::toy_model({100'000});
  const train::ComputeProfile p = train::testing::toy_compute(0.001, {0.002});
  SystemConfig system;
  system.kind = SystemKind::kKungFu;
  system.strategy = coll::StrategyKind::kBinaryTreeStar;
  simulate::TrainingOptions o;
  o.compute.batch_per_gpu = batch;
  o.warmup_steps = 0;
  o.measured_steps = steps;
  o.seam = seam(seam_yaml);
  o.learning = simulate::SimLearning{std::move(d), eval_every, steps};
  return simulate::simulate_training(topo::testing::one_gpu_servers(2, 1e9), m, p, 0.0,
                                     train::GpuArch::kVolta, system, o)
      .result;
}

double reading(const TrainingResult& r, int step, const std::string& key) {
  const auto& m = r.steps.at(static_cast<std::size_t>(step)).readings;
  const auto it = m.find(key);
  return it == m.end() ? std::nan("") : it->second;
}

}  // namespace

TEST_CASE("simulated learning: samples, progress and accuracy by the dynamics, B_simple read") {
  const auto d = dynamics("[[0, 200]]");
  const std::string monitors = "monitors: [{name: gradient-noise-scale}]\n";
  // 2 workers x 32 = the base batch 64: progress is the samples.
  const TrainingResult base = run(32, 10, monitors, d, 4);
  REQUIRE(base.steps.size() == 10);
  for (int k = 0; k < 10; ++k) {
    CAPTURE(k);
    CHECK(reading(base, k, "learn.samples") == 64.0 * (k + 1));
    CHECK(reading(base, k, "learn.progress") == doctest::Approx(64.0 * (k + 1)));
    // The monitor's estimate from the norms' expectations is the model's B_simple.
    CHECK(reading(base, k, "gradient-noise-scale.b_simple") == doctest::Approx(200).epsilon(1e-9));
    CHECK(reading(base, k, "learn.wall_s") > 0);
    // Evaluations after steps 3 and 7 (every 4) and the last.
    const bool eval = k == 3 || k == 7 || k == 9;
    CHECK(std::isnan(reading(base, k, "learn.test_accuracy")) == !eval);
    if (eval) {
      CHECK(reading(base, k, "learn.test_accuracy") ==
            doctest::Approx(d->accuracy(64.0 * (k + 1))));
    }
  }
  // 2 x 128 = 256 a step: each step (1.5 x 200 + 64) / (1.5 x 200 + 256) of its samples.
  const TrainingResult large = run(128, 10, monitors, d, 4);
  CHECK(reading(large, 9, "learn.samples") == 2560);
  CHECK(reading(large, 9, "learn.progress") == doctest::Approx(2560 * 364.0 / 556));
  CHECK(reading(large, 9, "learn.test_accuracy") ==
        doctest::Approx(d->accuracy(2560 * 364.0 / 556)));
  // Without a monitor the norms are not computed; the learning readings are still there.
  const TrainingResult plain = run(32, 3, "", d, 0);
  CHECK(reading(plain, 2, "learn.samples") == 192);
  CHECK(std::isnan(reading(plain, 2, "gradient-noise-scale.b_simple")));
  CHECK(reading(plain, 2, "learn.test_accuracy") == doctest::Approx(d->accuracy(192)));
}

TEST_CASE("simulated learning: the adaptive-batch policy grows the batch as B_simple rises") {
  // B_simple rises with progress: the EMA of |GNS| / B rises over each "epoch" of 640 samples
  // and the batch per GPU grows at its end, by at most 2x, up to 64 (KUNGFU.md 3.3).
  const auto d = dynamics("[[0, 50], [5000, 2000]]");
  const TrainingResult r =
      run(16, 60,
          "monitors: [{name: gradient-noise-scale}]\n"
          "policy: {name: adaptive-batch, epoch_samples: 640, max_batch: 64}\n",
          d, 0);
  int changes = 0;
  double samples = 0;
  for (std::size_t k = 0; k < r.steps.size(); ++k) {
    CAPTURE(k);
    const int b = r.steps[k].batch_per_gpu;
    samples += 2.0 * b;
    CHECK(reading(r, static_cast<int>(k), "learn.samples") == samples);
    if (k > 0) {
      const int before = r.steps[k - 1].batch_per_gpu;
      CHECK(b >= before);
      CHECK(b <= 2 * before);
      CHECK((b != before) == !r.steps[k - 1].decision.empty());
      changes += b != before ? 1 : 0;
    }
  }
  CHECK(r.steps.front().batch_per_gpu == 16);
  CHECK(r.steps.back().batch_per_gpu > 16);
  CHECK(changes >= 2);
  // With B_simple flat the ratio does not rise: the batch stays.
  const TrainingResult flat =
      run(16, 60,
          "monitors: [{name: gradient-noise-scale}]\n"
          "policy: {name: adaptive-batch, epoch_samples: 640, max_batch: 64}\n",
          dynamics("[[0, 300]]"), 0);
  CHECK(flat.steps.back().batch_per_gpu == 16);
}

TEST_CASE("compute on shared cores: four workers of one server on 0, 4, 2 and 1 cores") {
  // One 4-GPU server, the ideal system (no communication), forward 10 ms and backward 20 ms:
  // the four computes run at once, so with c < 4 cores each takes 4 / c times as long.
  const train::Model m = train::testing::toy_model({1000});
  const train::ComputeProfile p = train::testing::toy_compute(0.010, {0.020});
  SystemConfig system;
  system.kind = SystemKind::kIdeal;
  // threads: the compute runs as flows on the host's CPU resource beside the transport threads
  // (SimFabric::host_cpu) instead of by processor sharing; alone, the same.
  auto step = [&](int cores, bool threads = false) {
    simulate::TrainingOptions o;
    o.compute.batch_per_gpu = 32;
    o.warmup_steps = 0;
    o.measured_steps = 3;
    o.compute_cores = cores;
    o.host_transport.one_transport_thread = threads;
    const TrainingResult r =
        simulate::simulate_training(topo::testing::one_gpu_servers(1, 1e9, 10'000, 4), m, p, 0.0,
                                    train::GpuArch::kVolta, system, o)
            .result;
    return r.steps.at(1).time_s;
  };
  const double alone = step(0);
  CHECK(alone == doctest::Approx(0.030).epsilon(1e-3));
  CHECK(step(4) == doctest::Approx(alone).epsilon(1e-6));
  CHECK(step(2) == doctest::Approx(2 * alone).epsilon(1e-3));
  CHECK(step(1) == doctest::Approx(4 * alone).epsilon(1e-3));
  CHECK(step(4, true) == doctest::Approx(alone).epsilon(1e-6));
  CHECK(step(2, true) == doctest::Approx(2 * alone).epsilon(1e-3));
  CHECK(step(1, true) == doctest::Approx(4 * alone).epsilon(1e-3));
}
