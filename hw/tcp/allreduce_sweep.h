#pragma once
// An nccl-tests style all-reduce sweep over a live Runtime (all_reduce_perf): for every strategy
// and every size from min_bytes to max_bytes (times step_factor), warm-up iterations, a barrier,
// then `iters` back-to-back all-reduces timed with a steady clock; time per op is the mean over
// the iterations, and the row takes the slowest rank's (the collective is done when the last
// rank is). With `check`, inputs are small rank-dependent integers whose exact reduction is
// known in every dtype, and every rank counts the elements of its result that differ.
//
// Bandwidths, as nccl-tests (doc/PERFORMANCE.md) defines them, in GB/s = 1e9 B/s:
//   algbw = size_bytes / time,   busbw = algbw * 2 (n - 1) / n.
//
// Every rank calls run_allreduce_sweep() with the same options; all ranks get all rows. This is
// the library side of `adaptsim-tcp` and of `calibrate --backend tcp`.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "hw/tcp/runtime.h"
#include "sim/coll/allreduce.h"
#include "sim/coll/dtype.h"
#include "sim/coll/strategy.h"

namespace adaptsim::tcp {

struct SweepOptions {
  std::vector<coll::StrategyKind> strategies = coll::all_strategies();
  std::uint64_t min_bytes = 8;
  std::uint64_t max_bytes = std::uint64_t{64} << 20;
  std::uint64_t step_factor =
      2;                 // sizes min, min*f, min*f^2, ... <= max (0 B is followed by 1 element)
  int iters = 20;        // timed iterations per point
  int warmup_iters = 5;  // untimed iterations before them
  bool check = true;
  coll::DType dtype = coll::DType::kF32;
  coll::ReduceOp op = coll::ReduceOp::kSum;
  TimeNs timeout_ns = 30 * kNsPerSecond;  // per all-reduce (and per barrier)
  coll::AllReduceOptions allreduce;
};

struct SweepRow {
  std::uint64_t size_bytes = 0;  // count * dtype size (sizes round down to whole elements)
  std::uint64_t count = 0;
  coll::DType dtype = coll::DType::kF32;
  coll::ReduceOp op = coll::ReduceOp::kSum;
  coll::StrategyKind strategy = coll::StrategyKind::kAuto;
  int n_ranks = 0;
  double time_us = 0;  // mean time per all-reduce, slowest rank
  double algbw_GBps = 0;
  double busbw_GBps = 0;
  std::uint64_t wrong = 0;  // wrong result elements, summed over ranks (0 when not checked)
};

// Throws InputError naming the bad option (max < min, factor < 2, iters < 1, ...).
void validate_sweep_options(const SweepOptions& options);
// The message sizes of the sweep, in bytes, before rounding down to whole elements.
std::vector<std::uint64_t> sweep_sizes(const SweepOptions& options);

// Runs the sweep; `on_row` sees each row as soon as it is measured (on every rank). Throws
// RuntimeFailure from the Runtime.
//
// With `check`, the receive buffer is poisoned (0xff) after the warm-up and before the barrier
// that starts the timed iterations, and checked after them: the result counted is one the
// timed all-reduces wrote, and the timed region holds no copy.
std::vector<SweepRow> run_allreduce_sweep(Runtime& runtime, const SweepOptions& options,
                                          const std::function<void(const SweepRow&)>& on_row = {});

// One row of the sweep: `size_bytes` (rounded down to whole elements) all-reduced by `algo`
// with the options' warm-up, timing and check. `send` holds fill_check_input's pattern for this
// rank and `recv` is scratch, both at least size_bytes long (std::invalid_argument otherwise).
// The sweep's building block; tests pass their own algorithms.
SweepRow measure_allreduce_point(Runtime& runtime, const coll::AllReduce& algo,
                                 const SweepOptions& options, std::uint64_t size_bytes,
                                 coll::ConstBytes send, coll::Bytes recv);

// The check pattern: element i of rank r's input (small non-negative integers, chosen so that
// every partial and final result is exact in `dtype`), and the number of elements of `result`
// that differ from the exact reduction over n_ranks ranks.
void fill_check_input(coll::DType dtype, coll::ReduceOp op, int rank, int n_ranks, coll::Bytes out);
std::uint64_t count_wrong(coll::DType dtype, coll::ReduceOp op, int n_ranks,
                          coll::ConstBytes result);

// CSV: size_bytes,count,type,redop,strategy,n_ranks,time_us,algbw_GBps,busbw_GBps,wrong
std::string sweep_csv_header();
std::string sweep_csv_row(const SweepRow& row);
// Writes header + rows to `path` through a temporary file in the same directory and a rename,
// so a failed run never leaves half a file. Throws RuntimeFailure naming the path.
void write_sweep_csv(const std::filesystem::path& path, const std::vector<SweepRow>& rows);

// Human-readable table in the style of nccl-tests' output.
std::string sweep_table_header(coll::StrategyKind strategy, int n_ranks, coll::DType dtype,
                               coll::ReduceOp op);
std::string sweep_table_row(const SweepRow& row);

}  // namespace adaptsim::tcp
