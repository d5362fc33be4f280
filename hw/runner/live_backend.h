#pragma once
// Runs a scenario's training tasks live: real processes (adaptsim-live, one per GPU of the
// topology), placed on this machine (placement local, or hosts: rank r listening on the r-th
// listed address) or in an emulated cluster (testbed: one network namespace per server, NIC caps
// from the topology, named by live.prefix), exchanging real gradients over hw/tcp. The result is
// the same TrainingResult the simulator produces, from the same step definitions.

#include <filesystem>
#include <string>

#include "sim/runtime/live_task.h"

namespace adaptsim::runner {

class ProcessLiveBackend final : public runtime::LiveBackend {
 public:
  // `live_tool`: the adaptsim-live executable (see find_live_tool).
  explicit ProcessLiveBackend(std::filesystem::path live_tool);
  runtime::TrainingResult run_training(const runtime::LiveTrainingTask& task) override;

 private:
  std::filesystem::path live_tool_;
};

// $ADAPTSIM_LIVE_TOOL, else adaptsim-live beside the running tool (an installed bin/), else in
// its build tree (<build>/hw/live/adaptsim-live), else on $PATH. Throws RuntimeFailure when none
// is found.
std::filesystem::path find_live_tool();

// The configuration adaptsim-live reads for one task (YAML, in the scenario's own keys, read by
// the same readers; exposed for tests).
// With a progress file (background traffic), rank 0 publishes its steps there; with a timeline
// folder, every rank writes its timeline there; with a messages folder, what it sent each peer.
std::string live_config_yaml(const runtime::LiveTrainingTask& task,
                             const std::filesystem::path& progress_file = {},
                             const std::filesystem::path& timeline_dir = {},
                             const std::filesystem::path& messages_dir = {});
// The adaptsim-traffic tool: $ADAPTSIM_TRAFFIC_TOOL, beside simctl (installed), in its build tree,
// or on PATH.
std::filesystem::path find_traffic_tool();

// One line saying why adaptsim-live failed, from its stderr: the launcher's summary (the failed
// ranks, root cause first) and the first error a rank printed, when there is a summary; else
// every line joined with "; ".
std::string failure_cause(const std::string& output);

// The training result in adaptsim-live's result file (its "result" object).
runtime::TrainingResult parse_live_result(const std::string& json_text, const std::string& label);

}  // namespace adaptsim::runner
