#include "sim/run/runner.h"

#include <adaptsim/version.h>

#include <chrono>
#include <ctime>
#include <nlohmann/json.hpp>
#include <thread>

#include "sim/core/error.h"
#include "sim/io/output.h"
#include "sim/run/progress.h"
#include "sim/run/thread_pool.h"

namespace adaptsim::run {

RunSummary run_scenario(const Scenario& scenario, const RunOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const std::time_t started_at = std::time(nullptr);

  // Flatten (point, task) in order.
  struct Item {
    const ScenarioPoint* point;
    const Task* task;
  };
  std::vector<std::vector<Task>> point_tasks;
  for (const auto& p : scenario.points) point_tasks.push_back(p.workload->tasks());
  std::vector<Item> items;
  for (std::size_t i = 0; i < scenario.points.size(); ++i) {
    for (const Task& t : point_tasks[i]) items.push_back({&scenario.points[i], &t});
  }

  std::vector<std::string> columns = scenario.sweep_columns;
  const std::vector<std::string> workload_columns = scenario.points.front().workload->columns();
  columns.insert(columns.end(), workload_columns.begin(), workload_columns.end());
  io::CsvTable table(columns);

  ProgressBar bar("simctl " + scenario.name, items.size(),
                  options.progress && stderr_is_terminal());
  const int threads = options.threads > 0
                          ? options.threads
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  auto results = parallel_map<std::vector<Row>>(
      items.size(), threads, [&](std::size_t i) { return items[i].task->run(); },
      [&](std::size_t done) { bar.update(done); });
  bar.finish();

  for (std::size_t i = 0; i < items.size(); ++i) {
    for (Row& row : results[i]) {
      Row full;
      for (const auto& [key, value] : items[i].point->assignments) full.push_back(value);
      full.insert(full.end(), row.begin(), row.end());
      table.add_row(std::move(full));
    }
  }

  std::error_code ec;
  std::filesystem::create_directories(options.out_dir, ec);
  if (ec) {
    throw RuntimeFailure(options.out_dir.string() + ": cannot create the output folder: " +
                         ec.message());
  }
  RunSummary summary;
  summary.csv_path = options.out_dir / scenario.csv_name;
  summary.manifest_path = options.out_dir / (scenario.name + ".manifest.json");
  summary.rows = table.size();
  summary.tasks = items.size();
  summary.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  nlohmann::ordered_json m;
  m["scenario"] = scenario.name;
  m["scenario_file"] = scenario.path.string();
  m["scenario_fnv1a64"] = scenario.file_hash;
  m["overrides"] = scenario.overrides;
  m["seed"] = scenario.seed;
  m["mode"] = scenario.mode == Mode::kSim ? "sim" : "live";
  m["version"] = ADAPTSIM_VERSION;
  m["git_commit"] = ADAPTSIM_GIT_COMMIT;
  char when[32];
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&started_at));
  m["started_utc"] = when;
  m["wall_time_s"] = summary.wall_seconds;
  m["threads"] = threads;
  m["command"] = options.command_line;
  m["csv"] = scenario.csv_name;
  m["rows"] = summary.rows;
  m["resolved_scenario_yaml"] = scenario.resolved_yaml;
  nlohmann::ordered_json points = nlohmann::ordered_json::array();
  for (const auto& p : scenario.points) {
    nlohmann::ordered_json pj;
    for (const auto& [k, v] : p.assignments) pj["assignments"][k] = v;
    pj["topology"]["file"] = p.topology.path.string();
    pj["topology"]["name"] = p.topology.spec.name;
    for (const auto& [k, v] : p.topology.params) pj["topology"]["params"][k] = v;
    for (const auto& q : p.topology.quantities) {
      pj["topology"]["quantities"].push_back({{"key", q.key}, {"value", q.text}, {"source", q.source}});
    }
    points.push_back(pj);
  }
  m["points"] = points;

  io::write_file_atomic(summary.csv_path, table.render());
  io::write_file_atomic(summary.manifest_path, m.dump(2) + "\n");
  return summary;
}

}  // namespace adaptsim::run
