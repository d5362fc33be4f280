#include "hw/live/live_training.h"

#include <sys/prctl.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <numeric>
#include <optional>

#include "hw/live/gradient_buffers.h"
#include "hw/live/live_system.h"
#include "hw/live/step_tracker.h"
#include "hw/tcp/event_loop.h"
#include "sim/core/error.h"
#include "sim/core/rng.h"

namespace adaptsim::live {
namespace {

// The compute thread's waits end at absolute deadlines; a smaller timer slack than Linux's 50 us
// default keeps sleep overshoot near the wake-up latency. Restored on exit.
class TimerSlack {
 public:
  TimerSlack() : old_(::prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0)) {
    ::prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  }
  ~TimerSlack() {
    if (old_ > 0) ::prctl(PR_SET_TIMERSLACK, static_cast<unsigned long>(old_), 0, 0, 0);
  }
  TimerSlack(const TimerSlack&) = delete;
  TimerSlack& operator=(const TimerSlack&) = delete;

 private:
  long old_;
};

// The rank's index among the ranks of its host (0 when the runtime has no host map).
int local_rank(const tcp::Runtime& rt) {
  const std::vector<int>& host = rt.host_of_rank();
  if (host.size() != static_cast<std::size_t>(rt.size())) return 0;
  const int mine = host[static_cast<std::size_t>(rt.rank())];
  return static_cast<int>(std::count(host.begin(), host.begin() + rt.rank(), mine));
}

// Per-rank sums over steps, in the layout of the stats all-reduce.
struct RankStats {
  std::vector<double> step_s;  // every step, warm-up included
  double compute_s = 0, link_s = 0, wait_s = 0;
  int measured = 0;
};

// How long the compute thread waits for a step's gradients beyond the system's own timeout: the
// system reports first, with the better diagnosis (what is still missing from whom).
constexpr TimeNs kComputeWaitMarginNs = 5 * kNsPerSecond;

}  // namespace

double step_jitter(std::uint64_t seed, double cv, int worker, int step) {
  if (!(cv > 0)) return 1.0;
  Rng rng = Rng::derive(
      seed, static_cast<std::uint64_t>(worker) * 1'000'003ULL + static_cast<std::uint64_t>(step));
  return std::max(0.5, rng.normal(1.0, cv));
}

void validate_live_config(const train::Model& model, const LiveConfig& c) {
  auto bad_time = [](double s) { return !std::isfinite(s) || s < 0; };
  if (c.batch_per_gpu < 1) throw InputError("batch_per_gpu must be at least 1");
  if (c.compute.backward_layer_s.size() != model.layers.size()) {
    throw InputError("the compute profile has " +
                     std::to_string(c.compute.backward_layer_s.size()) +
                     " backward layers for model '" + model.name + "' of " +
                     std::to_string(model.layers.size()));
  }
  if (bad_time(c.compute.forward_s) || bad_time(c.compute.optimizer_s) ||
      std::any_of(c.compute.backward_layer_s.begin(), c.compute.backward_layer_s.end(), bad_time)) {
    throw InputError("compute times must be finite and >= 0");
  }
  if (!std::isfinite(c.step_time_cv) || c.step_time_cv < 0) {
    throw InputError("step_time_cv must be finite and >= 0");
  }
  if (c.warmup_steps < 0) throw InputError("warmup_steps must be >= 0");
  if (c.measured_steps < 1) throw InputError("steps (measured) must be at least 1");
  if (c.gradient_element_bytes != 4) {
    throw InputError("gradient element bytes must be 4: live gradients are float32 buffers");
  }
  if (c.timeout_ns <= 0) throw InputError("timeout must be > 0");
  if (!live_system_supported(c.system.kind)) {
    throw InputError(
        "system kind '" + std::string(train::system_kind_name(c.system.kind)) +
        "' needs GPUs and NCCL; live training over TCP runs ideal, kungfu and horovod");
  }
  if (c.system.chunk_bytes == 0) throw InputError("chunk_size must be > 0");
  if (c.system.cycle_time_ns < 0) throw InputError("cycle_time must be >= 0");
  if (model.backward_order.empty()) throw InputError("model '" + model.name + "' has no tensors");
}

LiveResult run_live_training(tcp::Runtime& rt, const train::Model& model, const LiveConfig& c) {
  validate_live_config(model, c);
  const int rank = rt.rank(), n = rt.size();
  const int total_steps = c.warmup_steps + c.measured_steps;
  const bool communicates = c.system.kind != train::SystemKind::kIdeal;

  // Before the barrier: a GPU's set-up (context, module load) is not part of any step, and a rank
  // without its GPU fails every peer at once with the cause.
  std::unique_ptr<ComputeEmulator> compute;
  try {
    std::string note;
    compute = make_compute_emulator(
        {.device = c.compute_device, .cpu_mode = c.compute_mode, .local_rank = local_rank(rt)},
        &note);
    if (!note.empty() && local_rank(rt) == 0) {
      std::fprintf(stderr, "rank %d: %s\n", rank, note.c_str());
    }
  } catch (const std::exception& e) {
    const std::string reason = "rank " + std::to_string(rank) + ": " + e.what();
    abort_cluster(rt, reason);
    throw RuntimeFailure(reason);
  }

  std::optional<GradientBuffers> buffers;
  if (communicates) buffers.emplace(model, rank, n);
  StepTracker tracker(model.backward_order.size());
  LiveSystemContext context;
  context.runtime = &rt;
  context.model = &model;
  context.buffers = buffers ? &*buffers : nullptr;
  context.tracker = &tracker;
  context.config = c.system;
  context.timeout_ns = c.timeout_ns;
  context.total_steps = total_steps;
  std::unique_ptr<LiveSystem> system = make_live_system(context);

  // Every rank starts its first step together, as the simulated workers start at time 0.
  rt.barrier(c.timeout_ns);
  TimerSlack slack;
  RankStats stats;
  std::vector<TimeNs> phase_end_ns(model.layers.size() + 1);
  TimeNs first_start = 0, last_end = 0;
  int verified = 0;
  system->start();
  try {
    for (int step = 0; step < total_steps; ++step) {
      tracker.begin_step();
      const TimeNs start = tcp::EventLoop::now_ns();
      if (step == 0) first_start = start;
      const double jitter = step_jitter(c.seed, c.step_time_cv, rank, step);
      // Phase 0 is forward, phase l + 1 backward layer l.
      TimeNs t = start + seconds_to_ns_ceil(c.compute.forward_s * jitter);
      phase_end_ns[0] = t;
      for (std::size_t l = 0; l < model.layers.size(); ++l) {
        t += seconds_to_ns_ceil(c.compute.backward_layer_s[l] * jitter);
        phase_end_ns[l + 1] = t;
      }
      compute->begin_step(start, phase_end_ns);
      compute->wait_phase(0);
      for (std::size_t l = 0; l < model.layers.size(); ++l) {
        const train::Layer& layer = model.layers[l];
        const bool last = l + 1 == model.layers.size();
        if (layer.tensor_count == 0 && !last) continue;  // no gradient to hand over
        compute->wait_phase(l + 1);
        for (std::size_t i = 0; i < layer.tensor_count; ++i) {
          system->gradient_ready(step, layer.first_tensor + i);
        }
        if (last) tracker.backward_ended();
      }
      const TimeNs update_start =
          tracker.wait_update_start(tcp::EventLoop::now_ns() + c.timeout_ns + kComputeWaitMarginNs);
      compute->run_until(update_start + seconds_to_ns_ceil(c.compute.optimizer_s * jitter));
      const TimeNs end = tcp::EventLoop::now_ns();
      last_end = end;

      const double step_s = to_seconds(end - start);
      stats.step_s.push_back(step_s);
      if (step >= c.warmup_steps) {
        const StepExposure e = tracker.exposure();
        stats.compute_s += step_s - to_seconds(e.link_ns + e.wait_ns);
        stats.link_s += to_seconds(e.link_ns);
        stats.wait_s += to_seconds(e.wait_ns);
        ++stats.measured;
      }
      // Outside the step's time: the check of every reduced gradient.
      if (buffers && c.verify) {
        buffers->verify_and_poison(step);
        ++verified;
      }
    }
  } catch (const std::exception& e) {
    system->stop();
    abort_cluster(rt, e.what());
    throw;
  }
  system->stop();

  // One all-reduce of every rank's sums: [step durations..., compute, link, wait, measured,
  // per-rank mean step time (own slot)...].
  const std::size_t base = static_cast<std::size_t>(total_steps);
  std::vector<double> mine(base + 4 + static_cast<std::size_t>(n), 0.0), sum(mine.size(), 0.0);
  std::copy(stats.step_s.begin(), stats.step_s.end(), mine.begin());
  mine[base] = stats.compute_s;
  mine[base + 1] = stats.link_s;
  mine[base + 2] = stats.wait_s;
  mine[base + 3] = stats.measured;
  mine[base + 4 + static_cast<std::size_t>(rank)] =
      std::accumulate(stats.step_s.begin() + c.warmup_steps, stats.step_s.end(), 0.0) /
      c.measured_steps;
  coll::Workspace w;
  w.name = "live:stats";
  w.count = mine.size();
  w.dtype = coll::DType::kF64;
  w.op = coll::ReduceOp::kSum;
  w.send = {reinterpret_cast<const std::byte*>(mine.data()), mine.size() * sizeof(double)};
  w.recv = {reinterpret_cast<std::byte*>(sum.data()), sum.size() * sizeof(double)};
  rt.run_allreduce(*coll::make_allreduce(coll::StrategyKind::kStar, rt.host_of_rank()), w,
                   c.timeout_ns);

  // As StepSimulator::summarize.
  LiveResult out;
  train::TrainingResult& r = out.training;
  for (int k = c.warmup_steps; k < total_steps; ++k) {
    r.step_s.push_back(sum[static_cast<std::size_t>(k)] / n);
  }
  const double m = static_cast<double>(r.step_s.size());
  r.step_mean_s = std::accumulate(r.step_s.begin(), r.step_s.end(), 0.0) / m;
  double var = 0;
  for (double x : r.step_s)
    var += (x - r.step_mean_s) * (x - r.step_mean_s);
  r.step_std_s = r.step_s.size() > 1 ? std::sqrt(var / (m - 1)) : 0.0;
  const double measured = sum[base + 3];
  r.compute_s = sum[base] / measured;
  r.exposed_link_s = sum[base + 1] / measured;
  r.exposed_wait_s = sum[base + 2] / measured;
  const double batch = c.batch_per_gpu;
  r.samples_per_s_per_gpu = batch / r.step_mean_s;
  r.samples_per_s_per_gpu_std = batch * r.step_std_s / (r.step_mean_s * r.step_mean_s);
  r.samples_per_s_total = r.samples_per_s_per_gpu * n;
  out.n_ranks = n;
  out.rank_step_mean_s.assign(sum.begin() + static_cast<std::ptrdiff_t>(base + 4), sum.end());
  out.gradient_bytes = model.totals().bytes(c.gradient_element_bytes);
  out.verified_steps = verified;
  out.wall_s = to_seconds(last_end - first_start);
  out.compute_device = compute->description();
  return out;
}

}  // namespace adaptsim::live
