#pragma once
// The synchronous face of the live runtime, for programs (adaptsim-tcp, calibrate --backend tcp):
// one Runtime per process (or per rank thread in tests) owns an event-loop thread and the
// TcpTransport on it; its methods block the calling thread until the operation finished on this
// rank, failed, or timed out.
//
// Failure model: every blocking call has a timeout. A timeout, a lost peer or a protocol error
// fails the transport for good (the abandoned collective never touches the caller's buffers
// again) and the call throws RuntimeFailure naming this rank, the operation and the peer:
//   "rank 1: all-reduce 'grad' failed: lost the connection to rank 2 (127.0.0.1:40123): the peer
//    closed the connection".
// After a failure every further call throws at once; the process is expected to exit non-zero.
// One thread at a time may call a Runtime's blocking methods (a rank is one sequential program).
//
// Usage:
//   Runtime rt(SocketAddress{"127.0.0.1", 0});   // listens now, so the address can be published
//   rt.connect(cluster);                          // full mesh, handshakes done
//   rt.run_allreduce(*make_allreduce(kind, rt.host_of_rank()), workspace, 30 * kNsPerSecond);
//   rt.barrier(30 * kNsPerSecond);

#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "hw/tcp/cluster_spec.h"
#include "hw/tcp/event_loop.h"
#include "hw/tcp/tcp_transport.h"
#include "sim/coll/allreduce.h"

namespace adaptsim::tcp {

struct RuntimeOptions {
  TcpTransportOptions transport;
  // A graceful shutdown waits this long for every peer's goodbye before closing anyway.
  TimeNs shutdown_timeout_ns = 5 * kNsPerSecond;
};

class Runtime {
 public:
  // Starts listening on bind_address (port 0: any free port; see listen_address()).
  explicit Runtime(const SocketAddress& bind_address, RuntimeOptions options = {});
  // Adopts a bound, listening socket (the local launcher binds every rank's port itself, so no
  // other process can take it between planning and listening).
  explicit Runtime(UniqueFd listener, RuntimeOptions options = {});
  // Graceful shutdown when still connected; never throws.
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  SocketAddress listen_address() const { return listen_address_; }

  // Builds the full mesh and blocks until every peer completed its handshake. Fails (throws
  // RuntimeFailure naming the missing ranks and addresses) after the transport's
  // connect_timeout_ns.
  void connect(const ClusterSpec& cluster);

  int rank() const { return rank_; }
  int size() const { return size_; }
  const std::vector<int>& host_of_rank() const { return host_of_rank_; }

  // One all-reduce of `w` on this rank; returns when w.recv holds the result.
  void run_allreduce(const coll::AllReduce& algo, const coll::Workspace& w, TimeNs timeout_ns);
  // `iterations` all-reduces of `w` back to back (the next starts on the loop thread as soon as
  // the previous finished here, with no thread hand-off in between). Returns the steady-clock
  // time from the start of the first to the end of the last. timeout_ns bounds each iteration.
  TimeNs time_allreduce(const coll::AllReduce& algo, const coll::Workspace& w, int iterations,
                        TimeNs timeout_ns);
  // Returns once every rank entered the barrier (each call is a new barrier).
  void barrier(TimeNs timeout_ns);

  // The general form: `start` runs on the loop thread with the transport and must eventually
  // call `done` (on the loop thread). `what` names the operation in error messages.
  using StartFn = std::function<void(coll::Transport& transport, coll::Callback done)>;
  void run(const std::string& what, TimeNs timeout_ns, StartFn start);
  // Like run(), but `start` also gets a `progress` callback: each call restarts the timeout, so
  // a long operation (a whole training run) times out only when it stops making progress. At a
  // timeout, `describe` (on the loop thread) says what the operation still waits for; the
  // message adds the transport's pending receives, naming the peers.
  using ProgressStartFn =
      std::function<void(coll::Transport&, coll::Callback done, coll::Callback progress)>;
  void run_with_progress(const std::string& what, TimeNs timeout_ns, ProgressStartFn start,
                         std::function<std::string()> describe = {});

  // For code running on the loop thread (inside run()): the loop's timers and posts, and a
  // failure of this rank that fails the transport (every peer fails at once, naming `reason`).
  EventLoop& loop() { return loop_; }
  void fail_from_loop(const std::string& reason);

  // Graceful close (see TcpTransport::shutdown) and loop thread exit; idempotent.
  void shutdown();

  bool failed() const;
  std::string failure() const;  // empty unless failed()
  std::uint64_t rejected_connections() const;
  // Threads computing this rank's frame tags beside its loop thread (after connect()).
  int tag_threads() const { return transport_.tag_threads(); }
  // Received frames whose tags were checked as their payloads arrived (TcpTransport).
  std::uint64_t streamed_frames() const { return transport_.streamed_frames(); }
  // The data messages sent so far (with TcpTransportOptions::record_sends; empty otherwise).
  std::vector<SentMessage> sent_messages() const { return transport_.sent_messages(); }
  // The fault hook's contract (a test asked for a fault; a run it never reached must not pass
  // as if the fault had been survived): throws when a fault was armed on this rank and the run
  // ended before it fired, naming the messages sent, so a harness can aim again from the count.
  void check_fault_fired() const;

 private:
  void start_thread();
  void on_failure(const std::string& reason);
  [[noreturn]] void throw_failed(const std::string& what) const;
  // Returns once the loop thread has run everything posted before (at most kLoopWaitNs): the
  // task it is in has ended. A no-op on the loop thread itself.
  void wait_for_loop();
  std::string prefix() const;

  RuntimeOptions options_;
  EventLoop loop_;
  TcpTransport transport_;
  UniqueFd listener_;  // until connect() hands it to the transport
  SocketAddress listen_address_;

  int rank_ = 0;
  int size_ = 1;
  std::vector<int> host_of_rank_{0};
  bool connected_ = false;
  bool shut_down_ = false;
  std::uint64_t barrier_seq_ = 0;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::string failure_;  // guarded by mu_; set once

  std::thread thread_;  // last: started after everything it uses exists
};

}  // namespace adaptsim::tcp
