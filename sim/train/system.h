#pragma once
// A training system (KungFu, Horovod, NCCL-based ...) as the step simulator sees it: it is told
// when each worker's gradient tensors become ready on the GPU, and reports when each worker holds
// the averaged gradient. Everything in between — staging through host memory, negotiation,
// fusion, ordering, the collectives themselves — is the system's mechanism, running on the shared
// simulated network.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/fabric/sim_fabric.h"
#include "sim/coll/strategy.h"
#include "sim/core/event_engine.h"
#include "sim/net/network.h"
#include "sim/train/model_zoo.h"
#include "sim/train/nccl_model.h"

namespace adaptsim::train {

// What systems can use: the simulation's engine and network, a host-endpoint transport (KungFu's
// TCP layer, MPI), the model's tensors, and the hooks back into the step simulator.
class SystemEnv {
 public:
  virtual ~SystemEnv() = default;
  virtual EventEngine& engine() = 0;
  virtual net::Network& network() = 0;
  virtual fabric::SimFabric& host_fabric() = 0;
  virtual const topo::Topology& topology() const = 0;
  virtual const Model& model() const = 0;
  virtual std::uint64_t tensor_bytes(std::size_t tensor) const = 0;
  virtual int workers() const = 0;
  virtual GpuArch gpu_arch() const = 0;
  // The averaged gradient of `tensor` is on worker `worker`'s GPU.
  virtual void gradient_reduced(int worker, std::size_t tensor) = 0;
  // Communication activity of a worker (copies, negotiation messages, collectives): the step
  // simulator splits exposed time into "something in flight" (link) and "nothing" (wait).
  virtual void activity(int worker, int delta) = 0;
  // Whether training is still running (background loops such as Horovod's stop when not).
  virtual bool running() const = 0;
};

class System {
 public:
  virtual ~System() = default;
  virtual void attach(SystemEnv& env) = 0;
  // Worker `worker`'s gradient of `tensor` (index into model().backward_order) is ready on its
  // GPU in step `step`.
  virtual void gradient_ready(int worker, int step, std::size_t tensor) = 0;
};

enum class SystemKind { kIdeal, kKungFu, kHorovod, kNcclScheduled, kHorovodNccl, kHierarchical };

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
  // twice the size, 160 us), small against the 5 ms cycle.
  std::uint64_t negotiation_bytes_per_tensor = 64;
  // KungFu's NCCL scheduler polls CUDA events with 100 us sleeps before launching (spin_wait,
  // KUNGFU.md 5).
  TimeNs nccl_poll_ns = 100 * kNsPerUs;
};

std::unique_ptr<System> make_system(const SystemConfig& config);
std::string_view system_kind_name(SystemKind kind);  // "ideal", "kungfu", ...
std::optional<SystemKind> parse_system_kind(std::string_view name);

}  // namespace adaptsim::train
