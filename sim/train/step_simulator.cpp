#include "sim/train/step_simulator.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "sim/core/rng.h"

namespace adaptsim::train {

double ComputeProfile::total_s() const {
  return forward_s + std::accumulate(backward_layer_s.begin(), backward_layer_s.end(), 0.0) +
         optimizer_s;
}

ComputeProfile compute_profile(const Model& model, const DeviceProfile& device,
                               const TrainingOptions& options) {
  ComputeProfile p;
  const double step = device.step_compute_time_s(model, options.batch_per_gpu, options.precision);
  const ModelTotals totals = model.totals();
  // The measured step includes the update; model the update as memory-bound traffic and split the
  // rest over forward and backward layers in proportion to their FLOPs. The cap at half the step
  // is a guard, not a measurement ([U] assumption, no source): it keeps forward + backward at
  // least half of the measured step should the memory-bound estimate be implausibly large. For
  // the shipped devices and models the update is at most 7% of the step at batch 8 and 2.3% at
  // batch 32; the cap binds only at batch 1 (BERT-base on an H100).
  p.optimizer_s = std::min(0.5 * step, static_cast<double>(totals.parameters) *
                                           options.optimizer_bytes_per_param /
                                           device.memory_bandwidth_Bps().value);
  const double rest = step - p.optimizer_s;
  const double flops = totals.forward_flops + totals.backward_flops;
  p.forward_s = rest * totals.forward_flops / flops;
  for (const Layer& l : model.layers)
    p.backward_layer_s.push_back(rest * l.backward_flops / flops);
  p.forward_s *= options.compute_scale;
  p.optimizer_s *= options.compute_scale;
  for (double& b : p.backward_layer_s)
    b *= options.compute_scale;
  return p;
}

GpuArch gpu_arch_of(std::string_view gpu_model) {
  auto has = [&](std::string_view s) { return gpu_model.find(s) != std::string_view::npos; };
  if (has("H100") || has("H200") || has("h100")) return GpuArch::kHopper;
  if (has("A100") || has("a100")) return GpuArch::kAmpere;
  return GpuArch::kVolta;  // NCCL's oldest constant set (K80, P100, V100, T4)
}

namespace {

class StepSimulator final : public SystemEnv {
 public:
  StepSimulator(const topo::Topology& topology, const Model& model, const ComputeProfile& compute,
                double step_time_cv, GpuArch arch, const SystemConfig& system_config,
                const TrainingOptions& options)
      : topology_(topology),
        model_(model),
        cv_(step_time_cv),
        arch_(arch),
        options_(options),
        network_(engine_, topology, options.sharing),
        fabric_(network_, host_options(options)),
        system_(make_system(system_config)),
        profile_(compute),
        workers_(topology.rank_count()),
        state_(workers_) {
    for (const Tensor& t : model.backward_order) {
      tensor_bytes_.push_back(t.elements * options.gradient_element_bytes);
    }
    network_.set_share_dispersion(options.share_cv, options.seed);
    total_steps_ = options.warmup_steps + options.measured_steps;
    step_sum_s_.assign(total_steps_, 0.0);
  }

  TrainingResult run() {
    system_->attach(*this);
    for (int w = 0; w < workers_; ++w)
      start_step(w);
    engine_.run();
    return summarize();
  }

  // SystemEnv
  EventEngine& engine() override { return engine_; }
  net::Network& network() override { return network_; }
  fabric::SimFabric& host_fabric() override { return fabric_; }
  const topo::Topology& topology() const override { return topology_; }
  const Model& model() const override { return model_; }
  std::uint64_t tensor_bytes(std::size_t t) const override { return tensor_bytes_[t]; }
  int workers() const override { return workers_; }
  GpuArch gpu_arch() const override { return arch_; }
  bool running() const override { return finished_workers_ < workers_; }

  void gradient_reduced(int worker, std::size_t tensor) override {
    Worker& s = state_[worker];
    (void)tensor;
    ++s.reduced;
    maybe_finish(worker);
  }

  void activity(int worker, int delta) override {
    Worker& s = state_[worker];
    account(s);
    s.in_flight += delta;
  }

 private:
  struct Worker {
    int step = 0;
    TimeNs start = 0;
    TimeNs backward_end = -1;
    std::size_t reduced = 0;
    double jitter = 1;
    int in_flight = 0;
    // Exposed-time accounting since backward ended.
    TimeNs accounted_until = 0;
    TimeNs exposed_link = 0;
    TimeNs exposed_wait = 0;
    bool updating = false;
    // Sums over measured steps.
    double compute_s = 0, link_s = 0, wait_s = 0;
    int measured = 0;
  };

  static fabric::SimTransportOptions host_options(const TrainingOptions& o) {
    fabric::SimTransportOptions t = o.host_transport;
    t.endpoint = fabric::Endpoint::kHost;
    return t;
  }

  // Splits the time since the last call into link or wait, once backward has ended.
  void account(Worker& s) {
    const TimeNs now = engine_.now();
    if (s.backward_end >= 0 && !s.updating && now > s.accounted_until) {
      (s.in_flight > 0 ? s.exposed_link : s.exposed_wait) += now - s.accounted_until;
    }
    s.accounted_until = now;
  }

  void start_step(int w) {
    Worker& s = state_[w];
    s.start = engine_.now();
    s.backward_end = -1;
    s.reduced = 0;
    s.exposed_link = s.exposed_wait = 0;
    s.updating = false;
    // Multiplicative jitter, N(1, cv), per (worker, step), from its own stream.
    Rng rng = Rng::derive(options_.seed, static_cast<std::uint64_t>(w) * 1'000'003ULL + s.step);
    s.jitter = cv_ > 0 ? std::max(0.5, rng.normal(1.0, cv_)) : 1.0;
    TimeNs t = engine_.now() + seconds_to_ns_ceil(profile_.forward_s * s.jitter);
    for (std::size_t l = 0; l < model_.layers.size(); ++l) {
      t += seconds_to_ns_ceil(profile_.backward_layer_s[l] * s.jitter);
      const Layer& layer = model_.layers[l];
      const bool last = l + 1 == model_.layers.size();
      if (layer.tensor_count == 0 && !last) continue;  // no gradient to hand over
      engine_.schedule_at(t, [this, w, l, last] {
        Worker& s2 = state_[w];
        const Layer& layer2 = model_.layers[l];
        for (std::size_t i = 0; i < layer2.tensor_count; ++i) {
          system_->gradient_ready(w, s2.step, layer2.first_tensor + i);
        }
        if (last) {
          s2.backward_end = engine_.now();
          s2.accounted_until = engine_.now();
          maybe_finish(w);
        }
      });
    }
  }

  void maybe_finish(int w) {
    Worker& s = state_[w];
    if (s.backward_end < 0 || s.updating || s.reduced < tensor_bytes_.size()) return;
    account(s);
    s.updating = true;
    const TimeNs update = seconds_to_ns_ceil(profile_.optimizer_s * s.jitter);
    engine_.schedule_after(update, [this, w] { end_step(w); });
  }

  void end_step(int w) {
    Worker& s = state_[w];
    const TimeNs now = engine_.now();
    step_sum_s_[s.step] += to_seconds(now - s.start);
    if (s.step >= options_.warmup_steps) {
      const double step_s = to_seconds(now - s.start);
      const double exposed = to_seconds(s.exposed_link + s.exposed_wait);
      s.compute_s += step_s - exposed;
      s.link_s += to_seconds(s.exposed_link);
      s.wait_s += to_seconds(s.exposed_wait);
      ++s.measured;
    }
    ++s.step;
    if (s.step < total_steps_) {
      start_step(w);
    } else {
      ++finished_workers_;
    }
  }

  TrainingResult summarize() const {
    TrainingResult r;
    r.events = engine_.events_run();
    // Step k's time: the mean over workers of their own step-k durations. Synchronous systems
    // couple the workers through their collectives, so this equals the cluster's step rate;
    // without communication (ideal) the workers are independent and it is their mean speed.
    for (int k = options_.warmup_steps; k < total_steps_; ++k) {
      r.step_s.push_back(step_sum_s_[k] / workers_);
    }
    const double n = static_cast<double>(r.step_s.size());
    r.step_mean_s = std::accumulate(r.step_s.begin(), r.step_s.end(), 0.0) / n;
    double var = 0;
    for (double x : r.step_s)
      var += (x - r.step_mean_s) * (x - r.step_mean_s);
    r.step_std_s = r.step_s.size() > 1 ? std::sqrt(var / (n - 1)) : 0.0;
    int measured = 0;
    for (const Worker& s : state_) {
      r.compute_s += s.compute_s;
      r.exposed_link_s += s.link_s;
      r.exposed_wait_s += s.wait_s;
      measured += s.measured;
    }
    r.compute_s /= measured;
    r.exposed_link_s /= measured;
    r.exposed_wait_s /= measured;
    const double batch = options_.batch_per_gpu;
    r.samples_per_s_per_gpu = batch / r.step_mean_s;
    // First-order propagation: d(B/T) = B/T^2 dT.
    r.samples_per_s_per_gpu_std = batch * r.step_std_s / (r.step_mean_s * r.step_mean_s);
    r.samples_per_s_total = r.samples_per_s_per_gpu * workers_;
    r.transmissions = fabric_.transmissions();
    return r;
  }

  const topo::Topology& topology_;
  const Model& model_;
  double cv_;
  GpuArch arch_;
  TrainingOptions options_;
  EventEngine engine_;
  net::Network network_;
  fabric::SimFabric fabric_;
  std::unique_ptr<System> system_;
  ComputeProfile profile_;
  int workers_;
  std::vector<Worker> state_;
  std::vector<std::uint64_t> tensor_bytes_;
  int total_steps_ = 0;
  int finished_workers_ = 0;
  std::vector<double> step_sum_s_;  // per step: sum over workers of their step durations
};

}  // namespace

TrainingResult simulate_training(const topo::Topology& topology, const Model& model,
                                 const DeviceProfile& device, const SystemConfig& system,
                                 const TrainingOptions& options) {
  return simulate_training(
      topology, model, compute_profile(model, device, options), device.step_time_cv().value,
      gpu_arch_of(device.name() + " " + device.description()), system, options);
}

TrainingResult simulate_training(const topo::Topology& topology, const Model& model,
                                 const ComputeProfile& compute, double step_time_cv, GpuArch arch,
                                 const SystemConfig& system, const TrainingOptions& options) {
  if (compute.backward_layer_s.size() != model.layers.size()) {
    throw std::invalid_argument(
        "compute profile has " + std::to_string(compute.backward_layer_s.size()) +
        " backward layers for a model of " + std::to_string(model.layers.size()));
  }
  StepSimulator sim(topology, model, compute, step_time_cv, arch, system, options);
  return sim.run();
}

}  // namespace adaptsim::train
