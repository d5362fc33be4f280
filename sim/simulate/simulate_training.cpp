#include "sim/simulate/simulate_training.h"

#include <optional>

#include "sim/core/error.h"
#include "sim/runtime/trainer.h"
#include "sim/simulate/sim_env.h"

namespace adaptsim::simulate {
namespace {

SimulatedTraining run(const topo::Topology& topology, const train::Model& model,
                      std::function<train::ComputeProfile(int)> compute, double step_time_cv,
                      train::GpuArch arch, const MonitorKernels& kernels,
                      const runtime::SystemConfig& system_config, const TrainingOptions& options) {
  SimEnvOptions env_options;
  env_options.host_transport = options.host_transport;
  // The timeline shows each message's transfer: the fabric keeps them.
  env_options.host_transport.record_transmissions = options.host_transport.record_transmissions ||
                                                    options.record_timeline ||
                                                    options.link_stats_bin_ns > 0;
  env_options.sharing = options.sharing;
  env_options.share_cv = options.share_cv;
  env_options.tcp_windows = options.tcp_windows;
  env_options.seed = options.seed;
  env_options.arch = arch;
  env_options.gradient_element_bytes = options.gradient_element_bytes;
  env_options.kernels = kernels;
  env_options.background = options.background;
  env_options.elastic = options.elastic;
  env_options.stragglers = options.stragglers;
  env_options.learning = options.learning;
  env_options.compute_cores = options.compute_cores;
  SimEnv env(topology, model, env_options);
  std::optional<net::LinkRecorder> recorder;
  if (options.link_stats_bin_ns > 0 || options.record_timeline) {
    recorder.emplace(options.link_stats_bin_ns > 0 ? options.link_stats_bin_ns
                                                   : TrainingOptions::kTimelineLinkBinNs);
    env.network().flows().set_recorder(&*recorder);
  }
  runtime::TrainerOptions t;
  t.batch_per_gpu = options.compute.batch_per_gpu;
  t.warmup_steps = options.warmup_steps;
  t.measured_steps = options.measured_steps;
  t.seed = options.seed;
  t.step_time_cv = step_time_cv;
  t.gradient_element_bytes = options.gradient_element_bytes;
  t.compute = std::move(compute);
  t.elastic = options.elastic;
  t.stragglers = options.stragglers;
  t.failures = options.failures;
  SimulatedTraining out;
  if (options.record_timeline) t.timeline = &out.timeline;
  runtime::TrainingRun training(env, model, system_config, options.seam, std::move(t));
  runtime::Trainer& trainer = training.trainer();
  trainer.start();
  env.engine().run();
  // Nothing left to happen: every worker must be through (else the protocol waits for ever on
  // something that cannot come, which a live run would meet as its timeout).
  if (!trainer.finished()) {
    throw RuntimeFailure("the simulation ran out of events before the run ended: " +
                         trainer.describe_pending());
  }
  // Every worker is local: the local sums are the run's.
  out.result = trainer.summarize(trainer.local_sums());
  out.events = env.engine().events_run();
  out.transmissions = env.fabric().transmissions();
  std::vector<net::LinkUse> links;
  if (recorder) links = recorder->report(env.network().flows(), env.engine().now());
  if (options.record_timeline) {
    // Each link that carried anything (a topology channel: "a->b"), its utilization per bin,
    // written only where it changes; back to 0 at the end.
    for (std::size_t r = 0; r < links.size() && r < topology.channel_count(); ++r) {
      const net::LinkUse& u = links[r];
      if (!(u.bytes > 0) || !(u.capacity_Bps > 0)) continue;
      const std::string track = "link " + u.name;
      double last = -1;
      const double bin_s = to_seconds(recorder->bin_ns());
      for (std::size_t k = 0; k < u.bin_bytes.size(); ++k) {
        const double value = u.bin_bytes[k] / (u.capacity_Bps * bin_s);
        if (value == last) continue;
        out.timeline.add_counter(
            {.track = track, .at = static_cast<TimeNs>(k) * recorder->bin_ns(), .value = value});
        last = value;
      }
      out.timeline.add_counter({.track = track,
                                .at = static_cast<TimeNs>(u.bin_bytes.size()) * recorder->bin_ns(),
                                .value = 0});
    }
  }
  if (options.link_stats_bin_ns > 0) out.links = std::move(links);
  if (options.record_timeline) {
    // Each host message from its first byte leaving to its last (the fabric's record), on the
    // sender's track.
    for (const fabric::Transmission& t : out.transmissions) {
      out.timeline.add_transfer(t.src, t.dst, t.start, t.end, static_cast<double>(t.bytes));
    }
  }
  return out;
}

}  // namespace

SimulatedTraining simulate_training(const topo::Topology& topology, const train::Model& model,
                                    const train::DeviceProfile& device,
                                    const runtime::SystemConfig& system,
                                    const TrainingOptions& options) {
  auto compute = [&model, &device, options](int batch) {
    train::ComputeOptions c = options.compute;
    c.batch_per_gpu = batch;
    return train::compute_profile(model, device, c);
  };
  // Without measured kernels, the monitors' kernels are memory-bound at the device's bandwidth.
  const MonitorKernels kernels = options.monitor_kernels.value_or(MonitorKernels::memory_bound(
      device.memory_bandwidth_Bps().value, options.gradient_element_bytes));
  return run(topology, model, compute, device.step_time_cv().value,
             train::gpu_arch_of(device.name() + " " + device.description()), kernels, system,
             options);
}

SimulatedTraining simulate_training(const topo::Topology& topology, const train::Model& model,
                                    const train::ComputeProfile& compute, double step_time_cv,
                                    train::GpuArch arch, const runtime::SystemConfig& system,
                                    const TrainingOptions& options) {
  const int batch = options.compute.batch_per_gpu;
  auto scaled = [compute, batch](int b) { return train::scale_compute(compute, batch, b); };
  return run(topology, model, scaled, step_time_cv, arch,
             options.monitor_kernels.value_or(MonitorKernels{}), system, options);
}

}  // namespace adaptsim::simulate
