#pragma once
// An nccl-tests-style size sweep of NCCL collectives (NVIDIA/nccl-tests src/common.cu; FACTS §1.2),
// as a function: the `adaptsim-nccl` tool and the calibration tool both call run_nccl_sweep and get
// the rows back.
//
// Topologies: one process driving G GPUs (ncclCommInitAll), or P processes with G GPUs each
// (ncclCommInitRank, the unique id broadcast by the ProcessGroup, e.g. over MPI across nodes);
// n_ranks = P x G.
// Timing, per collective: `warmup_iters` untimed ops at the largest size, then at the smallest,
// each followed by a synchronize; then for each size: one untimed op and a synchronize, a barrier
// across processes, the host steady clock read, `iters` ops back to back (each op on every local
// GPU inside ncclGroupStart/End; the buffer offset walks through the max-size buffer "to avoid
// cache effects"), wait for every stream, clock read; time per op = elapsed / iters, averaged
// over processes (nccl-tests' default -a 1). algbw = size_bytes / time; busbw = algbw x
// coll::bus_bandwidth_factor. Only out-of-place ops (send buffer != receive buffer) are run.
// Rows are coll::SweepRow (sim/coll/sweep_row.h): size_bytes is nccl-tests' "size" (the whole
// array, collective_counts), count the NCCL call's count argument, type adaptsim's dtype name,
// redop "none" for all-gather and broadcast, algorithm "nccl", time_us per op.
// Check: `check_iters` rounds after the timing, each filling exact integer data (fill_verify.h),
// poisoning the receive buffer with NaN bytes, running one op and counting the wrong elements on
// the GPU; summed over ranks into the row's `wrong`.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "hw/nccl/collective.h"
#include "hw/nccl/process_group.h"
#include "sim/coll/dtype.h"
#include "sim/coll/sweep_row.h"

namespace adaptsim::hw {

struct SweepOptions {
  int gpus = 0;                 // GPUs driven by this process; 0: all visible when alone,
                                // 1 per process in a multi-process group
  std::uint64_t min_bytes = 8;  // FACTS §6: 8 B .. 1 GiB x2 for a calibration sweep
  std::uint64_t max_bytes = 1ull << 30;
  std::uint64_t step_factor = 2;  // sizes min, min*f, min*f^2, ... <= max; >= 2 unless min == max
  int iters = 20;                 // nccl-tests -n
  int warmup_iters = 5;           // nccl-tests -w
  int check_iters = 1;            // nccl-tests -c; 0 disables the check (wrong = 0)
  coll::ReduceOp op = coll::ReduceOp::kSum;  // for all-reduce and reduce-scatter
  coll::DType dtype = coll::DType::kF32;
  std::vector<coll::Collective> collectives = {coll::Collective::kAllReduce};  // kSweepCollectives
  int root = 0;  // broadcast root (global rank)
};

// Optional observers, called on every process as results arrive (the tool prints on rank 0).
struct SweepCallbacks {
  std::function<void(const coll::SweepRow&)> on_row;
  std::function<void(const std::string&)> on_note;  // e.g. max size clipped to device memory
  // Once, after the communicators exist: n_ranks and this process's "device index: name" list.
  std::function<void(int n_ranks, const std::vector<std::string>& local_devices)> on_start;
};

// Sizes min, min*f, ... <= max. InputError when min > max, min == 0, or f < 2 while min < max.
std::vector<std::uint64_t> sweep_sizes(std::uint64_t min_bytes, std::uint64_t max_bytes,
                                       std::uint64_t step_factor);

// Checks what needs no GPU: sizes, iteration counts, a non-negative root, a non-empty list of
// collectives the sweep runs. InputError naming the option (as the tool spells it: --minbytes,
// --iters, ...).
void validate_sweep_options(const SweepOptions& options);

// Runs the sweep; every process of `group` calls it with the same options. Returns the rows (the
// same on every process). InputError: invalid options, or fewer CUDA devices than requested
// (including none). RuntimeFailure: a CUDA or NCCL failure, the call named.
std::vector<coll::SweepRow> run_nccl_sweep(const SweepOptions& options, ProcessGroup& group,
                                           const SweepCallbacks& callbacks = {});

// One process driving options.gpus GPUs.
std::vector<coll::SweepRow> run_nccl_sweep(const SweepOptions& options,
                                           const SweepCallbacks& callbacks = {});

}  // namespace adaptsim::hw
