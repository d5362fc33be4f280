#include "hw/mpi/mpi_allreduce_sweep.h"

#define OMPI_SKIP_MPICXX 1  // the C API only: Open MPI's deprecated C++ bindings warn
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <memory>

#include "sim/core/error.h"

namespace adaptsim::mpi {
namespace {

constexpr std::size_t kFloatBytes = 4;

// One point: `size_bytes` (whole floats) all-reduced `iters` times after `warmup` calls.
coll::SweepRow measure_point(const MpiSweepOptions& o, const RowLabeller& label, int n_ranks,
                             std::uint64_t size_bytes, const std::byte* send, std::byte* recv) {
  const bool large = size_bytes >= o.large_bytes;
  const int iters = large ? o.large_iters : o.sweep.iters;
  const int warmup = large ? o.large_warmup_iters : o.sweep.warmup_iters;
  coll::SweepRow row;
  row.count = size_bytes / kFloatBytes;
  row.size_bytes = row.count * kFloatBytes;
  row.type = std::string(coll::dtype_name(coll::DType::kF32));
  row.redop = std::string(coll::reduce_op_name(coll::ReduceOp::kSum));
  row.collective = coll::Collective::kAllReduce;
  row.algorithm = label ? label(n_ranks, row.count, row.size_bytes) : "";
  row.n_ranks = n_ranks;
  const int count = static_cast<int>(row.count);  // validated: at most INT_MAX
  for (int i = 0; i < warmup; ++i) {
    MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  }
  // Poisoned after the warm-up and before the barrier, as adaptsim-tcp's sweep: the result
  // checked is one the timed calls wrote, and the memset is outside the timed region.
  if (o.sweep.check && row.size_bytes > 0) std::memset(recv, 0xff, row.size_bytes);
  MPI_Barrier(MPI_COMM_WORLD);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) {
    MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  }
  const auto end = std::chrono::steady_clock::now();
  const double time_us =
      std::chrono::duration<double, std::micro>(end - start).count() / static_cast<double>(iters);
  const std::uint64_t wrong =
      o.sweep.check ? tcp::count_wrong(coll::DType::kF32, coll::ReduceOp::kSum, n_ranks,
                                       {recv, static_cast<std::size_t>(row.size_bytes)})
                    : 0;
  double time_max = 0;
  MPI_Allreduce(&time_us, &time_max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  std::uint64_t wrong_total = 0;
  MPI_Allreduce(&wrong, &wrong_total, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  row.time_us = time_max;
  row.algbw_GBps = time_max > 0 ? static_cast<double>(row.size_bytes) / (time_max * 1e-6) / 1e9 : 0;
  row.busbw_GBps =
      row.algbw_GBps * coll::bus_bandwidth_factor(coll::Collective::kAllReduce, n_ranks);
  row.wrong = wrong_total;
  return row;
}

}  // namespace

void validate_mpi_sweep_options(const MpiSweepOptions& o) {
  tcp::validate_sweep_options(o.sweep);
  if (o.sweep.dtype != coll::DType::kF32) throw InputError("adaptsim-mpi measures float32 only");
  if (o.sweep.op != coll::ReduceOp::kSum) throw InputError("adaptsim-mpi measures sum only");
  if (o.sweep.max_bytes / kFloatBytes > static_cast<std::uint64_t>(INT_MAX)) {
    throw InputError("--maxbytes (" + std::to_string(o.sweep.max_bytes) +
                     " B) holds more floats than MPI's int count allows (" +
                     std::to_string(INT_MAX) + ")");
  }
  if (o.large_iters < 1) throw InputError("--large-iters must be at least 1");
  if (o.large_warmup_iters < 0) throw InputError("--large-warmup-iters must not be negative");
}

std::vector<coll::SweepRow> run_mpi_allreduce_sweep(
    const MpiSweepOptions& o, const RowLabeller& label,
    const std::function<void(const coll::SweepRow&)>& on_row) {
  const std::vector<std::uint64_t> sizes = tcp::sweep_sizes(o.sweep);
  int rank = 0, n_ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n_ranks);
  const std::size_t max_bytes =
      static_cast<std::size_t>(o.sweep.max_bytes / kFloatBytes) * kFloatBytes;
  // Not zero-filled: the send pattern and the poison overwrite what each point reads.
  const auto send =
      std::make_unique_for_overwrite<std::byte[]>(std::max<std::size_t>(max_bytes, 1));
  const auto recv =
      std::make_unique_for_overwrite<std::byte[]>(std::max<std::size_t>(max_bytes, 1));
  // The pattern depends on the element index only through i mod period: one fill serves all.
  tcp::fill_check_input(coll::DType::kF32, coll::ReduceOp::kSum, rank, n_ranks,
                        {send.get(), max_bytes});
  std::vector<coll::SweepRow> rows;
  for (std::uint64_t size : sizes) {
    rows.push_back(measure_point(o, label, n_ranks, size, send.get(), recv.get()));
    if (on_row) on_row(rows.back());
  }
  return rows;
}

}  // namespace adaptsim::mpi
