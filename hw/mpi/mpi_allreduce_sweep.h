#pragma once
// An nccl-tests style sweep of the MPI library's own MPI_Allreduce (float32, MPI_SUM) over
// MPI_COMM_WORLD: the baseline of Horovod 0.16's CPU all-reduce path (issue 17 item 1). Timing
// and checking are adaptsim-tcp's (hw/tcp/allreduce_sweep.h), so the two tools' rows compare
// point for point: per size, warm-up iterations, the receive buffer poisoned, a barrier, then
// back-to-back calls timed with a steady clock; time per call is the mean over the timed calls
// and the row takes the slowest rank's; every rank then counts the wrong elements of its result
// (fill_check_input's pattern: small integers, exact in float32) and the row sums them.
//   algbw = size_bytes / time,   busbw = algbw * 2 (n - 1) / n   (GB/s = 1e9 B/s)
// Rows are coll::SweepRow; the algorithm field names what coll/tuned ran (ompi_tuned.h).

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "hw/tcp/allreduce_sweep.h"
#include "sim/coll/sweep_row.h"

namespace adaptsim::mpi {

struct MpiSweepOptions {
  // Sizes, iterations, warm-up and check as adaptsim-tcp's; dtype and op must stay float32 and
  // sum, strategies and timeouts are not used (MPI chooses the algorithm and has no timeout).
  tcp::SweepOptions sweep;
  // From this size up, points run large_iters timed and large_warmup_iters untimed calls, so
  // that a sweep up to 256 MiB at 1 Gbit/s takes minutes, not hours.
  std::uint64_t large_bytes = std::numeric_limits<std::uint64_t>::max();
  int large_iters = 3;
  int large_warmup_iters = 1;
};

// adaptsim-mpi's CSV, adaptsim-tcp's columns with the algorithm in place of the strategy:
//   size_bytes,count,type,redop,algorithm,n_ranks,time_us,algbw_GBps,busbw_GBps,wrong
inline const coll::SweepCsvFormat kMpiAllReduceCsv = {
    {coll::SweepColumn::kSizeBytes, coll::SweepColumn::kCount, coll::SweepColumn::kType,
     coll::SweepColumn::kRedop, coll::SweepColumn::kAlgorithm, coll::SweepColumn::kNRanks,
     coll::SweepColumn::kTimeUs, coll::SweepColumn::kAlgbwGBps, coll::SweepColumn::kBusbwGBps,
     coll::SweepColumn::kWrong},
    6};

// Throws InputError naming the bad option (max < min, iterations < 1, a size whose element
// count exceeds MPI's int count, a dtype other than float32 or an op other than sum).
void validate_mpi_sweep_options(const MpiSweepOptions& options);

// Labels a row: the algorithm run for `count` elements of `size_bytes` on `n_ranks` ranks.
using RowLabeller =
    std::function<std::string(int n_ranks, std::uint64_t count, std::uint64_t size_bytes)>;

// Runs the sweep on MPI_COMM_WORLD (MPI initialised by the caller); every rank gets all rows,
// and `on_row` sees each as soon as it is measured. MPI errors are MPI's default, fatal.
std::vector<coll::SweepRow> run_mpi_allreduce_sweep(
    const MpiSweepOptions& options, const RowLabeller& label,
    const std::function<void(const coll::SweepRow&)>& on_row = {});

}  // namespace adaptsim::mpi
