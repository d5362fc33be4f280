#pragma once
// A GPU's profile for the training model: measured training throughput per (model, precision,
// batch size), the memory bandwidth that times the optimizer update, and the per-step jitter.
// Read from traces/devices/<name>.yaml; every number there carries its unit and a `source` string
// (an estimate keeps its [U]/[D] tag in the source). Host<->device copy (PCIe) and reduction
// bandwidths are not here: they belong to the server and are read from the topology
// (`server.pcie`, `server.cpu.reduce_bandwidth`, `server.gpu.reduce_bandwidth`), where the copies
// share PCIe links with the NICs.
//
// File schema (all keys required unless marked optional; no other key is accepted):
//
//   name: v100                          # the profile's name (the file's stem by convention)
//   description: "..."
//   default_precision: fp32             # fp32 | tf32 | amp, used when a caller names none
//   memory:                   {value: 16GiB,    source: "..."}   # GPU memory capacity
//   memory_bandwidth:         {value: 900GB/s,  source: "..."}   # peak DRAM/HBM bandwidth
//   step_time_cv:             {value: "2%",     source: "..."}   # per-step compute jitter
//   throughput:
//     - model: resnet50                 # a zoo name (sim/train/model_zoo.h)
//       precision: fp32
//       batch: 112                      # samples per GPU per step (a count)
//       rate: 367 img/s                 # or  step_time: 216ms  (exactly one of the two);
//                                       # unit img/s for image models, seq/s for bert-base
//       source: "..."
//
// Step time for a batch size that is not listed (step_compute_time_s), for one model and
// precision with points b_1 < ... < b_n:
//   - n = 1: time per sample is constant, t(B) = t_1 * B / b_1.
//   - n >= 2: the fixed-overhead model t(B) = a + c * B (per-step overhead a plus per-sample time
//     c, the compute model of AdaptDL/Pollux goodput.py) fitted through the two listed points
//     that bracket B, i.e. piecewise-linear interpolation of the step time; outside the listed
//     range the nearest segment is extended. Where that segment's fit is not physical (c <= 0 or
//     a < 0) the extension falls back to constant time per sample from the nearest point.
// A zoo model with no point for that precision on this device is an InputError: there is no
// silent cross-model guess (a file may list a derived estimate, tagged [D], instead).

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/train/model_zoo.h"

namespace adaptsim::train {

enum class Precision { kFp32, kTf32, kAmp };
std::string_view precision_name(Precision p);  // "fp32", "tf32", "amp"
std::optional<Precision> parse_precision(std::string_view name);

// A number from a profile file, in SI base units (bytes, bytes/s, a fraction), with its source.
struct SourcedValue {
  double value = 0;
  std::string source;
};

// The range of a listed point's step time, and of the compute step a training workload derives
// at its batch (run/training_workload.cpp): from 1 us (no GPU steps faster; a zero step would
// divide throughput by zero) to 1 h (100,000 steps of 1 h stay far below the simulator's 2^62 ns).
inline constexpr double kMinStepTimeS = 1e-6;
inline constexpr double kMaxStepTimeS = 3600;

// One measured (or estimated) training step: forward + backward + weight update, one GPU.
struct ThroughputPoint {
  std::string model;  // zoo name
  Precision precision = Precision::kFp32;
  int batch = 0;           // samples per step
  double step_time_s = 0;  // > 0
  std::string source;
  int line = 0;  // 1-based line in the file, for messages

  double samples_per_s() const { return batch / step_time_s; }
};

// A named number of a profile, for manifests and for checking that each has a source.
struct SourcedNumber {
  std::string key;  // "memory_bandwidth", "throughput[2].rate"
  double value = 0;
  std::string source;
};

class DeviceProfile {
 public:
  const std::string& name() const { return name_; }
  const std::string& description() const { return description_; }
  const std::string& file() const { return file_; }  // as given to the loader
  Precision default_precision() const { return default_precision_; }

  const SourcedValue& memory_bytes() const { return memory_bytes_; }
  const SourcedValue& memory_bandwidth_Bps() const { return memory_bandwidth_Bps_; }
  const SourcedValue& step_time_cv() const { return step_time_cv_; }  // a fraction, 0.02 = 2%

  // Sorted by (model, precision, batch).
  const std::vector<ThroughputPoint>& throughput() const { return throughput_; }
  bool has_throughput(std::string_view model, Precision precision) const;
  bool has_throughput(std::string_view model) const {
    return has_throughput(model, default_precision_);
  }

  // Seconds of compute for one training step (forward, backward, update) of `batch` samples of
  // the zoo model `model_name`, by the rule in the file comment. Throws InputError when the
  // device lists no point for that model and precision, or batch < 1.
  double step_compute_time_s(std::string_view model_name, int batch, Precision precision) const;
  double step_compute_time_s(std::string_view model_name, int batch) const {
    return step_compute_time_s(model_name, batch, default_precision_);
  }
  // For a model built with other options than its zoo entry (BERT at another sequence length):
  // the zoo entry's time scaled by the ratio of forward + backward FLOPs per sample.
  double step_compute_time_s(const Model& model, int batch, Precision precision) const;
  double step_compute_time_s(const Model& model, int batch) const {
    return step_compute_time_s(model, batch, default_precision_);
  }

  // Every number of the profile with its source, in file order.
  std::vector<SourcedNumber> sourced_numbers() const;

 private:
  friend DeviceProfile parse_device_profile(const std::string& yaml_text, const std::string& label);
  std::string name_, description_, file_;
  Precision default_precision_ = Precision::kFp32;
  SourcedValue memory_bytes_, memory_bandwidth_Bps_, step_time_cv_;
  std::vector<ThroughputPoint> throughput_;
};

// Throws InputError "file:line: key 'k': what was expected" for unreadable files, invalid YAML,
// unknown or missing keys, numbers without units or without a source, unknown models.
DeviceProfile load_device_profile(const std::filesystem::path& path);
// Same, from text; `label` stands for the file name in messages.
DeviceProfile parse_device_profile(const std::string& yaml_text, const std::string& label);

}  // namespace adaptsim::train
