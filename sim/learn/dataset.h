#pragma once
// A labelled image data set in memory (Fashion-MNIST: Xiao, Rasul and Vollgraf 2017,
// arXiv:1708.07747), and the deterministic split of each epoch into data-parallel shards.
//
// Sharding (EpochShards): epoch e of a run with seed s visits the training set in the order of a
// permutation drawn from Rng::derive(s, e) (Fisher-Yates), which depends on (s, e) and the data
// set's size only, not on the number of workers or the batch size. The permutation is cut into
// global batches of G = B_per_worker x N consecutive indices; worker w of N takes the w-th slice
// of B_per_worker indices of each. The final partial global batch (the n mod G samples left over)
// is DROPPED: every step has the same G samples and every worker the same B_per_worker, so the
// averaged shard gradients are the gradient of one global batch (the union of the shards, which
// are disjoint). The dropped samples differ from epoch to epoch, as the permutation does.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string_view>
#include <vector>

#include "sim/learn/idx_reader.h"

namespace adaptsim::learn {

// Fashion-MNIST's geometry (arXiv:1708.07747, Table 1): 28x28 grey images in 10 classes.
inline constexpr int kImageRows = 28;
inline constexpr int kImageCols = 28;
inline constexpr int kClasses = 10;

// Where Debian's package dataset-fashion-mnist installs the four IDX files (scripts/setup.sh).
inline constexpr std::string_view kDefaultFashionMnistDir = "/usr/share/datasets/fashion-mnist";

// Images and their labels. Invariants: pixels().size() == size() * pixels_per_sample(); every
// pixel in [0, 1] (the byte / 255); every label < kClasses.
class Dataset {
 public:
  Dataset() = default;
  // Takes an IDX image array (count x rows x cols) and a label array (count); `source` names
  // them in messages ("<images>, <labels>"). Throws InputError when the arrays are not 3-D and
  // 1-D, the counts differ, or a label is >= kClasses.
  Dataset(const IdxArray& images, const IdxArray& labels, std::string_view source);

  std::size_t size() const { return labels_.size(); }
  int rows() const { return rows_; }
  int cols() const { return cols_; }
  std::size_t pixels_per_sample() const { return static_cast<std::size_t>(rows_) * cols_; }
  // Sample i's pixels, row-major, in [0, 1]. i < size().
  std::span<const float> image(std::size_t i) const {
    return {pixels_.data() + i * pixels_per_sample(), pixels_per_sample()};
  }
  int label(std::size_t i) const { return labels_[i]; }

 private:
  int rows_ = 0;
  int cols_ = 0;
  std::vector<float> pixels_;
  std::vector<std::uint8_t> labels_;
};

// Reads an images file and a labels file (IDX, plain or gzip; sim/learn/idx_reader.h).
Dataset load_idx_dataset(const std::filesystem::path& images, const std::filesystem::path& labels);

struct FashionMnist {
  Dataset train;  // 60000 samples (train-*-ubyte.gz)
  Dataset test;   // 10000 samples (t10k-*-ubyte.gz)
};

// Loads the four files of the Fashion-MNIST distribution from `dir` and checks the images are
// kImageRows x kImageCols. Throws InputError naming the file for a missing or bad one.
FashionMnist load_fashion_mnist(const std::filesystem::path& dir = kDefaultFashionMnistDir);

// The permutation of [0, n) that epoch `epoch` of a run with `seed` visits (see the top).
std::vector<std::uint32_t> epoch_permutation(std::size_t n, std::uint64_t seed,
                                             std::uint64_t epoch);

// One epoch's global batches and their shards. Invariants: steps() == n / (batch_per_worker x
// workers) (integer division: the partial batch is dropped); for every step, the shards of
// workers 0..N-1, concatenated in worker order, are exactly global_batch(step).
class EpochShards {
 public:
  // Throws InputError for batch_per_worker == 0, workers <= 0, or a global batch larger than n
  // (an epoch of zero steps).
  EpochShards(std::size_t n, std::size_t batch_per_worker, int workers, std::uint64_t seed,
              std::uint64_t epoch);

  std::size_t steps() const { return steps_; }
  std::size_t global_batch_size() const { return batch_per_worker_ * workers_; }
  std::size_t batch_per_worker() const { return batch_per_worker_; }
  int workers() const { return workers_; }
  // The sample indices of global batch `step` (< steps(); std::out_of_range otherwise).
  std::span<const std::uint32_t> global_batch(std::size_t step) const;
  // Worker `worker`'s (0 <= worker < workers(); std::out_of_range otherwise) slice of global
  // batch `step`.
  std::span<const std::uint32_t> shard(std::size_t step, int worker) const;

 private:
  std::vector<std::uint32_t> order_;
  std::size_t batch_per_worker_;
  int workers_;
  std::size_t steps_;
};

}  // namespace adaptsim::learn
