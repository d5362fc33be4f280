// simctl: run, validate and list adaptsim scenarios. A thin shell over sim/run: parse the command
// line, load and validate, run, report. Exit codes: 0 success, 1 run-time failure, 2 bad input.

#include <adaptsim/version.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hw/runner/live_backend.h"
#include "hw/testbed/signal_teardown.h"
#include "sim/coll/strategy.h"
#include "sim/core/error.h"
#include "sim/io/topology_loader.h"
#include "sim/run/runner.h"
#include "sim/run/scenario.h"
#include "sim/train/model_zoo.h"

namespace fs = std::filesystem;
using namespace adaptsim;

namespace {

constexpr int kExitRuntime = 1;
constexpr int kExitInput = 2;

// Where shipped topologies and scenarios live: $ADAPTSIM_DATA, else the source tree.
fs::path data_dir() {
  if (const char* env = std::getenv("ADAPTSIM_DATA")) return env;
  return ADAPTSIM_SOURCE_DIR;
}

void list_strategies() {
  for (coll::StrategyKind k : coll::all_strategies()) {
    std::printf("%-24s %s\n", std::string(coll::strategy_name(k)).c_str(),
                std::string(coll::strategy_summary(k)).c_str());
  }
}

void list_topologies() {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(data_dir() / "topologies")) {
    if (e.path().extension() == ".yaml") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    const io::LoadedTopology t = io::load_topology(f);
    std::string params;
    for (const auto& [k, v] : t.params)
      params += (params.empty() ? "" : ", ") + k + "=" + v;
    std::printf("%-28s %s\n%-28s params: %s\n", f.filename().string().c_str(),
                t.spec.description.c_str(), "", params.c_str());
  }
}

void list_models() {
  for (const std::string& name : train::model_names()) {
    const train::Model& m = train::model(name);
    const train::ModelTotals t = m.totals();
    std::printf("%-12s %11llu params %4zu tensors %9.3f GFLOP/%s fwd  %s\n", name.c_str(),
                static_cast<unsigned long long>(t.parameters), t.tensors, t.forward_flops / 1e9,
                m.sample_unit.c_str(), m.description.c_str());
  }
}

void list_workloads() {
  for (const auto& k : run::workload_kinds()) {
    std::printf("%-16s %s\n", k.name.c_str(), k.summary.c_str());
  }
}

std::string joined_args(int argc, char** argv) {
  std::string s;
  for (int i = 0; i < argc; ++i)
    s += (i ? " " : "") + std::string(argv[i]);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"simctl: simulate data-parallel training on GPU clusters (adaptsim " ADAPTSIM_VERSION
               ")"};
  app.footer(R"(Examples:
  simctl run scenarios/allreduce.yaml                   # all strategies, 8 B .. 1 GiB
  simctl run scenarios/allreduce.yaml -o out/ar --set topology.params.servers=32
  simctl run scenarios/fig9.yaml --set "sweep.topology.params.servers=[64,128,256]"
  simctl run scenarios/validate-testbed.yaml --trace-connections out/trace   # per-connection
  simctl validate scenarios/fig9.yaml
  simctl list strategies | topologies | workloads | models
Exit codes: 0 success, 1 run-time failure, 2 bad input.)");
  app.set_version_flag("--version", std::string("simctl ") + ADAPTSIM_VERSION + " (commit " +
                                        ADAPTSIM_GIT_COMMIT + ")");
  app.require_subcommand(1);

  std::string scenario_path;
  std::vector<std::string> sets;
  std::string out_dir;
  std::optional<std::string> seed;  // checked by run::parse_seed (CLI11 wraps "-1")
  int threads = 0;
  bool no_progress = false;
  std::string calibration;

  CLI::App* run_cmd = app.add_subcommand("run", "Run a scenario and write its CSV and manifest");
  run_cmd->add_option("scenario", scenario_path, "Scenario YAML file")->required();
  run_cmd->add_option("-o,--out", out_dir, "Output folder (default: out/<scenario name>)");
  run_cmd->add_option("--set", sets, "Override a scenario value: key=value (repeatable)");
  run_cmd->add_option("--seed", seed, "Random seed (overrides the scenario's)");
  run_cmd->add_option("--calibration", calibration,
                      "Calibration profile (from calibrate) applied to the topology");
  run_cmd->add_option("--threads", threads, "Worker threads for sweep points (default: all cores)")
      ->check(CLI::Range(0, 4096));
  run_cmd->add_flag("--no-progress", no_progress, "Never draw the progress bar");
  std::string trace_dir;
  run_cmd->add_option("--trace-connections", trace_dir,
                      "Simulated training: write every task's per-connection messages (start, "
                      "end, bytes) to DIR/p<point>-<model>-<system>.connections.csv");
  bool live = false;
  run_cmd->add_flag("--live", live,
                    "Run the workload on real processes (hw/tcp; `live:` places them) instead of "
                    "simulating it; the CSV gets mode=live");

  CLI::App* validate_cmd = app.add_subcommand("validate", "Check a scenario without running it");
  validate_cmd->add_option("scenario", scenario_path, "Scenario YAML file")->required();
  validate_cmd->add_option("--set", sets, "Override a scenario value: key=value (repeatable)");
  validate_cmd->add_option("--calibration", calibration, "Calibration profile to apply");

  CLI::App* compare_cmd = app.add_subcommand(
      "compare", "Run a training scenario simulated and live; write per-row errors and a summary");
  compare_cmd->add_option("scenario", scenario_path, "Scenario YAML file")->required();
  compare_cmd->add_option("-o,--out", out_dir, "Output folder (default: out/<scenario name>)");
  compare_cmd->add_option("--set", sets, "Override a scenario value: key=value (repeatable)");
  compare_cmd->add_option("--calibration", calibration,
                          "Calibration profile applied to the simulation");
  compare_cmd->add_option("--threads", threads, "Worker threads for the simulated runs")
      ->check(CLI::Range(0, 4096));
  int sim_seeds = 1;
  compare_cmd
      ->add_option("--sim-seeds", sim_seeds,
                   "Simulate with N seeds (the scenario's seed, +1, ...) and compare their mean "
                   "step time (default 1)")
      ->check(CLI::Range(1, 1000));

  std::string what;
  CLI::App* list_cmd =
      app.add_subcommand("list", "List strategies, topologies, workloads or models");
  list_cmd->add_option("what", what, "strategies | topologies | workloads | models")
      ->required()
      ->check(CLI::IsMember({"strategies", "topologies", "workloads", "models"}));

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    // One line, as for every bad input (CLI11's own report adds a second).
    print_error_line("simctl",
                     std::string("error: ") + e.what() + " (simctl --help lists the options)");
    return kExitInput;
  }

  try {
    if (*list_cmd) {
      if (what == "strategies") list_strategies();
      if (what == "topologies") list_topologies();
      if (what == "workloads") list_workloads();
      if (what == "models") list_models();
      return 0;
    }
    run::LoadOptions load;
    load.overrides = sets;
    if (seed) load.seed = run::parse_seed(*seed, "--seed " + *seed);
    if (!calibration.empty()) load.calibration = fs::absolute(calibration);
    // The live backend is built only when a live run is asked for (it needs adaptsim-live).
    std::unique_ptr<runner::ProcessLiveBackend> backend;
    auto make_backend = [&] {
      // Ctrl-C / SIGTERM / SIGHUP during a live run: remove the testbed (if any), then die by the
      // signal; adaptsim-live dies with simctl (testbed/command.h), its ranks with it.
      testbed::install_signal_teardown();
      backend = std::make_unique<runner::ProcessLiveBackend>(runner::find_live_tool());
      return backend.get();
    };
    if (*compare_cmd) {
      run::LoadOptions sim_load = load, live_load = load;
      sim_load.mode = run::Mode::kSim;
      live_load.mode = run::Mode::kLive;
      live_load.backend = make_backend();
      std::vector<run::Scenario> sims;
      sims.push_back(run::load_scenario(scenario_path, sim_load));
      for (int k = 1; k < sim_seeds; ++k) {
        sim_load.seed = sims.front().seed + static_cast<std::uint64_t>(k);
        sims.push_back(run::load_scenario(scenario_path, sim_load));
      }
      const run::Scenario& sim = sims.front();
      const run::Scenario live_sc = run::load_scenario(scenario_path, live_load);
      run::RunOptions options;
      options.out_dir = out_dir.empty() ? fs::path("out") / sim.name : fs::path(out_dir);
      options.threads = threads;
      options.command_line = joined_args(argc, argv);
      const run::CompareSummary s = run::compare_scenario(sims, live_sc, options);
      std::printf(
          "wrote %s (%zu rows): step time |sim - live| / live median %.1f%%, max %.1f%% "
          "(%.1f s)\n",
          s.csv_path.string().c_str(), s.rows, 100 * s.median_abs_error, 100 * s.max_abs_error,
          s.wall_seconds);
      return 0;
    }
    if (live) {
      load.mode = run::Mode::kLive;
      load.backend = make_backend();
    }
    load.keep_points = !*validate_cmd;  // validate keeps counts only: flat memory
    load.progress = !no_progress;
    const run::Scenario scenario = run::load_scenario(scenario_path, load);
    const std::size_t tasks = scenario.task_count;
    if (*validate_cmd) {
      std::printf("%s: ok (%zu sweep point%s, %zu task%s)\n", scenario_path.c_str(),
                  scenario.point_count, scenario.point_count == 1 ? "" : "s", tasks,
                  tasks == 1 ? "" : "s");
      return 0;
    }
    run::RunOptions options;
    options.out_dir = out_dir.empty() ? fs::path("out") / scenario.name : fs::path(out_dir);
    options.threads = threads;
    options.progress = !no_progress;
    options.command_line = joined_args(argc, argv);
    options.trace_dir = trace_dir;
    const run::RunSummary s = run::run_scenario(scenario, options);
    std::printf("wrote %s (%zu rows) and %s in %.2f s\n", s.csv_path.string().c_str(), s.rows,
                s.manifest_path.filename().string().c_str(), s.wall_seconds);
    return 0;
  } catch (const InputError& e) {
    print_error_line("simctl", std::string("error: ") + e.what());
    return kExitInput;
  } catch (const std::exception& e) {
    print_error_line("simctl", std::string("failed: ") + e.what());
    return kExitRuntime;
  }
}
