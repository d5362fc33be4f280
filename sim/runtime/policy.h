#pragma once
// The seam through which a running job is observed and changed, in both modes and through the
// same code (trainer.h calls it):
//   - at every step boundary the step loop agrees with every worker on what the step was (one
//     small all-reduce over the workers' transport, charged like any collective), giving a
//     StepObservation that is identical on every worker;
//   - monitors turn the observations into named readings;
//   - a policy may give each worker a vote from the worker's own measurements (Policy::vote);
//     the agreement sums the votes (StepObservation::votes);
//   - the policy, a pure function of the history of observations (readings included), decides
//     what changes for the next step: the batch size per worker, the all-reduce strategy (a star
//     may be rooted at any rank), or the worker set.
// Because every worker sees the same history and the policy is pure, every worker makes the same
// decision without further messages, simulated or live. A strategy change then runs KungFu's
// SetGlobalStrategy protocol (session/adaptation.go): a consensus on the new strategy's digest
// (an all-reduce; workers that disagree fail the run), the swap, and a barrier (trainer.h).
//
// Writing a policy: copy sim/runtime/policies.cpp's SwitchStrategyPolicy (a class with decide(),
// and a parse function reading its parameters from the scenario's `policy:` map), and add a
// PolicyKind line to policy_kinds() in policies.cpp. The scenario selects it by name:
//   policy: {name: switch-strategy, step: 5, strategy: MULTI_BINARY_TREE_STAR}

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/io/yaml_reader.h"
#include "sim/runtime/system.h"

namespace adaptsim::runtime {

// What every worker agrees a step was.
struct StepObservation {
  int step = 0;           // 0-based, warm-up included
  int batch_per_gpu = 0;  // what the step ran with
  int workers = 0;
  std::optional<StrategyChoice> strategy;  // the system's all-reduce strategy, if it has one
  double step_s = 0;                       // mean over workers of the step's duration
  double samples_per_s = 0;                // workers x batch / step_s
  // Per worker, averaged: bytes of gradient all-reduced in the step, and the time with some
  // communication of the worker in flight; their ratio is the all-reduce throughput.
  double comm_bytes = 0;
  double comm_s = 0;
  double allreduce_Bps = 0;  // comm_bytes / comm_s (0 without communication)
  // With a monitor that needs them (Monitor::needs_gradient_norms), the squared L2 norms of the
  // step's gradients: the mean over workers of each worker's own |g_w|^2 (a batch of
  // batch_per_gpu samples), and |G|^2 of the averaged gradient G = sum_w g_w / workers (a batch
  // of workers x batch_per_gpu): the two inputs of the gradient noise scale (KUNGFU.md 3.1).
  // NaN where the environment holds no gradient values (simulated runs), 0 when not asked for.
  double grad_sq_local = 0;
  double grad_sq_global = 0;
  // With a monitor that asks (Monitor::needs_gradient_variance), KungFu's gradient variance:
  // the sum over tensors of ||E[g^2] - E[g]^2||_2 over the workers (a second all-reduce, of the
  // squared gradients). NaN where the environment holds no values, 0 when not asked for.
  double grad_variance = 0;
  // The sum over workers of their votes (Policy::vote): how many workers ask for a change.
  double votes = 0;
  // Monitors' readings after this step, by name ("throughput.window_mean").
  std::map<std::string, double> readings;
};

// What one worker measured of its own step, before any agreement (KungFu's per-peer
// StrategyStat, session/adaptiveStrategies.go): the gradient bytes it all-reduced and the span
// from the first of its transfers starting to the last ending.
struct LocalStep {
  int step = 0;
  double comm_bytes = 0;
  double comm_span_s = 0;
};

// What a policy changes for the next step; empty fields change nothing.
struct Decision {
  std::optional<int> batch_per_gpu;
  std::optional<StrategyChoice> strategy;
  std::optional<int> workers;  // the cluster's size (elastic runs: trainer.h)
  bool empty() const { return !batch_per_gpu && !strategy && !workers; }
  // "batch 64; strategy MULTI_BINARY_TREE_STAR" (empty when nothing changes).
  std::string describe() const;
};

// Which kinds of change a policy may make, checked against the run before it starts.
struct PolicyChanges {
  bool batch = false;
  bool strategy = false;
  bool workers = false;
  int max_workers = 0;  // with `workers`: the largest cluster the policy asks for
};

class Policy {
 public:
  virtual ~Policy() = default;
  virtual std::string_view name() const = 0;
  virtual PolicyChanges changes() const = 0;
  // After the step history.back().step: what changes for the next step. Pure: the same history
  // gives the same decision (every worker calls it on its own copy).
  virtual Decision decide(const std::vector<StepObservation>& history) const = 0;
  // A worker's own say in the decision after its step own.back().step, from its own
  // measurements only (every step of it so far); the step agreement sums the workers' votes
  // into StepObservation::votes, which decide() then sees. Pure. Default: no vote.
  virtual double vote(const std::vector<LocalStep>& own) const {
    (void)own;
    return 0;
  }
  // The largest batch per GPU the policy grows to (0: none); a run must start at or under it.
  virtual int batch_cap() const { return 0; }
};

// A monitor turns the agreed observations into readings (written into the latest observation's
// `readings`), from which policies decide. It keeps its own state (a window, a moving average)
// and sees every step once, in order.
class Monitor {
 public:
  virtual ~Monitor() = default;
  virtual std::string_view name() const = 0;
  // Whether step `step`'s observation must carry the gradients' squared norms: every worker then
  // runs a norm kernel over its local and reduced gradients before its update, and that step pays
  // for it (a monitor with an interval asks on its steps only).
  virtual bool needs_gradient_norms(int step) const {
    (void)step;
    return false;
  }
  // Whether step `step` must run KungFu's gradient variance: squares of the gradients, a second
  // all-reduce of them (StepObservation::comm_bytes doubles) and a variance kernel, all paid by
  // the step. Monitors with an interval ask at step 0, which is how a run learns it needs the
  // second all-reduce (SeamSpec::squares_allreduce).
  virtual bool needs_gradient_variance(int step) const {
    (void)step;
    return false;
  }
  virtual void observe(StepObservation& latest) = 0;
};

// A policy or monitor kind: its name in scenarios, one line of description, and a parser of its
// parameters (the `policy:` map, `name` already read; unknown keys are the parser's to reject by
// finishing the reader).
struct PolicyKind {
  std::string name;
  std::string summary;
  std::function<std::unique_ptr<Policy>(io::MapReader&)> parse;
};
struct MonitorKind {
  std::string name;
  std::string summary;
  std::function<std::unique_ptr<Monitor>(io::MapReader&)> parse;
};
const std::vector<PolicyKind>& policy_kinds();
const std::vector<MonitorKind>& monitor_kinds();

// What a run's seam is made of: parsed once, instantiated per run (monitors keep state).
struct SeamSpec {
  // The `policy:` and `monitors:` sections as written (YAML text), so that a live run's
  // processes parse exactly what the scenario said, with the same parsers.
  std::string policy_yaml;
  std::string monitors_yaml;
  PolicyChanges changes;
  bool squares_allreduce = false;  // a monitor runs the second all-reduce (the system must have it)
  int batch_cap = 0;               // the policy's Policy::batch_cap()
  bool empty() const { return policy_yaml.empty() && monitors_yaml.empty(); }
};
struct Seam {
  std::unique_ptr<Policy> policy;  // null: no policy
  std::vector<std::unique_ptr<Monitor>> monitors;
  bool empty() const { return !policy && monitors.empty(); }
  bool needs_gradient_norms(int step) const;     // does any monitor ask at this step
  bool needs_gradient_variance(int step) const;  // the same, for the gradient variance
};

// Reads `policy:` and `monitors:` of `r` (a scenario's workload, or a live task); throws
// InputError naming the file, line and key (unknown name, wrong parameter type or unit, a
// strategy that does not exist).
SeamSpec read_seam(io::MapReader& r);
// What the seam asks of the run must be something its system can do: a worker-set change (not
// yet supported), a strategy change (kungfu only), the variance monitor's second all-reduce
// (ideal and kungfu). seam_problem gives the first thing it cannot, with the key it concerns
// ("policy" or "monitors"); check_seam fails at that key of `r` for any of `systems` (scenarios
// and live configurations), and the live runtime refuses a LiveConfig built in code with it.
struct SeamProblem {
  std::string key;
  std::string message;
};
std::optional<SeamProblem> seam_problem(const SeamSpec& seam, const SystemConfig& system);
void check_seam(io::MapReader& r, const SeamSpec& seam, const std::vector<SystemConfig>& systems,
                int batch_per_gpu);
// Instantiates a spec (its YAML parses, since read_seam accepted it).
Seam make_seam(const SeamSpec& spec);

}  // namespace adaptsim::runtime
