#include "sim/runtime/trainer.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "sim/core/error.h"
#include "sim/core/rng.h"

namespace adaptsim::runtime {

double step_jitter(std::uint64_t seed, double cv, int worker, int step) {
  if (!(cv > 0)) return 1.0;
  Rng rng = Rng::derive(
      seed, static_cast<std::uint64_t>(worker) * 1'000'003ULL + static_cast<std::uint64_t>(step));
  return std::max(0.5, rng.normal(1.0, cv));
}

Trainer::Trainer(TrainingEnv& env, const train::Model& model, System& system, Seam& seam,
                 TrainerOptions options)
    : env_(env),
      model_(model),
      system_(system),
      seam_(seam),
      options_(std::move(options)),
      local_(env.local_workers()),
      state_(static_cast<std::size_t>(env.workers())) {
  for (const train::Tensor& t : model.backward_order)
    tensor_bytes_.push_back(t.elements * options_.gradient_element_bytes);
  gradient_bytes_ = static_cast<double>(
      std::accumulate(tensor_bytes_.begin(), tensor_bytes_.end(), std::uint64_t{0}));
  total_steps_ = options_.warmup_steps + options_.measured_steps;
  step_sum_s_.assign(static_cast<std::size_t>(total_steps_), 0.0);
  step_batch_.assign(static_cast<std::size_t>(total_steps_), 0);
  step_strategy_.assign(static_cast<std::size_t>(total_steps_), "");
  step_decision_.assign(static_cast<std::size_t>(total_steps_), "");
  step_bytes_.assign(static_cast<std::size_t>(total_steps_), 0.0);
  step_readings_.resize(static_cast<std::size_t>(total_steps_));
  step_workers_.assign(static_cast<std::size_t>(total_steps_), 0);
  if (options_.stop_after_samples > 0 && !options_.elastic) {
    // A system with a loop of its own (Horovod's coordinator) counts the steps it was given.
    throw std::invalid_argument("Trainer: a samples stop needs an elastic run");
  }
  if (options_.elastic) {
    order_ = join_order(*options_.elastic, env.host_of_worker());
    for (std::uint64_t b : tensor_bytes_)
      state_bytes_ += b * static_cast<std::uint64_t>(1 + options_.elastic->optimizer_slots);
  } else if (agrees()) {
    agreement_ = coll::make_allreduce(coll::StrategyKind::kStar, env.host_of_worker());
  }
}

const train::ComputeProfile& Trainer::profile_for(int batch) {
  auto it = profiles_.find(batch);
  if (it == profiles_.end()) {
    train::ComputeProfile p = options_.compute(batch);
    if (p.backward_layer_s.size() != model_.layers.size()) {
      throw std::invalid_argument(
          "compute profile has " + std::to_string(p.backward_layer_s.size()) +
          " backward layers for a model of " + std::to_string(model_.layers.size()));
    }
    it = profiles_.emplace(batch, std::move(p)).first;
  }
  return it->second;
}

void Trainer::start() {
  // The local workers that run from the start: every one, or those of an elastic run's first
  // cluster (whose version has its own system).
  std::vector<int> first = local_;
  if (options_.elastic) {
    const int initial = initial_size(*options_.elastic, static_cast<int>(order_.size()));
    env_.on_worker_started([this](int base, const RunnerNotice& n) { worker_started(base, n); });
    if (options_.join) {
      // A process started for a new worker: it joins the notice's cluster.
      if (local_.size() != 1) {
        throw std::logic_error("Trainer: a joining process has one local worker");
      }
      starting_.insert(local_.front());
      worker_started(local_.front(), *options_.join);
      return;
    }
    const ClusterConfig cluster = cluster_of(order_, initial, 0);
    ensure_version(cluster);
    std::erase_if(first, [&cluster](int w) {
      return std::find(cluster.workers.begin(), cluster.workers.end(), w) == cluster.workers.end();
    });
    running_ = static_cast<int>(first.size());
  } else {
    SystemContext context;
    context.env = &env_;
    context.sink = this;
    context.model = &model_;
    context.tensor_bytes = tensor_bytes_;
    context.total_steps = total_steps_;
    system_.attach(context);
  }
  const TimeNs now = env_.now();
  for (int w : first) {
    Worker& s = state_[w];
    s.batch = options_.batch_per_gpu;
    s.profile = &profile_for(s.batch);
    s.reduced_tensor.assign(tensor_bytes_.size(), false);
    s.checked_at = now;
  }
  for (int w : first)
    start_step(w);
}

// Splits the time since the last call into link or wait, once backward has ended.
void Trainer::account(Worker& s) {
  const TimeNs now = env_.now();
  if (s.backward_end >= 0 && !s.updating && now > s.accounted_until) {
    (s.in_flight > 0 ? s.exposed_link : s.exposed_wait) += now - s.accounted_until;
  }
  s.accounted_until = now;
}

void Trainer::start_step(int w) {
  Worker& s = state_[w];
  const TimeNs now = env_.now();
  if (!options_.failures.empty()) {
    if (env_.lease_lapsed(w)) {
      // This process did not run for longer than its lease: the others may have gone on without
      // it. The store says whether they did; if not, the step goes on.
      env_.store_get(w, [this, w, epoch = s.epoch](const ClusterConfig& stored) {
        Worker& s2 = state_[w];
        if (s2.epoch != epoch || s2.dead) return;
        if (!left_behind(w, stored)) start_step(w);
      });
      return;
    }
    for (const WorkerFailure& f : options_.failures) {
      if (f.worker != w || f.step != s.step || s.dead) continue;
      if (f.mode == WorkerFailure::Mode::kPause) {
        if (s.paused) continue;
        // Its process stops running for a while, then starts the step. A watchdog armed before
        // must not see the pause as the step's (a stopped process's timers do not run).
        s.paused = true;
        ++s.progress;
        span(w, "paused", "failure", now, now + f.pause_ns);
        env_.pause_worker(w, f.pause_ns, [this, w, epoch = s.epoch] {
          const Worker& s2 = state_[w];
          if (s2.epoch == epoch && !s2.dead) start_step(w);
        });
        return;
      }
      // The process dies (kill) or hangs (silent): either way it stops taking part.
      s.dead = true;
      --running_;
      span(w, f.mode == WorkerFailure::Mode::kKill ? "killed" : "hung", "failure", now, now);
      env_.worker_failed(w, f.mode == WorkerFailure::Mode::kSilent);
      return;
    }
    ++s.progress;
    s.step_begin = now;
    watch(w);
  }
  // With a seam, the step's clock started when the previous step's boundary checks ended: the
  // agreement on the previous step (a collective, exposed communication) is this step's time.
  s.start = agrees() ? s.checked_at : now;
  s.backward_end = -1;
  s.reduced = 0;
  std::fill(s.reduced_tensor.begin(), s.reduced_tensor.end(), false);
  s.exposed_link = now - s.start;
  s.exposed_wait = 0;
  s.comm_ns = 0;
  s.comm_since = now;
  s.comm_first = s.comm_last = -1;
  s.updating = false;
  s.finishing = false;
  const std::size_t k = static_cast<std::size_t>(s.step);
  step_batch_[k] = s.batch;
  if (auto c = system(w).strategy(rank(w))) step_strategy_[k] = strategy_label(*c);
  s.jitter = step_jitter(options_.seed, options_.step_time_cv, w, s.step) *
             compute_factor(options_.stragglers, w, s.step);
  env(w).step_started(rank(w), s.step);
  const train::ComputeProfile& p = *s.profile;
  ComputeSchedule schedule;
  schedule.start_ns = now;
  schedule.batch_per_gpu = s.batch;
  TimeNs t = now + seconds_to_ns_ceil(p.forward_s * s.jitter);
  schedule.phase_end_ns.push_back(t);
  for (std::size_t l = 0; l < model_.layers.size(); ++l) {
    t += seconds_to_ns_ceil(p.backward_layer_s[l] * s.jitter);
    schedule.phase_end_ns.push_back(t);
    const bool last = l + 1 == model_.layers.size();
    if (model_.layers[l].tensor_count > 0 || last) schedule.reported.push_back(l + 1);
  }
  s.compute_start = now;
  s.forward_end = schedule.phase_end_ns.front();
  s.phase_at = -1;
  env(w).compute(rank(w), schedule, [this, w, epoch = s.epoch](std::size_t phase) {
    Worker& s2 = state_[w];
    if (s2.epoch != epoch) return;  // an abandoned attempt (failures)
    const std::size_t l = phase - 1;
    const train::Layer& layer = model_.layers[l];
    if (options_.timeline != nullptr) {
      const TimeNs now = env_.now();
      if (s2.phase_at < 0) {
        // Forward is not reported on its own: it ends at its planned end, or at the first
        // backward report if that came sooner.
        const TimeNs forward_end = std::min(now, s2.forward_end);
        span(w, "forward", "compute", s2.compute_start, forward_end);
        s2.phase_at = forward_end;
      }
      span(w, "backward " + layer.name, "compute", s2.phase_at, now);
      s2.phase_at = now;
      if (s2.ready_at.size() != model_.backward_order.size())
        s2.ready_at.assign(model_.backward_order.size(), 0);
      for (std::size_t i = 0; i < layer.tensor_count; ++i)
        s2.ready_at[layer.first_tensor + i] = now;
    }
    for (std::size_t i = 0; i < layer.tensor_count; ++i)
      system(w).gradient_ready(rank(w), s2.step, layer.first_tensor + i);
    if (l + 1 == model_.layers.size()) {
      s2.backward_end = env_.now();
      s2.accounted_until = env_.now();
      maybe_finish(w);
    }
  });
}

void Trainer::gradient_reduced(int w, std::size_t tensor) {
  Worker& s = state_[w];
  if (tensor >= s.reduced_tensor.size() || s.reduced_tensor[tensor]) {
    throw std::logic_error("worker " + std::to_string(w) + ": gradient " + std::to_string(tensor) +
                           " reported reduced twice (or out of range) in step " +
                           std::to_string(s.step));
  }
  s.reduced_tensor[tensor] = true;
  ++s.reduced;
  if (options_.timeline != nullptr && tensor < s.ready_at.size()) {
    span(w, "allreduce " + model_.backward_order[tensor].name, "comm", s.ready_at[tensor],
         env_.now(), true, static_cast<std::uint64_t>(s.step) * 1000000 + tensor);
  }
  if (progress_) progress_();
  maybe_finish(w);
}

void Trainer::activity(int w, int delta) {
  Worker& s = state_[w];
  account(s);
  const TimeNs now = env_.now();
  if (s.in_flight == 0 && delta > 0) {
    s.comm_since = now;
    if (s.comm_first < 0) s.comm_first = now;
  }
  s.in_flight += delta;
  if (s.in_flight == 0 && delta < 0) {
    s.comm_ns += now - s.comm_since;
    s.comm_last = now;
  }
}

void Trainer::maybe_finish(int w) {
  Worker& s = state_[w];
  if (s.backward_end < 0 || s.finishing || s.reduced < tensor_bytes_.size()) return;
  account(s);
  s.finishing = true;
  s.updating = true;
  monitor_norms(w);
}

void Trainer::monitor_norms(int w) {
  Worker& s = state_[w];
  if (seam_.needs_gradient_norms(s.step)) {
    // The monitors' norm kernel runs on the device before the update, as a monitoring op in the
    // training graph does: compute time of this step.
    const TimeNs begin = env_.now();
    env(w).gradient_norms(rank(w), [this, w, begin](double local_sq, double reduced_sq) {
      span(w, "gradient norms", "monitor", begin, env_.now());
      Worker& s2 = state_[w];
      s2.grad_sq_local = local_sq;
      s2.grad_sq_reduced = reduced_sq;
      monitor_variance(w);
    });
    return;
  }
  monitor_variance(w);
}

void Trainer::monitor_variance(int w) {
  Worker& s = state_[w];
  if (!seam_.needs_gradient_variance(s.step)) {
    update(w);
    return;
  }
  // KungFu's variance monitor: square the gradients (a kernel: compute time), all-reduce the
  // squares as the gradients were (exposed communication), then the variance kernel (compute).
  const TimeNs begin = env_.now();
  env(w).square_gradients(rank(w), [this, w, begin] {
    span(w, "square gradients", "monitor", begin, env_.now());
    Worker& s2 = state_[w];
    s2.updating = false;
    s2.accounted_until = env_.now();
    const TimeNs reduce_begin = env_.now();
    system(w).reduce_squares(rank(w), [this, w, reduce_begin] {
      span(w, "allreduce squares", "comm", reduce_begin, env_.now());
      Worker& s3 = state_[w];
      account(s3);
      s3.updating = true;
      const TimeNs variance_begin = env_.now();
      env(w).gradient_variance(rank(w), [this, w, variance_begin](double norm_sum) {
        span(w, "gradient variance", "monitor", variance_begin, env_.now());
        state_[w].grad_variance = norm_sum;
        update(w);
      });
    });
  });
}

void Trainer::update(int w) {
  Worker& s = state_[w];
  const TimeNs update = seconds_to_ns_ceil(s.profile->optimizer_s * s.jitter);
  const TimeNs begin = env_.now();
  env(w).compute_until(rank(w), begin + update, [this, w, begin, epoch = s.epoch] {
    if (state_[w].epoch != epoch) return;  // an abandoned attempt (failures)
    span(w, "update", "compute", begin, env_.now());
    end_step(w);
  });
}

void Trainer::end_step(int w) {
  Worker& s = state_[w];
  const TimeNs now = env_.now();
  const int step = s.step;
  const double step_s = to_seconds(now - s.start);
  step_sum_s_[static_cast<std::size_t>(step)] += step_s;
  // The cluster that completed the step (one whose worker came back to an abandoned cluster
  // started the step there but cannot complete it).
  step_workers_[static_cast<std::size_t>(step)] = env(w).workers();
  if (options_.timeline != nullptr) span(w, "step " + std::to_string(step), "step", s.start, now);
  if (step >= options_.warmup_steps) {
    const double exposed = to_seconds(s.exposed_link + s.exposed_wait);
    s.compute_s += step_s - exposed;
    s.link_s += to_seconds(s.exposed_link);
    s.wait_s += to_seconds(s.exposed_wait);
    s.step_sum_s += step_s;
    ++s.measured;
  }
  const bool squares = seam_.needs_gradient_variance(step);
  const double bytes = gradient_bytes_ * (squares ? 2 : 1);
  step_bytes_[static_cast<std::size_t>(step)] = bytes;
  if (agrees()) {  // the step agreement's inputs
    s.own.push_back({step, bytes,
                     s.comm_first >= 0 && s.comm_last > s.comm_first
                         ? to_seconds(s.comm_last - s.comm_first)
                         : 0.0});
    // What this worker contributes to the agreement: [duration, comm time, bytes, workers,
    // |g_w|^2, |sum_w g_w|^2, the gradient variance, its vote].
    // The norms only where a monitor asked for them at this step (0 elsewhere).
    const bool norms = seam_.needs_gradient_norms(step);
    s.agree_in = {step_s,
                  to_seconds(s.comm_ns),
                  bytes,
                  1.0,
                  norms ? s.grad_sq_local : 0.0,
                  norms ? s.grad_sq_reduced : 0.0,
                  squares ? s.grad_variance : 0.0,
                  seam_.policy ? seam_.policy->vote(s.own) : 0.0};
  }
  env(w).between_steps(rank(w), step, [this, w, step, now] {
    if (env_.now() > now) span(w, "between steps", "control", now, env_.now());
    after_step(w, step);
  });
}

void Trainer::span(int w, std::string_view name, const char* category, TimeNs begin, TimeNs end,
                   bool overlapping, std::uint64_t id) {
  if (options_.timeline == nullptr) return;
  options_.timeline->add({.worker = w,
                          .name = std::string(name),
                          .category = category,
                          .begin = begin,
                          .end = std::max(begin, end),
                          .overlapping = overlapping,
                          .id = id});
}

void Trainer::after_step(int w, int step) {
  Worker& s = state_[w];
  s.checked_at = env_.now();
  // The environment's own readings, by its worker id (not a cluster view's rank).
  env_.readings(w, step, step_readings_[static_cast<std::size_t>(step)]);
  ++s.step;
  if (agrees()) {
    agree(w, step);
    return;
  }
  next_or_finish(w);
}

void Trainer::end_after(int step) {
  total_steps_ = step + 1;
  const std::size_t n = static_cast<std::size_t>(total_steps_);
  step_sum_s_.resize(n);
  step_batch_.resize(n);
  step_strategy_.resize(n);
  step_decision_.resize(n);
  step_bytes_.resize(n);
  step_readings_.resize(n);
  step_workers_.resize(n);
}

void Trainer::next_or_finish(int w) {
  if (state_[w].step < total_steps_) {
    start_step(w);
  } else {
    ++finished_workers_;
    --running_;
  }
  if (progress_) progress_();
}

void Trainer::agree(int w, int step) {
  control(w, "adaptsim:step:" + std::to_string(step), [this, w, step] { on_agreed(w, step); });
}

void Trainer::on_agreed(int w, int step) {
  Worker& s = state_[w];
  const std::size_t k = static_cast<std::size_t>(step);
  if (history_.size() == k) {
    // The first local worker to agree on this step: every worker's sums are the same bytes (the
    // all-reduce's root computed them once and sent them to all), so one copy serves all.
    const std::vector<double>& sum = s.agree_out;
    StepObservation o;
    o.step = step;
    o.batch_per_gpu = step_batch_[k];
    o.workers = static_cast<int>(std::lround(sum[3]));
    o.strategy = system(w).strategy(rank(w));
    o.step_s = sum[0] / sum[3];
    o.samples_per_s = o.step_s > 0 ? o.workers * o.batch_per_gpu / o.step_s : 0;
    o.comm_s = sum[1] / sum[3];
    o.comm_bytes = sum[2] / sum[3];
    o.allreduce_Bps = o.comm_s > 0 ? o.comm_bytes / o.comm_s : 0;
    // Every worker's reduced buffer holds the same sum; the averaged gradient is sum / workers.
    o.grad_sq_local = sum[4] / sum[3];
    o.grad_sq_global = sum[5] / sum[3] / (sum[3] * sum[3]);
    o.grad_variance = sum[6] / sum[3];  // every worker computed it from the same reduced sums
    o.votes = sum[7];
    for (auto& m : seam_.monitors)
      m->observe(o);
    // Merged: a failure recovery before this agreement recorded its phases on the step already.
    for (const auto& [key, value] : o.readings)
      step_readings_[k][key] = value;
    samples_done_ += static_cast<double>(o.workers) * o.batch_per_gpu;
    history_.push_back(std::move(o));
    // The samples stop: every worker agreed on the same samples, so every one ends here.
    if (options_.stop_after_samples > 0 && samples_done_ >= options_.stop_after_samples &&
        step + 1 < total_steps_)
      end_after(step);
    Decision d;
    // No decision after the last step: there is no next step to change.
    if (seam_.policy && step + 1 < total_steps_) d = seam_.policy->decide(history_);
    step_decision_[k] = d.describe();
    decisions_.push_back(std::move(d));
  }
  if (decisions_[k].strategy) {
    switch_strategy(w, step);
    return;
  }
  apply(w, decisions_[k]);
  if (options_.elastic) {
    elastic_boundary(w, step);
    return;
  }
  next_or_finish(w);
}

// A control all-reduce of the worker's agree_in over the agreement's STAR into its agree_out (the
// step agreement; a barrier when the sum is ignored).
void Trainer::control(int w, const std::string& name, Callback done, coll::ReduceOp op) {
  Worker& s = state_[w];
  s.agree_out.assign(s.agree_in.size(), 0.0);
  coll::Workspace ws;
  ws.name = name;
  ws.count = s.agree_in.size();
  ws.dtype = coll::DType::kF64;
  ws.op = op;
  ws.send = {reinterpret_cast<const std::byte*>(s.agree_in.data()), ws.count * sizeof(double)};
  ws.recv = {reinterpret_cast<std::byte*>(s.agree_out.data()), ws.count * sizeof(double)};
  if (options_.timeline != nullptr) {
    const TimeNs begin = env_.now();
    done = [this, w, name, begin, done = std::move(done)] {
      span(w, name, "control", begin, env_.now());
      done();
    };
  }
  if (options_.elastic) {
    // A resize that stalls names where (describe_pending): a barrier waits for every member.
    s.waiting_at = name;
    done = [this, w, done = std::move(done)] {
      state_[w].waiting_at.clear();
      done();
    };
  }
  coll::AllReduce& agreement = options_.elastic ? *agreements_.at(state_[w].version) : *agreement_;
  agreement.run(env(w).transport(rank(w)), ws, std::move(done));
}

void Trainer::switch_strategy(int w, int step) {
  const std::string prefix = "adaptsim:switch:" + std::to_string(step);
  const StrategyChoice& to = *decisions_[static_cast<std::size_t>(step)].strategy;
  // The digest: the strategy and its root, exact in a double.
  const double digest = static_cast<double>(static_cast<int>(to.kind) + 1) * 1048576.0 + to.root;
  state_[w].agree_in.assign(1, digest);
  control(w, prefix + ":consensus", [this, w, step, prefix, digest] {
    const int n = env(w).workers();
    const double sum = state_[w].agree_out[0];
    if (sum != digest * n) {
      throw RuntimeFailure("worker " + std::to_string(w) + ": the workers disagree on the new " +
                           "strategy after step " + std::to_string(step) + " (digest sum " +
                           std::to_string(sum) + ", expected " + std::to_string(digest * n) + ")");
    }
    apply(w, decisions_[static_cast<std::size_t>(step)]);
    state_[w].agree_in.assign(1, 0.0);
    control(w, prefix + ":barrier", [this, w] { next_or_finish(w); });
  });
}

void Trainer::apply(int w, const Decision& d) {
  Worker& s = state_[w];
  if (d.workers && !options_.elastic) {
    throw InputError(
        "policy '" + std::string(seam_.policy->name()) +
        "' changes the worker set, which a running job does not support yet (not yet supported)");
  }
  if (d.batch_per_gpu) {
    if (*d.batch_per_gpu < 1) {
      throw RuntimeFailure("policy '" + std::string(seam_.policy->name()) + "' chose batch " +
                           std::to_string(*d.batch_per_gpu));
    }
    s.batch = *d.batch_per_gpu;
    s.profile = &profile_for(s.batch);
  }
  if (d.strategy) system(w).set_strategy(rank(w), *d.strategy);
}

std::vector<double> Trainer::local_sums() const {
  // [per-step duration sums..., compute, link, wait, measured, per-worker mean step time...]
  const std::size_t base = static_cast<std::size_t>(total_steps_);
  std::vector<double> out(base + 4 + static_cast<std::size_t>(env_.workers()), 0.0);
  std::copy(step_sum_s_.begin(), step_sum_s_.end(), out.begin());
  for (int w : local_) {
    const Worker& s = state_[w];
    out[base] += s.compute_s;
    out[base + 1] += s.link_s;
    out[base + 2] += s.wait_s;
    out[base + 3] += s.measured;
    out[base + 4 + static_cast<std::size_t>(w)] = s.measured > 0 ? s.step_sum_s / s.measured : 0;
  }
  return out;
}

RunRecord Trainer::record() const {
  RunRecord r;
  r.warmup_steps = options_.warmup_steps;
  r.total_steps = total_steps_;
  r.workers = env_.workers();
  r.elastic = options_.elastic.has_value();
  r.step_sum_s = step_sum_s_;
  r.step_batch = step_batch_;
  r.step_strategy = step_strategy_;
  r.step_decision = step_decision_;
  r.step_bytes = step_bytes_;
  r.step_readings = step_readings_;
  r.step_workers = step_workers_;
  r.worker_step_mean_s.assign(static_cast<std::size_t>(env_.workers()), 0.0);
  for (int w : local_) {
    const Worker& s = state_[w];
    r.compute_s += s.compute_s;
    r.link_s += s.link_s;
    r.wait_s += s.wait_s;
    r.measured += s.measured;
    r.worker_step_mean_s[static_cast<std::size_t>(w)] =
        s.measured > 0 ? s.step_sum_s / s.measured : 0;
  }
  return r;
}

TrainingResult Trainer::summarize(const std::vector<double>& sum) const {
  RunRecord r = record();
  const std::size_t base = static_cast<std::size_t>(total_steps_);
  std::copy(sum.begin(), sum.begin() + static_cast<std::ptrdiff_t>(base), r.step_sum_s.begin());
  r.compute_s = sum[base];
  r.link_s = sum[base + 1];
  r.wait_s = sum[base + 2];
  r.measured = sum[base + 3];
  r.worker_step_mean_s.assign(sum.begin() + static_cast<std::ptrdiff_t>(base + 4), sum.end());
  return summarize_record(r);
}

void merge_records(RunRecord& into, const RunRecord& other) {
  const std::size_t steps = static_cast<std::size_t>(into.total_steps);
  if (other.total_steps != into.total_steps || other.warmup_steps != into.warmup_steps ||
      other.workers != into.workers || other.elastic != into.elastic ||
      other.step_sum_s.size() != steps || into.step_sum_s.size() != steps ||
      other.worker_step_mean_s.size() != into.worker_step_mean_s.size()) {
    throw std::invalid_argument("merge_records: the records are not of one run");
  }
  for (std::size_t k = 0; k < steps; ++k) {
    into.step_sum_s[k] += other.step_sum_s[k];
    if (into.step_batch[k] == 0) into.step_batch[k] = other.step_batch[k];
    if (into.step_strategy[k].empty()) into.step_strategy[k] = other.step_strategy[k];
    if (into.step_decision[k].empty()) into.step_decision[k] = other.step_decision[k];
    if (into.step_bytes[k] == 0) into.step_bytes[k] = other.step_bytes[k];
    into.step_workers[k] = std::max(into.step_workers[k], other.step_workers[k]);
    for (const auto& [key, value] : other.step_readings[k]) {
      auto [it, added] = into.step_readings[k].emplace(key, value);
      if (!added) it->second = std::max(it->second, value);
    }
  }
  into.compute_s += other.compute_s;
  into.link_s += other.link_s;
  into.wait_s += other.wait_s;
  into.measured += other.measured;
  for (std::size_t w = 0; w < into.worker_step_mean_s.size(); ++w) {
    if (other.worker_step_mean_s[w] > 0) into.worker_step_mean_s[w] = other.worker_step_mean_s[w];
  }
}

TrainingResult summarize_record(const RunRecord& rec) {
  TrainingResult r;
  const int n = rec.workers;
  const int total_steps = rec.total_steps;
  const int warmup = rec.warmup_steps;
  const std::vector<double>& sum = rec.step_sum_s;
  // Step k's time: the mean over workers of their own step-k durations. Synchronous systems
  // couple the workers through their collectives, so this equals the cluster's step rate;
  // without communication (ideal) the workers are independent and it is their mean speed.
  if (rec.elastic) {
    for (int k = 0; k < total_steps; ++k) {
      if (rec.step_workers[static_cast<std::size_t>(k)] == 0) {
        throw RuntimeFailure("the job stopped before step " + std::to_string(k) +
                             ": every worker of the cluster failed");
      }
    }
  }
  // A step's workers: the cluster's size in it (elastic runs), else every worker.
  auto workers_in = [&](int k) {
    const int m = rec.step_workers[static_cast<std::size_t>(k)];
    return rec.elastic && m > 0 ? m : n;
  };
  for (int k = warmup; k < total_steps; ++k)
    r.step_s.push_back(sum[static_cast<std::size_t>(k)] / workers_in(k));
  const double m = static_cast<double>(r.step_s.size());
  r.step_mean_s = std::accumulate(r.step_s.begin(), r.step_s.end(), 0.0) / m;
  double var = 0;
  for (double x : r.step_s)
    var += (x - r.step_mean_s) * (x - r.step_mean_s);
  r.step_std_s = r.step_s.size() > 1 ? std::sqrt(var / (m - 1)) : 0.0;
  const double measured = rec.measured;
  r.compute_s = rec.compute_s / measured;
  r.exposed_link_s = rec.link_s / measured;
  r.exposed_wait_s = rec.wait_s / measured;
  double batch_sum = 0;
  for (int k = warmup; k < total_steps; ++k)
    batch_sum += rec.step_batch[static_cast<std::size_t>(k)];
  const double batch = batch_sum / m;  // exactly the batch when it never changed
  r.samples_per_s_per_gpu = batch / r.step_mean_s;
  // First-order propagation: d(B/T) = B/T^2 dT.
  r.samples_per_s_per_gpu_std = batch * r.step_std_s / (r.step_mean_s * r.step_mean_s);
  r.samples_per_s_total = r.samples_per_s_per_gpu * n;
  if (rec.elastic) {
    // Samples over time, each step at its cluster's size.
    double samples = 0, seconds = 0;
    for (int k = warmup; k < total_steps; ++k) {
      const std::size_t i = static_cast<std::size_t>(k);
      samples += static_cast<double>(workers_in(k)) * rec.step_batch[i];
      seconds += sum[i] / workers_in(k);
    }
    r.samples_per_s_total = seconds > 0 ? samples / seconds : 0;
  }
  r.worker_step_mean_s = rec.worker_step_mean_s;
  for (int k = 0; k < total_steps; ++k) {
    const std::size_t i = static_cast<std::size_t>(k);
    r.steps.push_back({k, k >= warmup, sum[i] / workers_in(k), rec.step_batch[i], workers_in(k),
                       rec.step_bytes[i], rec.step_strategy[i], rec.step_decision[i],
                       rec.step_readings[i]});
  }
  return r;
}

std::string Trainer::describe_pending() const {
  std::string out;
  for (int w : local_) {
    const Worker& s = state_[w];
    std::string line = "worker " + std::to_string(w) + " step " + std::to_string(s.step) + ": ";
    if (s.step >= total_steps_) {
      line += "finished";
    } else if (s.dead) {
      line += "stopped";
    } else if (!s.waiting_at.empty()) {
      line += "waiting at '" + s.waiting_at + "' of cluster version " + std::to_string(s.version) +
              " (workers";
      for (int m : views_.at(s.version)->cluster().workers)
        line += " " + std::to_string(m);
      line += ")";
    } else if (s.updating) {
      line += "in the update";
    } else if (s.reduced < tensor_bytes_.size()) {
      line += std::to_string(tensor_bytes_.size() - s.reduced) + " of " +
              std::to_string(tensor_bytes_.size()) + " gradients not reduced (tensors ";
      std::size_t shown = 0;
      for (std::size_t t = 0; t < s.reduced_tensor.size() && shown < 4; ++t) {
        if (s.reduced_tensor[t]) continue;
        line += (shown++ ? ", " : "") + model_.backward_order[t].name;
      }
      line += tensor_bytes_.size() - s.reduced > shown ? ", ...)" : ")";
      if (s.backward_end < 0) line += ", backward running";
    } else {
      line += "backward running";
    }
    out += (out.empty() ? "" : "; ") + line;
  }
  if (!starting_.empty()) {
    std::string line = "awaiting the processes of workers";
    for (int w : starting_)
      line += " " + std::to_string(w);
    out += (out.empty() ? "" : "; ") + line;
  }
  return out;
}

}  // namespace adaptsim::runtime
