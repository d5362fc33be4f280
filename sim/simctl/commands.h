#pragma once
// simctl's subcommands, one file each (run.cpp, validate.cpp, compare.cpp, list.cpp), registered
// on one CLI11 app by simctl.cpp. A command's options live in its own struct; `run` is called
// after parsing when the user chose that command, and returns the exit code (errors are thrown:
// InputError -> 2, anything else -> 1).

#include <CLI/CLI.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sim/run/scenario.h"
#include "sim/simctl/simctl.h"

namespace adaptsim::simctl {

// The tool's exit codes besides 0.
constexpr int kExitRuntime = 1;
constexpr int kExitInput = 2;

// A command's error as the tool reports it: one line, "simctl: error: ..." for bad input (returns
// kExitInput), "simctl: failed: ..." otherwise (kExitRuntime); with `print` false, only the code.
int report_error(const std::exception& e, bool print = true);

struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

// The options every scenario command shares: the file, --set overrides, a calibration profile.
struct ScenarioOptions {
  std::string scenario;
  std::vector<std::string> sets;
  std::optional<std::string> seed;  // checked by run::parse_seed (CLI11 wraps "-1")
  std::string calibration;
  // The loader's options from these (mode sim; the caller sets live mode and the backend).
  run::LoadOptions load_options() const;
  // The scenario file to load (resolve_scenario(scenario)).
  std::string scenario_path() const;
};
void add_scenario_options(CLI::App& app, ScenarioOptions& o, bool with_seed);

// The scenario file `arg` names: `arg` itself when it exists (a path, as typed); else, for a bare
// name (no '/'), NAME or NAME.yaml in the scenarios/ folder of the shipped data (the source tree's
// and the installed share/adaptsim's, sim/core/install_paths.h); else InputError listing where it
// looked. A path with a '/' that does not exist is returned as typed (the loader reports it).
std::string resolve_scenario(const std::string& arg);

// The command line as typed, for manifests.
std::string joined_args(int argc, char** argv);

Command add_run_command(CLI::App& app, int argc, char** argv);
Command add_validate_command(CLI::App& app);
Command add_compare_command(CLI::App& app, int argc, char** argv);
Command add_list_command(CLI::App& app);

}  // namespace adaptsim::simctl
