#pragma once
// What a training run measured, simulated or live, by the same definitions (trainer.h), and its
// one JSON form (a live run's processes write it, the runner reads it back).

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace adaptsim::runtime {

// One step of the run, warm-up included, as every worker agreed it.
struct StepRow {
  int step = 0;
  bool measured = false;  // false for warm-up steps
  double time_s = 0;      // mean over workers of the step's duration
  int batch_per_gpu = 0;
  int workers = 0;
  // Per worker: bytes the step all-reduced (the gradients; twice that with a monitor's second
  // all-reduce of their squares).
  double allreduce_bytes = 0;
  std::string strategy;  // the system's all-reduce strategy in this step; empty if it has none
  std::string decision;  // what the policy changed after this step; empty: nothing
  std::map<std::string, double> readings;  // the monitors' readings after this step
  bool operator==(const StepRow&) const = default;
};

// A live link direction's traffic (simctl run --live --link-stats on a testbed): its interface's
// byte counters read every bin from the ranks' launch (wire bytes: frame, IP and TCP headers and
// the other direction's ACKs included), named as the simulator names the channel ("s0.nic0->
// switch").
struct MeasuredLink {
  std::string name;
  double capacity_Bps = 0;
  std::vector<double> bin_bytes;
  bool operator==(const MeasuredLink&) const = default;
};

// What one rank sent another over a live run: data messages and their payload bytes.
struct PairTraffic {
  int src = 0;
  int dst = 0;
  std::uint64_t messages = 0;
  double bytes = 0;
  bool operator==(const PairTraffic&) const = default;
};

// Per-worker per-step quantities, averaged over workers and measured steps.
struct TrainingResult {
  std::vector<double> step_s;  // per measured step: mean over workers of that step's duration
  double step_mean_s = 0;
  double step_std_s = 0;
  double compute_s = 0;       // forward + backward + update, average per worker-step
  double exposed_link_s = 0;  // after backward, with some communication in flight
  double exposed_wait_s = 0;  // after backward, with nothing in flight (negotiation, ordering)
  double samples_per_s_per_gpu = 0;      // mean batch / mean step time
  double samples_per_s_per_gpu_std = 0;  // propagated from the step-time spread
  double samples_per_s_total = 0;
  std::vector<double> worker_step_mean_s;  // per worker: its own measured steps' mean
  std::vector<StepRow> steps;
  // The run's timeline as trace-event JSON (timeline.h) when one was asked for; not part of the
  // result's JSON form (a live run's ranks write theirs to files the backend merges).
  std::string timeline_json;
  // Live runs with LiveTrainingTask::link_stats_bin_ns: the testbed's links and the ranks'
  // traffic matrix; not part of the JSON form either (the backend adds them).
  std::vector<MeasuredLink> measured_links;
  std::vector<PairTraffic> pair_traffic;
  bool operator==(const TrainingResult&) const = default;
};

// The JSON object {"step_s": [...], "step_mean_s": ..., ..., "steps": [{...}, ...]}.
std::string to_json(const TrainingResult& result);
// Throws RuntimeFailure naming `label` when the text is not such an object.
TrainingResult training_result_from_json(const std::string& text, const std::string& label);

}  // namespace adaptsim::runtime
