// simctl run: one scenario, simulated (default) or live, into its CSVs and manifest; under mpirun
// the processes share the sweep's tasks and rank 0 writes the same files (mpi_sweep_group.h).

#include <cstdio>
#include <memory>
#include <optional>

#include "sim/core/error.h"
#include "sim/core/units.h"
#include "sim/run/runner.h"
#include "sim/simctl/commands.h"
#include "sim/simctl/mpi_sweep_group.h"

namespace adaptsim::simctl {
namespace fs = std::filesystem;

namespace {
struct RunOptions {
  ScenarioOptions scenario;
  std::string out_dir;
  int threads = 0;
  bool no_progress = false;
  std::string trace_dir;
  std::string timeline_dir;
  std::string link_stats_dir;
  std::string link_stats_bin = "1ms";
  bool live = false;
};

TimeNs parse_link_stats_bin(const std::string& text) {
  TimeNs ns = 0;
  try {
    ns = parse_duration_ns(text);
  } catch (const InputError& e) {
    throw InputError(std::string("--link-stats-bin: ") + e.what());
  }
  if (ns <= 0) {
    throw InputError("--link-stats-bin: expected a duration above 0, e.g. 1ms, got \"" + text +
                     "\"");
  }
  return ns;
}

// The command itself; in a group (under mpirun) every rank runs it and rank 0 alone prints.
int run_scenario_command(const RunOptions& o, const std::string& command_line,
                         run::SweepGroup* group) {
  const bool rank0 = group == nullptr || group->rank() == 0;
  std::unique_ptr<runtime::LiveBackend> backend;
  std::optional<run::Scenario> scenario;
  run::RunOptions options;
  // Every rank loads the scenario itself (the file at the same path on every host); one that
  // cannot fails them all, with its error.
  auto prepare = [&] {
    if (group != nullptr && o.live) {
      throw InputError(
          "--live under mpirun: a live run places its own processes (the scenario's live: "
          "section); run simctl run --live without mpirun");
    }
    const std::string path = o.scenario.scenario_path();
    run::LoadOptions load = o.scenario.load_options();
    if (o.live) {
      backend = runtime::make_live_backend();
      load.mode = run::Mode::kLive;
      load.backend = backend.get();
    }
    load.progress = !o.no_progress && rank0;
    scenario.emplace(run::load_scenario(path, load));
    options.out_dir = o.out_dir.empty() ? fs::path("out") / scenario->name : fs::path(o.out_dir);
    options.threads = o.threads;
    options.progress = !o.no_progress;
    options.command_line = command_line;
    options.trace_dir = o.trace_dir;
    options.timeline_dir = o.timeline_dir;
    options.link_stats_dir = o.link_stats_dir;
    options.link_stats_bin_ns = parse_link_stats_bin(o.link_stats_bin);
    options.group = group;
  };
  if (group != nullptr) {
    group->agree(prepare);
  } else {
    prepare();
  }
  const run::RunSummary s = run::run_scenario(*scenario, options);
  if (!rank0) return 0;
  std::printf("wrote %s (%zu rows)%s%s and %s in %.2f s\n", s.csv_path.string().c_str(), s.rows,
              s.steps_path.empty() ? "" : ", ",
              s.steps_path.empty() ? "" : s.steps_path.filename().string().c_str(),
              s.manifest_path.filename().string().c_str(), s.wall_seconds);
  return 0;
}
}  // namespace

Command add_run_command(CLI::App& app, int argc, char** argv) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand("run", "Run a scenario and write its CSV and manifest");
  add_scenario_options(*cmd, o->scenario, true);
  cmd->add_option("-o,--out", o->out_dir, "Output folder (default: out/<scenario name>)");
  cmd->add_option("--threads", o->threads,
                  "Worker threads for sweep points (default: all cores; under mpirun, each rank's "
                  "cores)")
      ->check(CLI::Range(0, 4096));
  cmd->add_flag("--no-progress", o->no_progress, "Never draw the progress bar");
  cmd->add_option("--trace-connections", o->trace_dir,
                  "Simulated training: write every task's per-connection messages (start, end, "
                  "bytes) to DIR/p<point>-<model>-<system>.connections.csv");
  cmd->add_option("--timeline", o->timeline_dir,
                  "Training: write every task's timeline (each worker's phases and all-reduces, "
                  "Chrome/Perfetto trace-event JSON) to DIR/p<point>-<model>-<system>.trace.json; "
                  "simulated or --live");
  cmd->add_option("--link-stats", o->link_stats_dir,
                  "Write every task's traffic per link and direction (bytes, busy time, mean and "
                  "peak utilization) to DIR/p<point>-<task>.links.csv, its bytes over time to "
                  ".link-bins.csv and the bytes per rank pair to .matrix.csv; simulated, or --live "
                  "on a testbed (its links' counters)");
  cmd->add_option("--link-stats-bin", o->link_stats_bin,
                  "Width of the time bins of --link-stats, e.g. 100us, 10ms")
      ->capture_default_str();
  cmd->add_flag("--live", o->live,
                "Run the workload on real processes (hw/tcp; `live:` places them) instead of "
                "simulating it; the CSV gets mode=live");
  const std::string command_line = joined_args(argc, argv);
  return {cmd, [o, command_line] {
            if (!launched_by_mpirun()) return run_scenario_command(*o, command_line, nullptr);
            // Under mpirun every rank shares the sweep. Rank 0 reports an error; the others hold
            // the same one (every step that can fail is agreed), so they exit with its code and
            // print nothing.
            const std::unique_ptr<run::SweepGroup> group = join_mpirun_group();
            int code = 0;
            try {
              code = run_scenario_command(*o, command_line, group.get());
            } catch (const std::exception& e) {
              code = report_error(e, group->rank() == 0);
            }
            // mpirun ends the whole job when a rank exits with an error: every rank leaves once
            // rank 0 has written its line (one more collective), which it could cut off
            // otherwise (simctl_mpirun_test saw rank 1's exit abort rank 0 before it printed).
            group->agree([] {});
            return code;
          }};
}

}  // namespace adaptsim::simctl
