// adaptsim-nccl: an nccl-tests-style sweep of NCCL collectives (see sweep.h), printed as an
// nccl-tests table and, with -o, written as one CSV per collective (sweep_csv.h).
// Exit codes: 0 success, 1 run-time failure or wrong results, 2 bad input (including asking for
// more GPUs than are visible).
#include <CLI/CLI.hpp>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "hw/nccl/process_group.h"
#include "hw/nccl/sweep.h"
#include "hw/nccl/sweep_csv.h"
#include "sim/core/error.h"
#include "sim/core/units.h"

using namespace adaptsim;
using namespace adaptsim::hw;

namespace {

constexpr int kExitRuntime = 1;
constexpr int kExitInput = 2;

std::uint64_t parse_size_option(const char* option, const std::string& text) {
  try {
    return parse_size_bytes(text);
  } catch (const InputError& e) {
    throw InputError(std::string(option) + ": " + e.what());
  }
}

// nccl-tests' time format: more decimals for short times.
std::string format_time_us(double us) {
  char buf[32];
  std::snprintf(buf, sizeof buf, us < 100 ? "%.2f" : (us < 10000 ? "%.1f" : "%.0f"), us);
  return buf;
}

void print_row(const coll::SweepRow& r) {
  std::printf("%14llu %13llu %9s %6s %15s %9s %8.2f %8.2f %7llu\n",
              static_cast<unsigned long long>(r.size_bytes),
              static_cast<unsigned long long>(r.count), r.type.c_str(), r.redop.c_str(),
              std::string(coll::collective_name(r.collective)).c_str(),
              format_time_us(r.time_us).c_str(), r.algbw_GBps, r.busbw_GBps,
              static_cast<unsigned long long>(r.wrong));
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"adaptsim-nccl: nccl-tests-style sweep of NCCL collectives"};
  app.footer(
      R"(Sizes take a unit: 8B, 64KiB, 1MiB, 1GiB (KiB/MiB/GiB powers of 1024, KB/MB/GB of 1000).
Examples:
  adaptsim-nccl --gpus 8 --minbytes 8B --maxbytes 1GiB --stepfactor 2 -o out/nccl
  adaptsim-nccl --collective all --dtype bfloat16 --maxbytes 256MiB
  mpirun -np 16 -N 8 adaptsim-nccl --gpus 1 -o out/nccl     # one process per GPU, 2 nodes
Exit codes: 0 success, 1 run-time failure or wrong results, 2 bad input.)");

  SweepOptions options;
  std::string min_bytes = "8B";
  std::string max_bytes = "1GiB";
  std::string op = "sum";
  std::string dtype = "float32";
  std::string collectives = "all_reduce";
  std::string out_dir;
  bool force_mpi = false;
  app.add_option("--gpus", options.gpus,
                 "GPUs driven by this process (default: all visible; 1 per process under mpirun)");
  app.add_option("--minbytes", min_bytes, "Smallest size (default 8B)");
  app.add_option("--maxbytes", max_bytes, "Largest size (default 1GiB)");
  app.add_option("--stepfactor", options.step_factor, "Multiplicative size step (default 2)");
  app.add_option("--iters", options.iters, "Timed iterations per size (default 20)");
  app.add_option("--warmup-iters", options.warmup_iters, "Warm-up iterations (default 5)");
  app.add_option("--check", options.check_iters,
                 "Correctness-check rounds per size, 0 disables (default 1)");
  app.add_option("--op", op, "Reduction: sum, min, max (default sum)");
  app.add_option("--dtype", dtype,
                 "float32, float64, float16, bfloat16, int32, int64, uint8 (default float32)");
  app.add_option("--collective", collectives,
                 "all_reduce, all_gather, reduce_scatter, broadcast, a comma list, or all");
  app.add_option("--root", options.root, "Broadcast root rank (default 0)");
  app.add_option("-o,--out", out_dir, "Folder for the CSV files (created if missing)");
  app.add_flag("--mpi", force_mpi,
               "Bootstrap over MPI even when no MPI launcher is detected in the environment");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : kExitInput;
  }

  std::unique_ptr<ProcessGroup> group;
  try {
    options.min_bytes = parse_size_option("--minbytes", min_bytes);
    options.max_bytes = parse_size_option("--maxbytes", max_bytes);
    const auto parsed_op = coll::parse_reduce_op(op);
    if (!parsed_op) throw InputError("--op: expected sum, min or max, got \"" + op + "\"");
    options.op = *parsed_op;
    const auto parsed_dtype = coll::parse_dtype(dtype);
    if (!parsed_dtype) {
      throw InputError(
          "--dtype: expected float32, float64, float16, bfloat16, int32, int64 or "
          "uint8, got \"" +
          dtype + "\"");
    }
    options.dtype = *parsed_dtype;
    options.collectives = parse_sweep_collectives(collectives, "--collective");
    validate_sweep_options(options);

    if (force_mpi || launched_by_mpi()) {
      group = make_mpi_process_group();
    } else {
      group = std::make_unique<SingleProcessGroup>();
    }
    const bool leader = group->rank() == 0;

    SweepCallbacks callbacks;
    callbacks.on_note = [&](const std::string& text) {
      if (leader) std::printf("# note: %s\n", text.c_str());
    };
    callbacks.on_start = [&](int n_ranks, const std::vector<std::string>& devices) {
      if (!leader) return;
      std::printf(
          "# adaptsim-nccl  ranks %d (%d process%s)  minBytes %llu maxBytes %llu  step %llu(factor)"
          "  warmup iters %d  iters %d  validation %d\n",
          n_ranks, group->size(), group->size() == 1 ? "" : "es",
          static_cast<unsigned long long>(options.min_bytes),
          static_cast<unsigned long long>(options.max_bytes),
          static_cast<unsigned long long>(options.step_factor), options.warmup_iters, options.iters,
          options.check_iters);
      for (const auto& d : devices)
        std::printf("#  process 0 device %s\n", d.c_str());
      std::printf("#\n# %12s %13s %9s %6s %15s %9s %8s %8s %7s\n", "size", "count", "type", "redop",
                  "collective", "time", "algbw", "busbw", "#wrong");
      std::printf("# %12s %13s %9s %6s %15s %9s %8s %8s %7s\n", "(B)", "(elements)", "", "", "",
                  "(us)", "(GB/s)", "(GB/s)", "");
    };
    callbacks.on_row = [&](const coll::SweepRow& row) {
      if (leader) print_row(row);
    };

    const std::vector<coll::SweepRow> rows = run_nccl_sweep(options, *group, callbacks);

    std::uint64_t wrong = 0;
    double busbw_sum = 0;
    for (const auto& r : rows) {
      wrong += r.wrong;
      busbw_sum += r.busbw_GBps;
    }
    if (leader) {
      if (!out_dir.empty() && !rows.empty()) {
        std::filesystem::create_directories(out_dir);
        for (coll::Collective c : options.collectives) {
          std::vector<coll::SweepRow> of_c;
          for (const auto& r : rows) {
            if (r.collective == c) of_c.push_back(r);
          }
          const auto path = std::filesystem::path(out_dir) /
                            sweep_csv_filename(c, options.dtype, options.op, rows.front().n_ranks);
          coll::write_sweep_csv(path, of_c, kNcclSweepCsv);
          std::printf("# wrote %s\n", path.string().c_str());
        }
      }
      std::printf("# Out of bounds values : %llu %s\n", static_cast<unsigned long long>(wrong),
                  wrong == 0 ? "OK" : "FAILED");
      std::printf("# Avg bus bandwidth    : %.3f GB/s\n",
                  rows.empty() ? 0.0 : busbw_sum / static_cast<double>(rows.size()));
    }
    return wrong == 0 ? 0 : kExitRuntime;
  } catch (const InputError& e) {
    std::fprintf(stderr, "adaptsim-nccl: error: %s\n", e.what());
    if (group) group->abort(kExitInput);
    return kExitInput;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "adaptsim-nccl: failed: %s\n", e.what());
    if (group) group->abort(kExitRuntime);
    return kExitRuntime;
  }
}
