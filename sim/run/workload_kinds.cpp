#include "sim/run/workload.h"

#include <cstdio>

#include "sim/core/error.h"
#include "sim/core/units.h"
#include "sim/io/loss_rates.h"

namespace adaptsim::run {

net::Sharing read_sharing(io::MapReader& w) {
  const std::string s = w.choice_or("sharing", {"max-min", "bottleneck", "tcp"}, "max-min");
  return s == "bottleneck" ? net::Sharing::kBottleneck
         : s == "tcp"      ? net::Sharing::kTcp
                           : net::Sharing::kMaxMin;
}

void read_connection(io::MapReader& w, const PointContext& ctx,
                     fabric::SimTransportOptions& transport) {
  const std::string connection =
      w.choice_or("connection", {"serialized", "parallel"}, "serialized");
  transport.serialize_per_peer = connection == "serialized";
  transport.per_message_overhead_ns = w.duration_ns_or("per_message_overhead", 0);
  transport.socket_buffer_bytes = static_cast<double>(w.size_bytes_or("socket_buffer", 0));
  transport.one_transport_thread =
      w.choice_or("transport_threads", {"unlimited", "one"}, "unlimited") == "one";
  // A lossy path's tail losses (fabric::SimTransportOptions::TailLoss): recovered by Linux's
  // timers, or (false, the ablation) by the flow model's resent bytes alone.
  fabric::SimTransportOptions::TailLoss& tail = transport.tail_loss;
  tail.enabled = w.boolean_or("loss_timers", tail.enabled);
  tail.rto_min_ns = w.duration_ns_or("rto_min", tail.rto_min_ns);
  tail.probe_min_ns = w.duration_ns_or("loss_probe_min", tail.probe_min_ns);
  if (tail.rto_min_ns <= 0) w.fail("rto_min", "expected a duration > 0 (Linux's default 200ms)");
  if (tail.probe_min_ns <= 0) {
    w.fail("loss_probe_min", "expected a duration > 0 (2 jiffies: 8ms at HZ=250)");
  }
  // null (--set workload.loss_rates=null, the ablation) or absent: none.
  if (std::filesystem::path path = w.string_or("loss_rates", ""); !path.empty()) {
    if (path.is_relative()) path = ctx.scenario_dir / path;
    try {
      io::LossRateTable table = io::read_loss_rates(path);
      transport.loss_rates = {std::move(table.file), std::move(table.points)};
    } catch (const InputError& e) {
      w.fail("loss_rates", e.what());
    }
  }
  if (transport.socket_buffer_bytes > 0 && !transport.serialize_per_peer) {
    w.fail("socket_buffer", "needs connection: serialized (a socket buffer per connection)");
  }
}

void check_message_time(io::MapReader& w, std::string_view key, std::uint64_t bytes,
                        const topo::ClusterSpec& spec) {
  const double bandwidth_Bps = io::slowest_bandwidth_Bps(spec);
  const double seconds = static_cast<double>(bytes) / bandwidth_Bps;
  if (!(seconds <= to_seconds(kMaxDurationNs))) {
    w.fail(key, format_size(bytes) + " take " + format_seconds(seconds) +
                    " over the topology's slowest link (" + format_bandwidth(bandwidth_Bps) +
                    "); expected a message to take at most 1e6 s (integer time holds a run of "
                    "them only then)");
  }
}

train::DeviceProfile read_device(io::MapReader& w, const PointContext& ctx,
                                 std::filesystem::path* path) {
  std::filesystem::path device_path = w.string("device");
  if (device_path.is_relative()) device_path = ctx.scenario_dir / device_path;
  if (path != nullptr) *path = device_path;
  try {
    return ctx.cache != nullptr ? ctx.cache->device(device_path)
                                : train::load_device_profile(device_path);
  } catch (const InputError& e) {
    w.fail("device", e.what());
  }
}

void check_compute_step(io::MapReader& w, const train::DeviceProfile& device,
                        const std::filesystem::path& device_path, const std::string& model,
                        const train::ComputeOptions& compute) {
  const double step_s =
      device.step_compute_time_s(train::model(model), compute.batch_per_gpu, compute.precision) *
      compute.compute_scale;
  if (!(step_s >= train::kMinStepTimeS && step_s <= train::kMaxStepTimeS)) {
    w.fail(compute.compute_scale != 1.0 ? "compute_scale" : "batch_per_gpu",
           "device profile " + device_path.filename().string() + " gives " + model +
               " a compute step of " + format_seconds(step_s) + " at this batch" +
               (compute.compute_scale != 1.0 ? " and compute_scale" : "") +
               "; expected a step from 1 us to 1 h");
  }
}

const io::Document& LoadCache::topology(const std::filesystem::path& path) {
  auto it = topologies_.find(path);
  if (it == topologies_.end()) it = topologies_.emplace(path, io::Document::load_file(path)).first;
  return it->second;
}

const train::DeviceProfile& LoadCache::device(const std::filesystem::path& path) {
  auto it = devices_.find(path);
  if (it == devices_.end()) it = devices_.emplace(path, train::load_device_profile(path)).first;
  return it->second;
}

const std::vector<WorkloadKind>& workload_kinds() {
  static const std::vector<WorkloadKind> kKinds = {
      {"allreduce", "nccl-tests-style all-reduce size sweep over strategies",
       parse_allreduce_workload},
      {"training", "data-parallel training steps of zoo models under the compared systems",
       parse_training_workload},
      {"jobs", "a job trace replayed on one cluster under cluster schedulers (elastic jobs)",
       parse_jobs_workload},
  };
  return kKinds;
}

}  // namespace adaptsim::run
