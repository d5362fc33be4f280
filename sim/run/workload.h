#pragma once
// A workload is what a scenario simulates at each sweep point (an all-reduce sweep, a training
// run, ...). Each kind parses its own `workload:` section and splits its work into independent
// tasks that produce CSV rows; the runner schedules the tasks on a thread pool.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sim/fabric/sim_fabric.h"
#include "sim/io/calibration_profile.h"
#include "sim/io/output.h"
#include "sim/io/topology_loader.h"
#include "sim/io/yaml_reader.h"
#include "sim/net/flow_network.h"
#include "sim/runtime/live_task.h"
#include "sim/runtime/policy.h"
#include "sim/runtime/system.h"
#include "sim/runtime/training_result.h"
#include "sim/train/compute_profile.h"
#include "sim/train/device_profile.h"

namespace adaptsim::run {

enum class Mode { kSim, kLive };

using Row = std::vector<std::string>;

// What the runner hands each task besides its own parameters.
struct TaskContext {
  // Where to write per-connection traces (simctl run --trace-connections); empty: none.
  std::filesystem::path trace_dir;
  std::string trace_name;  // unique per task within the run: a prefix for its trace files
  // Where to write the task's timeline (simctl run --timeline); empty: none.
  std::filesystem::path timeline_dir;
  // Where to write the task's link statistics (simctl run --link-stats), in bins of
  // link_stats_bin_ns; empty: none.
  std::filesystem::path link_stats_dir;
  TimeNs link_stats_bin_ns = 0;
  // Where a task puts the files it produces besides its rows (traces): the runner writes them
  // with the CSV and the manifest, all or none, once every task has run. Each task has its own.
  std::vector<io::OutputFile>* files = nullptr;
};

// A task's rows: its summary rows, and (training) one row per step for the steps CSV.
struct TaskRows {
  std::vector<Row> rows;
  std::vector<Row> step_rows;
};

struct Task {
  std::function<TaskRows(const TaskContext&)> run;
};

class Workload {
 public:
  virtual ~Workload() = default;
  // Column names, units in the names (time_us, busbw_GBps). Identical at every sweep point.
  virtual std::vector<std::string> columns() const = 0;
  virtual std::vector<Task> tasks() const = 0;
  // The steps CSV's columns (one row per step of every task); empty: the workload has none.
  virtual std::vector<std::string> step_columns() const { return {}; }
  // Whether its tasks write per-connection traces when TaskContext::trace_dir is set.
  virtual bool traces_connections() const { return false; }
  // Whether its tasks write a timeline (simctl run --timeline; TaskContext::timeline_dir).
  virtual bool has_timeline() const { return false; }
  // Whether its tasks write link statistics (simulated runs: TaskContext::link_stats_dir).
  virtual bool has_link_stats() const { return false; }
};

// Input files a scenario's sweep points share, each read and parsed once (a point only reads
// them): without it every point parsed the topology and the device profile anew, most of a
// point's validation time.
class LoadCache {
 public:
  const io::Document& topology(const std::filesystem::path& path);
  const train::DeviceProfile& device(const std::filesystem::path& path);

 private:
  std::map<std::filesystem::path, io::Document> topologies_;
  std::map<std::filesystem::path, train::DeviceProfile> devices_;
};

// What a workload parser may look at besides its own section.
struct PointContext {
  const io::LoadedTopology& topology;
  const topo::ClusterSpec& nominal;  // before calibration
  std::uint64_t seed;
  Mode mode;
  std::filesystem::path scenario_dir;  // relative paths in the workload resolve against it
  runtime::LiveOptions live;
  runtime::LiveBackend* backend = nullptr;              // set when mode is live
  LoadCache* cache = nullptr;                           // shared input files; null: read them here
  const io::CalibrationProfile* calibration = nullptr;  // the scenario's, if any
};

struct WorkloadKind {
  std::string name;
  std::string summary;
  std::function<std::unique_ptr<Workload>(io::MapReader&, const PointContext&)> parse;
};

// workload.sharing: "max-min" (exact, default), "bottleneck" (cheaper, for very large clusters)
// or "tcp" (max-min weighted by 1/RTT with queueing delay; see net::Sharing).
net::Sharing read_sharing(io::MapReader& w);

// The host transport's keys, shared by the workload kinds: connection ("serialized", default, or
// "parallel"), per_message_overhead and socket_buffer (serialized connections only).
void read_connection(io::MapReader& w, const PointContext& ctx,
                     fabric::SimTransportOptions& transport);

// Rejects, at `key`, a message of `bytes` (a workload's largest: an all-reduce buffer, a model's
// gradients) that would take longer than kMaxDurationNs over the topology's slowest link: a run
// of such messages would leave the simulator's integer time (kTimeHorizonNs).
void check_message_time(io::MapReader& w, std::string_view key, std::uint64_t bytes,
                        const topo::ClusterSpec& spec);

// The workload's `device` key: a device profile file, relative to the scenario, read once per
// scenario through ctx.cache; its errors located at the key.
train::DeviceProfile read_device(io::MapReader& w, const PointContext& ctx,
                                 std::filesystem::path* path = nullptr);

// Rejects, at compute_scale (when not 1) or batch_per_gpu, a compute step of `model` on `device`
// at `compute`'s batch, precision and scale outside the profile's range (1 us to 1 h).
void check_compute_step(io::MapReader& w, const train::DeviceProfile& device,
                        const std::filesystem::path& device_path, const std::string& model,
                        const train::ComputeOptions& compute);

// The workload kinds this build knows.
const std::vector<WorkloadKind>& workload_kinds();

// Defined by each workload.
std::unique_ptr<Workload> parse_allreduce_workload(io::MapReader& w, const PointContext& ctx);
std::unique_ptr<Workload> parse_training_workload(io::MapReader& w, const PointContext& ctx);
std::unique_ptr<Workload> parse_jobs_workload(io::MapReader& w, const PointContext& ctx);

}  // namespace adaptsim::run
