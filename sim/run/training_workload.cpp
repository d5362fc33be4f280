// workload.kind = training: data-parallel training of zoo models on every GPU of the topology,
// under each listed system.
//
//   workload:
//     kind: training
//     models: [resnet50, mobilenetv2]
//     batch_per_gpu: 32
//     device: ../traces/devices/k80-half.yaml   # relative to the scenario file
//     precision: fp32                           # default: the device's
//     warmup_steps: 1
//     steps: 4                                  # measured steps
//     compute_scale: 1.0                        # multiplies compute (short live validations)
//     compute_cores: 0                          # a server's cores its workers' compute shares
//                                               # (CPU devices; 0: a device each; simulated only)
//     connection: serialized                    # host transport, as in the allreduce workload
//     per_message_overhead: 0us
//     socket_buffer: 0B                         # serialized only: sender's kernel socket buffer
//     sharing: max-min                          # or bottleneck (very large clusters), or tcp
//     share_cv: 0                               # tcp only: dispersion of connections' shares
//     tcp_windows: {restart_after_idle: true, hystart: true, queue_from_windows: false}
//                                       # tcp only, optional: each connection's CUBIC window
//                                       # (net::TcpWindowOptions)
//     monitor_kernels: device           # or cpu: the calibration profile's CPU kernels (below)
//     policy: {name: switch-strategy, step: 5, strategy: MULTI_BINARY_TREE_STAR}  # optional
//     monitors: [{name: throughput, window: 4}]                                  # optional
//     learn: {data: /usr/share/datasets/fashion-mnist, lr: 0.05, eval_every: 100}
//                                       # optional, models [fashion-mlp] only: a live run trains
//                                       # it for real (sim/train/learn_spec.h; the defaults
//                                       # without the map); simulated runs ignore it
//     elastic: {mechanism: kungfu, initial_workers: 1}  # optional: a changing worker set
//     stragglers: [{worker: 2, from_step: 10, compute: 2.0}]  # optional (runtime/straggler.h)
//     failures: [{worker: 2, step: 7, mode: kill}]            # optional (runtime/failure.h)
//                                                       # (runtime/elastic.h; policy resize...)
//     background:                       # optional: traffic beside the job (runtime/background.h)
//       - {from: x0, to: s0, connections: 4, rate: 1Gbps, start_step: 10, stop_step: 20}
//     systems:
//       - {label: ideal, kind: ideal}
//       - {label: kungfu, kind: kungfu, strategy: MULTI_BINARY_TREE_STAR, chunk_size: 1MiB}
//       - {label: horovod, kind: horovod, cycle_time: 5ms, fusion_threshold: 64MiB}
//       - {label: kungfu-nccl, kind: nccl}
//       - {label: horovod-nccl, kind: horovod-nccl}
//       - {label: hierarchical, kind: hierarchical}

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <memory>

#include "sim/core/error.h"
#include "sim/core/units.h"
#include "sim/io/output.h"
#include "sim/run/link_stats_files.h"
#include "sim/run/workload.h"
#include "sim/runtime/elastic.h"
#include "sim/runtime/failure.h"
#include "sim/runtime/straggler.h"
#include "sim/runtime/system_config.h"
#include "sim/simulate/simulate_training.h"
#include "sim/train/dynamics.h"
#include "sim/train/learn_spec.h"

namespace adaptsim::run {
namespace {

// simctl run --trace-connections: one line per message on a host connection, in the order their
// last bytes left (plots/port_spread.py reads it beside scripts/testbed-ss-trace.sh's polls).
std::string connection_trace(const std::vector<fabric::Transmission>& transmissions) {
  std::string text = "src_rank,dst_rank,start_s,end_s,bytes\n";
  for (const fabric::Transmission& t : transmissions) {
    text += std::to_string(t.src) + "," + std::to_string(t.dst) + "," +
            io::fmt_fixed(to_seconds(t.start), 9) + "," + io::fmt_fixed(to_seconds(t.end), 9) +
            "," + std::to_string(t.bytes) + "\n";
  }
  return text;
}

// The monitors' readings in one CSV cell: "name=value name=value" (%.6g; nan where the mode
// holds no value), in name order.
std::string readings_cell(const std::map<std::string, double>& readings) {
  std::string out;
  for (const auto& [name, value] : readings) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", value);
    out += (out.empty() ? "" : " ") + name + "=" + buf;
  }
  return out;
}

// A file-name part from a free-form label (system labels may hold spaces or slashes).
std::string file_part(std::string_view label) {
  std::string out;
  for (char c : label)
    out += std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' ? c : '_';
  return out;
}

// The cluster with the extra hosts the background traffic names.
topo::ClusterSpec with_extra_hosts(topo::ClusterSpec spec, const io::BackgroundSpec& bg) {
  spec.extra_hosts = bg.extra_hosts;
  return spec;
}

// What a live run needs besides the simulated workload's inputs.
struct LiveSetup {
  runtime::LiveBackend* backend = nullptr;  // null: simulate
  runtime::LiveOptions options;
  topo::ClusterSpec nominal;
  std::filesystem::path device;
  std::string precision;
  std::optional<train::LearnSpec> learn;  // for the model that learns (train::kLearnModel)
};

class TrainingWorkload final : public Workload {
 public:
  TrainingWorkload(const io::LoadedTopology& topology, train::DeviceProfile device,
                   std::vector<std::string> models, std::vector<runtime::SystemConfig> systems,
                   simulate::TrainingOptions options, LiveSetup live)
      : spec_(with_extra_hosts(topology.spec, options.background)),
        device_(std::move(device)),
        models_(std::move(models)),
        systems_(std::move(systems)),
        options_(options),
        live_(std::move(live)) {
    // A disconnected topology fails here, located at the topology file's key that leaves the gap.
    gpus_ = io::check_connected(topology);
  }

  std::vector<std::string> columns() const override {
    return {"mode",
            "topology",
            "n_gpus",
            "model",
            "batch_per_gpu",
            "system",
            "strategy",
            "steps",
            "step_time_ms_mean",
            "step_time_ms_std",
            "throughput_per_gpu_samples_per_s",
            "throughput_per_gpu_std",
            "throughput_total_samples_per_s",
            "sample_unit",
            "compute_ms",
            "exposed_link_ms",
            "exposed_wait_ms"};
  }

  std::vector<std::string> step_columns() const override {
    return {"mode",          "topology",     "n_gpus",
            "model",         "system",       "step",
            "measured",      "step_time_ms", "throughput_total_samples_per_s",
            "batch_per_gpu", "workers",      "allreduce_bytes",
            "strategy",      "decision",     "background_flows",
            "readings"};
  }

  std::vector<Task> tasks() const override {
    std::vector<Task> out;
    for (const std::string& m : models_) {
      for (const runtime::SystemConfig& s : systems_) {
        out.push_back(
            {[this, m, s](const TaskContext& context) { return run_one(m, s, context); }});
      }
    }
    return out;
  }
  bool traces_connections() const override { return live_.backend == nullptr; }
  bool has_timeline() const override { return true; }
  // Live: a testbed's links (their counters) and the ranks' messages; not an elastic run's.
  bool has_link_stats() const override {
    return live_.backend == nullptr || (live_.options.placement == "testbed" && !options_.elastic);
  }

 private:
  runtime::TrainingResult run_live(const std::string& model_name,
                                   const runtime::SystemConfig& system, bool timeline,
                                   TimeNs link_stats_bin_ns) const {
    runtime::LiveTrainingTask task;
    task.record_timeline = timeline;
    task.link_stats_bin_ns = link_stats_bin_ns;
    task.nominal = live_.nominal;
    task.model = model_name;
    task.batch_per_gpu = options_.compute.batch_per_gpu;
    task.device = live_.device;
    task.precision = live_.precision;
    task.system = system;
    task.seam = options_.seam;
    task.stragglers = options_.stragglers;
    task.background = options_.background;
    task.warmup_steps = options_.warmup_steps;
    task.measured_steps = options_.measured_steps;
    task.seed = options_.seed;
    task.compute_scale = options_.compute.compute_scale;
    task.live = live_.options;
    if (model_name == train::kLearnModel) task.learn = live_.learn;
    task.elastic = options_.elastic;
    task.failures = options_.failures;
    return live_.backend->run_training(task);
  }

  TaskRows run_one(const std::string& model_name, const runtime::SystemConfig& system,
                   const TaskContext& context) const {
    const train::Model& model = train::model(model_name);
    const bool live = live_.backend != nullptr;
    runtime::TrainingResult r;
    const bool link_stats = !context.link_stats_dir.empty() && context.files != nullptr;
    const std::filesystem::path link_stats_base =
        context.link_stats_dir /
        (context.trace_name + "-" + file_part(model_name) + "-" + file_part(system.label));
    if (live) {
      r = run_live(model_name, system, !context.timeline_dir.empty(),
                   link_stats ? context.link_stats_bin_ns : 0);
      if (link_stats) {
        std::vector<net::LinkUse> links;
        for (const runtime::MeasuredLink& l : r.measured_links)
          links.push_back(link_use(l, context.link_stats_bin_ns));
        for (io::OutputFile& f :
             link_stats_files(link_stats_base, links, context.link_stats_bin_ns, r.pair_traffic)) {
          context.files->push_back(std::move(f));
        }
      }
    } else {
      const topo::Topology topology = topo::build_cluster(spec_);
      simulate::TrainingOptions options = options_;
      options.host_transport.record_transmissions = !context.trace_dir.empty();
      options.record_timeline = !context.timeline_dir.empty();
      if (link_stats) options.link_stats_bin_ns = context.link_stats_bin_ns;
      simulate::SimulatedTraining sim =
          simulate::simulate_training(topology, model, device_, system, options);

      if (!context.trace_dir.empty() && context.files != nullptr) {
        context.files->push_back(
            {context.trace_dir / (context.trace_name + "-" + file_part(model_name) + "-" +
                                  file_part(system.label) + ".connections.csv"),
             connection_trace(sim.transmissions)});
      }
      if (link_stats) {
        for (io::OutputFile& f : link_stats_files(link_stats_base, sim.links,
                                                  options.link_stats_bin_ns, sim.transmissions)) {
          context.files->push_back(std::move(f));
        }
      }
      r = std::move(sim.result);
      if (options.record_timeline) {
        r.timeline_json =
            sim.timeline.chrome_json(0, model_name + " " + system.label + " (simulated)", 0);
      }
    }
    if (!context.timeline_dir.empty() && context.files != nullptr) {
      context.files->push_back(
          {context.timeline_dir / (context.trace_name + "-" + file_part(model_name) + "-" +
                                   file_part(system.label) + ".trace.json"),
           r.timeline_json});
    }
    const bool has_strategy = system.kind == runtime::SystemKind::kKungFu ||
                              system.kind == runtime::SystemKind::kHierarchical;
    const std::string mode = live ? "live" : "sim";
    TaskRows out;
    // The background flows the schedule runs during each step, by step or by the time since step
    // 0 began (the sum of the steps before: the workers' mean, exact for step schedules).
    double started_s = 0;
    for (const runtime::StepRow& st : r.steps) {
      int background = 0;
      for (const io::BackgroundFlow& f : options_.background.flows)
        background += f.when.active(st.step, seconds_to_ns_ceil(started_s)) ? 1 : 0;
      started_s += st.time_s;
      out.step_rows.push_back(
          {mode, spec_.name, std::to_string(gpus_), model_name, system.label,
           std::to_string(st.step), st.measured ? "1" : "0", io::fmt_fixed(st.time_s * 1e3, 3),
           io::fmt_fixed(st.time_s > 0 ? st.workers * st.batch_per_gpu / st.time_s : 0, 2),
           std::to_string(st.batch_per_gpu), std::to_string(st.workers),
           io::fmt_fixed(st.allreduce_bytes, 0), st.strategy, st.decision,
           std::to_string(background), readings_cell(st.readings)});
    }
    out.rows.push_back(
        {mode, spec_.name, std::to_string(gpus_), model_name,
         std::to_string(options_.compute.batch_per_gpu), system.label,
         has_strategy ? std::string(coll::strategy_name(system.strategy)) : "",
         std::to_string(options_.measured_steps), io::fmt_fixed(r.step_mean_s * 1e3, 3),
         io::fmt_fixed(r.step_std_s * 1e3, 3), io::fmt_fixed(r.samples_per_s_per_gpu, 3),
         io::fmt_fixed(r.samples_per_s_per_gpu_std, 3), io::fmt_fixed(r.samples_per_s_total, 2),
         model.sample_unit, io::fmt_fixed(r.compute_s * 1e3, 3),
         io::fmt_fixed(r.exposed_link_s * 1e3, 3), io::fmt_fixed(r.exposed_wait_s * 1e3, 3)});
    return out;
  }

  topo::ClusterSpec spec_;
  train::DeviceProfile device_;
  std::vector<std::string> models_;
  std::vector<runtime::SystemConfig> systems_;
  simulate::TrainingOptions options_;
  LiveSetup live_;
  int gpus_ = 0;
};

// workload.monitor_kernels: where the monitors' kernels run and so what they cost.
//   device (default): on the GPU, memory-bound at the device profile's memory bandwidth, or at
//     the calibration profile's measured GPU kernels when it has them (calibrate --gpus);
//   cpu: as a live run on the calibrated machine runs them (hw/live on CPU), every rank of the
//     job at once on that machine: the profile's CPU kernels measured on as many threads at once
//     as the job has ranks (calibrate --backend tcp --procs N measures them so: the ranks share
//     the memory bandwidth and the last-level cache) when it has them; otherwise the
//     single-thread kernels, each taking ranks / cores times longer when the ranks outnumber the
//     host.cores cores (memory contention not counted). Squaring has no kernel of its own in
//     the profile: it streams 8 bytes per element where the measured sum streams 12, so 2/3 of
//     sum's time.
// The monitors' kernels from a profile's measured sum, sq_norm and variance; nullopt without them.
std::optional<simulate::MonitorKernels> measured_kernels(
    const std::vector<io::KernelCostEntry>& kernels) {
  auto find = [&](std::string_view name) -> const io::KernelCostEntry* {
    for (const io::KernelCostEntry& k : kernels)
      if (k.kernel == name) return &k;
    return nullptr;
  };
  const io::KernelCostEntry *sum = find("sum"), *sq_norm = find("sq_norm"),
                            *variance = find("variance");
  if (!sum || !sq_norm || !variance) return std::nullopt;
  simulate::MonitorKernels k;
  k.sq_norm = {sq_norm->overhead_ns, sq_norm->per_element_ns};
  k.square = {sum->overhead_ns, sum->per_element_ns * 8.0 / 12.0};
  k.variance = {variance->overhead_ns, variance->per_element_ns};
  return k;
}

std::optional<simulate::MonitorKernels> read_monitor_kernels(io::MapReader& w,
                                                             const PointContext& ctx) {
  const std::string where = w.choice_or("monitor_kernels", {"device", "cpu"}, "device");
  const io::CalibrationProfile* p = ctx.calibration;
  if (where == "device") {
    return p && p->gpu ? measured_kernels(p->gpu->kernels) : std::nullopt;
  }
  const double ranks = ctx.topology.spec.servers * ctx.topology.spec.server.gpus;
  std::optional<simulate::MonitorKernels> k;
  // Measured with as many threads at once as the job has ranks: the cost as the ranks run them,
  // memory bandwidth and cache shared, time-sharing of the cores included.
  if (p && p->cpu && p->cpu->concurrent_threads == static_cast<int>(ranks)) {
    k = measured_kernels(p->cpu->concurrent_kernels);
    if (k) return k;
  }
  if (p && p->cpu) k = measured_kernels(p->cpu->kernels);
  if (!k) {
    w.fail("monitor_kernels",
           std::string("needs a calibration profile with measured CPU kernels sum, sq_norm and "
                       "variance (calibrate measures them); the scenario has ") +
               (p ? "one without them" : "none"));
  }
  const double cores = p->host.cores > 0 ? p->host.cores : 1;
  k->time_sharing = std::max(1.0, ranks / cores);
  return k;
}

// KungFu's chunks of one step's gradients, over every tensor: each chunk is a collective on every
// rank with its own messages and state (about 2 kB per chunk and rank, measured: 64 MiB in 4 KiB
// chunks on 4 ranks took 125 MB; 65,536 chunks on 8 ranks 936 MB), so memory grows as chunks x
// ranks. 16,384 chunks is 16 GiB of gradients at KungFu's 1 MiB chunks, 30x VGG-16's.
constexpr std::uint64_t kMaxChunksPerStep = 1 << 14;

}  // namespace

std::unique_ptr<Workload> parse_training_workload(io::MapReader& w, const PointContext& ctx) {
  std::filesystem::path device_path;
  train::DeviceProfile device = read_device(w, ctx, &device_path);
  simulate::TrainingOptions options;
  options.seed = ctx.seed;
  options.compute.batch_per_gpu = static_cast<int>(w.integer("batch_per_gpu", 1, 1 << 20));
  options.compute.precision = device.default_precision();
  std::string precision_name;
  if (w.has("precision")) {
    precision_name = w.choice("precision", {"fp32", "tf32", "amp"});
    options.compute.precision = *train::parse_precision(precision_name);
  } else {
    w.accept("precision");
  }
  options.warmup_steps = static_cast<int>(w.integer_or("warmup_steps", 1, 0, 1000));
  options.compute.compute_scale = w.number_or("compute_scale", 1.0);
  if (!(options.compute.compute_scale > 0)) w.fail("compute_scale", "must be > 0");
  options.compute_cores = static_cast<int>(w.integer_or("compute_cores", 0, 0, 4096));
  options.measured_steps = static_cast<int>(w.integer_or("steps", 4, 1, 100000));
  read_connection(w, ctx, options.host_transport);
  options.sharing = read_sharing(w);
  options.share_cv = w.number_or("share_cv", 0.0);
  if (!(options.share_cv >= 0 && options.share_cv <= 10)) {
    w.fail("share_cv", "expected a coefficient of variation between 0 and 10");
  }
  if (options.share_cv > 0 && options.sharing != net::Sharing::kTcp) {
    w.fail("share_cv", "needs sharing: tcp (it disperses TCP connections' shares)");
  }
  if (auto tw = w.optional_map("tcp_windows")) {
    if (options.sharing != net::Sharing::kTcp) {
      w.fail("tcp_windows", "needs sharing: tcp (the windows divide TCP's standing buffers)");
    }
    options.tcp_windows.enabled = true;
    options.tcp_windows.restart_after_idle = tw->boolean_or("restart_after_idle", true);
    options.tcp_windows.hystart = tw->boolean_or("hystart", true);
    options.tcp_windows.queue_from_windows = tw->boolean_or("queue_from_windows", false);
    tw->finish();
  }

  const std::vector<std::string> models = w.string_list("models");
  if (models.empty()) w.fail("models", "expected at least one model");
  for (std::size_t i = 0; i < models.size(); ++i) {
    const std::string& m = models[i];
    if (std::find(models.begin(), models.begin() + static_cast<long>(i), m) !=
        models.begin() + static_cast<long>(i)) {
      w.fail("models", "model \"" + m + "\" is listed twice; expected each model once");
    }
    if (!train::find_model(m)) {
      std::string known;
      for (const auto& n : train::model_names())
        known += (known.empty() ? "" : ", ") + n;
      w.fail("models", "unknown model \"" + m + "\" (known: " + known + ")");
    }
    if (!device.has_throughput(m, options.compute.precision)) {
      w.fail("models", "device profile " + device_path.filename().string() + " has no " +
                           std::string(train::precision_name(options.compute.precision)) +
                           " throughput for model \"" + m + "\"");
    }
    check_message_time(w, "models", train::model(m).totals().bytes(options.gradient_element_bytes),
                       ctx.topology.spec);
    // The compute step the run will use, at this batch and scale, in the device profile's range.
    check_compute_step(w, device, device_path, m, options.compute);
  }
  std::vector<runtime::SystemConfig> systems;
  // A host CPU two ranks share without a loopback to carry their host messages, if any.
  const std::string shared_host = io::shared_host_without_loopback(ctx.topology.spec);
  const auto items = w.list("systems");
  if (items.empty()) w.fail("systems", "expected at least one system");
  for (std::size_t i = 0; i < items.size(); ++i) {
    io::MapReader s = io::MapReader::item_map(w, "systems", i, items[i]);
    systems.push_back(runtime::read_system(s));
    const runtime::SystemConfig& c = systems.back();
    // Systems whose host transport (KungFu's TCP, Horovod's MPI) carries messages between ranks.
    const bool host_messages = c.kind == runtime::SystemKind::kKungFu ||
                               c.kind == runtime::SystemKind::kHorovod ||
                               c.kind == runtime::SystemKind::kHorovodNccl;
    if (host_messages && !shared_host.empty()) {
      s.fail("kind", "ranks share host " + shared_host + " of topology " +
                         ctx.topology.path.filename().string() +
                         ", which has no server.cpu.loopback_bandwidth for this system's host "
                         "messages; expected a loopback bandwidth");
    }
    if (c.mpi_library && ctx.mode == Mode::kLive && ctx.live.placement == "hosts") {
      s.fail("mpi",
             "live: library runs the ranks under mpirun, started here or on a testbed: "
             "expected live.placement local or testbed (it is hosts)");
    }
    // Rows are told apart by the system's label (its kind when no label is given).
    for (std::size_t j = 0; j < i; ++j) {
      if (systems[j].label == c.label) {
        s.fail("label", "systems[" + std::to_string(j) + "] has the label \"" + c.label +
                            "\" too; expected a distinct label per system");
      }
    }
    if (c.kind == runtime::SystemKind::kKungFu || c.kind == runtime::SystemKind::kHierarchical) {
      for (const std::string& m : models) {
        std::uint64_t chunks = 0, bytes = 0;
        for (const train::Tensor& t : train::model(m).backward_order) {
          const std::uint64_t b = t.elements * options.gradient_element_bytes;
          chunks += (b + c.chunk_bytes - 1) / c.chunk_bytes;
          bytes += b;
        }
        if (chunks > kMaxChunksPerStep) {
          s.fail("chunk_size", "a chunk size of " + format_size(c.chunk_bytes) + " splits " + m +
                                   "'s gradients (" + format_size(bytes) + ") into " +
                                   std::to_string(chunks) +
                                   " chunks a step; expected at most 16384 (memory grows with "
                                   "chunks x ranks): a larger chunk_size");
        }
      }
    }
  }
  // A live run of fashion-mlp learns for real: its data set is checked (loaded) here, so a missing
  // or truncated file is bad input at learn.data (or at models without the map).
  const bool learns = std::find(models.begin(), models.end(), train::kLearnModel) != models.end();
  std::optional<train::LearnSpec> learn;
  if (auto l = w.optional_map("learn")) {
    if (!learns || models.size() != 1) {
      w.fail("learn", "trains the " + std::string(train::kLearnModel) +
                          " model for real; expected models: [" + std::string(train::kLearnModel) +
                          "]");
    }
    std::shared_ptr<const learn::FashionMnist> data;
    learn = train::read_learn_spec(*l, ctx.scenario_dir, ctx.mode == Mode::kLive ? &data : nullptr);
  } else if (learns && ctx.mode == Mode::kLive) {
    learn.emplace();
    try {
      train::load_learn_data(*learn);
    } catch (const InputError& e) {
      w.fail("models", std::string(train::kLearnModel) +
                           " learns for real in a live run, from learn.data (default " +
                           learn->data.string() + "): " + e.what());
    }
  }
  if (learn && !learn->dynamics.empty() && ctx.mode != Mode::kLive) {
    // Simulated learning: the dynamics fitted on live runs of the same settings.
    io::MapReader l = w.map("learn");
    std::shared_ptr<const train::TrainingDynamics> d;
    try {
      d = std::make_shared<const train::TrainingDynamics>(
          train::load_training_dynamics(learn->dynamics));
    } catch (const InputError& e) {
      l.fail("dynamics", e.what());
    }
    if (d->model != train::kLearnModel) {
      l.fail("dynamics", d->file + " describes model '" + d->model + "'; expected '" +
                             std::string(train::kLearnModel) + "'");
    }
    if (d->fitted_lr != learn->lr || d->fitted_base_batch != learn->base_batch ||
        d->fitted_momentum != learn->momentum) {
      l.fail("dynamics", d->file + " was fitted on runs with lr " + io::fmt_general(d->fitted_lr) +
                             ", base_batch " + std::to_string(d->fitted_base_batch) +
                             ", momentum " + io::fmt_general(d->fitted_momentum) +
                             "; this learn: has lr " + io::fmt_general(learn->lr) +
                             ", base_batch " + std::to_string(learn->base_batch) + ", momentum " +
                             io::fmt_general(learn->momentum));
    }
    options.learning =
        simulate::SimLearning{d, learn->eval_every, options.warmup_steps + options.measured_steps};
  }
  options.seam = runtime::read_seam(w);
  runtime::check_seam(w, options.seam, systems, options.compute.batch_per_gpu);
  const int capacity = ctx.topology.spec.servers * ctx.topology.spec.server.gpus;
  if (auto e = w.optional_map("elastic")) {
    options.elastic = runtime::read_elastic(*e, capacity);
    for (const runtime::SystemConfig& c : systems) {
      if (c.kind != runtime::SystemKind::kKungFu) {
        w.fail("elastic", "system '" + c.label + "' (" +
                              std::string(runtime::system_kind_name(c.kind)) +
                              ") cannot change its worker set; elastic runs are built for kungfu");
      }
    }
    if (ctx.mode == Mode::kLive) {
      // Live: local processes resize by KungFu's protocol or restart (hw/live, "Elastic runs").
      if (ctx.live.placement == "hosts") {
        w.fail("elastic",
               "live elastic runs start their processes on this machine: live.placement "
               "local or testbed (it is hosts)");
      }
    }
  }
  if (options.elastic && options.compute_cores > 0 && options.elastic->server_cores > 0 &&
      options.elastic->server_cores != options.compute_cores) {
    w.fail("compute_cores", "is " + std::to_string(options.compute_cores) +
                                " and elastic.server_cores " +
                                std::to_string(options.elastic->server_cores) +
                                ": a server's cores are one number (give one, or both equal)");
  }
  options.stragglers = runtime::read_stragglers(w, capacity);
  if (ctx.mode == Mode::kLive && ctx.live.placement != "testbed") {
    for (const runtime::Straggler& s : options.stragglers) {
      if (s.nic_bandwidth_Bps) {
        w.fail("stragglers",
               "a straggler's nic_bandwidth is a testbed server's NIC cap live: expected "
               "live.placement: testbed (a straggler on local processes may set `compute`)");
      }
    }
  }
  options.failures = runtime::read_failures(w, capacity);
  if (options.learning && !options.failures.empty()) {
    w.fail("failures",
           "a simulated run that learns (learn.dynamics) cannot lose workers: a failed step's "
           "retry would count its samples twice");
  }
  if (!options.failures.empty() &&
      (!options.elastic || options.elastic->mechanism != runtime::ResizeMechanism::kKungFu)) {
    w.fail("failures",
           "failures need the workload's `elastic:` map with mechanism kungfu (the "
           "survivors shrink the cluster by KungFu's protocol)");
  }
  if (options.seam.changes.workers && !options.elastic) {
    w.fail("policy",
           "a policy that changes the worker set needs the workload's `elastic:` map "
           "(mechanism kungfu or restart)");
  }
  if (options.seam.changes.max_workers > capacity) {
    w.fail("policy", "asks for a cluster of " + std::to_string(options.seam.changes.max_workers) +
                         " workers; the topology has " + std::to_string(capacity) + " GPUs");
  }
  options.monitor_kernels = read_monitor_kernels(w, ctx);
  options.background = io::read_background(w, ctx.topology.spec.servers);
  if (options.background.extra_hosts > 0) {
    try {
      topo::build_cluster(with_extra_hosts(ctx.topology.spec, options.background));
    } catch (const InputError& e) {
      w.fail("background", e.what());
    }
  }
  w.finish();
  LiveSetup live;
  if (ctx.mode == Mode::kLive) {
    for (std::size_t i = 0; i < systems.size(); ++i) {
      const auto k = systems[i].kind;
      if (!runtime::runs_on_host_transport(k)) {
        w.fail("systems",
               "system '" + systems[i].label + "' (" + std::string(runtime::system_kind_name(k)) +
                   ") needs GPUs and NCCL; live runs here support ideal, kungfu and horovod");
      }
    }
    live.backend = ctx.backend;
    live.options = ctx.live;
    live.nominal = with_extra_hosts(ctx.nominal, options.background);
    if (!options.background.empty() && ctx.live.placement != "testbed") {
      w.fail("background",
             "a live run's background traffic runs between the testbed's hosts; "
             "expected live.placement: testbed (it is " +
                 ctx.live.placement + ")");
    }
    live.device = std::filesystem::absolute(device_path);
    live.precision = precision_name;
    live.learn = learn;
  }
  return std::make_unique<TrainingWorkload>(ctx.topology, std::move(device), models,
                                            std::move(systems), options, std::move(live));
}

}  // namespace adaptsim::run
