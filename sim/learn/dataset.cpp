#include "sim/learn/dataset.h"

#include <stdexcept>
#include <string>
#include <utility>

#include "sim/core/error.h"
#include "sim/core/rng.h"

namespace adaptsim::learn {

Dataset::Dataset(const IdxArray& images, const IdxArray& labels, std::string_view source) {
  const std::string where(source);
  if (images.dims.size() != 3) {
    throw InputError(where + ": expected 3-D images (count, rows, columns), found " +
                     std::to_string(images.dims.size()) + " dimensions");
  }
  if (labels.dims.size() != 1) {
    throw InputError(where + ": expected 1-D labels, found " + std::to_string(labels.dims.size()) +
                     " dimensions");
  }
  if (images.dims[0] != labels.dims[0]) {
    throw InputError(where + ": counts disagree: " + std::to_string(images.dims[0]) + " images, " +
                     std::to_string(labels.dims[0]) + " labels");
  }
  for (std::size_t i = 0; i < labels.data.size(); ++i) {
    if (labels.data[i] >= kClasses) {
      throw InputError(where + ": label " + std::to_string(labels.data[i]) + " at index " +
                       std::to_string(i) + ": expected < " + std::to_string(kClasses));
    }
  }
  rows_ = static_cast<int>(images.dims[1]);
  cols_ = static_cast<int>(images.dims[2]);
  pixels_.resize(images.data.size());
  for (std::size_t i = 0; i < images.data.size(); ++i) {
    pixels_[i] = static_cast<float>(images.data[i]) / 255.0f;
  }
  labels_ = labels.data;
}

Dataset load_idx_dataset(const std::filesystem::path& images, const std::filesystem::path& labels) {
  // Images first, then labels: a missing pair is reported by its images file.
  const IdxArray image_array = read_idx(images, 3);
  const IdxArray label_array = read_idx(labels, 1);
  return Dataset(image_array, label_array, images.string() + ", " + labels.string());
}

FashionMnist load_fashion_mnist(const std::filesystem::path& dir) {
  if (!std::filesystem::is_directory(dir)) {
    throw InputError(dir.string() +
                     ": no such directory: expected the Fashion-MNIST IDX files (Debian package "
                     "dataset-fashion-mnist)");
  }
  FashionMnist data;
  data.train =
      load_idx_dataset(dir / "train-images-idx3-ubyte.gz", dir / "train-labels-idx1-ubyte.gz");
  data.test =
      load_idx_dataset(dir / "t10k-images-idx3-ubyte.gz", dir / "t10k-labels-idx1-ubyte.gz");
  const auto check_geometry = [&](const Dataset& set, const char* file) {
    if (set.rows() != kImageRows || set.cols() != kImageCols) {
      throw InputError((dir / file).string() + ": expected " + std::to_string(kImageRows) + "x" +
                       std::to_string(kImageCols) + " images, found " + std::to_string(set.rows()) +
                       "x" + std::to_string(set.cols()));
    }
  };
  check_geometry(data.train, "train-images-idx3-ubyte.gz");
  check_geometry(data.test, "t10k-images-idx3-ubyte.gz");
  return data;
}

std::vector<std::uint32_t> epoch_permutation(std::size_t n, std::uint64_t seed,
                                             std::uint64_t epoch) {
  std::vector<std::uint32_t> order(n);
  for (std::size_t i = 0; i < n; ++i)
    order[i] = static_cast<std::uint32_t>(i);
  Rng rng = Rng::derive(seed, epoch);
  // Fisher-Yates (Knuth, TAOCP vol. 2, Algorithm P): every permutation equally likely.
  for (std::size_t i = n; i > 1; --i) {
    std::swap(order[i - 1], order[rng.below(i)]);
  }
  return order;
}

EpochShards::EpochShards(std::size_t n, std::size_t batch_per_worker, int workers,
                         std::uint64_t seed, std::uint64_t epoch)
    : batch_per_worker_(batch_per_worker), workers_(workers) {
  if (batch_per_worker == 0) throw InputError("batch per worker 0: expected > 0");
  if (workers <= 0) {
    throw InputError("workers " + std::to_string(workers) + ": expected > 0");
  }
  const std::size_t global = batch_per_worker * static_cast<std::size_t>(workers);
  if (global > n) {
    throw InputError("global batch " + std::to_string(global) + " (" +
                     std::to_string(batch_per_worker) + " per worker x " + std::to_string(workers) +
                     " workers): expected at most the data set's " + std::to_string(n) +
                     " samples");
  }
  steps_ = n / global;
  order_ = epoch_permutation(n, seed, epoch);
}

std::span<const std::uint32_t> EpochShards::global_batch(std::size_t step) const {
  if (step >= steps_) throw std::out_of_range("EpochShards: step past the epoch's last");
  return std::span<const std::uint32_t>(order_).subspan(step * global_batch_size(),
                                                        global_batch_size());
}

std::span<const std::uint32_t> EpochShards::shard(std::size_t step, int worker) const {
  if (worker < 0 || worker >= workers_) throw std::out_of_range("EpochShards: no such worker");
  return global_batch(step).subspan(static_cast<std::size_t>(worker) * batch_per_worker_,
                                    batch_per_worker_);
}

}  // namespace adaptsim::learn
