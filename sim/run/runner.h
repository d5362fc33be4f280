#pragma once
// Runs a loaded scenario: every task of every sweep point on a thread pool, rows in a fixed order,
// then the CSV and a manifest (resolved scenario, seed, version, wall time), both written
// atomically into the output folder. Under a SweepGroup (simctl run under mpirun) each process
// runs its share of the tasks on its own thread pool and rank 0 writes the same files.

#include <filesystem>
#include <optional>
#include <string>

#include "sim/io/output.h"
#include "sim/run/scenario.h"
#include "sim/run/sweep_group.h"

namespace adaptsim::run {

struct RunOptions {
  std::filesystem::path out_dir;  // created if missing
  int threads = 0;                // 0: one per hardware thread
  bool progress = false;          // draw a progress bar on stderr (only if it is a terminal)
  std::string command_line;       // recorded in the manifest
  // Simulated training runs: write each task's per-connection trace here (created if missing),
  // as p<point>-<model>-<system>.connections.csv; empty: none.
  std::filesystem::path trace_dir;
  // Training runs, simulated or live: write each task's timeline here (created if missing), as
  // p<point>-<model>-<system>.trace.json (Chrome / Perfetto trace events); empty: none.
  std::filesystem::path timeline_dir;
  // Simulated runs: write each task's link statistics here (created if missing), as
  // p<point>-<task>.links.csv, .link-bins.csv (bins of link_stats_bin_ns) and .matrix.csv
  // (link_stats.h); empty: none.
  std::filesystem::path link_stats_dir;
  TimeNs link_stats_bin_ns = kNsPerMs;
  // The processes sharing this sweep (simctl run under mpirun); null: this process runs every
  // task. In a group, `threads` 0 means the CPUs this process may run on (mpirun may bind it to
  // fewer than the machine's), only rank 0 draws progress and writes files, and run_scenario and
  // collect_rows are collective: every rank calls them, and a failure on any rank (a task's
  // error, that of the lowest-numbered failed task) is thrown on every rank.
  SweepGroup* group = nullptr;
};

struct RunSummary {
  std::filesystem::path csv_path;
  std::filesystem::path steps_path;  // the steps CSV (training); empty when the workload has none
  std::filesystem::path manifest_path;
  std::size_t rows = 0;
  std::size_t tasks = 0;
  double wall_seconds = 0;
};

RunSummary run_scenario(const Scenario& scenario, const RunOptions& options);

// Every task's rows: the summary table and, for workloads with per-step rows, the steps table
// (sweep columns first in both).
struct Tables {
  io::CsvTable summary;
  std::optional<io::CsvTable> steps;
};
// Runs every task and returns its tables, without writing anything; the files tasks produce
// besides rows (traces) go to `files` when given. In a group, the tables and files are complete
// on rank 0 and empty on the other ranks.
Tables collect_rows(const Scenario& scenario, const RunOptions& options,
                    std::vector<io::OutputFile>* files = nullptr);
// The steps CSV's name beside the summary CSV: fig9.csv -> fig9.steps.csv.
std::string steps_csv_name(const std::string& csv_name);

// Throws InputError when a result cell (a column after the `sweep_columns` first ones, other than
// the text columns mode, topology, model, system, strategy, sample_unit, dtype) is inf or nan:
// run_scenario's last guard before writing, so nonsense never leaves with exit code 0.
void check_results_finite(const io::CsvTable& table, std::size_t sweep_columns);

// simctl compare: the same scenario simulated and live, paired row by row (both have the same
// points and tasks in the same order). Writes <name>.compare.csv (sweep columns, model, system,
// n_gpus, sim and live step times and throughputs, relative error of the step time) and a
// manifest with the summary; returns the summary.
//
// `sims` holds the simulated scenario loaded with one or more seeds (the same file and
// overrides): the model's random parts (TCP connections' shares, compute jitter) are draws, so
// the simulated step time compared is the mean over the seeds' runs, and sim_seed_std_ms (the
// standard deviation of the per-seed step means) says how much one draw moves it. The live
// scenario runs `live_runs` times, one after another: the live step time compared is the mean of
// the runs' step means, live_run_std_ms their standard deviation (0 for one run), and the
// manifest keeps each run's (live_run_step_ms); a live row can move between runs by more than the
// error a comparison asks for (docs/figures.md, "Packet loss").
struct CompareSummary {
  std::filesystem::path csv_path;
  std::size_t rows = 0;
  double median_abs_error = 0;  // of (sim - live) / live, step time
  double max_abs_error = 0;
  double wall_seconds = 0;
};
CompareSummary compare_scenario(const std::vector<Scenario>& sims, const Scenario& live,
                                const RunOptions& options, int live_runs = 1);

}  // namespace adaptsim::run
