#pragma once
// The adaptsim-live configuration file and result file.
//
// The configuration is YAML (JSON is YAML too), read by the project's one config reader
// (io::MapReader: errors name the file, line and key; unknown keys are rejected), with the
// scenario's own readers for the system (runtime::read_system) and the policy and monitors
// (runtime::read_seam). Every key optional unless marked:
//   model: resnet50                      # required: a zoo name, or an inline model:
//     # {name: toy, sample_unit: img,
//     #  layers: [{name: fc, backward_flops: 2e6, tensors: [{name: fc.bias, elements: 10}]}]}
//     # (layers in backward order)
//   batch_per_gpu: 32
//   # The compute split, one of:
//   compute: {forward: 10ms, backward: 20ms, optimizer: 2ms}
//     # backward is spread over the layers by their backward FLOPs (evenly when the model has
//     # none), or backward_layers: [1ms, ...], one per layer; another batch (a policy's) scales
//     # forward and backward linearly
//   device: ../traces/devices/k80-half.yaml   # or a device profile (relative to this file)
//   precision: fp32                           # with a device profile
//   compute_scale: 0.1                   # multiplies every compute time (default 1)
//   step_time_cv: 0.02                   # or 2%; default: the device's, else 0
//   system: {kind: kungfu, label: kungfu-mbts, strategy: MULTI_BINARY_TREE_STAR, chunk_size: 1MiB}
//   policy: {name: switch-strategy, step: 5, strategy: STAR}   # optional, as in scenarios
//   monitors: [{name: throughput, window: 4}]                  # optional
//   stragglers: [{worker: 1, from_step: 3, compute: 2}]       # optional (runtime/straggler.h)
//   warmup_steps: 1
//   steps: 5
//   seed: 1
//   timeout: 30s
//   verify: true                         # check every reduced gradient after every step
//   compute_mode: sleep                  # or spin (CPU), gpu (the CUDA emulation kernel on the
//                                        # rank's GPU), auto (gpu where a device is visible)
//   congestion_control: cubic
//   progress_file: /tmp/x/progress       # rank 0 publishes its step (background traffic's clock)
//   timeline_dir: /tmp/x/timeline        # each rank writes rank<r>.trace.json there
//   messages_dir: /tmp/x/messages        # each rank writes rank<r>.messages.csv there
//   learn: {data: /usr/share/datasets/fashion-mnist, lr: 0.05, base_batch: 64, momentum: 0.9,
//           eval_every: 100}            # model fashion-mlp only: train it for real (learner.h;
//                                       # the keys: sim/train/learn_spec.h); compute and device
//                                       # become optional (the compute is real); the data set
//                                       # is loaded here, a missing or truncated file an error
//                                       # at learn.data
//
// Bad input throws InputError "FILE:LINE: key 'system.strategy': unknown strategy ...".

#include <filesystem>
#include <string>

#include "hw/live/live_training.h"
#include "sim/train/model_zoo.h"

namespace adaptsim::live {

struct LiveRunSpec {
  std::string config_path;  // as given
  train::Model model;
  LiveConfig live;
  std::string device_path;  // empty unless the compute came from a device profile
  std::string precision;    // with a device profile
  double compute_scale = 1;
};

LiveRunSpec load_live_run_spec(const std::filesystem::path& path);
// From text; `label` names the file in messages, `base_dir` resolves relative device paths.
LiveRunSpec parse_live_run_spec(const std::string& text, const std::string& label,
                                const std::filesystem::path& base_dir);

// The result file written by rank 0:
//   {"mode": "live", "config": ..., "model": ..., "sample_unit": ..., "system": ..., "label": ...,
//    "n_ranks": 4, "batch_per_gpu": ..., "warmup_steps": ..., "measured_steps": ..., "seed": ...,
//    "compute_profile_s": {"forward": ..., "backward": ..., "optimizer": ..., "total": ...},
//    "compute_scale": ..., "compute_mode": "sleep" | "spin" | "gpu 0 (NAME)" (rank 0's),
//    "gradient_bytes": ..., "tensors": ..., "verified_steps": ..., "training_wall_s": ...,
//    "wall_s": ..., "result": {runtime::TrainingResult's JSON: step_s, step_mean_s, ..., steps}}
// and with `learn`: "learn": {"lr": ..., "base_batch": ..., "momentum": ..., "eval_every": ...,
// "samples": ..., "test_loss": ..., "test_accuracy": ...} (rank 0's evaluation after the last
// step; each step's readings carry learn.samples, learn.wall_s, learn.lr and, at the evaluation
// points, learn.test_loss and learn.test_accuracy).
// `wall_s` is the whole run on rank 0 (connecting included), `training_wall_s` the steps only.
std::string result_json(const LiveRunSpec& spec, const LiveResult& result, double wall_s);

}  // namespace adaptsim::live
