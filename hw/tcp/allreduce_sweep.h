#pragma once
// An nccl-tests style all-reduce sweep over a live Runtime (all_reduce_perf): for every strategy
// and every size from min_bytes to max_bytes (times step_factor), warm-up iterations, a barrier,
// then `iters` back-to-back all-reduces timed with a steady clock; time per op is the mean over
// the iterations, and the row takes the slowest rank's (the collective is done when the last
// rank is). With `check`, inputs are small rank-dependent integers whose exact reduction is
// known in every dtype, and every rank counts the elements of its result that differ.
//
// Bandwidths, as nccl-tests (doc/PERFORMANCE.md) defines them, in GB/s = 1e9 B/s:
//   algbw = size_bytes / time,   busbw = algbw * 2 (n - 1) / n (coll::bus_bandwidth_factor).
// Rows are coll::SweepRow (sim/coll/sweep_row.h), the algorithm field naming the strategy.
//
// Every rank calls run_allreduce_sweep() with the same options; all ranks get all rows. This is
// the library side of `adaptsim-tcp` and of `calibrate --backend tcp`.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "hw/tcp/runtime.h"
#include "sim/coll/allreduce.h"
#include "sim/coll/dtype.h"
#include "sim/coll/strategy.h"
#include "sim/coll/sweep_row.h"

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

// adaptsim-tcp's CSV (allreduce_tcp.csv), nccl-tests' columns with the strategy:
//   size_bytes,count,type,redop,strategy,n_ranks,time_us,algbw_GBps,busbw_GBps,wrong
inline const coll::SweepCsvFormat kAllReduceSweepCsv = {
    {coll::SweepColumn::kSizeBytes, coll::SweepColumn::kCount, coll::SweepColumn::kType,
     coll::SweepColumn::kRedop, coll::SweepColumn::kStrategy, coll::SweepColumn::kNRanks,
     coll::SweepColumn::kTimeUs, coll::SweepColumn::kAlgbwGBps, coll::SweepColumn::kBusbwGBps,
     coll::SweepColumn::kWrong},
    6};

// Throws InputError naming the bad option (max < min, factor < 2, iters < 1, ...).
void validate_sweep_options(const SweepOptions& options);
// The message sizes of the sweep, in bytes, before rounding down to whole elements.
std::vector<std::uint64_t> sweep_sizes(const SweepOptions& options);

// Runs the sweep; `on_row` sees each row as soon as it is measured (on every rank). A row's
// size_bytes is count x the dtype's size (sizes round down to whole elements), its time the mean
// per all-reduce of the slowest rank, and its wrong count summed over ranks (0 when not checked).
// Throws RuntimeFailure from the Runtime.
//
// With `check`, the receive buffer is poisoned (0xff) after the warm-up and before the barrier
// that starts the timed iterations, and checked after them: the result counted is one the
// timed all-reduces wrote, and the timed region holds no copy.
std::vector<coll::SweepRow> run_allreduce_sweep(
    Runtime& runtime, const SweepOptions& options,
    const std::function<void(const coll::SweepRow&)>& on_row = {});

// One row of the sweep: `size_bytes` (rounded down to whole elements) all-reduced by `algo`
// with the options' warm-up, timing and check. `send` holds fill_check_input's pattern for this
// rank and `recv` is scratch, both at least size_bytes long (std::invalid_argument otherwise).
// The sweep's building block; tests pass their own algorithms.
coll::SweepRow measure_allreduce_point(Runtime& runtime, const coll::AllReduce& algo,
                                       const SweepOptions& options, std::uint64_t size_bytes,
                                       coll::ConstBytes send, coll::Bytes recv);

// The check pattern: element i of rank r's input (small non-negative integers, chosen so that
// every partial and final result is exact in `dtype`), and the number of elements of `result`
// that differ from the exact reduction over n_ranks ranks.
void fill_check_input(coll::DType dtype, coll::ReduceOp op, int rank, int n_ranks, coll::Bytes out);
std::uint64_t count_wrong(coll::DType dtype, coll::ReduceOp op, int n_ranks,
                          coll::ConstBytes result);

// Human-readable table in the style of nccl-tests' output: the header of the table of rows that
// share `row`'s strategy, rank count, type and operator, and one row.
std::string sweep_table_header(const coll::SweepRow& row);
std::string sweep_table_row(const coll::SweepRow& row);

}  // namespace adaptsim::tcp
