#pragma once
// A training system's mechanism on a live worker: it is told when each gradient of the current
// step is ready (by the compute thread, the moment its backward layer finished) and reduces the
// real gradient buffers over the live TCP runtime, reporting to the StepTracker when each gradient
// holds the sum over ranks and when communication is in flight. The live counterpart of
// train::System (sim/train/system.h), with the same mechanisms as sim/train/systems.cpp:
//   ideal    no communication: a gradient is "reduced" when it is ready (values not summed);
//   kungfu   per tensor an asynchronous named all-reduce over the configured KungFu strategy,
//            chunked, started on the runtime's loop thread as soon as the gradient is ready; the
//            collectives of different tensors run concurrently, matched by name;
//   horovod  Horovod 0.16's background loop: every cycle the worker reports its newly ready
//            tensors to rank 0, whose message table answers with the tensors ready on every rank,
//            fused up to the fusion threshold; each fused group is copied into a fusion buffer,
//            all-reduced with the classic ring, and copied back, one group after another.
//
// Threading: a system may own one thread; between start() and stop() that thread is the only
// caller of the Runtime's blocking methods (the compute thread makes none). gradient_ready()
// never blocks on communication.

#include <cstdint>
#include <memory>

#include "hw/live/gradient_buffers.h"
#include "hw/live/step_tracker.h"
#include "hw/tcp/runtime.h"
#include "sim/train/model_zoo.h"
#include "sim/train/system.h"

namespace adaptsim::live {

struct LiveSystemContext {
  tcp::Runtime* runtime = nullptr;
  const train::Model* model = nullptr;
  GradientBuffers* buffers = nullptr;  // null for ideal
  StepTracker* tracker = nullptr;
  train::SystemConfig config;
  TimeNs timeout_ns = 30 * kNsPerSecond;  // bounds every blocking call of the system's thread
  int total_steps = 0;                    // warm-up + measured
};

class LiveSystem {
 public:
  virtual ~LiveSystem() = default;
  virtual void start() = 0;
  // Compute thread: gradient `tensor` (index into model.backward_order) of `step` is ready.
  virtual void gradient_ready(int step, std::size_t tensor) = 0;
  // Stops and joins the system's thread; idempotent, never throws. Called after the last step
  // (the thread has nothing left to do) or on failure.
  virtual void stop() = 0;
};

// Throws InputError for the kinds that need GPUs (nccl, horovod-nccl, hierarchical).
std::unique_ptr<LiveSystem> make_live_system(const LiveSystemContext& context);

// Whether a kind runs on the live TCP runtime (ideal, kungfu, horovod).
bool live_system_supported(train::SystemKind kind);

// Fails the runtime's transport with `reason` (so every peer fails at once with this root cause
// instead of waiting for a timeout); no-op when it already failed. Never throws.
void abort_cluster(tcp::Runtime& runtime, const std::string& reason);

// Factories of the mechanisms (kungfu_live.cpp, horovod_live.cpp).
std::unique_ptr<LiveSystem> make_kungfu_live(const LiveSystemContext& context);
std::unique_ptr<LiveSystem> make_horovod_live(const LiveSystemContext& context);

}  // namespace adaptsim::live
