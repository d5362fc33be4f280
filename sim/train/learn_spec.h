#pragma once
// Real training's configuration: the data set and the optimizer's hyper-parameters of a run of
// the fashion-mlp model (sim/train/mlp_model.cpp) that learns for real (hw/live's learn mode).
// One reader for both places that carry it: a scenario's training workload (`learn:` beside the
// model list, sim/run/training_workload.cpp) and adaptsim-live's configuration, which the runner
// writes with learn_spec_yaml (hw/runner).
//
//   learn:
//     data: /usr/share/datasets/fashion-mnist   # the four IDX files (relative: to the file)
//     lr: 0.05              # SGD learning rate at base_batch (> 0)
//     base_batch: 64        # global batch at which lr applies; others scale linearly (Goyal et
//                           # al. 2017, sim/learn/sgd.h); 0 or absent: the run's global batch
//     warmup_steps: 0       # gradual warm-up (sim/learn/sgd.h)
//     momentum: 0.9         # in [0, 1)
//     weight_decay: 0       # >= 0
//     eval_every: 100       # test-set evaluation every N steps (and after the last); 0: last only
//     params_dir: /tmp/p    # optional: each rank writes its final parameters there (tests)
//     dynamics: f.yaml      # optional: simulated runs' training dynamics (sim/train/dynamics.h;
//                           # relative: to the file), fitted on live runs with the same lr,
//                           # base_batch and momentum; without it a simulated run does not learn
//
// Bad input is an InputError at the file, line and key ("learn.lr: must be > 0"); with the data
// loaded, a missing or truncated IDX file is one too, at learn.data.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "sim/io/yaml_reader.h"
#include "sim/learn/dataset.h"

namespace adaptsim::train {

struct LearnSpec {
  std::filesystem::path data{learn::kDefaultFashionMnistDir};
  double lr = 0.05;
  std::int64_t base_batch = 0;  // 0: the run's global batch (lr applies as given)
  std::int64_t warmup_steps = 0;
  double momentum = 0.9;
  double weight_decay = 0;
  int eval_every = 100;  // steps; 0: only after the last step
  std::filesystem::path params_dir;
  std::filesystem::path dynamics;  // empty: none
};

// The model that learns for real; a LearnSpec goes with it only.
inline constexpr std::string_view kLearnModel = "fashion-mlp";

// Reads the `learn` map (r is that map). Relative paths resolve against base_dir. With `data`
// non-null, also loads the data set (failing at learn.data) and hands it over.
LearnSpec read_learn_spec(io::MapReader& r, const std::filesystem::path& base_dir,
                          std::shared_ptr<const learn::FashionMnist>* data = nullptr);

// The spec's data set (learn::load_fashion_mnist from spec.data): InputError naming the file.
std::shared_ptr<const learn::FashionMnist> load_learn_data(const LearnSpec& spec);

// The spec as one YAML flow map, read back by read_learn_spec (paths absolute).
std::string learn_spec_yaml(const LearnSpec& spec);

}  // namespace adaptsim::train
