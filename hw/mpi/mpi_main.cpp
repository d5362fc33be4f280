// adaptsim-mpi: an nccl-tests style sweep (all_reduce_perf) of the MPI library's MPI_Allreduce,
// float32 sum, across the ranks mpirun starts; each row names the coll/tuned algorithm that ran.
//
//   mpirun -np 4 adaptsim-mpi --minbytes 8B --maxbytes 256MiB -o out/mpi
//   mpirun -np 4 --mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm 4
//       adaptsim-mpi ...                     (ring forced; the rows say "ring")
//
// Writes <output>/allreduce_mpi_<fixed|forced algorithm|default>_<N>r.csv (rank 0; "default":
// not Open MPI's coll/tuned). Exit codes: 0
// success; 1 wrong results or a run-time failure; 2 bad input (one line on stderr, from rank 0).

#include <CLI/CLI.hpp>

#define OMPI_SKIP_MPICXX 1  // the C API only: Open MPI's deprecated C++ bindings warn
#include <mpi.h>

#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "hw/mpi/mpi_allreduce_sweep.h"
#include "hw/mpi/ompi_tuned.h"
#include "hw/tcp/mpi_rendezvous.h"
#include "sim/coll/sweep_row.h"
#include "sim/core/error.h"
#include "sim/core/units.h"

namespace {

using namespace adaptsim;
using namespace adaptsim::mpi;

struct ToolOptions {
  std::string min_bytes = "8B";
  std::string max_bytes = "64MiB";
  std::uint64_t step_factor = 2;
  int iters = 20;
  int warmup_iters = 5;
  int check = 1;
  std::string large_bytes;  // empty: every size runs --iters
  int large_iters = 3;
  int large_warmup_iters = 1;
  std::string output_dir;
  bool quiet = false;
};

MpiSweepOptions sweep_options(const ToolOptions& t) {
  MpiSweepOptions o;
  o.sweep.min_bytes = parse_size_bytes(t.min_bytes);
  o.sweep.max_bytes = parse_size_bytes(t.max_bytes);
  o.sweep.step_factor = t.step_factor;
  o.sweep.iters = t.iters;
  o.sweep.warmup_iters = t.warmup_iters;
  o.sweep.check = t.check != 0;
  if (!t.large_bytes.empty()) o.large_bytes = parse_size_bytes(t.large_bytes);
  o.large_iters = t.large_iters;
  o.large_warmup_iters = t.large_warmup_iters;
  validate_mpi_sweep_options(o);
  return o;
}

// Runs the sweep between MPI_Init and MPI_Finalize; returns the process's exit code.
int run_sweep(const ToolOptions& t, const MpiSweepOptions& sweep) {
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SINGLE, &provided);
  int rank = 0, n_ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n_ranks);
  const bool leader = rank == 0;
  const std::string version = tcp::mpi_library_version();
  const bool ompi41 = version.rfind("Open MPI v4.1", 0) == 0;
  const TunedAllreduceSetting setting = read_tuned_allreduce_setting();
  const bool forced =
      setting.found && setting.use_dynamic_rules != 0 && setting.forced_algorithm != 0;
  const std::string mode = forced ? std::string(tuned_allreduce_name(setting.forced_algorithm))
                           : setting.found ? "fixed"
                                           : "default";
  if (leader && !t.quiet) {
    std::cout << "# " << version << ", " << n_ranks << " ranks\n";
    if (setting.found) {
      std::cout << "# coll_tuned_use_dynamic_rules=" << setting.use_dynamic_rules
                << " coll_tuned_allreduce_algorithm=" << setting.forced_algorithm << " ("
                << tuned_allreduce_name(setting.forced_algorithm)
                << ") coll_tuned_allreduce_algorithm_segmentsize=" << setting.segment_size_bytes
                << "\n";
    } else {
      std::cout << "# coll_tuned's parameters are not visible through MPI_T\n";
    }
  }
  bool first = true;
  auto on_row = [&](const coll::SweepRow& row) {
    if (!leader || t.quiet) return;
    if (first) {
      coll::SweepRow table = row;  // the header names the mode; each row its algorithm
      table.algorithm = forced          ? mode
                        : setting.found ? "coll/tuned's fixed decision"
                                        : "the MPI library's choice";
      std::cout << tcp::sweep_table_header(table) << "  algorithm\n";
    }
    first = false;
    std::cout << tcp::sweep_table_row(row) << "  " << row.algorithm << std::endl;
  };
  const auto label = [&](int n, std::uint64_t count, std::uint64_t bytes) {
    return allreduce_label(setting, ompi41, n, count, bytes);
  };
  const std::vector<coll::SweepRow> rows = run_mpi_allreduce_sweep(sweep, label, on_row);
  std::uint64_t wrong = 0;
  for (const coll::SweepRow& r : rows)
    wrong += r.wrong;
  int code = 0;
  if (leader && !t.output_dir.empty()) {
    try {
      const std::filesystem::path dir(t.output_dir);
      std::filesystem::create_directories(dir);
      const auto path = dir / ("allreduce_mpi_" + mode + "_" + std::to_string(n_ranks) + "r.csv");
      coll::write_sweep_csv(path, rows, kMpiAllReduceCsv);
      if (!t.quiet) std::cout << "# wrote " << path.string() << std::endl;
    } catch (const std::exception& e) {
      print_error_line("adaptsim-mpi", e.what());
      code = 1;
    }
  }
  if (leader && wrong > 0) {
    print_error_line("adaptsim-mpi", std::to_string(wrong) + " wrong result elements");
    code = 1;
  }
  MPI_Finalize();
  return code;
}

int run_tool(int argc, char** argv) {
  ToolOptions t;
  CLI::App app{"MPI_Allreduce sweep (nccl-tests style, float32 sum) of the MPI library in use"};
  app.set_help_flag("-h,--help", "Print this help and exit");
  app.footer(
      R"(Sizes take a unit: 8B, 64KiB, 1MiB (KiB/MiB/GiB powers of 1024, KB/MB/GB of 1000).
Rows name the coll/tuned algorithm: "fixed:<name>" where Open MPI 4.1's fixed decision chose it,
or the forced one (--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm N).
Examples:
  mpirun -np 4 adaptsim-mpi --maxbytes 256MiB --large-bytes 16MiB --large-iters 3 -o out/mpi
Exit codes: 0 success, 1 run-time failure or wrong results, 2 bad input.)");
  app.add_option("-b,--minbytes", t.min_bytes, "Smallest size, e.g. 8B")->capture_default_str();
  app.add_option("-e,--maxbytes", t.max_bytes, "Largest size, e.g. 256MiB")->capture_default_str();
  app.add_option("-f,--stepfactor", t.step_factor, "Size multiplier between points")
      ->capture_default_str();
  app.add_option("-n,--iters", t.iters, "Timed iterations per point")->capture_default_str();
  app.add_option("-w,--warmup-iters", t.warmup_iters, "Untimed iterations first")
      ->capture_default_str();
  app.add_option("-c,--check", t.check, "Verify results (0/1)")->capture_default_str();
  app.add_option("--large-bytes", t.large_bytes,
                 "From this size up, run --large-iters and --large-warmup-iters instead");
  app.add_option("--large-iters", t.large_iters, "Timed iterations of the large sizes")
      ->capture_default_str();
  app.add_option("--large-warmup-iters", t.large_warmup_iters,
                 "Untimed iterations of the large sizes")
      ->capture_default_str();
  app.add_option("-o,--output", t.output_dir, "Directory for allreduce_mpi_<mode>_<N>r.csv");
  app.add_flag("-q,--quiet", t.quiet, "No table on stdout");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    throw InputError(e.what());
  }
  // Validated before MPI_Init: bad input never starts MPI.
  const MpiSweepOptions sweep = sweep_options(t);
  return run_sweep(t, sweep);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run_tool(argc, argv);
  } catch (const adaptsim::InputError& e) {
    // Bad input is reported once, by the rank mpirun numbered 0 (or a process mpirun did not
    // start).
    if (adaptsim::tcp::mpirun_rank_from_env().value_or(0) == 0)
      adaptsim::print_error_line("adaptsim-mpi", e.what());
    return 2;
  } catch (const std::exception& e) {
    adaptsim::print_error_line("adaptsim-mpi", e.what());
    return 1;
  }
}
