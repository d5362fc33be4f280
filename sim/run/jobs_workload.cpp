// workload.kind = jobs: many elastic training jobs on one cluster, a job trace replayed under each
// listed cluster scheduler (sim/simulate/simulate_jobs.h), simulated.
//
//   workload:
//     kind: jobs
//     trace: ../traces/jobs/helios-venus-50.csv   # relative to the scenario (io/job_trace.h)
//     device: ../traces/devices/v100.yaml
//     batch_per_gpu: 32                 # every job's, per GPU
//     precision: fp32                   # default: the device's
//     compute_scale: 1.0
//     schedulers: [fifo, elastic]       # runtime/job_scheduler.h; one task each
//     system: {kind: kungfu, strategy: BINARY_TREE_STAR}  # every job's (default: KungFu's)
//     elastic: {process_start: 23ms}    # the resize costs (runtime/elastic.h; no initial_workers)
//     connection: serialized            # the host transport, as in the training workload
//     sharing: max-min                  # or bottleneck, or tcp
//
// Rows: one per job and scheduler (when it arrived, started and ended, its sizes and resizes).
// The steps CSV: the cluster after each scheduling change (GPUs held, jobs running and queued).

#include <algorithm>
#include <set>

#include "sim/core/error.h"
#include "sim/core/units.h"
#include "sim/io/job_trace.h"
#include "sim/run/workload.h"
#include "sim/runtime/job_scheduler.h"
#include "sim/runtime/system_config.h"
#include "sim/simulate/simulate_jobs.h"
#include "sim/train/compute_profile.h"
#include "sim/train/nccl_model.h"

namespace adaptsim::run {
namespace {

// A job takes at most this many steps (every one on a single GPU): its per-step records are kept.
constexpr double kMaxStepsPerJob = 1e6;

class JobsWorkload final : public Workload {
 public:
  JobsWorkload(const io::LoadedTopology& topology, train::DeviceProfile device,
               train::ComputeOptions compute, io::JobTrace trace,
               std::vector<std::string> schedulers, simulate::JobsOptions options)
      : spec_(topology.spec),
        device_(std::move(device)),
        compute_(compute),
        trace_(std::move(trace)),
        schedulers_(std::move(schedulers)),
        options_(std::move(options)) {
    gpus_ = io::check_connected(topology);
    options_.step_time_cv = device_.step_time_cv().value;
    options_.compute = [this](const train::Model& m, int batch) {
      train::ComputeOptions c = compute_;
      c.batch_per_gpu = batch;
      return train::compute_profile(m, device_, c);
    };
  }

  std::vector<std::string> columns() const override {
    return {"mode",    "topology", "n_gpus",   "scheduler", "job_id",  "model",
            "gpu_num", "submit_s", "start_s",  "end_s",     "queue_s", "jct_s",
            "samples", "steps",    "min_gpus", "max_gpus",  "resizes", "step_time_ms_mean"};
  }
  std::vector<std::string> step_columns() const override {
    return {"mode",           "topology",    "n_gpus",       "scheduler",  "time_s",
            "allocated_gpus", "utilization", "running_jobs", "queued_jobs"};
  }
  std::vector<Task> tasks() const override {
    std::vector<Task> out;
    for (const std::string& s : schedulers_)
      out.push_back({[this, s](const TaskContext&) { return run_one(s); }});
    return out;
  }

 private:
  TaskRows run_one(const std::string& scheduler_name) const {
    const topo::Topology topology = topo::build_cluster(spec_);
    const auto scheduler = runtime::make_job_scheduler(scheduler_name);
    const simulate::SimulatedJobs sim =
        simulate::simulate_jobs(topology, trace_.jobs, *scheduler, options_);
    const std::string n = std::to_string(gpus_);
    TaskRows out;
    for (const simulate::JobOutcome& j : sim.jobs) {
      out.rows.push_back(
          {"sim", spec_.name, n, scheduler_name, j.id, j.model, std::to_string(j.requested),
           io::fmt_fixed(to_seconds(j.submit), 3), io::fmt_fixed(to_seconds(j.start), 3),
           io::fmt_fixed(to_seconds(j.end), 3), io::fmt_fixed(to_seconds(j.start - j.submit), 3),
           io::fmt_fixed(to_seconds(j.end - j.submit), 3), io::fmt_fixed(j.samples, 0),
           std::to_string(j.steps), std::to_string(j.min_gpus), std::to_string(j.max_gpus),
           std::to_string(j.resizes), io::fmt_fixed(j.step_mean_s * 1e3, 3)});
    }
    for (const simulate::ClusterSample& s : sim.samples) {
      out.step_rows.push_back({"sim", spec_.name, n, scheduler_name,
                               io::fmt_fixed(to_seconds(s.at), 3), std::to_string(s.allocated_gpus),
                               io::fmt_fixed(static_cast<double>(s.allocated_gpus) / gpus_, 4),
                               std::to_string(s.running), std::to_string(s.queued)});
    }
    return out;
  }

  topo::ClusterSpec spec_;
  train::DeviceProfile device_;
  train::ComputeOptions compute_;
  io::JobTrace trace_;
  std::vector<std::string> schedulers_;
  simulate::JobsOptions options_;
  int gpus_ = 0;
};

}  // namespace

std::unique_ptr<Workload> parse_jobs_workload(io::MapReader& w, const PointContext& ctx) {
  if (ctx.mode == Mode::kLive) {
    w.fail("kind", "a jobs workload is simulated only; expected mode: sim (no --live)");
  }
  const int capacity = ctx.topology.spec.servers * ctx.topology.spec.server.gpus;
  std::filesystem::path device_path;
  train::DeviceProfile device = read_device(w, ctx, &device_path);
  std::filesystem::path trace_path = w.string("trace");
  if (trace_path.is_relative()) trace_path = ctx.scenario_dir / trace_path;
  io::JobTrace trace;
  try {
    trace = io::read_job_trace(trace_path, capacity);
  } catch (const InputError& e) {
    w.fail("trace", e.what());
  }
  simulate::JobsOptions options;
  options.cluster.seed = ctx.seed;
  train::ComputeOptions compute;
  compute.batch_per_gpu = static_cast<int>(w.integer("batch_per_gpu", 1, 1 << 20));
  options.batch_per_gpu = compute.batch_per_gpu;
  compute.precision = device.default_precision();
  if (w.has("precision")) {
    compute.precision = *train::parse_precision(w.choice("precision", {"fp32", "tf32", "amp"}));
  } else {
    w.accept("precision");
  }
  compute.compute_scale = w.number_or("compute_scale", 1.0);
  if (!(compute.compute_scale > 0)) w.fail("compute_scale", "must be > 0");
  read_connection(w, ctx, options.cluster.host_transport);
  options.cluster.sharing = read_sharing(w);
  options.cluster.arch = train::gpu_arch_of(device.name() + " " + device.description());
  const std::vector<std::string> schedulers = w.string_list("schedulers");
  if (schedulers.empty()) w.fail("schedulers", "expected at least one scheduler");
  for (std::size_t i = 0; i < schedulers.size(); ++i) {
    const auto& names = runtime::job_scheduler_names();
    if (std::find(names.begin(), names.end(), schedulers[i]) == names.end()) {
      std::string known;
      for (const std::string& n : names)
        known += (known.empty() ? "" : ", ") + n;
      w.fail("schedulers", "unknown scheduler '" + schedulers[i] + "' (known: " + known + ")");
    }
    if (std::find(schedulers.begin(), schedulers.begin() + static_cast<long>(i), schedulers[i]) !=
        schedulers.begin() + static_cast<long>(i)) {
      w.fail("schedulers", "scheduler '" + schedulers[i] + "' is listed twice");
    }
  }
  if (auto s = w.optional_map("system")) {
    options.system = runtime::read_system(*s);
    if (options.system.kind != runtime::SystemKind::kKungFu) {
      s->fail("kind", "a job changes its worker set; expected kungfu (the elastic system)");
    }
  } else {
    options.system.kind = runtime::SystemKind::kKungFu;
    options.system.label = "kungfu";
  }
  if (auto e = w.optional_map("elastic")) {
    if (e->has("initial_workers")) {
      e->fail("initial_workers", "is the scheduler's to choose in a jobs workload; expected none");
    }
    options.elastic = runtime::read_elastic(*e, capacity);
    if (options.elastic.mechanism != runtime::ResizeMechanism::kKungFu) {
      e->fail("mechanism", "a job resizes while it runs; expected kungfu");
    }
  }
  std::set<std::string> checked;  // models, each checked at its first job
  for (const io::TraceJob& j : trace.jobs) {
    if (checked.insert(j.model).second) {
      auto at = [&](const std::string& what) {
        w.fail("trace", trace.file + ":" + std::to_string(j.line) + ": column 'model': " + what);
      };
      if (!train::find_model(j.model)) at("unknown model '" + j.model + "'");
      if (!device.has_throughput(j.model, compute.precision)) {
        at("device profile " + device_path.filename().string() + " has no " +
           std::string(train::precision_name(compute.precision)) + " throughput for '" + j.model +
           "'");
      }
      check_message_time(
          w, "trace", train::model(j.model).totals().bytes(options.cluster.gradient_element_bytes),
          ctx.topology.spec);
      // The compute step every job of this model will take, as the training workload checks it.
      check_compute_step(w, device, device_path, j.model, compute);
    }
    if (j.samples / compute.batch_per_gpu > kMaxStepsPerJob) {
      w.fail("trace", trace.file + ":" + std::to_string(j.line) +
                          ": column 'samples': takes more than 1e6 steps of batch_per_gpu on one "
                          "GPU; expected fewer samples or a larger batch");
    }
  }
  w.finish();
  return std::make_unique<JobsWorkload>(ctx.topology, std::move(device), compute, std::move(trace),
                                        schedulers, std::move(options));
}

}  // namespace adaptsim::run
