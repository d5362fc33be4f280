// simctl's command line: one CLI11 app, a subcommand per file (commands.h), exit codes.

#include "sim/simctl/simctl.h"

#include <adaptsim/version.h>

#include <cstdio>
#include <filesystem>

#include "sim/core/error.h"
#include "sim/core/install_paths.h"
#include "sim/simctl/commands.h"

namespace adaptsim::simctl {
run::LoadOptions ScenarioOptions::load_options() const {
  run::LoadOptions load;
  load.overrides = sets;
  if (seed) load.seed = run::parse_seed(*seed, "--seed " + *seed);
  if (!calibration.empty()) load.calibration = std::filesystem::absolute(calibration);
  return load;
}

std::string resolve_scenario(const std::string& arg) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (arg.empty() || fs::exists(arg, ec) || arg.find('/') != std::string::npos) return arg;
  std::vector<fs::path> names = {arg};
  if (fs::path(arg).extension() != ".yaml") names.push_back(arg + ".yaml");
  std::string looked;
  for (const fs::path& dir : data_dirs()) {
    for (const fs::path& name : names) {
      const fs::path candidate = dir / "scenarios" / name;
      if (fs::is_regular_file(candidate, ec)) return candidate.string();
    }
    looked += (looked.empty() ? "" : ", ") + (dir / "scenarios").string() + "/";
  }
  std::string tried = arg;
  if (names.size() > 1) tried += " or " + names.back().string();
  throw InputError("scenario \"" + arg + "\" not found: no such file in " +
                   fs::current_path(ec).string() + "/, and no " + tried + " in " +
                   (looked.empty() ? "a shipped scenarios/ folder (none found)" : looked));
}

std::string ScenarioOptions::scenario_path() const {
  return resolve_scenario(scenario);
}

void add_scenario_options(CLI::App& app, ScenarioOptions& o, bool with_seed) {
  app.add_option("scenario", o.scenario,
                 "Scenario YAML file, or the name of a shipped one (fig9: scenarios/fig9.yaml)")
      ->required();
  app.add_option("--set", o.sets, "Override a scenario value: key=value (repeatable)");
  if (with_seed) app.add_option("--seed", o.seed, "Random seed (overrides the scenario's)");
  app.add_option("--calibration", o.calibration,
                 "Calibration profile (from calibrate) applied to the topology");
}

std::string joined_args(int argc, char** argv) {
  std::string s;
  for (int i = 0; i < argc; ++i)
    s += (i ? " " : "") + std::string(argv[i]);
  return s;
}

int simctl_main(int argc, char** argv) {
  CLI::App app{"simctl: simulate data-parallel training on GPU clusters (adaptsim " ADAPTSIM_VERSION
               ")"};
  app.footer(R"(Examples:
  simctl run scenarios/allreduce.yaml                   # all strategies, 8 B .. 1 GiB
  simctl run scenarios/allreduce.yaml -o out/ar --set topology.params.servers=32
  simctl run scenarios/fig9.yaml --set "sweep.topology.params.servers=[64,128,256]"
  simctl run scenarios/validate-testbed.yaml --trace-connections out/trace   # per-connection
  mpirun -np 4 --hostfile hosts simctl run scenarios/fig9.yaml   # tasks shared by 4 processes
  simctl validate scenarios/fig9.yaml
  simctl list strategies | topologies | workloads | models | policies
Exit codes: 0 success, 1 run-time failure, 2 bad input.)");
  app.set_version_flag("--version", std::string("simctl ") + ADAPTSIM_VERSION + " (commit " +
                                        ADAPTSIM_GIT_COMMIT + ")");
  app.require_subcommand(1);
  const std::vector<Command> commands = {
      add_run_command(app, argc, argv), add_validate_command(app),
      add_compare_command(app, argc, argv), add_list_command(app)};
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
    for (const Command& c : commands) {
      if (*c.app) return c.run();
    }
    return kExitInput;
  } catch (const std::exception& e) {
    return report_error(e);
  }
}

int report_error(const std::exception& e, bool print) {
  const bool input = dynamic_cast<const InputError*>(&e) != nullptr;
  if (print) print_error_line("simctl", std::string(input ? "error: " : "failed: ") + e.what());
  return input ? kExitInput : kExitRuntime;
}

}  // namespace adaptsim::simctl
