#pragma once
// A training system (KungFu, Horovod, NCCL-based ...) as the step loop sees it: it is told when a
// worker's gradient tensor becomes ready on the GPU, and reports when the worker holds the
// reduced gradient. Everything in between (staging through host memory, negotiation, fusion,
// ordering, the collectives themselves) is the system's mechanism, written once against the
// environment (env.h) and run unchanged simulated and live.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/coll/ompi_allreduce.h"
#include "sim/coll/strategy.h"
#include "sim/core/time.h"
#include "sim/runtime/env.h"
#include "sim/train/model_zoo.h"

namespace adaptsim::runtime {

enum class SystemKind { kIdeal, kKungFu, kHorovod, kNcclScheduled, kHorovodNccl, kHierarchical };

// An all-reduce strategy with its root: `root` is the rank a STAR is rooted at (KungFu's
// adaptive strategy moves the star's root away from a congested host); other kinds ignore it.
struct StrategyChoice {
  coll::StrategyKind kind = coll::StrategyKind::kBinaryTreeStar;
  int root = 0;
  bool operator==(const StrategyChoice&) const = default;
  auto operator<=>(const StrategyChoice&) const = default;
};
// "MULTI_BINARY_TREE_STAR", "STAR@3" for a star rooted elsewhere than rank 0.
std::string strategy_label(const StrategyChoice& choice);

// Options of every system, defaults at the field with their sources.
struct SystemConfig {
  SystemKind kind = SystemKind::kIdeal;
  std::string label;  // series name in outputs
  // KungFu: the all-reduce strategy (KungFu's default is BINARY_TREE_STAR, PR #172) and chunk size
  // (session.go chunkSize = 1 MiB). Gradients are staged through host memory because KungFu's
  // non-NCCL TensorFlow ops are CPU kernels (KUNGFU.md 2.3).
  coll::StrategyKind strategy = coll::StrategyKind::kBinaryTreeStar;
  std::size_t chunk_bytes = 1 << 20;
  // Horovod 0.16: the background thread's cycle (HOROVOD_CYCLE_TIME, 5 ms in 0.16) and the tensor
  // fusion buffer (HOROVOD_FUSION_THRESHOLD, 64 MiB = 67108864 B), horovod/common/operations.cc.
  TimeNs cycle_time_ns = 5 * kNsPerMs;
  std::uint64_t fusion_bytes = 64ull << 20;
  // Bytes of a Horovod request/response entry per tensor (name + metadata) on the wire. [U]
  // estimate, low: by Horovod's FlatBuffers schema (horovod/common/wire/mpi_message.fbs: rank,
  // type, dtype, root, device, name, shape) a request is ~60 B of fields, vtable and offsets plus
  // the tensor's name (TensorFlow gradient names run 40-100 chars) plus 8 B per shape dimension.
  // Even all 161 ResNet-50 tensors in one cycle make a 10 KB request (80 us at 1 Gbit/s; at
  // twice the size, 160 us), small against the 5 ms cycle. At least 4: the message carries each
  // tensor's index as a 32-bit word.
  std::uint64_t negotiation_bytes_per_tensor = 64;
  // Horovod over MPI: the Open MPI release whose MPI_Allreduce reduces the fused buffers, its
  // algorithm choice and ob1's eager/rendezvous protocol (sim/coll/ompi_allreduce.h).
  coll::OmpiOptions mpi;
  // `mpi: {live: library}`: a live run reduces through the MPI library its processes run under
  // (mpirun; hw/live/mpi_library.h) instead of the model of it over hw/tcp; the simulation
  // predicts the library by the same model either way.
  bool mpi_library = false;
  // KungFu's NCCL scheduler polls CUDA events with 100 us sleeps before launching (spin_wait,
  // KUNGFU.md 5).
  TimeNs nccl_poll_ns = 100 * kNsPerUs;
  // How a flat NCCL communicator (kinds nccl, horovod-nccl) crosses servers: IB verbs, NCCL's
  // default where they load, or its socket transport (train::NcclNet).
  train::NcclNet nccl_net;
};

std::string_view system_kind_name(SystemKind kind);  // "ideal", "kungfu", ...
std::optional<SystemKind> parse_system_kind(std::string_view name);
const std::vector<SystemKind>& all_system_kinds();
// Whether a kind runs without GPUs and NCCL (live training over TCP): ideal, kungfu, horovod.
bool runs_on_host_transport(SystemKind kind);
// Whether the kind runs a monitor's second all-reduce (System::reduce_squares): ideal (free) and
// kungfu (KungFu's gradient variance monitor).
bool has_squares_allreduce(SystemKind kind);
// Whether a policy may change the kind's all-reduce strategy (kungfu; hierarchical's cross-host
// part).
bool has_strategy(SystemKind kind);
// Whether the kind runs one NCCL communicator across servers, whose way across `nccl_net` sets:
// nccl and horovod-nccl (hierarchical's NCCL stays inside a server).
bool has_flat_nccl(SystemKind kind);

// The step loop, as a system reports to it.
class StepSink {
 public:
  virtual ~StepSink() = default;
  // The reduced gradient of `tensor` is on worker `worker`'s GPU (once per tensor per step).
  virtual void gradient_reduced(int worker, std::size_t tensor) = 0;
  // Communication of a worker starts (+1) or ends (-1): copies, negotiation, collectives. The
  // step loop splits exposed time into "something in flight" (link) and "nothing" (wait).
  virtual void activity(int worker, int delta) = 0;
};

struct SystemContext {
  TrainingEnv* env = nullptr;
  StepSink* sink = nullptr;
  const train::Model* model = nullptr;
  std::vector<std::uint64_t> tensor_bytes;  // per tensor (backward order): its gradient's bytes
  int total_steps = 0;                      // warm-up + measured: systems with loops stop after
};

class System {
 public:
  virtual ~System() = default;
  virtual void attach(const SystemContext& context) = 0;
  // Worker `worker`'s gradient of `tensor` (index into model.backward_order) is ready on its GPU
  // in step `step`.
  virtual void gradient_ready(int worker, int step, std::size_t tensor) = 0;
  // A policy's decision, applied at a step boundary of `worker`: its collectives from the next
  // step on use `choice`. Only for kinds with has_strategy(); others throw std::logic_error.
  virtual void set_strategy(int worker, const StrategyChoice& choice);
  // A monitor's second all-reduce on `worker`: every tensor's squared gradient
  // (TrainingEnv::squared_gradient), run as the system runs its gradients'; `done` once all are
  // reduced. Only for kinds with has_squares_allreduce(); others throw std::logic_error.
  virtual void reduce_squares(int worker, Callback done);
  // The strategy `worker` uses now (what the per-step rows show); nullopt: the kind has none.
  virtual std::optional<StrategyChoice> strategy(int /*worker*/) const { return std::nullopt; }
};

std::unique_ptr<System> make_system(const SystemConfig& config);

}  // namespace adaptsim::runtime
