// The MLP (sim/learn/mlp.h): the flat layout and loss by hand, backward against finite
// differences, data-parallel gradients against the single-process one, and determinism.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <vector>

#include "sim/core/rng.h"
#include "sim/learn/dataset.h"
#include "sim/learn/mlp.h"
#include "sim/learn/sgd.h"
#include "tests/learn/synthetic_data.h"

using namespace adaptsim::learn;
using adaptsim::Rng;
using adaptsim::learn::testing::synthetic_dataset;

namespace {

std::vector<std::uint32_t> iota_indices(std::uint32_t n) {
  std::vector<std::uint32_t> v(n);
  std::iota(v.begin(), v.end(), 0u);
  return v;
}

}  // namespace

TEST_CASE("mlp: the default 784-256-128-10 model has 235146 parameters, biases zero") {
  Mlp m;
  // 784*256 + 256 + 256*128 + 128 + 128*10 + 10 = 200960 + 32896 + 1290.
  CHECK(m.parameter_count() == 235146);
  const auto p = m.params();
  // b_1 follows W_1 (200704 floats), b_2 follows W_2 at 200960 + 32768; all start at 0.
  CHECK(std::all_of(p.begin() + 200704, p.begin() + 200960, [](float x) { return x == 0; }));
  CHECK(std::all_of(p.begin() + 233728, p.begin() + 233856, [](float x) { return x == 0; }));
  // He initialisation: W_1's standard deviation is sqrt(2 / 784) = 0.0505.
  double sq = 0;
  for (std::size_t i = 0; i < 200704; ++i)
    sq += static_cast<double>(p[i]) * p[i];
  CHECK(std::sqrt(sq / 200704) == doctest::Approx(std::sqrt(2.0 / 784)).epsilon(0.01));
}

TEST_CASE("mlp: loss and gradient of a one-layer model by hand (the flat layout)") {
  // Model 2 -> 2 (no hidden layer): z = W x + b, params [W00, W10, W01, W11, b0, b1]
  // (column-major W, then b). One sample x = (51/255, 102/255) = (0.2, 0.4), label 1.
  const Dataset data({{1, 1, 2}, {51, 102}}, {{1}, {1}}, "hand");
  Mlp m(MlpOptions{.layer_sizes = {2, 2}, .seed = 1});
  REQUIRE(m.parameter_count() == 6);
  const std::vector<float> theta = {1.0f, -1.0f, 0.5f, 2.0f, 0.1f, -0.2f};
  std::copy(theta.begin(), theta.end(), m.params().begin());
  // z0 = 1*0.2 + 0.5*0.4 + 0.1 = 0.5;  z1 = -1*0.2 + 2*0.4 - 0.2 = 0.4.
  // loss = log(e^0.5 + e^0.4) - 0.4;  p = softmax(z);  dz = p - onehot(1).
  const double z0 = 0.5, z1 = 0.4;
  const double lse = std::log(std::exp(z0) + std::exp(z1));
  const double p0 = std::exp(z0 - lse), p1 = std::exp(z1 - lse);
  const double dz0 = p0, dz1 = p1 - 1;
  // dW = dz x^T (column-major: dW00, dW10, dW01, dW11), db = dz.
  const std::vector<double> expected = {dz0 * 0.2, dz1 * 0.2, dz0 * 0.4, dz1 * 0.4, dz0, dz1};
  std::vector<float> g(6);
  const std::vector<std::uint32_t> batch = {0};
  CHECK(m.loss_and_gradient(data, batch, g) == doctest::Approx(lse - z1).epsilon(1e-6));
  CHECK(m.loss(data, batch) == doctest::Approx(lse - z1).epsilon(1e-6));
  for (std::size_t i = 0; i < 6; ++i) {
    CAPTURE(i);
    CHECK(g[i] == doctest::Approx(expected[i]).epsilon(1e-5));
  }
  // The prediction is class 0 (z0 > z1), the label 1: accuracy 0, loss as above.
  const Evaluation e = m.evaluate(data);
  CHECK(e.accuracy == 0.0);
  CHECK(e.mean_loss == doctest::Approx(lse - z1).epsilon(1e-6));
}

TEST_CASE("mlp: backward agrees with central finite differences") {
  // A small model 16-12-8-10 on 8 synthetic samples: gradients of order 1e-2 to 1e-1.
  // Central difference (L(theta + eps e_i) - L(theta - eps e_i)) / (2 eps) has truncation error
  // O(eps^2 L''') and rounding error ~ u |L| / eps, with the forward pass in float (u = 6e-8,
  // L ~ 2.3): eps = 1e-2 gives ~1e-5 rounding and ~1e-4 relative truncation, well under the 1e-2
  // bound, while eps = 1e-3 would bring rounding to ~1e-4, a percent of a 1e-2 gradient. The loss
  // itself is summed in double (Mlp::loss). A ReLU kink crossed by the step would break the
  // check; pre-activations are O(1) and the step moves them by <= 1e-2, so with these seeds none
  // is crossed.
  const Dataset data = synthetic_dataset(8, 4, 4, 11);
  Mlp m(MlpOptions{.layer_sizes = {16, 12, 8, 10}, .seed = 3});
  // Non-zero biases, so that the bias gradients are checked away from the initial point too.
  Rng init(5);
  for (float& p : m.params())
    p += static_cast<float>(init.uniform(-0.05, 0.05));
  const std::vector<std::uint32_t> batch = iota_indices(8);
  std::vector<float> g(m.parameter_count());
  m.loss_and_gradient(data, batch, g);

  const double eps = 1e-2;
  Rng pick(17);
  double worst = 0;
  for (int k = 0; k < 50; ++k) {
    const std::size_t i = pick.below(m.parameter_count());
    const float saved = m.params()[i];
    m.params()[i] = static_cast<float>(saved + eps);
    const double up = m.loss(data, batch);
    m.params()[i] = static_cast<float>(saved - eps);
    const double down = m.loss(data, batch);
    m.params()[i] = saved;
    const double fd = (up - down) / (2 * eps);
    // Relative error |fd - g| / max(|fd|, |g|), with a floor of 1e-3 for gradients near zero
    // (there an absolute error of 1e-5 counts as 1e-2 relative).
    const double rel = std::abs(fd - g[i]) / std::max({std::abs(fd), std::abs(double{g[i]}), 1e-3});
    CAPTURE(i);
    CAPTURE(fd);
    CAPTURE(g[i]);
    CHECK(rel < 1e-2);
    worst = std::max(worst, rel);
  }
  MESSAGE("finite differences: worst relative error " << worst);
}

TEST_CASE("mlp: the average of N workers' shard gradients is the global batch's gradient") {
  // For equal shards S_1..S_N of the global batch G, mean over G of grad l =
  // (1/N) sum_w (mean over S_w of grad l): what an all-reduce (sum) divided by N gives.
  const Dataset data = synthetic_dataset(512, 28, 28, 21);
  Mlp m(MlpOptions{.seed = 9});
  std::vector<float> full(m.parameter_count());
  std::vector<float> shard(m.parameter_count());
  for (int workers : {1, 2, 4}) {
    CAPTURE(workers);
    const EpochShards s(data.size(), 64 / static_cast<std::size_t>(workers), workers, 4, 0);
    const double full_loss = m.loss_and_gradient(data, s.global_batch(0), full);
    std::vector<double> sum(m.parameter_count(), 0.0);
    double loss_sum = 0;
    for (int w = 0; w < workers; ++w) {
      loss_sum += m.loss_and_gradient(data, s.shard(0, w), shard);
      for (std::size_t i = 0; i < sum.size(); ++i)
        sum[i] += shard[i];
    }
    CHECK(loss_sum / workers == doctest::Approx(full_loss).epsilon(1e-6));
    // Relative in the max norm: max_i |avg_i - full_i| <= 1e-5 max_i |full_i|.
    double max_full = 0, max_diff = 0;
    for (std::size_t i = 0; i < sum.size(); ++i) {
      max_full = std::max(max_full, std::abs(double{full[i]}));
      max_diff = std::max(max_diff, std::abs(sum[i] / workers - full[i]));
    }
    REQUIRE(max_full > 0);
    CHECK(max_diff <= 1e-5 * max_full);
  }
}

TEST_CASE("mlp: the same seed trains to bit-identical parameters, another seed does not") {
  const Dataset data = synthetic_dataset(256, 28, 28, 2);
  const auto train = [&](std::uint64_t seed) {
    Mlp m(MlpOptions{.seed = seed});
    Sgd sgd(m.parameter_count());
    std::vector<float> g(m.parameter_count());
    const EpochShards s(data.size(), 32, 1, seed, 0);
    for (std::size_t step = 0; step < 4; ++step) {
      m.loss_and_gradient(data, s.shard(step, 0), g);
      sgd.step(m.params(), g, 0.05);
    }
    return std::vector<float>(m.params().begin(), m.params().end());
  };
  const std::vector<float> a = train(1);
  const std::vector<float> b = train(1);
  const std::vector<float> c = train(2);
  REQUIRE(a.size() == b.size());
  CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
  CHECK(a != c);
  // The steps changed the model: it is not the initialisation any more.
  const Mlp initial(MlpOptions{.seed = 1});
  CHECK(a != std::vector<float>(initial.params().begin(), initial.params().end()));
}

TEST_CASE("data-parallel training: replicas stay identical and track the single-process run") {
  // The live runtime's step, without the network: N replicas from one seed; each computes its
  // shard's mean gradient into a flat buffer; the buffers are summed (the all-reduce) and divided
  // by N; every replica applies the same SGD step. Expected: the replicas stay bit-identical (the
  // same operations on the same numbers), and they track one process stepping on the global
  // batch (the averaged gradient equals the global one up to float rounding, ~1e-6 relative).
  const Dataset data = synthetic_dataset(512, 28, 28, 31);
  constexpr int kWorkers = 4;
  constexpr std::size_t kPerWorker = 16;
  constexpr double kLr = 0.05;
  std::vector<Mlp> replicas(kWorkers, Mlp(MlpOptions{.seed = 6}));
  std::vector<Sgd> optimizers(kWorkers, Sgd(replicas[0].parameter_count()));
  Mlp single(MlpOptions{.seed = 6});
  Sgd single_sgd(single.parameter_count());
  const std::size_t n = single.parameter_count();
  std::vector<float> summed(n), shard(n), global(n);
  const EpochShards s(data.size(), kPerWorker, kWorkers, 8, 0);
  for (std::size_t step = 0; step < 5; ++step) {
    std::fill(summed.begin(), summed.end(), 0.0f);
    for (int w = 0; w < kWorkers; ++w) {
      replicas[static_cast<std::size_t>(w)].loss_and_gradient(data, s.shard(step, w), shard);
      for (std::size_t i = 0; i < n; ++i)
        summed[i] += shard[i];
    }
    for (float& g : summed)
      g /= kWorkers;
    for (int w = 0; w < kWorkers; ++w) {
      const auto k = static_cast<std::size_t>(w);
      optimizers[k].step(replicas[k].params(), summed, kLr);
    }
    single.loss_and_gradient(data, s.global_batch(step), global);
    single_sgd.step(single.params(), global, kLr);
  }
  for (int w = 1; w < kWorkers; ++w) {
    const auto p = replicas[static_cast<std::size_t>(w)].params();
    CHECK(std::memcmp(p.data(), replicas[0].params().data(), n * sizeof(float)) == 0);
  }
  double max_param = 0, max_diff = 0;
  for (std::size_t i = 0; i < n; ++i) {
    max_param = std::max(max_param, std::abs(double{single.params()[i]}));
    max_diff = std::max(max_diff, std::abs(double{replicas[0].params()[i]} - single.params()[i]));
  }
  CHECK(max_diff <= 1e-5 * max_param);
}
