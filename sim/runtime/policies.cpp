// The built-in policies and monitors, and the registry that names them in scenarios.
//
// To add a policy: write a class like SwitchStrategyPolicy below (decide() is a pure function of
// the history), a parse function that reads its parameters with io::MapReader (so bad input is
// one line with file, line and key), and a line in policy_kinds(). A monitor is the same with
// observe() and monitor_kinds().

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <optional>

#include "sim/core/error.h"
#include "sim/runtime/noise_scale.h"
#include "sim/runtime/policy.h"

namespace adaptsim::runtime {

std::string Decision::describe() const {
  std::string s;
  auto add = [&](const std::string& part) { s += (s.empty() ? "" : "; ") + part; };
  if (batch_per_gpu) add("batch " + std::to_string(*batch_per_gpu));
  if (strategy) add("strategy " + strategy_label(*strategy));
  if (workers) add("workers " + std::to_string(*workers));
  return s;
}

namespace {

// A strategy as a scenario writes it: its name, and for STAR optionally the root rank
// (`root: 3`).
StrategyChoice read_strategy(io::MapReader& r, std::string_view key) {
  const std::string name = r.string(key);
  const auto kind = coll::parse_strategy(name);
  if (!kind) r.fail(key, "unknown strategy \"" + name + "\"; `simctl list strategies` shows all");
  StrategyChoice c{*kind, 0};
  c.root = static_cast<int>(r.integer_or("root", 0, 0, 1 << 20));
  if (c.root != 0 && c.kind != coll::StrategyKind::kStar) {
    r.fail("root", "only a STAR has a root; strategy is " + name);
  }
  return c;
}

// The step after which the change is decided (it applies from the next step on).
int read_step(io::MapReader& r) {
  return static_cast<int>(r.integer("step", 0, 1 << 30));
}

// Toy policy: after step `step`, switch every worker to `strategy` (a star may be rooted at
// `root`). The smallest policy that exercises a strategy change; a template for real ones.
class SwitchStrategyPolicy final : public Policy {
 public:
  SwitchStrategyPolicy(int step, StrategyChoice to) : step_(step), to_(to) {}
  std::string_view name() const override { return "switch-strategy"; }
  PolicyChanges changes() const override { return {.strategy = true}; }
  Decision decide(const std::vector<StepObservation>& history) const override {
    Decision d;
    if (history.back().step == step_) d.strategy = to_;
    return d;
  }

 private:
  int step_;
  StrategyChoice to_;
};

std::unique_ptr<Policy> parse_switch_strategy(io::MapReader& r) {
  const int step = read_step(r);
  const StrategyChoice to = read_strategy(r, "strategy");
  r.finish();
  return std::make_unique<SwitchStrategyPolicy>(step, to);
}

// Toy policy: after step `step`, multiply the batch per worker by `factor` (rounded, at least 1).
class ScaleBatchPolicy final : public Policy {
 public:
  ScaleBatchPolicy(int step, double factor) : step_(step), factor_(factor) {}
  std::string_view name() const override { return "scale-batch"; }
  PolicyChanges changes() const override { return {.batch = true}; }
  Decision decide(const std::vector<StepObservation>& history) const override {
    Decision d;
    const StepObservation& last = history.back();
    if (last.step == step_) {
      d.batch_per_gpu = std::max(1, static_cast<int>(std::lround(last.batch_per_gpu * factor_)));
    }
    return d;
  }

 private:
  int step_;
  double factor_;
};

std::unique_ptr<Policy> parse_scale_batch(io::MapReader& r) {
  const int step = read_step(r);
  const double factor = r.number("factor");
  if (!(factor > 0 && factor <= 1024)) r.fail("factor", "expected a number in (0, 1024]");
  r.finish();
  return std::make_unique<ScaleBatchPolicy>(step, factor);
}

// No policy's decisions, with a policy's costs: the run agrees on every step as an adaptive one
// does, and never changes anything. The baseline beside an adaptive run (Figure 5 without
// adaptation), so that the two differ only in the policy's decisions.
class NonePolicy final : public Policy {
 public:
  std::string_view name() const override { return "none"; }
  PolicyChanges changes() const override { return {}; }
  Decision decide(const std::vector<StepObservation>&) const override { return {}; }
};

// KungFu's adaptive communication-strategy policy (KUNGFU.md 3.4; adaptiveStrategies.go
// CheckInterference, experimental/adapt_strategy): each worker's all-reduce throughput is its
// gradient bytes over the span of its transfers (CalcStats: accBytes / (lastEnd - firstBegin)),
// over a window of `window` steps. The window ending at step `check_from` (KungFu starts checking
// after ~5 steps) is the worker's reference; in every later window the worker votes when its
// throughput falls under `threshold` x its reference (interferenceThreshold = 0.8). The votes are
// summed by the step agreement (KungFu all-reduces them); at the first step where more than half
// of the workers vote, every worker switches to `strategy` (KungFu's script: set_tree to a star
// rooted at rank 1). Only one switch (the script's `changed` flag).
class AdaptiveStrategyPolicy final : public Policy {
 public:
  AdaptiveStrategyPolicy(int check_from, int window, double threshold, StrategyChoice to)
      : check_from_(check_from), window_(window), threshold_(threshold), to_(to) {}
  std::string_view name() const override { return "adaptive-strategy"; }
  PolicyChanges changes() const override { return {.strategy = true}; }

  double vote(const std::vector<LocalStep>& own) const override {
    const int step = own.back().step;
    if (step <= check_from_ || static_cast<int>(own.size()) < check_from_ + 1) return 0;
    const double reference = window_Bps(own, static_cast<std::size_t>(check_from_));
    const double now = window_Bps(own, own.size() - 1);
    return reference > 0 && now < threshold_ * reference ? 1 : 0;
  }

  Decision decide(const std::vector<StepObservation>& history) const override {
    Decision d;
    // The first step with a majority switches; later majorities change nothing.
    for (const StepObservation& o : history) {
      if (2 * o.votes > o.workers) {
        if (&o == &history.back()) d.strategy = to_;
        break;
      }
    }
    return d;
  }

 private:
  // Bytes over span, summed over the `window` steps ending at own[last] (fewer at the start).
  double window_Bps(const std::vector<LocalStep>& own, std::size_t last) const {
    double bytes = 0, span = 0;
    const std::size_t first = last + 1 >= static_cast<std::size_t>(window_)
                                  ? last + 1 - static_cast<std::size_t>(window_)
                                  : 0;
    for (std::size_t i = first; i <= last; ++i) {
      bytes += own[i].comm_bytes;
      span += own[i].comm_span_s;
    }
    return span > 0 ? bytes / span : 0;
  }

  int check_from_;
  int window_;
  double threshold_;
  StrategyChoice to_;
};

std::unique_ptr<Policy> parse_adaptive_strategy(io::MapReader& r) {
  const int check_from = static_cast<int>(r.integer_or("check_from", 5, 0, 1 << 30));
  const int window = static_cast<int>(r.integer_or("window", 1, 1, 1 << 20));
  const double threshold = r.number_or("threshold", 0.8);
  if (!(threshold > 0 && threshold < 1)) r.fail("threshold", "expected a number in (0, 1)");
  if (check_from + 1 < window) {
    r.fail("window", "the reference window ends at step check_from (" + std::to_string(check_from) +
                         "), so it holds at most " + std::to_string(check_from + 1) + " steps");
  }
  StrategyChoice to{coll::StrategyKind::kStar, 1};
  if (r.has("strategy")) {
    to = read_strategy(r, "strategy");
  } else {
    to.root = static_cast<int>(r.integer_or("root", 1, 0, 1 << 20));
  }
  r.finish();
  return std::make_unique<AdaptiveStrategyPolicy>(check_from, window, threshold, to);
}

// KungFu's adaptive batch-size policy of Figure 4 (KUNGFU.md 3.3: KungfuChangeBatchSizeHook in
// the luomai/models fork's kungfu_experiment/kungfu_policy.py, which train-cifar10-adaptive.sh
// enables). After every step, ratio = |GNS| / batch per GPU (GNS: the gradient-noise-scale
// monitor's B_simple), smoothed by an EMA with alpha 0.9 whose every new sample is first clipped to
// [ema / 2, ema x 2] (EMA(0.9, scale_cap=2)). At the end of each training cycle (the hook's end(),
// one `classifier.train` call, one epoch in the fork's run loop: here once the cycle's steps have
// trained `epoch_samples` samples, batch per GPU x workers per step), the batch per GPU becomes
// min(`max_batch`, int(batch x scale)) with scale = the EMA at the cycle's last step over the EMA
// at its first, clamped to [1, 2]: it only grows, at most 2x per epoch, while the ratio rises.
// Steps without a finite GNS (simulated runs hold no gradient values; a worker alone has one
// batch size) leave the EMA as it is; a cycle with fewer than two EMA values keeps the batch.
class AdaptiveBatchPolicy final : public Policy {
 public:
  AdaptiveBatchPolicy(std::int64_t epoch_samples, int max_batch)
      : epoch_samples_(epoch_samples), max_batch_(max_batch) {}
  std::string_view name() const override { return "adaptive-batch"; }
  PolicyChanges changes() const override { return {.batch = true}; }
  int batch_cap() const override { return max_batch_; }
  Decision decide(const std::vector<StepObservation>& history) const override {
    // Replayed from the start: the EMA and the cycles are functions of the whole history.
    double ema = 0;
    bool have = false;
    std::int64_t cycle_samples = 0;
    std::optional<double> first, latest;
    Decision d;
    for (const StepObservation& o : history) {
      const auto it = o.readings.find("gradient-noise-scale.b_simple");
      const double gns =
          it == o.readings.end() ? std::numeric_limits<double>::quiet_NaN() : it->second;
      if (std::isfinite(gns) && o.batch_per_gpu > 0) {
        double x = std::abs(gns) / o.batch_per_gpu;
        if (have) x = std::clamp(x, ema / 2, ema * 2);
        ema = have ? 0.9 * ema + 0.1 * x : x;
        have = true;
        if (!first) first = ema;
        latest = ema;
      }
      cycle_samples += static_cast<std::int64_t>(o.batch_per_gpu) * o.workers;
      if (cycle_samples < epoch_samples_) continue;
      // The cycle's end: the decision after this step (only the latest step's is returned).
      d = {};
      if (first && latest && *first > 0 && latest != first) {
        const double scale = std::clamp(*latest / *first, 1.0, 2.0);
        const int batch = std::min(max_batch_, static_cast<int>(o.batch_per_gpu * scale));
        if (batch > o.batch_per_gpu && &o == &history.back()) d.batch_per_gpu = batch;
      }
      cycle_samples = 0;
      first.reset();
      latest.reset();
    }
    return d;
  }

 private:
  std::int64_t epoch_samples_;
  int max_batch_;
};

std::unique_ptr<Policy> parse_adaptive_batch(io::MapReader& r) {
  const std::int64_t epoch = r.integer("epoch_samples", 1, std::int64_t{1} << 40);
  const int max_batch = static_cast<int>(r.integer_or("max_batch", 1024, 1, 1 << 20));
  r.finish();
  return std::make_unique<AdaptiveBatchPolicy>(epoch, max_batch);
}

// After step `step`, resize the cluster to `workers` workers (elastic runs: the workload's
// `elastic:` map says how).
class ResizePolicy final : public Policy {
 public:
  ResizePolicy(int step, int workers) : step_(step), workers_(workers) {}
  std::string_view name() const override { return "resize"; }
  PolicyChanges changes() const override { return {.workers = true, .max_workers = workers_}; }
  Decision decide(const std::vector<StepObservation>& history) const override {
    Decision d;
    if (history.back().step == step_) d.workers = workers_;
    return d;
  }

 private:
  int step_;
  int workers_;
};

std::unique_ptr<Policy> parse_resize(io::MapReader& r) {
  const int step = read_step(r);
  const int workers = static_cast<int>(r.integer("workers", 1, 1 << 20));
  r.finish();
  return std::make_unique<ResizePolicy>(step, workers);
}

// Figure 7's schedule (KungFu's ProfileResizeHook): after every `every` steps, the next size of
// `sizes`, cycling (sizes [1, 8], every 10: 8 workers after step 9, 1 after step 19, ...).
class ResizeSchedulePolicy final : public Policy {
 public:
  ResizeSchedulePolicy(int every, std::vector<int> sizes)
      : every_(every), sizes_(std::move(sizes)) {}
  std::string_view name() const override { return "resize-schedule"; }
  PolicyChanges changes() const override {
    return {.workers = true, .max_workers = *std::max_element(sizes_.begin(), sizes_.end())};
  }
  Decision decide(const std::vector<StepObservation>& history) const override {
    Decision d;
    const int done = history.back().step + 1;
    if (done % every_ == 0)
      d.workers = sizes_[static_cast<std::size_t>(done / every_) % sizes_.size()];
    return d;
  }

 private:
  int every_;
  std::vector<int> sizes_;
};

std::unique_ptr<Policy> parse_resize_schedule(io::MapReader& r) {
  const int every = static_cast<int>(r.integer("every", 1, 1 << 30));
  std::vector<int> sizes;
  const auto items = r.list("sizes");
  if (items.size() < 2) r.fail("sizes", "expected a list of at least two cluster sizes");
  for (const auto& item : items) {
    int n = 0;
    try {
      n = item.as<int>();
    } catch (const std::exception&) {
      r.fail("sizes", "expected whole numbers of workers");
    }
    if (n < 1)
      r.fail("sizes", "expected sizes of at least 1 worker (found " + std::to_string(n) + ")");
    sizes.push_back(n);
  }
  r.finish();
  return std::make_unique<ResizeSchedulePolicy>(every, std::move(sizes));
}

// KungFu's adaptive resource provisioning (KUNGFU.md 3.5, Figure 6): ScalingPolicy
// (srcs/python/kungfu/tensorflow/policy/scaling.py) as the BERT fork's ScalingHook
// (marwage/bert scaling.py) runs it. Every `every` steps (the hook's change_step = 100) the
// window's total throughput avg[n] is the mean over its second half of the cluster's samples/s
// (the hook: mean of batch_size / step duration over throughputs[change_step // 2:], times n;
// StepObservation::samples_per_s already is workers x batch / step time) at the window's n
// workers. If avg[n] < (1 + alpha / n) x avg[n - 1] (alpha = 0.33 in the hook) scaling stops for
// good and the last added worker is removed (n - 1; the hook's /removeworker); otherwise one
// worker is added (n + 1; /addworker with the next of scaling_workers.json) until `max_workers`
// (the hook: the list's length + 1), where scaling stops. avg[n - 1] is the hook's dict keyed by
// cluster size; a size with none (the first window, at n = 1 in the hook) counts as 0, so the
// first window always adds (the hook would fail on a missing key when it starts above 1).
//
// Windows count from step 0, warm-up included: the hook counts TensorFlow's global step from
// the start and checks when it reaches a multiple of change_step, i.e. after its 100th step, so
// the decisions fall after steps every - 1, 2 every - 1, ... and every window after the first
// runs at one size. The second half is the window's last every - every / 2 steps, which leaves
// out the first step after a resize; the hook's ring of throughputs holds the check step itself
// at index 0, so its half is the same count shifted one step earlier (immaterial here).
//
// Pure: each call at a window's end replays every window of the history from step 0; no state
// depends on the order of calls.
class ProvisionPolicy final : public Policy {
 public:
  ProvisionPolicy(int every, double alpha, int max_workers)
      : every_(every), alpha_(alpha), max_workers_(max_workers) {}
  std::string_view name() const override { return "provision"; }
  PolicyChanges changes() const override { return {.workers = true, .max_workers = max_workers_}; }
  Decision decide(const std::vector<StepObservation>& history) const override {
    Decision d;
    if (history.empty() || (history.back().step + 1) % every_ != 0) return d;
    const int windows = (history.back().step + 1) / every_;
    std::map<int, double> avg;  // by cluster size, as the hook's _average_throughput
    for (int k = 0; k < windows; ++k) {
      const int first = k * every_ + every_ / 2, end = (k + 1) * every_;
      double sum = 0;
      int count = 0, n = 0;
      for (const StepObservation& o : history) {
        if (o.step < first || o.step >= end) continue;
        sum += o.samples_per_s;
        ++count;
        if (o.step == end - 1) n = o.workers;
      }
      if (count == 0 || n < 1) continue;  // not in the history: no decision from it
      avg[n] = sum / count;
      const auto prev = avg.find(n - 1);
      const double last = prev == avg.end() ? 0.0 : prev->second;
      std::optional<int> workers;
      bool stop = false;
      if (avg[n] < (1 + alpha_ / n) * last) {
        stop = true;
        if (n > 1) workers = n - 1;  // the hook cannot remove the only worker either
      } else if (n < max_workers_) {
        workers = n + 1;
      } else {
        stop = true;
      }
      if (k == windows - 1) d.workers = workers;
      if (stop) break;  // the hook's _stop_scaling: no later window decides
    }
    return d;
  }

 private:
  int every_;
  double alpha_;
  int max_workers_;
};

std::unique_ptr<Policy> parse_provision(io::MapReader& r) {
  // The BERT hook's constants: change_step = 100, alpha = 0.33 (marwage/bert scaling.py).
  const int every = static_cast<int>(r.integer_or("every", 100, 2, 1 << 30));
  const double alpha = r.number_or("alpha", 0.33);
  if (!(alpha >= 0 && std::isfinite(alpha))) r.fail("alpha", "expected a number >= 0");
  const int max_workers = static_cast<int>(r.integer("max_workers", 1, 1 << 20));
  r.finish();
  return std::make_unique<ProvisionPolicy>(every, alpha, max_workers);
}

// Mean of a quantity over the last `window` steps, as reading "<name>.window_mean".
class WindowMeanMonitor final : public Monitor {
 public:
  WindowMeanMonitor(std::string name, std::size_t window, double StepObservation::*field)
      : name_(std::move(name)), window_(window), field_(field) {}
  std::string_view name() const override { return name_; }
  void observe(StepObservation& latest) override {
    values_.push_back(latest.*field_);
    if (values_.size() > window_) values_.pop_front();
    double sum = 0;
    for (double v : values_)
      sum += v;
    latest.readings[name_ + ".window_mean"] = sum / static_cast<double>(values_.size());
  }

 private:
  std::string name_;
  std::size_t window_;
  double StepObservation::*field_;
  std::deque<double> values_;
};

// The gradients' squared norms as readings ("gradient-norms.local_sq", ".global_sq"): the seam's
// way to the gradients, at the cost of a norm kernel per step.
class GradientNormsMonitor final : public Monitor {
 public:
  std::string_view name() const override { return "gradient-norms"; }
  bool needs_gradient_norms(int) const override { return true; }
  void observe(StepObservation& latest) override {
    latest.readings["gradient-norms.local_sq"] = latest.grad_sq_local;
    latest.readings["gradient-norms.global_sq"] = latest.grad_sq_global;
  }
};

// KungFu's gradient noise scale monitor (KUNGFU.md 3.1; noise_scale.h): every `interval`
// steps, the norms of the local and the averaged gradient (a norm kernel on those steps), the
// unbiased |G|^2 and tr(S), their EMAs, and B_simple. Readings "gradient-noise-scale.b_simple",
// ".g_sq", ".trace" (NaN until a step with gradient values: simulated runs hold none). The local
// norm is the mean over workers of each worker's own (KungFu lets each worker use its own, so
// per-worker values differ; the mean is a better estimate of the same expectation).
class NoiseScaleMonitor final : public Monitor {
 public:
  NoiseScaleMonitor(int interval, double alpha) : interval_(interval), estimator_({alpha}) {}
  std::string_view name() const override { return "gradient-noise-scale"; }
  bool needs_gradient_norms(int step) const override { return step % interval_ == 0; }
  void observe(StepObservation& latest) override {
    const double b_small = latest.batch_per_gpu, b_big = b_small * latest.workers;
    // A step with values (live) and two batch sizes (two workers or more) adds to the averages.
    if (latest.step % interval_ == 0 && std::isfinite(latest.grad_sq_local) &&
        std::isfinite(latest.grad_sq_global) && b_big > b_small) {
      estimator_.update(latest.grad_sq_local, latest.grad_sq_global, b_small, b_big);
    }
    const bool any = estimator_.steps() > 0;
    const double nan = std::numeric_limits<double>::quiet_NaN();
    latest.readings["gradient-noise-scale.b_simple"] = estimator_.noise_scale();
    latest.readings["gradient-noise-scale.g_sq"] = any ? estimator_.grad_sq_norm_ema() : nan;
    latest.readings["gradient-noise-scale.trace"] = any ? estimator_.trace_sigma_ema() : nan;
  }

 private:
  int interval_;
  NoiseScaleEstimator estimator_;
};

// KungFu's gradient variance monitor (KUNGFU.md 3.2, MonitorGradientVarianceOptimizer): every
// `interval` steps, g^2 of every tensor all-reduced beside g, Var = E[g^2] - E[g]^2 and the sum
// over tensors of ||Var||_2, as reading "gradient-variance.norm_sum" (NaN simulated, and between
// its steps the last value).
class VarianceMonitor final : public Monitor {
 public:
  explicit VarianceMonitor(int interval) : interval_(interval) {}
  std::string_view name() const override { return "gradient-variance"; }
  bool needs_gradient_variance(int step) const override { return step % interval_ == 0; }
  void observe(StepObservation& latest) override {
    if (latest.step % interval_ == 0) last_ = latest.grad_variance;
    latest.readings["gradient-variance.norm_sum"] = last_;
  }

 private:
  int interval_;
  double last_ = std::numeric_limits<double>::quiet_NaN();
};

int read_interval(io::MapReader& r) {
  return static_cast<int>(r.integer_or("interval", 1, 1, 1 << 20));
}

std::size_t read_window(io::MapReader& r) {
  return static_cast<std::size_t>(r.integer_or("window", 1, 1, 1 << 20));
}

}  // namespace

const std::vector<PolicyKind>& policy_kinds() {
  static const std::vector<PolicyKind> kinds = {
      {"switch-strategy",
       "after step `step`, switch to `strategy` (a STAR may take `root`): a toy, and a template",
       parse_switch_strategy},
      {"none",
       "observes every step as a policy does (the agreement) and changes nothing: the baseline "
       "beside an adaptive run",
       [](io::MapReader& r) -> std::unique_ptr<Policy> {
         r.finish();
         return std::make_unique<NonePolicy>();
       }},
      {"adaptive-strategy",
       "KungFu's Figure 5 policy: a worker votes when its all-reduce throughput falls under "
       "`threshold` (0.8) x its reference window (step `check_from`, 5); a majority switches "
       "every worker once to `strategy` (STAR, root 1)",
       parse_adaptive_strategy},
      {"scale-batch", "after step `step`, multiply the batch per GPU by `factor`: a toy",
       parse_scale_batch},
      {"resize", "after step `step`, resize the cluster to `workers` workers (elastic runs)",
       parse_resize},
      {"adaptive-batch",
       "KungFu's Figure 4 policy: after each epoch of `epoch_samples` samples, the batch per GPU "
       "grows by the rise of the EMA of |GNS| / batch over the epoch (x1 to x2), up to "
       "`max_batch` (1024); needs the gradient-noise-scale monitor",
       parse_adaptive_batch},
      {"resize-schedule",
       "Figure 7's schedule: after every `every` steps the next of `sizes`, cycling (elastic "
       "runs; the cluster starts at elastic.initial_workers)",
       parse_resize_schedule},
      {"provision",
       "KungFu's Figure 6 policy: every `every` steps (100) add a worker while the total "
       "throughput of the window's second half grows by at least (1 + `alpha` / n) (alpha "
       "0.33), up to `max_workers`; at the first smaller gain remove the last added and stop "
       "(elastic runs)",
       parse_provision},
  };
  return kinds;
}

const std::vector<MonitorKind>& monitor_kinds() {
  static const std::vector<MonitorKind> kinds = {
      {"throughput", "samples/s of the cluster, mean over the last `window` steps",
       [](io::MapReader& r) -> std::unique_ptr<Monitor> {
         auto m = std::make_unique<WindowMeanMonitor>("throughput", read_window(r),
                                                      &StepObservation::samples_per_s);
         r.finish();
         return m;
       }},
      {"allreduce-throughput",
       "gradient bytes over time with communication in flight, per worker, mean over the last "
       "`window` steps",
       [](io::MapReader& r) -> std::unique_ptr<Monitor> {
         auto m = std::make_unique<WindowMeanMonitor>("allreduce-throughput", read_window(r),
                                                      &StepObservation::allreduce_Bps);
         r.finish();
         return m;
       }},
      {"gradient-norms",
       "squared L2 norms of the local and the averaged gradient (a norm kernel per step; NaN "
       "simulated)",
       [](io::MapReader& r) -> std::unique_ptr<Monitor> {
         r.finish();
         return std::make_unique<GradientNormsMonitor>();
       }},
      {"gradient-variance",
       "KungFu's gradient variance every `interval` steps (default 1): g^2 all-reduced beside g "
       "(a second all-reduce), the sum over tensors of ||E[g^2] - E[g]^2||; NaN simulated",
       [](io::MapReader& r) -> std::unique_ptr<Monitor> {
         const int interval = read_interval(r);
         r.finish();
         return std::make_unique<VarianceMonitor>(interval);
       }},
      {"gradient-noise-scale",
       "KungFu's GNS every `interval` steps (default 1): B_simple = EMA(tr S) / EMA(|G|^2) from "
       "the local and averaged gradients' norms, EMA `alpha` (default 0.6); NaN simulated",
       [](io::MapReader& r) -> std::unique_ptr<Monitor> {
         const int interval = read_interval(r);
         const double alpha = r.number_or("alpha", 0.6);
         if (!(alpha >= 0 && alpha < 1)) r.fail("alpha", "expected a number in [0, 1)");
         r.finish();
         return std::make_unique<NoiseScaleMonitor>(interval, alpha);
       }},
  };
  return kinds;
}

bool Seam::needs_gradient_variance(int step) const {
  return std::any_of(monitors.begin(), monitors.end(),
                     [step](const auto& m) { return m->needs_gradient_variance(step); });
}

bool Seam::needs_gradient_norms(int step) const {
  return std::any_of(monitors.begin(), monitors.end(),
                     [step](const auto& m) { return m->needs_gradient_norms(step); });
}

namespace {

std::string flow_yaml(const YAML::Node& node) {
  YAML::Emitter out;
  out.SetMapFormat(YAML::Flow);
  out.SetSeqFormat(YAML::Flow);
  out << node;
  return out.c_str();
}

template <typename Kind>
const Kind& find_kind(io::MapReader& r, const std::vector<Kind>& kinds, const char* what) {
  std::vector<std::string> names;
  for (const Kind& k : kinds)
    names.push_back(k.name);
  const std::string name = r.choice("name", names);
  for (const Kind& k : kinds) {
    if (k.name == name) return k;
  }
  r.fail("name", std::string("unknown ") + what);
}

struct Parsed {
  Seam seam;
  PolicyChanges changes;
};

Parsed parse_seam(io::MapReader& r) {
  Parsed p;
  if (auto policy = r.optional_map("policy")) {
    const PolicyKind& kind = find_kind(*policy, policy_kinds(), "policy");
    p.seam.policy = kind.parse(*policy);
    p.changes = p.seam.policy->changes();
  }
  if (r.has("monitors")) {
    const auto items = r.list("monitors");
    for (std::size_t i = 0; i < items.size(); ++i) {
      io::MapReader m = io::MapReader::item_map(r, "monitors", i, items[i]);
      p.seam.monitors.push_back(find_kind(m, monitor_kinds(), "monitor").parse(m));
    }
  } else {
    r.accept("monitors");
  }
  // A policy that reads a monitor's readings has it.
  if (p.seam.policy && p.seam.policy->name() == "adaptive-batch" &&
      std::none_of(p.seam.monitors.begin(), p.seam.monitors.end(),
                   [](const auto& m) { return m->name() == "gradient-noise-scale"; })) {
    r.fail("policy",
           "adaptive-batch reads the gradient noise scale: expected a monitor {name: "
           "gradient-noise-scale} in monitors");
  }
  return p;
}

}  // namespace

std::optional<SeamProblem> seam_problem(const SeamSpec& seam, const SystemConfig& system) {
  const std::string which =
      "system '" + system.label + "' (" + std::string(system_kind_name(system.kind)) + ")";
  if (seam.changes.workers && system.kind != SystemKind::kKungFu) {
    return SeamProblem{"policy", "changing the worker set while a job runs is built for kungfu; " +
                                     which + " cannot"};
  }
  if (seam.squares_allreduce && !has_squares_allreduce(system.kind)) {
    return SeamProblem{"monitors",
                       "the gradient-variance monitor all-reduces the squared "
                       "gradients, which " +
                           which + " does not run; it applies to ideal and kungfu"};
  }
  if (seam.changes.strategy && !has_strategy(system.kind)) {
    return SeamProblem{"policy", "the policy changes the all-reduce strategy, which " + which +
                                     " does not have; strategy changes apply to kungfu"};
  }
  return std::nullopt;
}

void check_seam(io::MapReader& r, const SeamSpec& seam, const std::vector<SystemConfig>& systems,
                int batch_per_gpu) {
  if (seam.batch_cap > 0 && batch_per_gpu > seam.batch_cap) {
    r.fail("policy", "the policy grows the batch per GPU up to max_batch " +
                         std::to_string(seam.batch_cap) + ", below the batch the run starts at (" +
                         std::to_string(batch_per_gpu) + ")");
  }
  for (const SystemConfig& s : systems) {
    if (const auto p = seam_problem(seam, s)) r.fail(p->key, p->message);
  }
}

SeamSpec read_seam(io::MapReader& r) {
  Parsed p = parse_seam(r);
  SeamSpec spec;
  spec.changes = p.changes;
  spec.squares_allreduce = p.seam.needs_gradient_variance(0);
  if (p.seam.policy) spec.batch_cap = p.seam.policy->batch_cap();
  if (r.has("policy")) spec.policy_yaml = flow_yaml(r.node()["policy"]);
  if (r.has("monitors")) spec.monitors_yaml = flow_yaml(r.node()["monitors"]);
  return spec;
}

Seam make_seam(const SeamSpec& spec) {
  if (spec.empty()) return {};
  std::string text;
  if (!spec.policy_yaml.empty()) text += "policy: " + spec.policy_yaml + "\n";
  if (!spec.monitors_yaml.empty()) text += "monitors: " + spec.monitors_yaml + "\n";
  const io::Document doc = io::Document::parse_string(text, "(the run's policy and monitors)");
  io::MapReader r(doc, doc.root(), "");
  Parsed p = parse_seam(r);
  r.finish();
  return std::move(p.seam);
}

}  // namespace adaptsim::runtime
