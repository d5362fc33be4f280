#include "calibrate/pingpong.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "hw/tcp/allreduce_sweep.h"
#include "hw/tcp/event_loop.h"
#include "sim/core/error.h"

namespace adaptsim::calibrate {
namespace {

// `iterations` round trips on the loop thread; the initiator records the duration of each, from
// its send to the reply's arrival, in *round_trips_ns.
class RoundTrips : public std::enable_shared_from_this<RoundTrips> {
 public:
  RoundTrips(coll::Transport& t, int peer, bool initiator, coll::ConstBytes send, coll::Bytes recv,
             int iterations, std::vector<TimeNs>* round_trips_ns, coll::Callback done)
      : t_(t),
        peer_(peer),
        initiator_(initiator),
        send_(send),
        recv_(recv),
        remaining_(iterations),
        round_trips_ns_(round_trips_ns),
        done_(std::move(done)) {}

  void start() { step(); }

 private:
  void step() {
    if (remaining_ == 0) {
      done_();
      return;
    }
    auto self = shared_from_this();
    if (initiator_) {
      pending_ = 2;
      start_ns_ = tcp::EventLoop::now_ns();
      t_.send(peer_, kName, send_, [self] { self->arrived(); });
      t_.recv(peer_, kName, recv_, [self] { self->arrived(); });
    } else {
      t_.recv(peer_, kName, recv_, [self] {
        self->t_.send(self->peer_, kName, self->recv_, [self] {
          --self->remaining_;
          self->step();
        });
      });
    }
  }

  void arrived() {
    if (--pending_ > 0) return;
    round_trips_ns_->push_back(tcp::EventLoop::now_ns() - start_ns_);
    --remaining_;
    step();
  }

  static constexpr const char* kName = "calibrate/pingpong";
  coll::Transport& t_;
  int peer_;
  bool initiator_;
  coll::ConstBytes send_;
  coll::Bytes recv_;
  int remaining_;
  int pending_ = 0;
  TimeNs start_ns_ = 0;
  std::vector<TimeNs>* round_trips_ns_;
  coll::Callback done_;
};

// The round-trip times of `iterations` ping-pongs (on the initiator; empty on the responder).
std::vector<TimeNs> round_trips(tcp::Runtime& rt, int peer, bool initiator, coll::ConstBytes send,
                                coll::Bytes recv, int iterations, TimeNs timeout_ns) {
  auto times = std::make_shared<std::vector<TimeNs>>();
  if (iterations <= 0) return {};
  rt.run("ping-pong with rank " + std::to_string(peer), timeout_ns * iterations,
         [=](coll::Transport& t, coll::Callback done) {
           std::make_shared<RoundTrips>(t, peer, initiator, send, recv, iterations, times.get(),
                                        [times, done = std::move(done)]() mutable { done(); })
               ->start();
         });
  // The mutex in Runtime::run's completion orders the loop thread's writes before this read.
  return *times;
}

struct HeapBuffer {
  explicit HeapBuffer(std::size_t size) : bytes(size == 0 ? 1 : size) {}
  std::vector<std::byte> bytes;
  std::byte* data() { return bytes.data(); }
};

}  // namespace

std::vector<PingPongRow> run_pingpong_sweep(tcp::Runtime& rt, const PingPongOptions& o) {
  const int a = o.initiator, b = o.responder;
  if (a == b || a < 0 || b < 0 || a >= rt.size() || b >= rt.size()) {
    throw InputError("ping-pong between ranks " + std::to_string(a) + " and " + std::to_string(b) +
                     " of a cluster of " + std::to_string(rt.size()));
  }
  const std::size_t es = coll::dtype_size(o.dtype);
  std::uint64_t max_bytes = 0;
  for (std::uint64_t s : o.sizes)
    max_bytes = std::max(max_bytes, s / es * es);
  const bool active = rt.rank() == a || rt.rank() == b;
  HeapBuffer send(active ? max_bytes : 0), recv(active ? max_bytes : 0);
  if (rt.rank() == a && max_bytes > 0) {
    tcp::fill_check_input(o.dtype, coll::ReduceOp::kSum, 0, 1, {send.data(), max_bytes});
  }

  std::vector<PingPongRow> rows;
  for (std::uint64_t size : o.sizes) {
    PingPongRow row;
    row.count = size / es;
    row.size_bytes = row.count * es;
    if (row.count == 0) continue;
    const auto bytes = static_cast<std::size_t>(row.size_bytes);
    rt.barrier(o.timeout_ns);
    if (!active) continue;
    const int peer = rt.rank() == a ? b : a;
    const bool initiator = rt.rank() == a;
    const coll::ConstBytes out{send.data(), bytes};
    const coll::Bytes in{recv.data(), bytes};
    round_trips(rt, peer, initiator, out, in, o.warmup_iters, o.timeout_ns);
    if (initiator && o.check) std::memset(recv.data(), 0xff, bytes);
    std::vector<TimeNs> times = round_trips(rt, peer, initiator, out, in, o.iters, o.timeout_ns);
    if (!initiator) continue;
    // The median round trip: one scheduler stall in a burst (two cores shared by four
    // processes) would otherwise set the mean of a small size (FACTS 2.5 step 1).
    std::sort(times.begin(), times.end());
    const std::size_t mid = times.size() / 2;
    const double median_ns = times.size() % 2 == 1
                                 ? static_cast<double>(times[mid])
                                 : 0.5 * static_cast<double>(times[mid - 1] + times[mid]);
    row.time_us = median_ns / 1e3 / 2;
    if (o.check) {
      for (std::size_t i = 0; i < bytes; i += es) {
        if (std::memcmp(send.data() + i, recv.data() + i, es) != 0) ++row.wrong;
      }
    }
    rows.push_back(row);
  }
  rt.barrier(o.timeout_ns);
  return rows;
}

std::vector<PingPongRow> run_local_loopback_pingpong(const PingPongOptions& options,
                                                     const tcp::RuntimeOptions& runtime) {
  PingPongOptions o = options;
  o.initiator = 0;
  o.responder = 1;
  std::vector<std::unique_ptr<tcp::Runtime>> ranks;
  tcp::ClusterSpec cluster;
  cluster.secret = tcp::JobSecret::random();
  cluster.host_of_rank = {0, 0};
  for (int r = 0; r < 2; ++r) {
    ranks.push_back(std::make_unique<tcp::Runtime>(tcp::SocketAddress{"127.0.0.1", 0}, runtime));
    cluster.addresses.push_back(ranks.back()->listen_address());
  }
  std::vector<PingPongRow> rows;
  std::exception_ptr errors[2];
  std::mutex mu;
  auto body = [&](int r) {
    try {
      tcp::ClusterSpec mine = cluster;
      mine.rank = r;
      ranks[static_cast<std::size_t>(r)]->connect(mine);
      auto got = run_pingpong_sweep(*ranks[static_cast<std::size_t>(r)], o);
      ranks[static_cast<std::size_t>(r)]->shutdown();
      std::lock_guard<std::mutex> lock(mu);
      if (r == 0) rows = std::move(got);
    } catch (...) {
      errors[r] = std::current_exception();
      // The peer would otherwise wait for this rank until its timeout.
      ranks[static_cast<std::size_t>(r)]->shutdown();
    }
  };
  std::thread peer(body, 1);
  body(0);
  peer.join();
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  return rows;
}

}  // namespace adaptsim::calibrate
