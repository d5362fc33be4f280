// adaptsim-live's learn mode across real processes: N ranks training sim/learn's MLP on
// Fashion-MNIST through the one training runtime follow the single-process run of the same
// global batch, hold identical parameters, reach a measured accuracy, and bad input is refused.

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "sim/learn/dataset.h"
#include "sim/learn/mlp.h"
#include "sim/learn/sgd.h"
#include "tests/hw/live/live_test_support.h"
#include "tests/hw/tcp/tcp_test_support.h"
#include "tests/support/time_scale.h"

using namespace adaptsim;
using namespace adaptsim::live::testing;
using namespace adaptsim::tcp::testing;

namespace {

const double kDeadlineS = 120 * adaptsim::testing::time_scale();

const learn::FashionMnist& data() {
  static const learn::FashionMnist d = learn::load_fashion_mnist();
  return d;
}

// `extra`: more top-level keys, each followed by a comma.
std::string config(int batch_per_gpu, int steps, const std::string& learn,
                   const std::string& extra = "",
                   const std::string& strategy = "BINARY_TREE_STAR") {
  return R"({)" + extra + R"("model": "fashion-mlp", "batch_per_gpu": )" +
         std::to_string(batch_per_gpu) + R"(, "system": {"kind": "kungfu", "strategy": ")" +
         strategy + R"("}, "warmup_steps": 0,
            "steps": )" +
         std::to_string(steps) + R"(, "seed": 1, "timeout": "60s", "learn": )" + learn + "}";
}

std::vector<float> read_params(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<float> p(bytes.size() / sizeof(float));
  std::memcpy(p.data(), bytes.data(), p.size() * sizeof(float));
  return p;
}

// The single-process reference: `steps` steps of SGD (lr 0.05, momentum 0.9) on global batches
// of `batch` from EpochShards with one worker, the samples the N ranks' shards together cover.
std::vector<float> reference(int batch, int steps) {
  learn::Mlp mlp(learn::MlpOptions{.seed = 1});
  learn::Sgd sgd(mlp.parameter_count());
  learn::EpochShards shards(data().train.size(), static_cast<std::size_t>(batch), 1, 1, 0);
  std::vector<float> g(mlp.parameter_count());
  for (int k = 0; k < steps; ++k) {
    mlp.loss_and_gradient(data().train, shards.global_batch(static_cast<std::size_t>(k)), g);
    sgd.step(mlp.params(), g, 0.05);
  }
  return {mlp.params().begin(), mlp.params().end()};
}

}  // namespace

TEST_CASE("learn: 1, 2 and 4 processes follow the single-process run of the global batch 64") {
  constexpr int kGlobal = 64, kSteps = 20;
  const std::vector<float> expected = reference(kGlobal, kSteps);
  for (int n : {1, 2, 4}) {
    CAPTURE(n);
    const TempDir tmp;
    const std::string params = tmp.path + "/params";
    write_text(tmp.path + "/cfg.json",
               config(kGlobal / n, kSteps,
                      R"({"lr": 0.05, "eval_every": 0, "params_dir": ")" + params + R"("})"));
    const auto r = run_process({live_tool_path(), tmp.path + "/cfg.json", "--procs",
                                std::to_string(n), "-o", tmp.path + "/result.json"},
                               kDeadlineS);
    INFO(diagnostics(r));
    REQUIRE(r.exit_code == 0);
    const std::vector<float> rank0 = read_params(params + "/rank0.params");
    REQUIRE(rank0.size() == expected.size());
    // Every rank holds the same bytes (the all-reduce gives every rank the same sum).
    for (int rank = 1; rank < n; ++rank) {
      CAPTURE(rank);
      CHECK(read_params(params + "/rank" + std::to_string(rank) + ".params") == rank0);
    }
    // N shard means summed over the transport and divided by N equal the global batch's mean up
    // to float rounding (a different summation order): after 20 steps the largest difference is
    // ~1e-7 of weights of order 0.1 (measured); 1e-5 leaves a wide margin, while one step's data
    // off (a wrong shard) moves parameters by ~1e-3.
    float max_diff = 0;
    for (std::size_t i = 0; i < expected.size(); ++i)
      max_diff = std::max(max_diff, std::abs(rank0[i] - expected[i]));
    MESSAGE("n = " << n << ": max |live - single process| = " << max_diff);
    if (n == 1) {
      CHECK(max_diff == 0);  // one rank: the all-reduce copies, the update is the same arithmetic
    } else {
      CHECK(max_diff < 1e-5f);
    }
    const auto j = nlohmann::json::parse(read_text(tmp.path + "/result.json"));
    CHECK(j.at("verified_steps") == kSteps);  // the parameter hashes compared after every step
    CHECK(j.at("learn").at("samples") == kSteps * kGlobal);
  }
}

TEST_CASE("learn: two runs of 4 processes with one seed end with the same bytes") {
  // Deterministic for a seed and a process count (issue 16): STAR's root folds three ranks'
  // gradients and BINARY_TREE_STAR's inner nodes two each; folded as they arrived, the float sums
  // (and after 60 steps the parameters) differed between runs (3 of 3 runs of scenarios/
  // fig4-live.yaml gave 3 different results before the graphs folded in their children's order).
  for (const std::string strategy : {"STAR", "BINARY_TREE_STAR"}) {
    CAPTURE(strategy);
    std::vector<std::vector<float>> runs;
    for (int run = 0; run < 2; ++run) {
      const TempDir tmp;
      const std::string params = tmp.path + "/params";
      write_text(
          tmp.path + "/cfg.json",
          config(16, 60, R"({"lr": 0.05, "eval_every": 0, "params_dir": ")" + params + R"("})", "",
                 strategy));
      const auto r = run_process({live_tool_path(), tmp.path + "/cfg.json", "--procs", "4", "-o",
                                  tmp.path + "/result.json"},
                                 kDeadlineS);
      INFO(diagnostics(r));
      REQUIRE(r.exit_code == 0);
      runs.push_back(read_params(params + "/rank0.params"));
    }
    REQUIRE(!runs[0].empty());
    CHECK(runs[0] == runs[1]);
  }
}

TEST_CASE("learn: 2 processes x 32 reach the measured test accuracy, an untrained model does not") {
  // Measured (seed 1, lr 0.05, momentum 0.9): after 300 steps of global batch 64, 0.7757 with
  // 2 x 32 here, 0.8010 with one process (adaptsim-learn --steps 300 --batch 64); the same
  // samples, the parameters apart only by float rounding, which the trajectory amplifies: the
  // test accuracy moves by a few points between evaluations (0.7768, 0.7837, 0.8010 at steps
  // 100, 200, 300 of the single process). Untrained: 0.1218. The bound leaves 5 points below
  // the lower measurement.
  constexpr double kBound = 0.72;
  const learn::Evaluation untrained =
      learn::Mlp(learn::MlpOptions{.seed = 1}).evaluate(data().test);
  MESSAGE("untrained accuracy " << untrained.accuracy);
  CHECK(untrained.accuracy < kBound);

  const TempDir tmp;
  // verify: false: the ranks compare their parameters at the evaluation points only (all ranks
  // alike, while rank 0 alone evaluates).
  write_text(tmp.path + "/cfg.json",
             config(32, 300, R"({"lr": 0.05, "eval_every": 100})", R"("verify": false, )"));
  const auto r = run_process(
      {live_tool_path(), tmp.path + "/cfg.json", "--procs", "2", "-o", tmp.path + "/result.json"},
      kDeadlineS);
  INFO(diagnostics(r));
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(read_text(tmp.path + "/result.json"));
  const double accuracy = j.at("learn").at("test_accuracy").get<double>();
  MESSAGE("accuracy after 300 steps " << accuracy);
  CHECK(accuracy > kBound);
  CHECK(j.at("verified_steps") == 3);  // after steps 99, 199 and 299
  // The step rows: samples seen and training wall time every step, the evaluation at steps 99,
  // 199 and 299 (rank 0, after the step), the last one the result's.
  const auto& steps = j.at("result").at("steps");
  REQUIRE(steps.size() == 300);
  double wall = 0;
  for (const auto& s : steps) {
    const int k = s.at("step").get<int>();
    const auto& readings = s.at("readings");
    CHECK(readings.at("learn.samples").get<double>() == (k + 1) * 64.0);
    CHECK(readings.at("learn.wall_s").get<double>() > wall);
    wall = readings.at("learn.wall_s").get<double>();
    CHECK(readings.contains("learn.test_accuracy") == ((k + 1) % 100 == 0));
  }
  CHECK(steps[299].at("readings").at("learn.test_accuracy").get<double>() == accuracy);
  CHECK(steps[99].at("readings").at("learn.test_accuracy").get<double>() > untrained.accuracy);
}

TEST_CASE("learn: bad input is exit code 2 with the file, line and key") {
  const TempDir tmp;
  // A truncated copy of the data set: three files linked, the test labels cut short.
  const std::string cut = tmp.path + "/cut";
  std::filesystem::create_directories(cut);
  const std::string dir(learn::kDefaultFashionMnistDir);
  for (const char* f :
       {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz"}) {
    std::filesystem::create_symlink(dir + "/" + f, cut + "/" + f);
  }
  const std::string labels = read_text(dir + "/t10k-labels-idx1-ubyte.gz");
  write_text(cut + "/t10k-labels-idx1-ubyte.gz", labels.substr(0, labels.size() / 2));
  struct Case {
    std::string config, expected;
  };
  const std::vector<Case> cases = {
      {config(32, 2, R"({"lr": 0})"), "key 'learn.lr'"},
      {config(32, 2, R"({"lr": -1})"), "must be a finite value > 0"},
      {config(32, 2, R"({"momentum": 1})"), "key 'learn.momentum'"},
      {config(32, 2, R"({"data": "/nonexistent/fashion-mnist"})"), "key 'learn.data'"},
      {config(32, 2, R"({"data": ")" + cut + R"("})"), "t10k-labels-idx1-ubyte.gz"},
      {config(32, 2, R"({"eval": 3})"), "learn.eval"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.config);
    write_text(tmp.path + "/cfg.json", c.config);
    const auto r = run_process({live_tool_path(), tmp.path + "/cfg.json", "--procs", "2"}, 30);
    INFO(diagnostics(r));
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(tmp.path + "/cfg.json:") != std::string::npos);
    CHECK(r.err.find(c.expected) != std::string::npos);
  }
  // Another model, or a system without an all-reduce.
  std::string other = config(32, 2, "{}");
  other.replace(other.find("fashion-mlp"), 11, "resnet56");
  write_text(tmp.path + "/cfg.json", other);
  auto r = run_process({live_tool_path(), tmp.path + "/cfg.json", "--procs", "2"}, 30);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("trains the fashion-mlp model for real") != std::string::npos);
  std::string ideal = config(32, 2, "{}");
  const std::size_t system = ideal.find(R"({"kind": "kungfu")");
  ideal.replace(system, ideal.find('}', system) + 1 - system, R"({"kind": "ideal"})");
  write_text(tmp.path + "/cfg.json", ideal);
  r = run_process({live_tool_path(), tmp.path + "/cfg.json", "--procs", "2"}, 30);
  INFO(diagnostics(r));
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("needs a system that all-reduces") != std::string::npos);
}
