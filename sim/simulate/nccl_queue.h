#pragma once
// One NCCL communicator's stream in the simulation. NCCL collectives block inside GPU kernels
// until every member has launched them, and one communicator runs them one at a time in launch
// order. So collective k starts when the last member launched it and collective k-1 finished,
// and takes the time NCCL's own cost model predicts (nccl_model.h).

#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

#include "sim/core/event_engine.h"
#include "sim/train/nccl_model.h"

namespace adaptsim::simulate {

class NcclQueue {
 public:
  using Callback = std::function<void()>;
  NcclQueue(EventEngine& engine, train::NcclCommParams params);

  // Member `member` launches its next collective. Every member must launch the same sequence.
  // `done` runs (for that member) when the collective completes on the communicator.
  void launch(int member, train::NcclColl coll, std::uint64_t bytes, Callback done);
  const train::NcclCommParams& params() const { return params_; }
  // Total time collectives of this communicator spent running (for reports).
  TimeNs busy_ns() const { return busy_ns_; }

 private:
  struct Op {
    train::NcclColl coll = train::NcclColl::kAllReduce;
    std::uint64_t bytes = 0;
    int launched = 0;
    std::vector<Callback> done;
  };
  void try_start();

  EventEngine& engine_;
  train::NcclCommParams params_;
  std::vector<std::uint64_t> launched_by_;  // per member: its launch count
  std::deque<Op> ops_;                      // ops_[0] is op number `base_`
  std::uint64_t base_ = 0;
  bool running_ = false;
  TimeNs busy_ns_ = 0;
};

}  // namespace adaptsim::simulate
