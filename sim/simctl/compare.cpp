// simctl compare: the same training scenario simulated (one or more seeds) and live, row by row.

#include <cstdio>
#include <memory>

#include "sim/core/error.h"
#include "sim/run/runner.h"
#include "sim/simctl/commands.h"
#include "sim/simctl/mpi_sweep_group.h"

namespace adaptsim::simctl {
namespace fs = std::filesystem;

namespace {
struct CompareOptions {
  ScenarioOptions scenario;
  std::string out_dir;
  int threads = 0;
  int sim_seeds = 1;
  int live_runs = 1;
};
}  // namespace

Command add_compare_command(CLI::App& app, int argc, char** argv) {
  auto o = std::make_shared<CompareOptions>();
  CLI::App* cmd = app.add_subcommand(
      "compare", "Run a training scenario simulated and live; write per-row errors and a summary");
  add_scenario_options(*cmd, o->scenario, false);
  cmd->add_option("-o,--out", o->out_dir, "Output folder (default: out/<scenario name>)");
  cmd->add_option("--threads", o->threads, "Worker threads for the simulated runs")
      ->check(CLI::Range(0, 4096));
  cmd->add_option("--sim-seeds", o->sim_seeds,
                  "Simulate with N seeds (the scenario's seed, +1, ...) and compare their mean "
                  "step time (default 1)")
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--live-runs", o->live_runs,
                  "Run the live side N times, one after another, and compare the mean of their "
                  "step times; live_run_std_ms is their spread (default 1)")
      ->check(CLI::Range(1, 100));
  const std::string command_line = joined_args(argc, argv);
  return {cmd, [o, command_line] {
            if (launched_by_mpirun()) {
              // Said once, by rank 0; the other ranks exit with the same code.
              const std::unique_ptr<run::SweepGroup> group = join_mpirun_group();
              if (group->rank() != 0) return kExitInput;
              throw InputError(
                  "compare under mpirun: its live half places its own processes; run simctl "
                  "compare without mpirun");
            }
            const std::string path = o->scenario.scenario_path();
            const std::unique_ptr<runtime::LiveBackend> backend = runtime::make_live_backend();
            run::LoadOptions sim_load = o->scenario.load_options(), live_load = sim_load;
            sim_load.mode = run::Mode::kSim;
            live_load.mode = run::Mode::kLive;
            live_load.backend = backend.get();
            std::vector<run::Scenario> sims;
            sims.push_back(run::load_scenario(path, sim_load));
            for (int k = 1; k < o->sim_seeds; ++k) {
              sim_load.seed = sims.front().seed + static_cast<std::uint64_t>(k);
              sims.push_back(run::load_scenario(path, sim_load));
            }
            const run::Scenario& sim = sims.front();
            const run::Scenario live = run::load_scenario(path, live_load);
            run::RunOptions options;
            options.out_dir =
                o->out_dir.empty() ? fs::path("out") / sim.name : fs::path(o->out_dir);
            options.threads = o->threads;
            options.command_line = command_line;
            const run::CompareSummary s = run::compare_scenario(sims, live, options, o->live_runs);
            std::printf(
                "wrote %s (%zu rows): step time |sim - live| / live median %.1f%%, max %.1f%% "
                "(%.1f s)\n",
                s.csv_path.string().c_str(), s.rows, 100 * s.median_abs_error,
                100 * s.max_abs_error, s.wall_seconds);
            return 0;
          }};
}

}  // namespace adaptsim::simctl
