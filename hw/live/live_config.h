#pragma once
// The adaptsim-live configuration file (JSON) and result file (JSON).
//
// Configuration (every key optional unless marked; no other key is accepted):
//   {
//     "model": "resnet50",                 // required: a zoo name, or an inline model:
//              // {"name": "toy", "sample_unit": "img",
//              //  "layers": [{"name": "fc", "backward_flops": 2e6,            // backward order
//              //              "tensors": [{"name": "fc.bias", "elements": 10}, ...]}, ...]}
//     "batch_per_gpu": 32,
//     // The compute split, one of:
//     "compute": {"forward": "10ms", "backward": "20ms", "optimizer": "2ms"},
//              // "backward" is spread over the layers by their backward FLOPs (evenly when the
//              // model has none); or "backward_layers": ["1ms", ...], one per layer
//     "device": "../traces/devices/k80-half.yaml", "precision": "fp32",
//              // train::compute_profile from a device profile (path relative to this file)
//     "compute_scale": 0.1,                // multiplies every compute time (default 1)
//     "step_time_cv": 0.02,                // or "2%"; default: the device's, else 0
//     "system": {"kind": "kungfu", "label": "kungfu-mbts", "strategy": "MULTI_BINARY_TREE_STAR",
//                "chunk_size": "1MiB", "cycle_time": "5ms", "fusion_threshold": "64MiB"},
//     "warmup_steps": 1, "steps": 5, "seed": 1, "timeout": "30s",
//     "verify": true,                      // check every reduced gradient after every step
//     "compute_mode": "sleep"              // or "spin" (CPU), "gpu" (the CUDA emulation kernel on
//              // the rank's GPU), "auto" (gpu where a device is visible, else sleep)
//   }
//
// Bad input throws InputError "FILE: key 'system.strategy': unknown strategy \"X\" ...".

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
LiveRunSpec parse_live_run_spec(const std::string& json_text, const std::string& label,
                                const std::filesystem::path& base_dir);

// The result file written by rank 0:
//   {"mode": "live", "model": ..., "system": ..., "label": ..., "strategy": ..., "n_ranks": 4,
//    "batch_per_gpu": ..., "warmup_steps": ..., "measured_steps": ..., "step_s": [...],
//    "step_mean_s": ..., "step_std_s": ..., "compute_s": ..., "exposed_link_s": ...,
//    "exposed_wait_s": ..., "samples_per_s_per_gpu": ..., "samples_per_s_per_gpu_std": ...,
//    "samples_per_s_total": ..., "sample_unit": ..., "rank_step_mean_s": [...],
//    "compute_profile_s": {"forward": ..., "backward": ..., "optimizer": ..., "total": ...},
//    "compute_mode": "sleep" | "spin" | "gpu 0 (NAME)" (rank 0's), "gradient_bytes": ...,
//    "tensors": ..., "verified_steps": ..., "wall_s": ...,
//    "training_wall_s": ..., "config": ...}
// `wall_s` is the whole run on rank 0 (connecting included), `training_wall_s` the steps only.
std::string result_json(const LiveRunSpec& spec, const LiveResult& result, double wall_s);

}  // namespace adaptsim::live
