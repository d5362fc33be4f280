#include "hw/nccl/sweep.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "hw/cuda/cuda_check.h"
#include "hw/cuda/cuda_device.h"
#include "hw/nccl/fill_verify.h"
#include "hw/nccl/nccl_check.h"
#include "sim/core/error.h"
#include "sim/core/units.h"

namespace adaptsim::hw {
namespace {

using Clock = std::chrono::steady_clock;
using coll::Collective;
using coll::SweepRow;

// For the switches over coll::Collective: validate_sweep_options lets only kSweepCollectives in.
[[noreturn]] void not_a_sweep_collective(Collective c) {
  throw std::logic_error("the NCCL sweep does not run " + std::string(coll::collective_name(c)));
}

// nccl-tests leaves 1 GiB of each GPU's memory to NCCL and the CUDA context when it sizes its
// buffers (max bytes clipped to (memory - 1 GiB) / buffers).
constexpr std::uint64_t kReservedDeviceBytes = 1ull << 30;

ncclDataType_t nccl_type(coll::DType t) {
  switch (t) {
    case coll::DType::kF32:
      return ncclFloat32;
    case coll::DType::kF64:
      return ncclFloat64;
    case coll::DType::kF16:
      return ncclFloat16;
    case coll::DType::kBF16:
      return ncclBfloat16;
    case coll::DType::kI32:
      return ncclInt32;
    case coll::DType::kI64:
      return ncclInt64;
    case coll::DType::kU8:
      return ncclUint8;
  }
  throw InputError("unsupported dtype for NCCL");
}

ncclRedOp_t nccl_op(coll::ReduceOp op) {
  switch (op) {
    case coll::ReduceOp::kSum:
      return ncclSum;
    case coll::ReduceOp::kMin:
      return ncclMin;
    case coll::ReduceOp::kMax:
      return ncclMax;
  }
  throw InputError("unsupported reduction operator for NCCL");
}

// One GPU driven by this process: its communicator, stream and buffers. The send and receive
// buffers are each as large as the largest op's whole array, so the per-iteration offset can walk.
struct LocalGpu {
  int device = 0;
  int rank = 0;  // global NCCL rank
  ncclComm_t comm = nullptr;
  std::optional<CudaStream> stream;  // created on `device` once it is selected
  DeviceAllocation send;
  DeviceAllocation recv;
  DeviceBuffer<unsigned long long> wrong;  // the check's counter
};

// Owns the communicators: destroyed after a clean run, aborted when unwinding from an error (a
// destroy could wait forever on a peer that failed).
class Communicators {
 public:
  explicit Communicators(std::vector<LocalGpu>& gpus) : gpus_(gpus) {}
  ~Communicators() {
    for (auto& g : gpus_) {
      if (g.comm == nullptr) continue;
      if (finished_) {
        ncclCommDestroy(g.comm);
      } else {
        ncclCommAbort(g.comm);
      }
      g.comm = nullptr;
    }
  }
  Communicators(const Communicators&) = delete;
  Communicators& operator=(const Communicators&) = delete;
  void finish() { finished_ = true; }

 private:
  std::vector<LocalGpu>& gpus_;
  bool finished_ = false;
};

class SweepRunner {
 public:
  SweepRunner(const SweepOptions& options, ProcessGroup& group, const SweepCallbacks& callbacks)
      : options_(options), group_(group), callbacks_(callbacks) {}

  std::vector<SweepRow> run() {
    validate_sweep_options(options_);
    select_gpus();
    size_buffers();
    Communicators communicators(gpus_);
    init_communicators();
    if (options_.root >= n_ranks_) {
      throw InputError("--root " + std::to_string(options_.root) + " is not a rank of the " +
                       std::to_string(n_ranks_) + " ranks");
    }
    if (callbacks_.on_start) callbacks_.on_start(n_ranks_, device_names_);

    std::vector<SweepRow> rows;
    for (Collective c : options_.collectives) {
      fill_all_send_buffers(c);
      warm_up(c);
      for (std::uint64_t size : sizes_) {
        const CollectiveCounts counts = collective_counts(c, size, element_size_, n_ranks_);
        if (counts.param_count == 0) continue;  // too small to split over n ranks
        SweepRow row = time_size(c, counts);
        row.wrong = check(c, counts);
        if (callbacks_.on_row) callbacks_.on_row(row);
        rows.push_back(row);
      }
    }
    communicators.finish();
    return rows;
  }

 private:
  void note(const std::string& text) {
    if (callbacks_.on_note) callbacks_.on_note(text);
  }

  void select_gpus() {
    const CudaAvailability cuda = probe_cuda();
    const int per_process =
        options_.gpus > 0 ? options_.gpus : (group_.size() == 1 ? cuda.device_count : 1);
    const std::string why = cuda.device_count == 0 ? " (" + cuda.reason + ")" : "";
    if (per_process == 0) throw InputError("no CUDA device is visible" + why);
    const int first = group_.local_rank() * per_process;
    if (first + per_process > cuda.device_count) {
      if (group_.size() == 1) {
        throw InputError("--gpus " + std::to_string(per_process) + " requested but only " +
                         std::to_string(cuda.device_count) + " CUDA device(s) are visible" + why);
      }
      throw InputError("process " + std::to_string(group_.rank()) + " (local rank " +
                       std::to_string(group_.local_rank()) + ") needs CUDA devices " +
                       std::to_string(first) + ".." + std::to_string(first + per_process - 1) +
                       " but only " + std::to_string(cuda.device_count) +
                       " are visible on its host" + why +
                       ": use fewer processes per host or a smaller --gpus");
    }
    n_ranks_ = group_.size() * per_process;
    gpus_.resize(per_process);
    for (int i = 0; i < per_process; ++i) {
      gpus_[i].device = first + i;
      gpus_[i].rank = group_.rank() * per_process + i;
      const CudaDeviceInfo info = cuda_device_info(first + i);
      device_names_.push_back(std::to_string(first + i) + ": " + info.name);
    }
  }

  // Clips max_bytes to the memory of the smallest GPU of the whole group, then allocates.
  void size_buffers() {
    element_size_ = coll::dtype_size(options_.dtype);
    std::uint64_t max_bytes = options_.max_bytes;
    std::uint64_t smallest_memory = UINT64_MAX;
    for (const auto& g : gpus_) {
      smallest_memory =
          std::min<std::uint64_t>(smallest_memory, cuda_device_info(g.device).total_memory_bytes);
    }
    smallest_memory = group_.min(smallest_memory);
    const std::uint64_t usable =
        smallest_memory > kReservedDeviceBytes ? (smallest_memory - kReservedDeviceBytes) / 2 : 0;
    if (max_bytes > usable) {
      note("max size clipped from " + format_size(max_bytes) + " to " + format_size(usable) +
           " (two buffers in the smallest GPU's memory, 1 GiB left to NCCL)");
      max_bytes = usable;
    }
    sizes_.clear();
    for (std::uint64_t s :
         sweep_sizes(options_.min_bytes, options_.max_bytes, options_.step_factor)) {
      if (s <= max_bytes) sizes_.push_back(s);
    }
    if (sizes_.empty()) {
      throw InputError("--minbytes " + format_size(options_.min_bytes) +
                       " does not fit in GPU memory (at most " + format_size(max_bytes) + ")");
    }
    buffer_bytes_ = 0;
    for (Collective c : options_.collectives) {
      buffer_bytes_ = std::max(
          buffer_bytes_, collective_counts(c, sizes_.back(), element_size_, n_ranks_).size_bytes);
    }
    for (auto& g : gpus_) {
      CudaDeviceGuard guard(g.device);
      g.stream.emplace();
      g.send = DeviceAllocation(buffer_bytes_);
      g.recv = DeviceAllocation(buffer_bytes_);
      g.wrong = DeviceBuffer<unsigned long long>(1);
    }
  }

  void init_communicators() {
    std::vector<ncclComm_t> comms(gpus_.size(), nullptr);
    if (group_.size() == 1) {
      std::vector<int> devices;
      for (const auto& g : gpus_)
        devices.push_back(g.device);
      ADAPTSIM_NCCL_CHECK(
          ncclCommInitAll(comms.data(), static_cast<int>(comms.size()), devices.data()));
    } else {
      ncclUniqueId id;
      std::memset(&id, 0, sizeof id);
      if (group_.rank() == 0) ADAPTSIM_NCCL_CHECK(ncclGetUniqueId(&id));
      group_.broadcast(std::as_writable_bytes(std::span(&id, 1)), 0);
      ADAPTSIM_NCCL_CHECK(ncclGroupStart());
      for (std::size_t i = 0; i < gpus_.size(); ++i) {
        ADAPTSIM_CUDA_CHECK(cudaSetDevice(gpus_[i].device));
        ADAPTSIM_NCCL_CHECK(ncclCommInitRank(&comms[i], n_ranks_, id, gpus_[i].rank));
      }
      ADAPTSIM_NCCL_CHECK(ncclGroupEnd());
    }
    for (std::size_t i = 0; i < gpus_.size(); ++i)
      gpus_[i].comm = comms[i];
  }

  // Timing data: valid numbers everywhere (no NaN or denormal slow paths), values irrelevant.
  void fill_all_send_buffers(Collective c) {
    const coll::ReduceOp pattern = coll::collective_reduces(c) ? options_.op : coll::ReduceOp::kSum;
    for (auto& g : gpus_) {
      CudaDeviceGuard guard(g.device);
      check_cuda(nccl_data::fill(g.send.data(), buffer_bytes_ / element_size_, options_.dtype,
                                 pattern, g.rank, 0, g.stream->get()),
                 "fill kernel", __FILE__, __LINE__);
      check_cuda(nccl_data::fill(g.recv.data(), buffer_bytes_ / element_size_, options_.dtype,
                                 pattern, g.rank, 0, g.stream->get()),
                 "fill kernel", __FILE__, __LINE__);
    }
    wait_all();
  }

  // One op of `c` on every local GPU, buffers offset by `shift_bytes`.
  void launch(Collective c, const CollectiveCounts& counts, std::uint64_t shift_bytes) {
    const ncclDataType_t type = nccl_type(options_.dtype);
    ADAPTSIM_NCCL_CHECK(ncclGroupStart());
    for (auto& g : gpus_) {
      const void* send = static_cast<const char*>(g.send.data()) + shift_bytes;
      void* recv = static_cast<char*>(g.recv.data()) + shift_bytes;
      const std::size_t count = counts.param_count;
      switch (c) {
        case Collective::kAllReduce:
          ADAPTSIM_NCCL_CHECK(ncclAllReduce(send, recv, count, type, nccl_op(options_.op), g.comm,
                                            g.stream->get()));
          break;
        case Collective::kAllGather:
          ADAPTSIM_NCCL_CHECK(ncclAllGather(send, recv, count, type, g.comm, g.stream->get()));
          break;
        case Collective::kReduceScatter:
          ADAPTSIM_NCCL_CHECK(ncclReduceScatter(send, recv, count, type, nccl_op(options_.op),
                                                g.comm, g.stream->get()));
          break;
        case Collective::kBroadcast:
          ADAPTSIM_NCCL_CHECK(
              ncclBroadcast(send, recv, count, type, options_.root, g.comm, g.stream->get()));
          break;
        case Collective::kReduce:
        case Collective::kAllToAll:
        case Collective::kSendRecv:
          not_a_sweep_collective(c);
      }
    }
    ADAPTSIM_NCCL_CHECK(ncclGroupEnd());
  }

  // nccl-tests' completeColl: poll every stream, and NCCL's asynchronous error state so that a
  // failed peer is reported instead of waiting forever.
  void wait_all() {
    for (auto& g : gpus_) {
      while (true) {
        const cudaError_t status = cudaStreamQuery(g.stream->get());
        if (status == cudaSuccess) break;
        if (status != cudaErrorNotReady) check_cuda(status, "cudaStreamQuery", __FILE__, __LINE__);
        if (g.comm != nullptr) {
          ncclResult_t async_status = ncclSuccess;
          ADAPTSIM_NCCL_CHECK(ncclCommGetAsyncError(g.comm, &async_status));
          check_nccl(async_status, "NCCL operation (ncclCommGetAsyncError)", __FILE__, __LINE__);
        }
      }
    }
  }

  void warm_up(Collective c) {
    for (std::uint64_t size : {sizes_.back(), sizes_.front()}) {
      const CollectiveCounts counts = collective_counts(c, size, element_size_, n_ranks_);
      if (counts.param_count == 0) continue;
      for (int i = 0; i < options_.warmup_iters; ++i) {
        launch(c, counts, 0);
        wait_all();
      }
    }
  }

  SweepRow time_size(Collective c, const CollectiveCounts& counts) {
    launch(c, counts, 0);  // one untimed op, as nccl-tests' BenchTime
    wait_all();
    group_.barrier();
    // Walk the max-size buffer: iteration i uses offset size x (i mod steps).
    const std::uint64_t steps = std::max<std::uint64_t>(1, buffer_bytes_ / counts.size_bytes);
    const auto start = Clock::now();
    for (int i = 0; i < options_.iters; ++i) {
      launch(c, counts, counts.size_bytes * (static_cast<std::uint64_t>(i) % steps));
    }
    wait_all();
    const double local_s =
        std::chrono::duration<double>(Clock::now() - start).count() / options_.iters;
    const double seconds = group_.sum(local_s) / group_.size();

    SweepRow row;
    row.size_bytes = counts.size_bytes;
    row.count = counts.param_count;
    row.type = std::string(coll::dtype_name(options_.dtype));
    row.redop =
        coll::collective_reduces(c) ? std::string(coll::reduce_op_name(options_.op)) : "none";
    row.collective = c;
    row.algorithm = "nccl";
    row.n_ranks = n_ranks_;
    row.time_us = seconds * 1e6;
    row.algbw_GBps = static_cast<double>(counts.size_bytes) / seconds * 1e-9;
    row.busbw_GBps = row.algbw_GBps * coll::bus_bandwidth_factor(c, n_ranks_);
    return row;
  }

  std::uint64_t check(Collective c, const CollectiveCounts& counts) {
    const coll::ReduceOp pattern = coll::collective_reduces(c) ? options_.op : coll::ReduceOp::kSum;
    std::uint64_t wrong = 0;
    for (int round = 1; round <= options_.check_iters; ++round) {
      for (auto& g : gpus_) {
        CudaDeviceGuard guard(g.device);
        check_cuda(nccl_data::fill(g.send.data(), counts.send_count, options_.dtype, pattern,
                                   g.rank, round, g.stream->get()),
                   "fill kernel", __FILE__, __LINE__);
        // 0xFF bytes: NaN in every float type, -1 or 255 in the integer ones; never expected.
        ADAPTSIM_CUDA_CHECK(cudaMemsetAsync(g.recv.data(), 0xFF, counts.recv_count * element_size_,
                                            g.stream->get()));
        ADAPTSIM_CUDA_CHECK(
            cudaMemsetAsync(g.wrong.data(), 0, sizeof(unsigned long long), g.stream->get()));
      }
      launch(c, counts, 0);
      for (auto& g : gpus_) {
        CudaDeviceGuard guard(g.device);
        nccl_data::VerifySpec spec;
        spec.op = pattern;
        spec.n_ranks = n_ranks_;
        spec.round = round;
        switch (c) {
          case Collective::kAllReduce:
            spec.expect = nccl_data::Expect::kReduced;
            break;
          case Collective::kReduceScatter:
            spec.expect = nccl_data::Expect::kReduced;
            spec.index_offset = static_cast<std::uint64_t>(g.rank) * counts.recv_count;
            break;
          case Collective::kAllGather:
            spec.expect = nccl_data::Expect::kGathered;
            spec.piece_count = counts.send_count;
            break;
          case Collective::kBroadcast:
            spec.expect = nccl_data::Expect::kFromRank;
            spec.source_rank = options_.root;
            break;
          case Collective::kReduce:
          case Collective::kAllToAll:
          case Collective::kSendRecv:
            not_a_sweep_collective(c);
        }
        check_cuda(nccl_data::count_wrong(g.recv.data(), counts.recv_count, options_.dtype, spec,
                                          g.wrong.data(), g.stream->get()),
                   "count_wrong kernel", __FILE__, __LINE__);
      }
      wait_all();
      for (auto& g : gpus_) {
        CudaDeviceGuard guard(g.device);
        unsigned long long local = 0;
        g.wrong.copy_to_host(std::span(&local, 1));
        wrong += local;
      }
    }
    return group_.sum(wrong);
  }

  const SweepOptions& options_;
  ProcessGroup& group_;
  const SweepCallbacks& callbacks_;
  std::vector<LocalGpu> gpus_;
  std::vector<std::string> device_names_;
  std::vector<std::uint64_t> sizes_;
  std::uint64_t buffer_bytes_ = 0;
  std::size_t element_size_ = 4;
  int n_ranks_ = 0;
};

}  // namespace

std::vector<std::uint64_t> sweep_sizes(std::uint64_t min_bytes, std::uint64_t max_bytes,
                                       std::uint64_t step_factor) {
  if (min_bytes == 0) throw InputError("--minbytes must be > 0");
  if (min_bytes > max_bytes) {
    throw InputError("--minbytes " + format_size(min_bytes) + " is larger than --maxbytes " +
                     format_size(max_bytes));
  }
  if (min_bytes < max_bytes && step_factor < 2) {
    throw InputError("--stepfactor must be >= 2 when --minbytes < --maxbytes, got " +
                     std::to_string(step_factor));
  }
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t s = min_bytes; s <= max_bytes; s *= step_factor) {
    sizes.push_back(s);
    if (step_factor < 2 || s > max_bytes / step_factor) break;  // next would pass max (or wrap)
  }
  return sizes;
}

void validate_sweep_options(const SweepOptions& options) {
  sweep_sizes(options.min_bytes, options.max_bytes, options.step_factor);
  if (options.gpus < 0) throw InputError("--gpus must be >= 0 (0: all visible)");
  if (options.iters < 1) throw InputError("--iters must be >= 1");
  if (options.warmup_iters < 0) throw InputError("--warmup-iters must be >= 0");
  if (options.check_iters < 0) throw InputError("--check must be >= 0");
  if (options.root < 0) throw InputError("--root must be >= 0");
  if (options.collectives.empty()) throw InputError("--collective: no collective selected");
  for (Collective c : options.collectives) {
    if (!sweep_runs(c)) {
      throw InputError("--collective: the NCCL sweep does not run \"" +
                       std::string(coll::collective_name(c)) + "\"");
    }
  }
}

std::vector<SweepRow> run_nccl_sweep(const SweepOptions& options, ProcessGroup& group,
                                     const SweepCallbacks& callbacks) {
  return SweepRunner(options, group, callbacks).run();
}

std::vector<SweepRow> run_nccl_sweep(const SweepOptions& options, const SweepCallbacks& callbacks) {
  SingleProcessGroup group;
  return run_nccl_sweep(options, group, callbacks);
}

}  // namespace adaptsim::hw
