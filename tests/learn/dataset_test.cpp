// The data set's checks and scaling, and the data-parallel sharding (sim/learn/dataset.h).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/core/error.h"
#include "sim/learn/dataset.h"
#include "sim/learn/idx_reader.h"

using adaptsim::InputError;
using namespace adaptsim::learn;

namespace {

std::string construct_error(const IdxArray& images, const IdxArray& labels) {
  try {
    Dataset d(images, labels, "img.gz, lbl.gz");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("dataset: pixels are the bytes / 255 and labels are kept") {
  const IdxArray images{{2, 1, 2}, {0, 51, 255, 102}};
  const IdxArray labels{{2}, {3, 9}};
  const Dataset d(images, labels, "test");
  // Expected: 0/255 = 0, 51/255 = 0.2, 255/255 = 1, 102/255 = 0.4.
  REQUIRE(d.size() == 2);
  CHECK(d.pixels_per_sample() == 2);
  CHECK(d.image(0)[0] == 0.0f);
  CHECK(d.image(0)[1] == doctest::Approx(0.2));
  CHECK(d.image(1)[0] == 1.0f);
  CHECK(d.image(1)[1] == doctest::Approx(0.4));
  CHECK(d.label(0) == 3);
  CHECK(d.label(1) == 9);
}

TEST_CASE("dataset: image and label counts must agree, labels must be < 10") {
  CHECK(construct_error({{3, 1, 1}, {1, 2, 3}}, {{2}, {0, 1}}) ==
        "img.gz, lbl.gz: counts disagree: 3 images, 2 labels");
  CHECK(construct_error({{2, 1, 1}, {1, 2}}, {{2}, {0, 10}}) ==
        "img.gz, lbl.gz: label 10 at index 1: expected < 10");
}

TEST_CASE("dataset: a missing directory names the package") {
  try {
    load_fashion_mnist("/nonexistent/fashion");
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()) ==
          "/nonexistent/fashion: no such directory: expected the Fashion-MNIST IDX files (Debian "
          "package dataset-fashion-mnist)");
  }
}

TEST_CASE("sharding: an epoch's order is a permutation fixed by (seed, epoch)") {
  const std::vector<std::uint32_t> p = epoch_permutation(1000, 7, 0);
  std::vector<std::uint32_t> sorted = p;
  std::sort(sorted.begin(), sorted.end());
  for (std::uint32_t i = 0; i < 1000; ++i)
    REQUIRE(sorted[i] == i);
  CHECK(epoch_permutation(1000, 7, 0) == p);  // same seed and epoch: same order
  CHECK(epoch_permutation(1000, 7, 1) != p);  // the next epoch reshuffles
  CHECK(epoch_permutation(1000, 8, 0) != p);  // another seed, another order
}

TEST_CASE("sharding: the partial global batch is dropped") {
  // n = 1000, B = 30 per worker, N = 4: G = 120, steps = floor(1000 / 120) = 8 (960 samples),
  // the last 40 of the permutation are not visited this epoch.
  const EpochShards s(1000, 30, 4, 1, 0);
  CHECK(s.global_batch_size() == 120);
  CHECK(s.steps() == 8);
  const std::vector<std::uint32_t> p = epoch_permutation(1000, 1, 0);
  const auto last = s.global_batch(7);
  CHECK(std::equal(last.begin(), last.end(), p.begin() + 840));
  CHECK_THROWS_AS(s.global_batch(8), std::out_of_range);
}

TEST_CASE("sharding: the workers' shards are disjoint and their union is the global batch") {
  for (int workers : {1, 2, 4, 8}) {
    CAPTURE(workers);
    const EpochShards s(1000, 16, workers, 3, 2);
    for (std::size_t step = 0; step < s.steps(); ++step) {
      // Expected: shard w = global_batch[16 w, 16 (w + 1)); concatenated in worker order, they
      // are the global batch, whose indices are all distinct (a slice of a permutation).
      std::vector<std::uint32_t> joined;
      for (int w = 0; w < workers; ++w) {
        const auto shard = s.shard(step, w);
        REQUIRE(shard.size() == 16);
        joined.insert(joined.end(), shard.begin(), shard.end());
      }
      const auto global = s.global_batch(step);
      REQUIRE(std::equal(joined.begin(), joined.end(), global.begin(), global.end()));
      std::sort(joined.begin(), joined.end());
      REQUIRE(std::adjacent_find(joined.begin(), joined.end()) == joined.end());
    }
  }
}

TEST_CASE("sharding: the order does not depend on the number of workers") {
  // The same global batch size G = 64 split 1, 2 or 4 ways visits the same samples per step.
  const EpochShards one(640, 64, 1, 5, 0);
  const EpochShards four(640, 16, 4, 5, 0);
  for (std::size_t step = 0; step < one.steps(); ++step) {
    const auto a = one.global_batch(step);
    const auto b = four.global_batch(step);
    REQUIRE(std::equal(a.begin(), a.end(), b.begin(), b.end()));
  }
}

TEST_CASE("sharding: bad sizes are InputErrors") {
  const auto message = [](std::size_t n, std::size_t b, int w) {
    try {
      EpochShards s(n, b, w, 1, 0);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(message(100, 0, 2) == "batch per worker 0: expected > 0");
  CHECK(message(100, 8, 0) == "workers 0: expected > 0");
  CHECK(message(100, 60, 2) ==
        "global batch 120 (60 per worker x 2 workers): expected at most the data set's 100 "
        "samples");
}
