#pragma once
// A scenario file (scenarios/*.yaml), validated completely before anything runs:
//
//   name: allreduce
//   description: ...
//   seed: 1
//   mode: sim                       # or live (simctl run --live)
//   live: {placement: local, timeout: 120s}   # live runs only (runtime::LiveOptions in
//   sim/runtime/live_task.h):
//     # placement: local, testbed (prefix: adaptsim) or hosts (hosts: [127.0.0.1:7000, ...], one
//     # per rank); congestion_control; fault: {kill_rank: R, after_sends: N} is a test hook
//   calibration: ../traces/calibration/x.yaml   # optional: measured numbers over nominal ones
//   topology:
//     file: ../topologies/cloud-vms.yaml   # relative to this file
//     params: {servers: 8}
//   workload: {kind: allreduce, ...}       # see the workload kinds
//   sweep:                                 # optional: the cartesian product of these values
//     topology.params.servers: [2, 4, 8]
//   output:
//     csv: allreduce.csv
//
// Command-line overrides (--set key=value) apply to the file before the sweep is expanded; each
// sweep point is the file plus its assignments, parsed and validated on its own.

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "sim/io/calibration_profile.h"
#include "sim/run/workload.h"

namespace adaptsim::run {

struct ScenarioPoint {
  std::vector<std::pair<std::string, std::string>> assignments;  // (sweep key, value text)
  io::LoadedTopology topology;                     // with the calibration profile applied, if any
  topo::ClusterSpec nominal;                       // the topology before calibration
  std::vector<io::AppliedCalibration> calibrated;  // what the profile overrode
  std::unique_ptr<Workload> workload;
};

struct Scenario {
  std::string name;
  std::string description;
  std::filesystem::path path;
  std::string file_hash;               // FNV-1a of the file's bytes
  std::string resolved_yaml;           // the file with --set overrides applied
  std::vector<std::string> overrides;  // "key=value" as given
  std::uint64_t seed = 1;
  Mode mode = Mode::kSim;
  std::string csv_name;
  std::filesystem::path calibration;  // the profile applied to every point's topology, if any
  runtime::LiveOptions live;
  std::vector<std::string> sweep_columns;  // one per sweep key
  std::vector<ScenarioPoint> points;       // empty when loaded with keep_points = false
  std::size_t point_count = 0;             // sweep points validated
  std::size_t task_count = 0;              // their tasks
};

// Loads and validates everything; throws InputError with file, line and key on any problem.
// `overrides`: "key=value" strings from --set. `seed`: overrides the file's seed when set.
struct LoadOptions {
  std::vector<std::string> overrides;                // "key=value" from --set
  std::optional<std::uint64_t> seed;                 // replaces the scenario's seed
  std::optional<std::filesystem::path> calibration;  // replaces the scenario's `calibration:`
  std::optional<Mode> mode;                          // replaces the scenario's `mode:` (--live)
  runtime::LiveBackend* backend = nullptr;           // required to load a live scenario
  // false: validate every point, keep only the counts (simctl validate: memory stays flat
  // however large the sweep).
  bool keep_points = true;
  // Show the points' validation on stderr, if it is a terminal and takes over `progress_after`.
  bool progress = false;
  std::chrono::milliseconds progress_after = std::chrono::seconds(1);
};

// The most sweep points a scenario may expand to: ten million points take about half an hour to
// validate (~0.15 ms each) and far longer to run; a larger product is a typo or a runaway --set.
inline constexpr std::size_t kMaxSweepPoints = 10'000'000;

Scenario load_scenario(const std::filesystem::path& path, const LoadOptions& options = {});
// The same from the file's text, as if read from `path`: it labels messages and its folder is
// where the scenario's relative paths (topology, calibration, device profile) start. For tests
// and fuzzing (fuzz/scenario_fuzz.cpp).
Scenario parse_scenario(const std::string& text, const std::filesystem::path& path,
                        const LoadOptions& options = {});

// A seed given on a command line ("--seed 7"): 0 to INT64_MAX, as a scenario's `seed:`; anything
// else (a sign, an exponent, a fraction) is an InputError naming `origin`.
std::uint64_t parse_seed(const std::string& text, const std::string& origin);

}  // namespace adaptsim::run
