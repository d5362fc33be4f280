#include "sim/run/runner.h"

#include <adaptsim/version.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iterator>
#include <mutex>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <set>
#include <stdexcept>
#include <string_view>
#include <thread>

#include "sim/core/error.h"
#include "sim/core/install_paths.h"
#include "sim/io/output.h"
#include "sim/run/progress.h"
#include "sim/run/thread_pool.h"

namespace adaptsim::run {
namespace {

std::string shell_quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

// simctl compare's figure: plots/compare.py (Debian's /usr/bin/python3 with matplotlib) renders
// <name>.compare.png next to the CSV. The figure is a by-product: without python3, matplotlib or
// the script, one line on stderr says it was skipped and how to draw it, and the comparison still
// succeeds. plots/ is found as simctl finds the shipped data: $ADAPTSIM_DATA, else the installed
// share/adaptsim, else the source tree (sim/core/install_paths.h).
// The figure is drawn from `csv_text` in a temporary file beside `csv` (the CSV is written with
// the figure and the summary, all or none); returns the PNG's bytes, empty when skipped.
std::string render_compare_plot(const std::filesystem::path& csv, const std::string& csv_text) {
  namespace fs = std::filesystem;
  const fs::path python = "/usr/bin/python3";
  const fs::path script =
      find_data_file("plots/compare.py").value_or(primary_data_dir() / "plots" / "compare.py");
  const std::string draw = python.string() + " " + script.string() + " " + csv.string();
  auto skipped = [&](const std::string& why) {
    std::fprintf(stderr, "plot skipped (%s); draw it with: %s\n", why.c_str(), draw.c_str());
    return std::string();
  };
  std::error_code ec;
  if (!fs::exists(python, ec)) return skipped("no " + python.string());
  if (!fs::exists(script, ec)) return skipped("no " + script.string());
  const std::string stem = "." + csv.filename().string() + ".plot." + std::to_string(::getpid());
  const fs::path tmp_csv = csv.parent_path() / (stem + ".csv");
  const fs::path png = csv.parent_path() / (stem + ".png");
  struct Remove {  // the temporaries go on every path out
    fs::path a, b;
    ~Remove() {
      std::error_code e;
      fs::remove(a, e);
      fs::remove(b, e);
    }
  } remove{tmp_csv, png};
  io::write_file_atomic(tmp_csv, csv_text);
  const std::string command = shell_quoted(python.string()) + " " + shell_quoted(script.string()) +
                              " " + shell_quoted(tmp_csv.string()) + " -o " +
                              shell_quoted(png.string()) + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return skipped("cannot start " + python.string());
  // The script's output: "wrote PATH", or a Python error whose last line names the cause
  // ("ModuleNotFoundError: No module named 'matplotlib'").
  std::string output;
  char buffer[4096];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr)
    output += buffer;
  const int status = ::pclose(pipe);
  const std::uintmax_t png_bytes = fs::file_size(png, ec);
  if (status == 0 && !ec && png_bytes > 0) {
    std::ifstream in(png, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!bytes.empty()) return bytes;
  }
  while (!output.empty() && (output.back() == '\n' || output.back() == ' '))
    output.pop_back();
  const std::size_t line = output.rfind('\n');
  const std::string last = line == std::string::npos ? output : output.substr(line + 1);
  return skipped(last.empty() ? "compare.py failed" : "compare.py: " + last);
}

// Worker threads for the tasks: one for live runs (they measure real time on this machine), else
// --threads, else one per CPU: the machine's in one process, the ones this process may run on in
// a group (mpirun binds a rank to its share of the cores).
int worker_threads(const Scenario& scenario, const RunOptions& options) {
  if (scenario.mode == Mode::kLive) return 1;
  if (options.threads > 0) return options.threads;
  if (options.group != nullptr) {
    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    if (::sched_getaffinity(0, sizeof cpus, &cpus) == 0 && CPU_COUNT(&cpus) > 0) {
      return CPU_COUNT(&cpus);
    }
  }
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// What one rank sends rank 0 after running its share of the tasks: either a failure (the task's
// index and its error) or every task's rows and files, each field exactly the text a single
// process would hold, so rank 0 renders the same bytes.
void put_rows(std::string& out, const std::vector<Row>& rows) {
  put_count(out, rows.size());
  for (const Row& row : rows) {
    put_count(out, row.size());
    for (const std::string& cell : row)
      put_field(out, cell);
  }
}

std::vector<Row> take_rows(std::string_view& in) {
  std::vector<Row> rows(take_count(in));
  for (Row& row : rows) {
    row.resize(take_count(in));
    for (std::string& cell : row)
      cell = take_field(in);
  }
  return rows;
}

// Rank 0: puts the other ranks' results (`shares`, by rank; empty on the other ranks) in place
// beside its own, and returns the failure to report (encoded; "" when every task ran): the
// lowest-numbered failed task's, or a share missing.
std::string assemble_results(const std::vector<std::string>& shares,
                             const std::vector<std::size_t>& mine,
                             std::optional<std::size_t> failed, const std::string& failure,
                             std::vector<TaskRows>& results,
                             std::vector<std::vector<io::OutputFile>>& task_files) {
  if (shares.empty()) return "";  // not rank 0
  std::string verdict;
  std::optional<std::size_t> first_failed;
  std::size_t received = 0;
  for (std::size_t r = 1; r < shares.size(); ++r) {  // rank 0's own results are in place
    std::string_view in = shares[r];
    if (take_count(in) == 1) {
      const std::size_t index = take_count(in);
      std::string error = take_field(in);
      if (!first_failed || index < *first_failed) {
        first_failed = index;
        verdict = std::move(error);
      }
      continue;
    }
    const std::uint64_t n = take_count(in);
    for (std::uint64_t k = 0; k < n; ++k) {
      const std::size_t i = take_count(in);
      if (i >= results.size()) throw std::logic_error("sweep group: a task index out of range");
      results[i].rows = take_rows(in);
      results[i].step_rows = take_rows(in);
      task_files[i].resize(take_count(in));
      for (io::OutputFile& f : task_files[i]) {
        f.path = take_field(in);
        f.content = take_field(in);
      }
      ++received;
    }
  }
  if (failed && (!first_failed || *failed < *first_failed)) verdict = failure;
  if (verdict.empty() && received + mine.size() != results.size()) {
    throw std::logic_error("sweep group: rank 0 received " +
                           std::to_string(received + mine.size()) + " of " +
                           std::to_string(results.size()) + " tasks' results");
  }
  return verdict;
}

// Rank 0 ends with every task's results and files in `results` and `task_files` (indexed by
// task); every rank throws the error of the lowest-numbered failed task if any failed.
// `mine` lists this rank's tasks; `failed` is the one of them whose error `failure` holds
// (encode_current_failure), if any.
void exchange_results(SweepGroup& group, const std::vector<std::size_t>& mine,
                      std::optional<std::size_t> failed, const std::string& failure,
                      std::vector<TaskRows>& results,
                      std::vector<std::vector<io::OutputFile>>& task_files) {
  std::string out;
  if (failed) {
    put_count(out, 1);
    put_count(out, *failed);
    put_field(out, failure);
  } else {
    put_count(out, 0);
    put_count(out, mine.size());
    for (std::size_t i : mine) {
      put_count(out, i);
      put_rows(out, results[i].rows);
      put_rows(out, results[i].step_rows);
      put_count(out, task_files[i].size());
      for (const io::OutputFile& f : task_files[i]) {
        put_field(out, f.path.string());
        put_field(out, f.content);
      }
    }
  }
  const std::vector<std::string> shares = group.gather(out);
  out = std::string();
  // Rank 0 always reaches the broadcast, whatever it finds, or the others would wait there.
  std::string verdict;
  try {
    verdict = assemble_results(shares, mine, failed, failure, results, task_files);
  } catch (...) {
    verdict = encode_current_failure();
  }
  verdict = group.broadcast(verdict);
  if (!verdict.empty()) throw_failure(verdict);
}

// A manifest's text. Strings from the user (the scenario, the command line) may hold bytes that
// are not UTF-8; they are written as U+FFFD rather than failing the run after it is done.
std::string dump_json(const nlohmann::ordered_json& m) {
  return m.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

}  // namespace

std::string steps_csv_name(const std::string& csv_name) {
  const std::string stem = csv_name.size() > 4 && csv_name.ends_with(".csv")
                               ? csv_name.substr(0, csv_name.size() - 4)
                               : csv_name;
  return stem + ".steps.csv";
}

Tables collect_rows(const Scenario& scenario, const RunOptions& options,
                    std::vector<io::OutputFile>* files) {
  // Flatten (point, task) in order.
  struct Item {
    const ScenarioPoint* point;
    const Task* task;
  };
  std::vector<std::vector<Task>> point_tasks;
  for (const auto& p : scenario.points)
    point_tasks.push_back(p.workload->tasks());
  std::vector<Item> items;
  for (std::size_t i = 0; i < scenario.points.size(); ++i) {
    for (const Task& t : point_tasks[i])
      items.push_back({&scenario.points[i], &t});
  }

  // The sweep's columns first; one named like a column of the workload's own (a sweep over
  // workload.batch_per_gpu beside the steps' batch_per_gpu) is "sweep.<name>" in that table.
  auto with_sweep = [&](const std::vector<std::string>& own) {
    std::vector<std::string> c;
    for (const std::string& name : scenario.sweep_columns)
      c.push_back(std::find(own.begin(), own.end(), name) == own.end() ? name : "sweep." + name);
    c.insert(c.end(), own.begin(), own.end());
    return c;
  };
  io::CsvTable table(with_sweep(scenario.points.front().workload->columns()));
  std::optional<io::CsvTable> steps;
  const std::vector<std::string> step_columns = scenario.points.front().workload->step_columns();
  if (!step_columns.empty()) steps.emplace(with_sweep(step_columns));

  SweepGroup* const group = options.group;
  std::vector<std::size_t> mine;  // the tasks this process runs: all, or its rank's share
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (group == nullptr || group->runs_task(i)) mine.push_back(i);
  }
  // In a group, rank 0 shows its own share's progress.
  ProgressBar bar(
      "simctl " + scenario.name, mine.size(),
      options.progress && stderr_is_terminal() && (group == nullptr || group->rank() == 0));
  const int threads = worker_threads(scenario, options);
  std::vector<TaskContext> contexts(items.size());
  if (!options.trace_dir.empty() && scenario.mode == Mode::kLive) {
    throw InputError(
        "--trace-connections: simulated runs only (live connections: "
        "scripts/testbed-ss-trace.sh)");
  }
  // Per-task files besides the rows: every point's workload must write them.
  const struct {
    bool asked;
    bool (Workload::*writes)() const;
    const char* refusal;
  } per_task_files[] = {
      {!options.trace_dir.empty(), &Workload::traces_connections,
       "--trace-connections: scenario '{}': its workload writes no connection traces (training "
       "only)"},
      {!options.timeline_dir.empty(), &Workload::has_timeline,
       "--timeline: scenario '{}': its workload has no timeline (training only)"},
      {!options.link_stats_dir.empty(), &Workload::has_link_stats,
       "--link-stats: scenario '{}': its workload has no links to report (simulated all-reduce "
       "and training runs, and live training on a testbed, without elastic: only)"},
  };
  for (const auto& f : per_task_files) {
    if (!f.asked) continue;
    for (const auto& p : scenario.points) {
      if (!((*p.workload).*f.writes)()) {
        std::string message = f.refusal;
        message.replace(message.find("{}"), 2, scenario.name);
        throw InputError(message);
      }
    }
  }
  for (std::size_t i = 0; i < items.size(); ++i) {
    contexts[i].trace_dir = options.trace_dir;
    contexts[i].timeline_dir = options.timeline_dir;
    contexts[i].link_stats_dir = options.link_stats_dir;
    contexts[i].link_stats_bin_ns = options.link_stats_bin_ns;
    // Appended, not "p" + ...: GCC 12's -Wrestrict false positive (bug 105651).
    contexts[i].trace_name = "p";
    contexts[i].trace_name.append(std::to_string(items[i].point - scenario.points.data()));
  }
  std::vector<std::vector<io::OutputFile>> task_files(items.size());
  for (std::size_t i = 0; i < items.size(); ++i)
    contexts[i].files = &task_files[i];
  std::vector<TaskRows> results(items.size());
  if (group == nullptr) {
    results = parallel_map<TaskRows>(
        items.size(), threads, [&](std::size_t i) { return items[i].task->run(contexts[i]); },
        [&](std::size_t done) { bar.update(done); });
    bar.finish();
  } else {
    // A failure is not thrown here but sent to rank 0 with the others' results: every rank must
    // reach the exchange.
    std::optional<std::size_t> failed;
    std::mutex failed_mutex;
    std::string failure;
    try {
      auto share = parallel_map<TaskRows>(
          mine.size(), threads,
          [&](std::size_t k) {
            try {
              return items[mine[k]].task->run(contexts[mine[k]]);
            } catch (...) {
              std::lock_guard<std::mutex> lock(failed_mutex);
              if (!failed || mine[k] < *failed) failed = mine[k];
              throw;
            }
          },
          [&](std::size_t done) { bar.update(done); });
      for (std::size_t k = 0; k < mine.size(); ++k)
        results[mine[k]] = std::move(share[k]);
    } catch (...) {
      failure = encode_current_failure();  // the lowest-numbered failed task's, as failed says
      if (!failed) failed = mine.front();
    }
    bar.finish();
    exchange_results(*group, mine, failed, failure, results, task_files);
    if (group->rank() != 0) return {std::move(table), std::move(steps)};
  }
  if (files != nullptr) {
    for (auto& f : task_files)
      std::move(f.begin(), f.end(), std::back_inserter(*files));
  }

  for (std::size_t i = 0; i < items.size(); ++i) {
    auto add = [&](io::CsvTable& to, Row& row) {
      Row full;
      for (const auto& [key, value] : items[i].point->assignments)
        full.push_back(value);
      full.insert(full.end(), row.begin(), row.end());
      to.add_row(std::move(full));
    };
    for (Row& row : results[i].rows)
      add(table, row);
    if (steps) {
      for (Row& row : results[i].step_rows)
        add(*steps, row);
    }
  }
  return {std::move(table), std::move(steps)};
}

namespace {
// The CSVs, the manifest and the tasks' files, all or none (run_scenario's second half).
RunSummary write_outputs(const Scenario& scenario, const RunOptions& options, const Tables& tables,
                         std::vector<io::OutputFile> files,
                         std::chrono::steady_clock::time_point start, std::time_t started_at);
}  // namespace

RunSummary run_scenario(const Scenario& scenario, const RunOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const std::time_t started_at = std::time(nullptr);
  std::vector<io::OutputFile> files;  // the tasks' traces; the CSVs and manifest join them below
  const Tables tables = collect_rows(scenario, options, &files);
  RunSummary summary;
  if (options.group == nullptr) {
    summary = write_outputs(scenario, options, tables, std::move(files), start, started_at);
  } else {
    // Rank 0 writes; a failure there (a result that is not finite, a folder it cannot write)
    // fails every rank.
    options.group->agree([&] {
      if (options.group->rank() == 0) {
        summary = write_outputs(scenario, options, tables, std::move(files), start, started_at);
      }
    });
  }
  return summary;
}

namespace {

RunSummary write_outputs(const Scenario& scenario, const RunOptions& options, const Tables& tables,
                         std::vector<io::OutputFile> files,
                         std::chrono::steady_clock::time_point start, std::time_t started_at) {
  const io::CsvTable& table = tables.summary;
  check_results_finite(table, scenario.sweep_columns.size());
  const int threads = worker_threads(scenario, options);
  std::error_code ec;
  std::filesystem::create_directories(options.out_dir, ec);
  if (ec) {
    throw RuntimeFailure(options.out_dir.string() +
                         ": cannot create the output folder: " + ec.message());
  }
  RunSummary summary;
  summary.csv_path = options.out_dir / scenario.csv_name;
  if (tables.steps) summary.steps_path = options.out_dir / steps_csv_name(scenario.csv_name);
  summary.manifest_path = options.out_dir / (scenario.name + ".manifest.json");
  summary.rows = table.size();
  for (const auto& p : scenario.points)
    summary.tasks += p.workload->tasks().size();
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
  m["threads"] = threads;  // rank 0's, in a group
  m["ranks"] = options.group == nullptr ? 1 : options.group->size();
  m["command"] = options.command_line;
  m["csv"] = scenario.csv_name;
  if (tables.steps) m["steps_csv"] = summary.steps_path.filename().string();
  m["rows"] = summary.rows;
  m["resolved_scenario_yaml"] = scenario.resolved_yaml;
  if (!scenario.calibration.empty()) m["calibration_profile"] = scenario.calibration.string();
  nlohmann::ordered_json points = nlohmann::ordered_json::array();
  for (const auto& p : scenario.points) {
    nlohmann::ordered_json pj;
    for (const auto& [k, v] : p.assignments)
      pj["assignments"][k] = v;
    pj["topology"]["file"] = p.topology.path.string();
    pj["topology"]["name"] = p.topology.spec.name;
    for (const auto& [k, v] : p.topology.params)
      pj["topology"]["params"][k] = v;
    for (const auto& c : p.calibrated) {
      pj["calibration"].push_back(
          {{"field", c.field}, {"previous", c.previous}, {"value", c.value}, {"source", c.source}});
    }
    for (const auto& q : p.topology.quantities) {
      pj["topology"]["quantities"].push_back(
          {{"key", q.key}, {"value", q.text}, {"source", q.source}});
    }
    points.push_back(pj);
  }
  m["points"] = points;

  if (!options.timeline_dir.empty()) {
    std::filesystem::create_directories(options.timeline_dir, ec);
    if (ec) {
      throw RuntimeFailure(options.timeline_dir.string() +
                           ": cannot create the timeline folder: " + ec.message());
    }
  }
  if (!options.link_stats_dir.empty()) {
    std::filesystem::create_directories(options.link_stats_dir, ec);
    if (ec) {
      throw RuntimeFailure(options.link_stats_dir.string() +
                           ": cannot create the link statistics folder: " + ec.message());
    }
  }
  if (!options.trace_dir.empty()) {
    std::filesystem::create_directories(options.trace_dir, ec);
    if (ec) {
      throw RuntimeFailure(options.trace_dir.string() +
                           ": cannot create the trace folder: " + ec.message());
    }
  }
  // All or none: the traces, the CSVs and the manifest go to temporary names first.
  files.push_back({summary.csv_path, table.render()});
  if (tables.steps) files.push_back({summary.steps_path, tables.steps->render()});
  files.push_back({summary.manifest_path, dump_json(m)});
  io::write_files_atomic(files);
  return summary;
}

}  // namespace

// A result the model could not compute (inf, nan) is never written as if it were one: inputs are
// range-checked so that none arises, and this is the last guard (bad input: exit 2, nothing
// written). Text columns (names, labels, units) and the sweep's own values are not results.
void check_results_finite(const io::CsvTable& table, std::size_t sweep_columns) {
  static const std::set<std::string, std::less<>> kText = {
      "mode", "topology", "model", "system", "strategy", "sample_unit", "dtype"};
  for (std::size_t r = 0; r < table.size(); ++r) {
    for (std::size_t c = sweep_columns; c < table.columns().size(); ++c) {
      const std::string& cell = table.rows()[r][c];
      if (kText.count(table.columns()[c]) || cell.empty()) continue;
      char* end = nullptr;
      const double v = std::strtod(cell.c_str(), &end);
      if (end == cell.c_str() + cell.size() && !std::isfinite(v)) {
        throw InputError("row " + std::to_string(r + 1) + ", column " + table.columns()[c] +
                         ": the result is " + cell +
                         ", not a number: the scenario's values are beyond what the model "
                         "computes; nothing was written");
      }
    }
  }
}

CompareSummary compare_scenario(const std::vector<Scenario>& sims, const Scenario& live,
                                const RunOptions& options, int live_runs) {
  const auto start = std::chrono::steady_clock::now();
  if (sims.empty()) throw std::invalid_argument("compare_scenario: no simulated scenario");
  if (live_runs < 1) throw std::invalid_argument("compare_scenario: no live run");
  const Scenario& sim = sims.front();
  std::vector<io::CsvTable> a;
  for (const Scenario& s : sims)
    a.push_back(collect_rows(s, options).summary);
  std::vector<io::CsvTable> lives;  // the live scenario run live_runs times, one after another
  for (int k = 0; k < live_runs; ++k)
    lives.push_back(collect_rows(live, options).summary);
  const io::CsvTable& b = lives.front();
  for (const auto* tables : {&a, &lives}) {
    for (const io::CsvTable& t : *tables) {
      if (t.column("step_time_ms_mean") == io::CsvTable::npos || t.size() != b.size()) {
        throw InputError(sim.path.string() +
                         ": compare needs a training workload (step_time_ms_mean) in both modes");
      }
    }
  }
  std::vector<std::string> columns = sim.sweep_columns;
  for (const char* c : {"model", "system", "n_gpus"})
    columns.emplace_back(c);
  for (const char* c : {"sim_step_ms", "live_step_ms", "sim_step_std_ms", "live_step_std_ms",
                        "sim_throughput_per_gpu", "live_throughput_per_gpu", "sim_seeds",
                        "sim_seed_std_ms", "rel_error", "live_runs", "live_run_std_ms"}) {
    columns.emplace_back(c);
  }
  io::CsvTable out(columns);
  std::vector<double> errors;
  auto at = [](const io::CsvTable& t, std::size_t row, std::string_view col) {
    return t.rows()[row][t.column(col)];
  };
  // A column's mean over several runs of a row, and the runs' sample standard deviation.
  auto mean_over = [&](const std::vector<io::CsvTable>& runs, std::size_t row,
                       std::string_view col) {
    double sum = 0;
    for (const io::CsvTable& t : runs)
      sum += std::stod(at(t, row, col));
    return sum / static_cast<double>(runs.size());
  };
  auto std_over = [&](const std::vector<io::CsvTable>& runs, std::size_t row,
                      std::string_view col) {
    if (runs.size() < 2) return 0.0;
    const double mean = mean_over(runs, row, col);
    double var = 0;
    for (const io::CsvTable& t : runs) {
      const double d = std::stod(at(t, row, col)) - mean;
      var += d * d;
    }
    return std::sqrt(var / static_cast<double>(runs.size() - 1));
  };
  nlohmann::ordered_json live_run_steps = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < b.size(); ++i) {
    Row row(a[0].rows()[i].begin(),
            a[0].rows()[i].begin() + static_cast<long>(sim.sweep_columns.size()));
    for (const char* c : {"model", "system", "n_gpus"})
      row.push_back(at(a[0], i, c));
    const double s = mean_over(a, i, "step_time_ms_mean");
    // One live run: its cells as written; several: their means (and the runs' spread).
    auto live_cell = [&](std::string_view col) {
      return lives.size() == 1 ? at(b, i, col) : io::fmt_fixed(mean_over(lives, i, col), 3);
    };
    const double l = mean_over(lives, i, "step_time_ms_mean");  // one run: its own value
    const double err = (s - l) / l;
    errors.push_back(std::abs(err));
    row.push_back(io::fmt_fixed(s, 3));
    row.push_back(live_cell("step_time_ms_mean"));
    row.push_back(io::fmt_fixed(mean_over(a, i, "step_time_ms_std"), 3));
    row.push_back(live_cell("step_time_ms_std"));
    row.push_back(io::fmt_fixed(mean_over(a, i, "throughput_per_gpu_samples_per_s"), 3));
    row.push_back(live_cell("throughput_per_gpu_samples_per_s"));
    row.push_back(std::to_string(a.size()));
    row.push_back(io::fmt_fixed(std_over(a, i, "step_time_ms_mean"), 3));
    row.push_back(io::fmt_fixed(err, 5));
    row.push_back(std::to_string(lives.size()));
    row.push_back(io::fmt_fixed(std_over(lives, i, "step_time_ms_mean"), 3));
    out.add_row(std::move(row));
    nlohmann::ordered_json runs = nlohmann::ordered_json::array();
    for (const io::CsvTable& t : lives)
      runs.push_back(std::stod(at(t, i, "step_time_ms_mean")));
    live_run_steps.push_back(runs);
  }
  CompareSummary summary;
  std::vector<double> sorted = errors;
  std::sort(sorted.begin(), sorted.end());
  if (!sorted.empty()) {
    const std::size_t n = sorted.size();
    summary.median_abs_error = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
    summary.max_abs_error = sorted.back();
  }
  std::error_code ec;
  std::filesystem::create_directories(options.out_dir, ec);
  summary.csv_path = options.out_dir / (sim.name + ".compare.csv");
  summary.rows = out.size();
  summary.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  nlohmann::ordered_json m;
  m["scenario"] = sim.name;
  m["scenario_file"] = sim.path.string();
  m["scenario_fnv1a64"] = sim.file_hash;
  m["overrides"] = sim.overrides;
  m["seed"] = sim.seed;
  nlohmann::ordered_json seeds = nlohmann::ordered_json::array();
  for (const Scenario& sc : sims)
    seeds.push_back(sc.seed);
  m["sim_seeds"] = seeds;
  m["version"] = ADAPTSIM_VERSION;
  m["git_commit"] = ADAPTSIM_GIT_COMMIT;
  m["calibration_profile"] = sim.calibration.string();
  m["live_placement"] = live.live.placement;
  m["live_runs"] = lives.size();
  m["live_run_step_ms"] = live_run_steps;  // per row, each live run's mean step time
  m["rows"] = summary.rows;
  m["median_abs_rel_error"] = summary.median_abs_error;
  m["max_abs_rel_error"] = summary.max_abs_error;
  m["wall_time_s"] = summary.wall_seconds;
  m["command"] = options.command_line;
  const std::string csv_text = out.render();
  std::string png = render_compare_plot(summary.csv_path, csv_text);
  const std::filesystem::path png_path =
      std::filesystem::path(summary.csv_path).replace_extension(".png");  // NAME.compare.png
  m["plot"] = png.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(png_path.string());
  // All or none: the CSV, the figure and the summary.
  std::vector<io::OutputFile> files{{summary.csv_path, csv_text}};
  if (!png.empty()) files.push_back({png_path, std::move(png)});
  files.push_back({options.out_dir / (sim.name + ".compare.json"), dump_json(m)});
  io::write_files_atomic(files);
  if (files.size() == 3) std::printf("wrote %s\n", png_path.string().c_str());
  return summary;
}

}  // namespace adaptsim::run
