#include "hw/tcp/barrier.h"

#include <memory>

namespace adaptsim::tcp {
namespace {

class BarrierRun : public std::enable_shared_from_this<BarrierRun> {
 public:
  BarrierRun(coll::Transport& t, std::string name, coll::Callback done)
      : t_(t), name_(std::move(name)), done_(std::move(done)) {}

  void round(int distance) {
    const int n = t_.size();
    if (distance >= n) {
      coll::Callback done = std::move(done_);
      done();
      return;
    }
    const int me = t_.rank();
    const std::string name = name_ + "/" + std::to_string(distance);
    pending_ = 2;
    auto self = shared_from_this();
    auto finish = [self, distance] {
      if (--self->pending_ == 0) self->round(distance * 2);
    };
    t_.send((me + distance) % n, name, {}, finish);
    t_.recv((me - distance + n) % n, name, {}, finish);
  }

 private:
  coll::Transport& t_;
  const std::string name_;
  coll::Callback done_;
  int pending_ = 0;
};

}  // namespace

void run_barrier(coll::Transport& t, const std::string& name, coll::Callback done) {
  if (t.size() == 1) {
    // Keep the transport's contract: `done` never runs inside this call.
    t.copy({}, {}, std::move(done));
    return;
  }
  std::make_shared<BarrierRun>(t, name, std::move(done))->round(1);
}

}  // namespace adaptsim::tcp
