// Fashion-MNIST for real (Debian package dataset-fashion-mnist): the files load with the
// published sizes, and a short training run learns. fashion_mnist_test_main.cpp skips the whole
// executable (exit code 77, "SKIPPED: ...") when the data is not installed.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <vector>

#include "sim/learn/dataset.h"
#include "sim/learn/mlp.h"
#include "sim/learn/sgd.h"

using namespace adaptsim::learn;

namespace {

bool installed() {
  return std::filesystem::is_directory(kDefaultFashionMnistDir);
}

const FashionMnist& data() {
  static const FashionMnist loaded = load_fashion_mnist();
  return loaded;
}

}  // namespace

TEST_CASE("fashion-mnist: 60000 training and 10000 test images of 28x28, balanced classes" *
          doctest::skip(!installed())) {
  // Xiao et al. 2017 (arXiv:1708.07747): 60000 + 10000 images, 6000 + 1000 per class.
  const FashionMnist& d = data();
  CHECK(d.train.size() == 60000);
  CHECK(d.test.size() == 10000);
  CHECK(d.train.rows() == 28);
  CHECK(d.train.cols() == 28);
  CHECK(d.test.pixels_per_sample() == 784);
  std::array<int, kClasses> train_count{};
  std::array<int, kClasses> test_count{};
  for (std::size_t i = 0; i < d.train.size(); ++i)
    ++train_count[d.train.label(i)];
  for (std::size_t i = 0; i < d.test.size(); ++i)
    ++test_count[d.test.label(i)];
  for (int c = 0; c < kClasses; ++c) {
    CHECK(train_count[c] == 6000);
    CHECK(test_count[c] == 1000);
  }
  const auto pixels = d.train.image(0);
  CHECK(*std::min_element(pixels.begin(), pixels.end()) >= 0.0f);
  CHECK(*std::max_element(pixels.begin(), pixels.end()) <= 1.0f);
}

TEST_CASE("fashion-mnist: 300 steps of batch 64 reach 70% test accuracy" *
          doctest::skip(!installed())) {
  const FashionMnist& d = data();
  Mlp model(MlpOptions{.seed = 1});
  // Untrained, the model is near chance: 1/10 of the classes.
  const Evaluation before = model.evaluate(d.test);
  CHECK(before.accuracy < 0.25);
  Sgd sgd(model.parameter_count(), SgdOptions{.momentum = 0.9});
  std::vector<float> g(model.parameter_count());
  const EpochShards shards(d.train.size(), 64, 1, 1, 0);
  for (std::size_t step = 0; step < 300; ++step) {
    model.loss_and_gradient(d.train, shards.shard(step, 0), g);
    sgd.step(model.params(), g, 0.05);
  }
  const Evaluation after = model.evaluate(d.test);
  MESSAGE("test accuracy after 300 steps of batch 64: " << after.accuracy);
  // Measured 0.8010 (seed 1, lr 0.05, momentum 0.9; adaptsim-learn --steps 300 runs the same) on
  // one machine and 0.7340 on another (an AVX-512 EPYC: glibc picks its expf and logf by the CPU,
  // and 300 steps of momentum SGD amplify the last bits; the test accuracy there is 0.769 at step
  // 200). The bound asserts that learning happens, far above chance (0.10), on either.
  CHECK(after.accuracy > 0.70);
  CHECK(after.mean_loss < before.mean_loss);
}
