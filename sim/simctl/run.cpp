// simctl run: one scenario, simulated (default) or live, into its CSVs and manifest.

#include <cstdio>
#include <memory>

#include "sim/core/error.h"
#include "sim/core/units.h"
#include "sim/run/runner.h"
#include "sim/simctl/commands.h"

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
}  // namespace

Command add_run_command(CLI::App& app, int argc, char** argv) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand("run", "Run a scenario and write its CSV and manifest");
  add_scenario_options(*cmd, o->scenario, true);
  cmd->add_option("-o,--out", o->out_dir, "Output folder (default: out/<scenario name>)");
  cmd->add_option("--threads", o->threads, "Worker threads for sweep points (default: all cores)")
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
                  "Simulated runs: write every task's traffic per link and direction (bytes, busy "
                  "time, mean and peak utilization) to DIR/p<point>-<task>.links.csv, its bytes "
                  "over time to .link-bins.csv and the bytes per rank pair to .matrix.csv");
  cmd->add_option("--link-stats-bin", o->link_stats_bin,
                  "Width of the time bins of --link-stats, e.g. 100us, 10ms")
      ->capture_default_str();
  cmd->add_flag("--live", o->live,
                "Run the workload on real processes (hw/tcp; `live:` places them) instead of "
                "simulating it; the CSV gets mode=live");
  const std::string command_line = joined_args(argc, argv);
  return {cmd, [o, command_line] {
            const std::string path = o->scenario.scenario_path();
            run::LoadOptions load = o->scenario.load_options();
            std::unique_ptr<runtime::LiveBackend> backend;
            if (o->live) {
              backend = runtime::make_live_backend();
              load.mode = run::Mode::kLive;
              load.backend = backend.get();
            }
            load.progress = !o->no_progress;
            const run::Scenario scenario = run::load_scenario(path, load);
            run::RunOptions options;
            options.out_dir =
                o->out_dir.empty() ? fs::path("out") / scenario.name : fs::path(o->out_dir);
            options.threads = o->threads;
            options.progress = !o->no_progress;
            options.command_line = command_line;
            options.trace_dir = o->trace_dir;
            options.timeline_dir = o->timeline_dir;
            options.link_stats_dir = o->link_stats_dir;
            options.link_stats_bin_ns = parse_link_stats_bin(o->link_stats_bin);
            const run::RunSummary s = run::run_scenario(scenario, options);
            std::printf("wrote %s (%zu rows)%s%s and %s in %.2f s\n", s.csv_path.string().c_str(),
                        s.rows, s.steps_path.empty() ? "" : ", ",
                        s.steps_path.empty() ? "" : s.steps_path.filename().string().c_str(),
                        s.manifest_path.filename().string().c_str(), s.wall_seconds);
            return 0;
          }};
}

}  // namespace adaptsim::simctl
