// adaptsim-tcp: an nccl-tests style all-reduce sweep (all_reduce_perf) across real processes,
// with every strategy of sim/coll running over the live TCP transport.
//
//   adaptsim-tcp --procs 4 --strategy all --minbytes 8B --maxbytes 64MiB -o out/
//   adaptsim-tcp --hosts 10.0.0.1:7000,10.0.0.2:7000 --rank 0 ...   (one per host)
//   mpirun -np 4 adaptsim-tcp ...
//
// Exit codes: 0 success; 1 a run-time failure (a peer died, a timeout, wrong results); 2 bad
// input (one line on stderr).

#include <CLI/CLI.hpp>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "hw/tcp/allreduce_sweep.h"
#include "hw/tcp/launcher.h"
#include "hw/tcp/rendezvous.h"
#include "hw/tcp/rendezvous_cli.h"
#include "sim/coll/strategy.h"
#include "sim/core/error.h"
#include "sim/core/units.h"

namespace {

using namespace adaptsim;
using namespace adaptsim::tcp;

struct ToolOptions {
  RendezvousOptions rendezvous;
  std::string strategy = "all";
  std::string min_bytes = "8B";
  std::string max_bytes = "64MiB";
  std::uint64_t step_factor = 2;
  int iters = 20;
  int warmup_iters = 5;
  int check = 1;
  std::string dtype = "float32";
  std::string op = "sum";
  std::string timeout = "30s";
  std::string chunk = "1MiB";
  std::string congestion_control;
  int tag_threads = -1;
  std::string output_dir;
  bool quiet = false;
  // Test hooks: this rank kills itself (SIGKILL) after this many sent messages.
  int fault_rank = -1;
  std::uint64_t fault_after_sends = 0;
};

constexpr const char* kCsvName = "allreduce_tcp.csv";

SweepOptions sweep_options(const ToolOptions& t) {
  SweepOptions s;
  s.strategies = coll::parse_strategy_list(t.strategy, "--strategy");
  s.min_bytes = parse_size_bytes(t.min_bytes);
  s.max_bytes = parse_size_bytes(t.max_bytes);
  s.step_factor = t.step_factor;
  s.iters = t.iters;
  s.warmup_iters = t.warmup_iters;
  s.check = t.check != 0;
  const auto dtype = coll::parse_dtype(t.dtype);
  if (!dtype)
    throw InputError("--dtype: expected float32, float16, bfloat16 or float64, got \"" + t.dtype +
                     "\"");
  s.dtype = *dtype;
  const auto op = coll::parse_reduce_op(t.op);
  if (!op) throw InputError("--op: expected sum, min or max, got \"" + t.op + "\"");
  s.op = *op;
  s.timeout_ns = parse_duration_ns(t.timeout);
  s.allreduce.chunk_bytes = parse_size_bytes(t.chunk);
  validate_sweep_options(s);
  return s;
}

int run_worker(const ToolOptions& t, const SweepOptions& sweep, RendezvousMode mode) {
  RuntimeOptions ro;
  ro.transport.connect_timeout_ns = sweep.timeout_ns;
  ro.transport.congestion_control = t.congestion_control;
  ro.transport.tag_threads = t.tag_threads;
  // A message may carry a whole tensor when the chunk is larger than the tensor.
  ro.transport.limits.max_payload_bytes =
      std::max<std::uint64_t>(ro.transport.limits.max_payload_bytes, sweep.max_bytes);
  const int my_rank = rank_before_connect(t.rendezvous, mode);
  if (t.fault_rank >= 0 && t.fault_rank == my_rank) {
    ro.transport.fault = {FaultAction::kKillProcess, t.fault_after_sends};
  }
  std::unique_ptr<Runtime> rt = connect_runtime(t.rendezvous, mode, ro);
  const bool leader = rt->rank() == 0;
  std::string current;  // the strategy of the table being printed
  bool first = true;
  auto on_row = [&](const coll::SweepRow& row) {
    if (!leader || t.quiet) return;
    if (first || row.algorithm != current) {
      std::cout << (first ? "" : "\n") << sweep_table_header(row) << '\n';
      current = row.algorithm;
      first = false;
    }
    std::cout << sweep_table_row(row) << std::endl;
  };
  const std::vector<coll::SweepRow> rows = run_allreduce_sweep(*rt, sweep, on_row);
  rt->check_fault_fired();
  std::uint64_t wrong = 0;
  for (const coll::SweepRow& r : rows)
    wrong += r.wrong;
  if (leader && !t.output_dir.empty()) {
    const std::filesystem::path dir(t.output_dir);
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) throw RuntimeFailure("cannot create " + dir.string() + ": " + ec.message());
    coll::write_sweep_csv(dir / kCsvName, rows, kAllReduceSweepCsv);
    if (!t.quiet) std::cout << "# wrote " << (dir / kCsvName).string() << std::endl;
  }
  rt->shutdown();
  if (wrong > 0) {
    throw RuntimeFailure("rank " + std::to_string(rt->rank()) + ": " + std::to_string(wrong) +
                         " wrong result elements");
  }
  return 0;
}

int run_tool(int argc, char** argv) {
  ToolOptions t;
  CLI::App app{"All-reduce sweep (nccl-tests style) over the live TCP transport"};
  app.set_help_flag("-h,--help", "Print this help and exit");
  app.footer(
      R"(Sizes take a unit: 8B, 64KiB, 1MiB (KiB/MiB/GiB powers of 1024, KB/MB/GB of 1000).
A job's ranks share a secret: the local launcher (--procs) and mpirun make one; a host list
needs --secret-file FILE (or ADAPTSIM_JOB_SECRET) on every rank.
Examples:
  adaptsim-tcp --procs 4 --strategy all --maxbytes 64MiB -o out/tcp
  adaptsim-tcp --procs 4 --strategy CLASSIC_RING --minbytes 64MiB --maxbytes 64MiB --tag-threads 0
  mpirun -np 8 adaptsim-tcp --strategy BINARY_TREE_STAR -o out/tcp
Exit codes: 0 success, 1 run-time failure or wrong results, 2 bad input.)");
  add_rendezvous_options(app, t.rendezvous);
  add_congestion_control_option(app, t.congestion_control);
  app.add_option("--strategy", t.strategy, "Strategy name, comma list, or all")
      ->capture_default_str();
  app.add_option("-b,--minbytes", t.min_bytes, "Smallest size, e.g. 8B")->capture_default_str();
  app.add_option("-e,--maxbytes", t.max_bytes, "Largest size, e.g. 64MiB")->capture_default_str();
  app.add_option("-f,--stepfactor", t.step_factor, "Size multiplier between points")
      ->capture_default_str();
  app.add_option("-n,--iters", t.iters, "Timed iterations per point")->capture_default_str();
  app.add_option("-w,--warmup-iters", t.warmup_iters, "Untimed iterations first")
      ->capture_default_str();
  app.add_option("-c,--check", t.check, "Verify results (0/1)")->capture_default_str();
  app.add_option("-d,--dtype", t.dtype, "float32|float16|bfloat16|float64")->capture_default_str();
  app.add_option("--op", t.op, "sum|min|max")->capture_default_str();
  app.add_option("--timeout", t.timeout, "Limit of every blocking step, e.g. 30s")
      ->capture_default_str();
  app.add_option("--chunk", t.chunk, "KungFu chunk size of graph strategies")
      ->capture_default_str();
  app.add_option("--tag-threads", t.tag_threads,
                 "Threads per rank computing frame tags beside its loop thread; -1: as many as "
                 "the host's cores left free by its ranks allow (at most 2), 0: none")
      ->check(CLI::Range(-1, 64))
      ->capture_default_str();
  app.add_option("-o,--output", t.output_dir, "Directory for allreduce_tcp.csv");
  app.add_flag("-q,--quiet", t.quiet, "No table on stdout");
  add_fault_hook_options(app, t.fault_rank, t.fault_after_sends);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    throw InputError(e.what());
  }

  const SweepOptions sweep = sweep_options(t);
  check_congestion_control(t.congestion_control);
  const RendezvousMode mode = choose_rendezvous(t.rendezvous);
  if (mode == RendezvousMode::kLauncher) {
    const LaunchResult result =
        launch_self(t.rendezvous.procs, argc, argv, sweep.timeout_ns + 2 * kNsPerSecond);
    if (result.ok()) return 0;
    adaptsim::print_error_line("adaptsim-tcp", "launcher: " + result.summary());
    return 1;
  }
  return run_worker(t, sweep, mode);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run_tool(argc, argv);
  } catch (const adaptsim::InputError& e) {
    adaptsim::print_error_line("adaptsim-tcp", e.what());
    return 2;
  } catch (const std::exception& e) {
    adaptsim::print_error_line("adaptsim-tcp", e.what());
    return 1;
  }
}
