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
// worker thread after each one, so it must be thread-safe (TcpTransport posts to its loop).

#include <array>
#include <atomic>
#include <condition_variable>
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
  };

  // threads >= 1.
  TagWorkers(int threads, std::function<void()> on_done);
  ~TagWorkers();  // drops queued jobs, waits for running ones
  TagWorkers(const TagWorkers&) = delete;
  TagWorkers& operator=(const TagWorkers&) = delete;

  void submit(std::shared_ptr<Job> job);
  // Afterwards no thread reads `job`'s memory: a queued job is dropped (not done), a running one
  // is waited for (done).
  void retract(const std::shared_ptr<Job>& job);
  // Afterwards `job` is done and no thread reads its memory: a queued job is computed here, a
  // running one is waited for.
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
  static void compute(Job& job);  // sets tag (or error), then done

  std::mutex mutex_;
  std::condition_variable work_cv_;  // queue_ not empty, or stopping
  std::condition_variable done_cv_;  // a running job finished
  std::deque<std::shared_ptr<Job>> queue_;
  std::vector<const Job*> running_;
  bool stopping_ = false;
  std::function<void()> on_done_;
  std::vector<std::thread> threads_;
};

}  // namespace adaptsim::tcp
