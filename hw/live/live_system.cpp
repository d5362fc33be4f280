#include "hw/live/live_system.h"

#include "hw/tcp/tcp_transport.h"
#include "sim/core/error.h"

namespace adaptsim::live {
namespace {

// No communication: a gradient is final the moment it is ready, as in the simulator's
// IdealSystem (which reports it on the next event at the same instant).
class IdealLive final : public LiveSystem {
 public:
  explicit IdealLive(const LiveSystemContext& c) : tracker_(*c.tracker) {}
  void start() override {}
  void gradient_ready(int, std::size_t tensor) override { tracker_.gradient_reduced(tensor); }
  void stop() override {}

 private:
  StepTracker& tracker_;
};

}  // namespace

bool live_system_supported(train::SystemKind kind) {
  return kind == train::SystemKind::kIdeal || kind == train::SystemKind::kKungFu ||
         kind == train::SystemKind::kHorovod;
}

std::unique_ptr<LiveSystem> make_live_system(const LiveSystemContext& c) {
  switch (c.config.kind) {
    case train::SystemKind::kIdeal:
      return std::make_unique<IdealLive>(c);
    case train::SystemKind::kKungFu:
      return make_kungfu_live(c);
    case train::SystemKind::kHorovod:
      return make_horovod_live(c);
    case train::SystemKind::kNcclScheduled:
    case train::SystemKind::kHorovodNccl:
    case train::SystemKind::kHierarchical:
      break;
  }
  throw InputError("system kind '" + std::string(train::system_kind_name(c.config.kind)) +
                   "' needs GPUs and NCCL; live training over TCP runs ideal, kungfu and horovod");
}

void abort_cluster(tcp::Runtime& runtime, const std::string& reason) {
  if (runtime.failed()) return;
  try {
    runtime.run("abort", 5 * kNsPerSecond, [reason](coll::Transport& t, coll::Callback done) {
      if (auto* tcp_transport = dynamic_cast<tcp::TcpTransport*>(&t)) tcp_transport->fail(reason);
      done();  // dropped when the transport failed; the caller sees the failure instead
    });
  } catch (...) {
    // Expected: the run reports the failure it just caused.
  }
}

}  // namespace adaptsim::live
