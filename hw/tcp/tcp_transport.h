#pragma once
// coll::Transport over real TCP sockets: the live runtime's counterpart of SimFabric, so every
// strategy of sim/coll runs unchanged on real processes exchanging real bytes.
//
// Topology: a full mesh, one connection per rank pair; the higher rank connects to the lower
// one, which accepts. A connection counts as a peer only after the handshake proved it knows the
// job's secret and names the expected ranks (frame.h, auth.h). Stray, garbage or unauthenticated
// connections are dropped with a logged reason and never disturb the collectives; every later
// frame is authenticated, and one that fails its tag fails the transport before its payload is
// handed to anyone.
//
// Messages: send() frames header + name + the caller's payload + tag and writes them with one
// sendmsg() gather (the payload is never copied; partial writes resume from where they
// stopped). recv() matches (source, name) in FIFO order. When the recv is already posted as the
// message arrives, the payload goes straight from the socket into the caller's buffer; otherwise
// into a staging buffer that is copied once when the recv is posted. Only the bytes that happened
// to arrive in the same read as their frame header (at most read_buffer_bytes) pass through the
// connection's read buffer.
//
// Threading: everything runs on the EventLoop's thread (start, send, recv, ...); every callback
// runs on a later turn of the loop, never inside the call that registered it.
//
// Failure: the transport fails as a whole (fail()) when a peer is lost (EOF or error without a
// prior graceful goodbye), a peer breaks the protocol or reports its own failure (abort frame), a
// recv size does not match, or the mesh is not up within the connect timeout. Then it tells
// every peer it still can (abort frame, so failures spread at once with their root cause), every
// pending callback is dropped (the collectives above are abandoned; their buffers are never
// touched again) and the failure handler runs once with a reason that names the peer rank and
// address.

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "hw/tcp/buffer_pool.h"
#include "hw/tcp/cluster_spec.h"
#include "hw/tcp/event_loop.h"
#include "hw/tcp/frame.h"
#include "hw/tcp/socket_util.h"
#include "hw/tcp/tag_workers.h"
#include "sim/coll/transport.h"

namespace adaptsim::tcp {

// Test hook: make this rank die in the middle of a collective.
enum class FaultAction {
  kNone,
  kKillProcess,      // raise(SIGKILL): the process vanishes, the kernel closes its sockets
  kDropConnections,  // close every socket without a goodbye (an in-process "death")
};
struct FaultInjection {
  FaultAction action = FaultAction::kNone;
  std::uint64_t after_sends = 0;  // fires once this many data messages were fully sent
};

// A data message this rank sent (TcpTransportOptions::record_sends): to whom, its payload, and
// when its first and last bytes were handed to the kernel (steady clock, EventLoop::now_ns).
struct SentMessage {
  int dst = 0;
  std::uint64_t bytes = 0;
  TimeNs first_byte_ns = 0;
  TimeNs last_byte_ns = 0;
};

struct TcpTransportOptions {
  FrameLimits limits;
  // The whole mesh must be up within this time (peers started later are retried meanwhile).
  TimeNs connect_timeout_ns = 30 * kNsPerSecond;
  // First delay between connection attempts to a peer that is not listening yet; it doubles up
  // to max_connect_retry_ns.
  TimeNs connect_retry_ns = 10 * kNsPerMs;
  TimeNs max_connect_retry_ns = 250 * kNsPerMs;
  // An accepted connection must complete its handshake within this time or is dropped (dialed
  // connections are bounded by connect_timeout_ns instead).
  TimeNs handshake_timeout_ns = 5 * kNsPerSecond;
  // Accepted connections still in their handshake beyond this are refused at once (a flood of
  // stray connections cannot exhaust memory or descriptors).
  std::size_t max_pending_handshakes = 256;
  // SO_SNDBUF/SO_RCVBUF (0 = kernel autotuning). 4 MiB holds several 1 MiB chunks in flight;
  // the kernel caps it at net.core.{w,r}mem_max.
  int socket_buffer_bytes = 4 << 20;
  // TCP congestion control of every connection (TCP_CONGESTION), e.g. "cubic"; empty: the
  // system's default (net.ipv4.tcp_congestion_control). It decides how flows share a bottleneck
  // and whether they keep its buffer full (docs/validation.md).
  std::string congestion_control;
  // Per-connection read buffer for headers and names (and the payload bytes that arrive with
  // them). Small, so that the bulk of a payload is read directly into its destination.
  std::size_t read_buffer_bytes = 16 << 10;
  // A readable connection is read for at most this many bytes per loop turn, so one busy peer
  // cannot starve the others.
  std::size_t read_budget_bytes = 8 << 20;
  // Threads that compute the tags of this rank's frames (tag_workers.h) beside its loop thread:
  // -1 = TagWorkers::default_threads for the ranks listening on this rank's address (0 where
  // the machine's cores are all taken by them),
  // 0 = on the loop thread. Only data frames of at least tag_offload_min_bytes go there (a
  // smaller tag costs less than the hand-over), and only received ones whose recv was posted
  // (staged ones are verified on the loop thread); those are checked as their payloads arrive.
  int tag_threads = -1;
  std::size_t tag_offload_min_bytes = 128 << 10;
  // Released scratch and staging buffers kept for reuse.
  std::size_t pool_cache_bytes = std::size_t{512} << 20;
  // Where log lines go (rejected connections, failures); null: stderr.
  std::function<void(const std::string&)> log;
  FaultInjection fault;
  // Keep a SentMessage per data message sent (the live timeline's transfers).
  bool record_sends = false;
};

class TcpTransport final : public coll::Transport {
 public:
  using FailureHandler = std::function<void(const std::string& reason)>;

  TcpTransport(EventLoop& loop, TcpTransportOptions options);
  ~TcpTransport() override;
  TcpTransport(const TcpTransport&) = delete;
  TcpTransport& operator=(const TcpTransport&) = delete;

  // Loop thread, once. Takes the bound, listening socket (non-blocking), accepts on it and
  // connects to the lower ranks; `on_ready` runs once every peer completed the handshake.
  void start(const ClusterSpec& cluster, UniqueFd listener, coll::Callback on_ready);
  // Runs (once, on the loop thread) when the transport fails.
  void set_failure_handler(FailureHandler handler) { failure_handler_ = std::move(handler); }

  // Graceful close: a goodbye to every peer after its pending sends, then waits until every peer
  // said goodbye or closed (so no unread byte makes the kernel reset a connection) or until
  // timeout_ns; then closes all and runs `done`. A peer that closes after its goodbye is normal.
  void shutdown(TimeNs timeout_ns, coll::Callback done);
  // Fails the transport with `reason` (idempotent; the first reason wins).
  void fail(const std::string& reason);
  bool failed() const { return failed_; }
  const std::string& failure() const { return failure_; }
  bool ready() const { return ready_; }

  // What the transport still waits for, for timeout messages: "waiting for 'x' from rank 1
  // (127.0.0.1:7001); 2 messages to rank 3 (...) not fully sent".
  std::string describe_pending(std::size_t max_items = 4) const;
  // "rank 1 (127.0.0.1:7001)".
  std::string peer_name(int rank) const;
  // Connections dropped before or during their handshake (strays, garbage, failed authentication).
  // Thread-safe.
  std::uint64_t rejected_connections() const { return rejected_connections_; }
  // Threads computing frame tags beside the loop thread (options.tag_threads, resolved by start).
  int tag_threads() const { return tag_workers_ ? tag_workers_->threads() : 0; }
  // Received frames whose tags a TagWorkers thread checked as their payloads arrived (started
  // checking: a frame cut off counts too). Thread-safe.
  std::uint64_t streamed_frames() const { return streamed_frames_; }
  // Data messages fully sent so far (the count the fault hook compares). Thread-safe.
  std::uint64_t data_frames_sent() const { return data_frames_sent_; }
  // With options.record_sends, the data messages sent so far, in the order they completed.
  // Thread-safe.
  std::vector<SentMessage> sent_messages() const;

  // coll::Transport
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int host_of(int rank) const override { return host_of_rank_.at(static_cast<std::size_t>(rank)); }
  void send(int peer, const std::string& name, coll::ConstBytes data, coll::Callback done) override;
  void recv(int peer, const std::string& name, coll::Bytes into, coll::Callback done) override;
  bool arrived(int peer, const std::string& name) const override;
  void reduce(coll::Bytes out, coll::ConstBytes a, coll::ConstBytes b, coll::DType dtype,
              coll::ReduceOp op, coll::Callback done) override;
  void copy(coll::Bytes dst, coll::ConstBytes src, coll::Callback done) override;
  coll::Bytes acquire_scratch(std::size_t size) override;
  void release_scratch(coll::Bytes buffer) override;

 private:
  struct Connection;
  struct OutFrame;
  struct Key {
    int peer;
    std::string name;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const noexcept;
  };
  struct PostedRecv {
    coll::Bytes into;
    coll::Callback done;
  };
  struct Arrival {
    std::byte* data = nullptr;  // from pool_
    std::size_t size = 0;
  };

  void log(const std::string& line) const;
  void complete(coll::Callback cb);  // defers cb to a later turn; dropped if failed by then

  // Connection setup.
  void on_listener_readable();
  void connect_to(int peer);
  void on_connect_event(const std::shared_ptr<Connection>& c, std::uint32_t events);
  void retry_connect(int peer, const std::string& why);
  void on_handshake_frame(const std::shared_ptr<Connection>& c);
  void establish(const std::shared_ptr<Connection>& c, int peer);
  void check_connect_deadline();

  // I/O.
  void on_event(const std::shared_ptr<Connection>& c, std::uint32_t events);
  void on_readable(const std::shared_ptr<Connection>& c);
  bool consume_buffer(const std::shared_ptr<Connection>& c);  // false: connection gone
  bool on_header(const std::shared_ptr<Connection>& c);
  bool on_name(const std::shared_ptr<Connection>& c);
  bool authenticate(const std::shared_ptr<Connection>& c);  // false: failed (and reported)
  bool on_frame_complete(const std::shared_ptr<Connection>& c);
  void flush(const std::shared_ptr<Connection>& c);
  void seal(Connection& c, OutFrame& f);  // computes f's tag with the next sequence number
  // Seals f, or starts its tag on a TagWorkers thread, or takes the finished tag.
  void prepare_tag(Connection& c, OutFrame& f);
  // Starts checking c's incoming payload on a TagWorkers thread as it arrives, where it is a data
  // frame read in place (a posted recv's buffer) of at least tag_offload_min_bytes.
  void start_streaming(Connection& c);
  // The TagWorkers job that checks c's current incoming frame (its header, name and payload
  // destination), taking the frame's sequence number.
  std::shared_ptr<TagWorkers::Job> received_frame_job(Connection& c);
  // A received data frame's tag checked on a TagWorkers thread (streamed, or submitted now once
  // its payload is all in place): false when it is checked here.
  bool verify_later(Connection& c);
  // Delivers c's received frames whose tags were checked, in arrival order; false: failed.
  bool deliver_verified(Connection& c);
  void on_tag_job_done();  // worker threads
  void on_tags_done();     // loop thread
  std::string auth_failure(FrameKind kind, int peer) const;
  void update_interest(Connection& c);
  void enqueue(Connection& c, OutFrame frame);
  void after_data_sent();
  void record_send(int peer, const OutFrame& frame);  // options_.record_sends
  // Blocks until the peer acknowledged every byte sent on c, or until deadline_ns.
  void wait_acknowledged(Connection& c, TimeNs deadline_ns);

  // Teardown.
  void drop(const std::shared_ptr<Connection>& c, const std::string& reason);
  void on_peer_closed(const std::shared_ptr<Connection>& c, const std::string& how);
  void close_connection(Connection& c);
  void send_abort(Connection& c, const std::string& reason, TimeNs deadline_ns);
  // A dialed connection whose hello is sent: reads and checks the peer's hello-ack until the
  // deadline and keys the connection from it (true), so that an abort can follow. fail() only.
  bool take_hello_ack(Connection& c, TimeNs deadline_ns);
  // A dialed connection's side of the handshake: whether a hello-ack (header, payload, tag) was
  // made with the job's secret for this connection's hello; the session keys from it.
  bool hello_ack_authentic(const Connection& c, ByteView header, ByteView payload,
                           const std::byte* tag) const;
  void key_as_dialer(Connection& c, const Nonce& acceptor_nonce);
  void check_shutdown_done();

  EventLoop& loop_;
  TcpTransportOptions options_;
  BufferPool pool_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // guards deferred callbacks

  int rank_ = 0;
  int size_ = 1;
  JobSecret secret_;
  std::uint64_t job_id_ = 0;
  std::vector<SocketAddress> addresses_;
  std::vector<int> host_of_rank_{0};

  UniqueFd listener_;
  EventLoop::TimerId listener_pause_timer_ = 0;
  std::vector<std::shared_ptr<Connection>> peers_;    // by rank; null until established
  std::vector<bool> departed_;                        // by rank: said goodbye
  std::vector<std::shared_ptr<Connection>> dialing_;  // by rank: outgoing, not yet established
  std::vector<TimeNs> retry_delay_;                   // by rank
  std::vector<EventLoop::TimerId> retry_timer_;       // by rank
  std::vector<std::string> last_connect_error_;       // by rank
  std::unordered_map<int, std::shared_ptr<Connection>> handshaking_;  // accepted, by fd
  int established_ = 0;
  bool started_ = false;
  bool ready_ = false;
  coll::Callback on_ready_;
  EventLoop::TimerId connect_deadline_timer_ = 0;

  std::unordered_map<Key, std::deque<PostedRecv>, KeyHash> posted_;
  std::unordered_map<Key, std::deque<Arrival>, KeyHash> arrived_;

  bool failed_ = false;
  std::string failure_;
  FailureHandler failure_handler_;

  bool shutting_down_ = false;
  coll::Callback shutdown_done_;
  EventLoop::TimerId shutdown_timer_ = 0;

  std::atomic<std::uint64_t> data_frames_sent_{0};  // read by other threads
  mutable std::mutex sent_mutex_;
  std::vector<SentMessage> sent_;  // options_.record_sends; guarded by sent_mutex_
  std::atomic<std::uint64_t> rejected_connections_{0};  // read by other threads
  std::atomic<std::uint64_t> streamed_frames_{0};       // read by other threads

  // Frame tags beside the loop thread; destroyed (joined) first. Its threads read alive_weak_
  // (set before they start) and post on_tags_done to the loop, once until it runs.
  std::weak_ptr<bool> alive_weak_;
  std::atomic<bool> tags_notified_{false};
  std::unique_ptr<TagWorkers> tag_workers_;
};

}  // namespace adaptsim::tcp
