#pragma once
// Frame tags (auth.h) computed on helper threads, so that a rank's event-loop thread only moves
// and reduces bytes. The loop thread runs everything else of a rank (tcp_transport.h); with
// authenticated frames it also computed a tag over every byte sent and received, which on a
// machine with idle cores is the largest cost of authentication: the tag runs at ~6 GB/s per core
// (auth.h) while a rank moves ~3 GB/s on loopback (docs/reliability.md, "Authentication").
//
// A Job owns everything it reads except the payload, which stays the caller's (a message being
// sent, or the posted recv's buffer being verified): the owner must retract() a job before that
// memory may go away. Jobs run in submission order on the first idle thread; on_done runs on the
// worker thread after each one is done, so it must be thread-safe (TcpTransport posts to its
// loop).
//
// A streaming job checks a payload that is still arriving, so that only its last bytes are left
// to absorb when the frame's tag arrives (on a lock-step ring a 16 MiB segment's check, ~3 ms,
// would otherwise follow its last byte every step; issue 19). The owner submits it once the
// frame's header and name are in (its destination known) and publish()es how much of the payload
// is in place as it grows. A worker absorbs what is published and, when it has caught up, parks
// the job: it holds no thread while bytes are awaited, so a job waiting for bytes that never come
// blocks nothing and retract() needs no wake-up. publish() queues it again once
// kStreamChunkBytes more are in place, or the whole payload is.

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "hw/tcp/auth.h"
#include "hw/tcp/frame.h"

namespace adaptsim::tcp {

class TagWorkers {
 public:
  struct Job {
    SecretKey key{};
    std::uint64_t seq = 0;
    std::array<std::byte, kFrameHeaderBytes> header{};
    std::string name;
    ByteView payload;    // the caller's memory: retract() before it goes away
    Tag tag{};           // the result, once done
    bool error = false;  // OpenSSL failed (then `tag` is meaningless); read once done
    std::atomic<bool> done{false};

    // Streaming jobs only (set before submit). `available` and `parked` are guarded by the
    // workers' mutex; `stream` and `absorbed` belong to whichever thread runs the job.
    bool streaming = false;
    std::size_t available = 0;  // payload bytes [0, available) are in place
    bool parked = false;        // caught up with `available`: neither queued nor running
    std::size_t absorbed = 0;   // payload bytes absorbed into `stream`
    std::unique_ptr<FrameTagStream> stream;  // created by the first step, with header and name
  };

  // A parked job is queued again once this many more payload bytes are in place: enough that the
  // hand-over (~10 us) is small against absorbing them (~40 us at 6 GB/s), few enough that little
  // is left when the last byte arrives.
  static constexpr std::size_t kStreamChunkBytes = 256 << 10;

  // threads >= 1.
  TagWorkers(int threads, std::function<void()> on_done);
  ~TagWorkers();  // drops queued jobs, waits for running ones
  TagWorkers(const TagWorkers&) = delete;
  TagWorkers& operator=(const TagWorkers&) = delete;

  void submit(std::shared_ptr<Job> job);
  // A streaming job's payload bytes [0, bytes) are in place (bytes only grows, up to the
  // payload's size). Owner's thread.
  void publish(const std::shared_ptr<Job>& job, std::size_t bytes);
  // Afterwards no thread reads `job`'s memory: a queued or parked job is dropped (not done), a
  // running one is waited for (done, or parked).
  void retract(const std::shared_ptr<Job>& job);
  // Afterwards `job` is done and no thread reads its memory: a queued (or parked) job is computed
  // here, a running one is waited for. A streaming job's whole payload must be published.
  void finish(const std::shared_ptr<Job>& job);
  int threads() const { return static_cast<int>(threads_.size()); }

  // How many helper threads a rank gets by default: the cores this process may run on, shared
  // by the `ranks_on_machine`, less the rank's own loop thread, at most 2; 0 (tags computed
  // inline) where the cores are all taken. Ranks in network namespaces of one machine (the
  // testbed) each count as alone on theirs.
  static int default_threads(int ranks_on_machine);

 private:
  void run();
  // Removes `job` from the queue (true), or waits until no thread runs it (false).
  bool take_or_wait(const std::shared_ptr<Job>& job);
  // Absorbs the payload up to `upto` (a streaming job; all of it otherwise) and, at its end,
  // sets tag (or error), then done. True when done.
  static bool step(Job& job, std::size_t upto);

  std::mutex mutex_;
  std::condition_variable work_cv_;  // queue_ not empty, or stopping
  std::condition_variable done_cv_;  // a running job finished or parked
  std::deque<std::shared_ptr<Job>> queue_;
  std::vector<const Job*> running_;
  bool stopping_ = false;
  std::function<void()> on_done_;
  std::vector<std::thread> threads_;
};

}  // namespace adaptsim::tcp
