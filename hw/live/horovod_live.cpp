// Horovod 0.16 on a live worker (horovod/common/operations.cc, BackgroundThreadLoop and
// RunLoopOnce), the mechanism of sim/train/systems.cpp HorovodSystem on real sockets:
//   - a background thread per worker runs cycles; a cycle starts at max(last start + cycle time,
//     now);
//   - each cycle every worker sends rank 0 the indices of the tensors that became ready since its
//     last report (MPI_Gather of the request lists); rank 0 adds them to its message table
//     (train::HorovodMessageTable), takes the tensors now ready on every rank, fuses them up to
//     the fusion threshold (train::fuse_tensors) and sends every worker the fused groups (the
//     response list, MPI_Bcast);
//   - every worker then executes the groups in order: a group of several tensors is copied into
//     the fusion buffer, all-reduced in place with the classic ring (Horovod's MPI_Allreduce) and
//     copied back; a single tensor is all-reduced from its own buffers. The background thread
//     blocks in each all-reduce, so groups run one after another.
// The negotiation messages have a fixed size (a count and up to one entry per tensor), so a
// receiver always knows what to expect.
//
// The loop ends by itself after the cycle that completed the last step: every rank executes the
// same responses, so every rank reaches its last gradient in the same cycle.

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "hw/live/live_system.h"
#include "hw/tcp/event_loop.h"
#include "sim/core/error.h"
#include "sim/train/horovod_coordinator.h"

namespace adaptsim::live {
namespace {

using Groups = std::vector<std::vector<std::size_t>>;
using Words = std::vector<std::uint32_t>;

coll::Bytes bytes_of(Words& w) {
  return {reinterpret_cast<std::byte*>(w.data()), w.size() * sizeof(std::uint32_t)};
}

// Request: [count, tensor...], padded to 1 + tensors words.
Words encode_request(const std::vector<std::size_t>& tensors, std::size_t capacity) {
  // A tensor is reported once per step, and the next step's only after this step's all reduced.
  if (tensors.size() > capacity) throw std::logic_error("horovod: more reports than tensors");
  Words w(1 + capacity, 0);
  w[0] = static_cast<std::uint32_t>(tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i)
    w[1 + i] = static_cast<std::uint32_t>(tensors[i]);
  return w;
}

std::vector<std::size_t> decode_request(const Words& w, std::size_t capacity, int from) {
  if (w[0] > capacity) {
    throw RuntimeFailure("horovod: malformed request from rank " + std::to_string(from));
  }
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < w[0]; ++i) {
    if (w[1 + i] >= capacity) {
      throw RuntimeFailure("horovod: request from rank " + std::to_string(from) + " names tensor " +
                           std::to_string(w[1 + i]));
    }
    out.push_back(w[1 + i]);
  }
  return out;
}

// Response: [groups, size_0, tensors of group 0..., size_1, ...], padded to 1 + 2 * tensors.
Words encode_response(const Groups& groups, std::size_t capacity) {
  Words w(1 + 2 * capacity, 0);
  std::size_t at = 0;
  w[at++] = static_cast<std::uint32_t>(groups.size());
  for (const auto& g : groups) {
    w[at++] = static_cast<std::uint32_t>(g.size());
    for (std::size_t t : g)
      w[at++] = static_cast<std::uint32_t>(t);
  }
  return w;
}

Groups decode_response(const Words& w, std::size_t capacity) {
  Groups groups;
  std::size_t at = 0;
  const std::size_t n = w[at++];
  for (std::size_t g = 0; g < n; ++g) {
    if (at >= w.size()) throw RuntimeFailure("horovod: malformed response from rank 0");
    const std::size_t size = w[at++];
    if (at + size > w.size()) throw RuntimeFailure("horovod: malformed response from rank 0");
    std::vector<std::size_t> group;
    for (std::size_t i = 0; i < size; ++i) {
      if (w[at] >= capacity) throw RuntimeFailure("horovod: response names an unknown tensor");
      group.push_back(w[at++]);
    }
    groups.push_back(std::move(group));
  }
  return groups;
}

class HorovodLive final : public LiveSystem {
 public:
  explicit HorovodLive(const LiveSystemContext& c)
      : c_(c),
        tensors_(c.buffers->tensors()),
        ring_(coll::make_allreduce(coll::StrategyKind::kClassicRing, c.runtime->host_of_rank())),
        target_(tensors_ * static_cast<std::uint64_t>(c.total_steps)) {
    if (c.runtime->rank() == 0)
      table_ = std::make_unique<train::HorovodMessageTable>(c.runtime->size());
  }
  ~HorovodLive() override { stop(); }

  void start() override {
    thread_ = std::thread([this] { background_loop(); });
  }

  void gradient_ready(int, std::size_t tensor) override {
    // The gradient is in host memory already: no staging copy, straight to the next report.
    std::lock_guard<std::mutex> lock(mu_);
    pending_.push_back(tensor);
  }

  void stop() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_one();
    if (thread_.joinable()) thread_.join();
  }

 private:
  using Clock = std::chrono::steady_clock;

  void background_loop() {
    try {
      Clock::time_point last_start{};
      const auto cycle_time = std::chrono::nanoseconds(c_.config.cycle_time_ns);
      for (std::uint64_t cycle = 0; reduced_ < target_; ++cycle) {
        std::vector<std::size_t> report;
        {
          std::unique_lock<std::mutex> lock(mu_);
          if (cycle > 0) cv_.wait_until(lock, last_start + cycle_time, [&] { return stop_; });
          if (stop_) return;
          report.swap(pending_);
        }
        last_start = Clock::now();
        const Groups groups = negotiate(cycle, report);
        for (std::size_t g = 0; g < groups.size(); ++g)
          execute(cycle, g, groups[g]);
      }
    } catch (const std::exception& e) {
      c_.tracker->fail(e.what());
    }
  }

  Groups negotiate(std::uint64_t cycle, const std::vector<std::size_t>& report) {
    tcp::Runtime& rt = *c_.runtime;
    const int n = rt.size();
    const std::string suffix = std::to_string(cycle);
    const std::string what = "horovod negotiation (cycle " + suffix + ")";
    if (rt.rank() != 0) {
      Words request = encode_request(report, tensors_);
      Words response(1 + 2 * tensors_);
      rt.run(what, c_.timeout_ns, [&](coll::Transport& t, coll::Callback done) {
        auto left = std::make_shared<int>(2);
        auto one = [left, done] {
          if (--*left == 0) done();
        };
        t.send(0, "hvd:req:" + suffix, bytes_of(request), one);
        t.recv(0, "hvd:resp:" + suffix, bytes_of(response), one);
      });
      return decode_response(response, tensors_);
    }
    // Rank 0: gather the requests, answer with the fused groups ready everywhere.
    std::vector<Words> requests(static_cast<std::size_t>(n), Words(1 + tensors_));
    Words response;
    Groups groups;
    auto answer = [&] {
      std::vector<std::vector<std::size_t>> reports(static_cast<std::size_t>(n));
      reports[0] = report;
      for (int r = 1; r < n; ++r) {
        reports[static_cast<std::size_t>(r)] =
            decode_request(requests[static_cast<std::size_t>(r)], tensors_, r);
      }
      groups = train::fuse_tensors(
          table_->add_cycle(reports),
          [this](std::size_t t) { return c_.buffers->elements(t) * sizeof(float); },
          c_.config.fusion_bytes);
      response = encode_response(groups, tensors_);
    };
    if (n == 1) {
      answer();
      return groups;
    }
    rt.run(what, c_.timeout_ns, [&](coll::Transport& t, coll::Callback done) {
      auto requests_left = std::make_shared<int>(n - 1);
      auto sends_left = std::make_shared<int>(n - 1);
      for (int r = 1; r < n; ++r) {
        // The coordinator thread's locals outlive every callback: it blocks in rt.run until
        // done, and a failure or timeout fails the transport, which drops the callbacks.
        t.recv(r, "hvd:req:" + suffix, bytes_of(requests[static_cast<std::size_t>(r)]),
               [&, transport = &t, requests_left, sends_left, done] {
                 if (--*requests_left > 0) return;
                 answer();
                 for (int w = 1; w < n; ++w) {
                   transport->send(w, "hvd:resp:" + suffix, bytes_of(response), [sends_left, done] {
                     if (--*sends_left == 0) done();
                   });
                 }
               });
      }
    });
    return groups;
  }

  void execute(std::uint64_t cycle, std::size_t index, const std::vector<std::size_t>& group) {
    GradientBuffers& b = *c_.buffers;
    c_.tracker->activity(+1);
    coll::Workspace w;
    w.name = "hvd:" + std::to_string(cycle) + ":" + std::to_string(index);
    w.dtype = coll::DType::kF32;
    w.op = coll::ReduceOp::kSum;
    if (group.size() == 1) {
      const coll::Workspace own = b.workspace(group.front());
      w.count = own.count;
      w.send = own.send;
      w.recv = own.recv;
      c_.runtime->run_allreduce(*ring_, w, c_.timeout_ns);
    } else {
      std::size_t count = 0;
      for (std::size_t t : group)
        count += b.elements(t);
      if (fusion_.size() < count) fusion_.resize(count);
      std::size_t at = 0;
      for (std::size_t t : group) {
        std::memcpy(fusion_.data() + at, b.send(t), b.elements(t) * sizeof(float));
        at += b.elements(t);
      }
      w.count = count;
      w.recv = {reinterpret_cast<std::byte*>(fusion_.data()), count * sizeof(float)};
      w.send = w.recv;
      c_.runtime->run_allreduce(*ring_, w, c_.timeout_ns);
      at = 0;
      for (std::size_t t : group) {
        std::memcpy(b.recv(t), fusion_.data() + at, b.elements(t) * sizeof(float));
        at += b.elements(t);
      }
    }
    c_.tracker->activity(-1);
    for (std::size_t t : group)
      c_.tracker->gradient_reduced(t);
    reduced_ += group.size();
  }

  LiveSystemContext c_;
  std::size_t tensors_;
  std::unique_ptr<coll::AllReduce> ring_;
  std::unique_ptr<train::HorovodMessageTable> table_;  // rank 0 only
  std::vector<float> fusion_;                          // the fusion buffer, grown on demand
  std::uint64_t reduced_ = 0;                          // gradients reduced over all steps
  std::uint64_t target_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::size_t> pending_;  // ready, not yet reported; guarded by mu_
  bool stop_ = false;                 // guarded by mu_

  std::thread thread_;
};

}  // namespace

std::unique_ptr<LiveSystem> make_horovod_live(const LiveSystemContext& c) {
  return std::make_unique<HorovodLive>(c);
}

}  // namespace adaptsim::live
