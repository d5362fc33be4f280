#include "sim/simulate/nccl_queue.h"

#include <stdexcept>

namespace adaptsim::simulate {

NcclQueue::NcclQueue(EventEngine& engine, train::NcclCommParams params)
    : engine_(engine), params_(params), launched_by_(params.n_ranks, 0) {}

void NcclQueue::launch(int member, train::NcclColl coll, std::uint64_t bytes, Callback done) {
  const std::uint64_t k = launched_by_.at(member)++;
  if (k < base_) throw std::logic_error("NCCL launch for a finished collective");
  while (ops_.size() <= k - base_)
    ops_.emplace_back();
  Op& op = ops_[k - base_];
  if (op.launched == 0) {
    op.coll = coll;
    op.bytes = bytes;
  } else if (op.coll != coll || op.bytes != bytes) {
    // Mismatched collectives hang real NCCL; here it is a bug in the caller's ordering.
    throw std::logic_error("NCCL members launched different collectives at the same position");
  }
  ++op.launched;
  op.done.push_back(std::move(done));
  try_start();
}

void NcclQueue::try_start() {
  if (running_ || ops_.empty() || ops_.front().launched < params_.n_ranks) return;
  running_ = true;
  const Op& op = ops_.front();
  const TimeNs duration =
      seconds_to_ns_ceil(train::nccl_predict(op.coll, op.bytes, params_).time_us * 1e-6);
  busy_ns_ += duration;
  engine_.schedule_after(duration, [this] {
    Op finished = std::move(ops_.front());
    ops_.pop_front();
    ++base_;
    running_ = false;
    for (auto& cb : finished.done)
      cb();
    try_start();
  });
}

}  // namespace adaptsim::simulate
