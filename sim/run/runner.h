#pragma once
// Runs a loaded scenario: every task of every sweep point on a thread pool, rows in a fixed order,
// then the CSV and a manifest (resolved scenario, seed, version, wall time), both written
// atomically into the output folder.

#include <filesystem>
#include <string>

#include "sim/run/scenario.h"

namespace adaptsim::run {

struct RunOptions {
  std::filesystem::path out_dir;  // created if missing
  int threads = 0;                // 0: one per hardware thread
  bool progress = false;          // draw a progress bar on stderr (only if it is a terminal)
  std::string command_line;       // recorded in the manifest
};

struct RunSummary {
  std::filesystem::path csv_path;
  std::filesystem::path manifest_path;
  std::size_t rows = 0;
  std::size_t tasks = 0;
  double wall_seconds = 0;
};

RunSummary run_scenario(const Scenario& scenario, const RunOptions& options);

}  // namespace adaptsim::run
