#pragma once
// A worker's compute in one training step, split over the forward pass, each backward layer and
// the optimizer update, from a device profile's measured single-GPU step time.

#include <vector>

#include "sim/train/device_profile.h"
#include "sim/train/model_zoo.h"

namespace adaptsim::train {

struct ComputeOptions {
  int batch_per_gpu = 32;
  Precision precision = Precision::kFp32;
  // Optimizer update traffic per parameter: SGD with momentum reads the gradient and reads and
  // writes weight and momentum (5 x 4 B, float32); memory-bound at the device's bandwidth.
  double optimizer_bytes_per_param = 20;
  // Multiplies every compute time (forward, backward, update): shorter runs for live validation,
  // applied identically to simulated and live runs.
  double compute_scale = 1.0;
};

// Forward and per-layer backward seconds (in backward order) and the optimizer update, for one
// worker without jitter.
struct ComputeProfile {
  double forward_s = 0;
  std::vector<double> backward_layer_s;
  double optimizer_s = 0;
  double total_s() const;
};

ComputeProfile compute_profile(const Model& model, const DeviceProfile& device,
                               const ComputeOptions& options);

// A compute split measured at `batch`, its forward and backward scaled linearly to `new_batch`
// (explicit splits in tests and live configs; device profiles give every batch its own). The
// update is per parameter and does not change.
ComputeProfile scale_compute(const ComputeProfile& at_batch, int batch, int new_batch);

}  // namespace adaptsim::train
