#pragma once
// Helpers of the live training tests: a small synthetic model, its compute split, and clusters of
// ranks as threads in this process (tests/hw/tcp's ThreadCluster) running run_live_training.

#include <string>
#include <vector>

#include "hw/live/live_training.h"
#include "sim/train/model_zoo.h"

namespace adaptsim::live::testing {

// Five layers in backward order (one without parameters), seven tensors from 10 elements to
// 1.2 MB (two 1 MiB chunks), 2.1 MB of float32 gradients in all.
train::Model synthetic_model();

// forward_s, backward_s spread over the layers by backward FLOPs, optimizer_s.
train::ComputeProfile split_compute(const train::Model& model, double forward_s, double backward_s,
                                    double optimizer_s);
// LiveConfig::compute for a split measured at `batch` (another batch scales it linearly).
std::function<train::ComputeProfile(int)> fixed_compute(const train::ComputeProfile& p, int batch);

// A short run of the synthetic model: 1 warm-up and 4 measured steps of 4 + 8 + 1 ms compute at
// batch 16.
LiveConfig small_config(runtime::SystemKind kind);

struct ClusterRun {
  std::vector<LiveResult> results;  // by rank (default-constructed where it failed)
  std::vector<std::string> errors;  // by rank, "" = none
};

// n ranks on 127.0.0.1 with the given host of each rank (empty: one host), each running
// run_live_training on its own thread. `faulty_rank` drops all its connections after
// `fault_after_sends` sent messages (an in-process death).
ClusterRun run_cluster(int n, const std::vector<int>& host_of_rank, const train::Model& model,
                       const LiveConfig& config, int faulty_rank = -1,
                       std::uint64_t fault_after_sends = 0);

std::string live_tool_path();

// A fresh temporary directory, removed with everything in it when the test ends (also when a
// REQUIRE fails).
struct TempDir {
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string path;
};
void write_text(const std::string& path, const std::string& text);
std::string read_text(const std::string& path);

}  // namespace adaptsim::live::testing
