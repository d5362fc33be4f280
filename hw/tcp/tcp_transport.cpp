#include "hw/tcp/tcp_transport.h"

#include <linux/sockios.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <stdexcept>

#include "sim/core/error.h"
#include "sim/core/units.h"

namespace adaptsim::tcp {
namespace {

// One sendmsg() gathers at most this many buffers (4 per frame: header, name, payload, tag);
// Linux accepts up to IOV_MAX = 1024.
constexpr int kMaxIov = 192;
// ... and frames up to about this many bytes: frames are sealed (their tag computed) as they are
// gathered, and there is no point in sealing far beyond what the socket buffer takes at once.
constexpr std::size_t kMaxGatherBytes = std::size_t{8} << 20;
// A payload whose tag is checked as it arrives (TagWorkers' streaming jobs) is read at most this
// much at a time, so that the check follows close behind: what is read last is what is left to
// absorb once the tag is in (~0.17 ms at 6 GB/s), while a syscall per MiB costs nothing that
// matters.
constexpr std::size_t kStreamReadBytes = std::size_t{1} << 20;

// Labels of the handshake tags (auth.h).
constexpr std::string_view kHelloLabel = "adaptsim-tcp v2 hello";
constexpr std::string_view kHelloAckLabel = "adaptsim-tcp v2 hello-ack";

std::string hex_id(std::uint64_t id) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(id));
  return buf;
}

ByteView view(const void* p, std::size_t n) {
  return {static_cast<const std::byte*>(p), n};
}

std::string plural(std::size_t n, const std::string& word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

}  // namespace

struct TcpTransport::OutFrame {
  // Header, plus the handshake payload for hello frames.
  std::array<std::byte, kFrameHeaderBytes + kHelloPayloadBytes> head{};
  std::size_t head_bytes = kFrameHeaderBytes;
  std::string name;
  coll::ConstBytes payload;
  Tag tag{};
  bool sealed = false;  // tag computed (handshake frames: at creation; others: when gathered)
  std::shared_ptr<TagWorkers::Job> job;  // the tag being computed by a TagWorkers thread
  std::size_t written = 0;    // bytes of head + name + payload + tag already handed to the kernel
  TimeNs first_byte_ns = -1;  // when the first of them was (options.record_sends)
  bool is_data = false;
  bool is_bye = false;
  coll::Callback done;

  std::size_t total() const { return head_bytes + name.size() + payload.size + kTagBytes; }
  // Appends the iovecs of what is still unwritten (head, name, payload, tag past `written`) to
  // iov[*n_iov...]; at most 4. The tag only once sealed.
  void unwritten_iov(iovec* iov, int* n_iov) const {
    std::size_t skip = written;
    auto add = [&](const void* base, std::size_t len) {
      if (skip >= len) {
        skip -= len;
        return;
      }
      iov[(*n_iov)++] = {const_cast<std::byte*>(static_cast<const std::byte*>(base)) + skip,
                         len - skip};
      skip = 0;
    };
    add(head.data(), head_bytes);
    add(name.data(), name.size());
    add(payload.data, payload.size);
    if (sealed) add(tag.data(), tag.size());
  }
};

struct TcpTransport::Connection {
  enum class State { kDialing, kHandshake, kEstablished };
  enum class ReadState { kHeader, kName, kPayload, kTag };

  UniqueFd fd;
  State state = State::kHandshake;
  bool outgoing = false;
  bool closed = false;
  int peer = -1;       // the rank dialed (outgoing) or proven by the handshake
  std::string remote;  // host:port for log lines
  EventLoop::TimerId handshake_timer = 0;
  bool want_write = false;  // EPOLLOUT registered (the last write hit a full socket buffer)

  // Authentication (auth.h): this end's handshake nonce, then one session key per direction and
  // the sequence number of the next frame each way.
  Nonce nonce{};
  FrameMac tx;
  FrameMac rx;
  std::uint64_t tx_seq = 0;
  std::uint64_t rx_seq = 0;

  // Read side: a frame is parsed header -> name -> payload -> tag.
  ReadState rstate = ReadState::kHeader;
  bool in_read = false;  // inside on_readable (which must not re-enter itself)
  std::vector<std::byte> rbuf;
  std::size_t rbeg = 0;  // unconsumed bytes are rbuf[rbeg, rend)
  std::size_t rend = 0;
  FrameHeader header;
  std::array<std::byte, kFrameHeaderBytes> raw_header{};  // as received: the tag covers it
  std::string name;
  std::byte* dst = nullptr;  // where the payload goes
  std::size_t got = 0;       // payload bytes placed so far
  bool staged = false;       // dst is a pool buffer: no recv was posted when the name arrived
  coll::Callback claimed;    // the posted recv's callback when dst is the caller's buffer
  std::array<std::byte, kHelloPayloadBytes> hello{};
  std::string abort_reason;  // payload of an abort frame
  Tag tag{};
  std::size_t tag_got = 0;
  // The payload being read, checked by a TagWorkers thread as it arrives (got is published);
  // moves to `verifying` when its tag is in.
  std::shared_ptr<TagWorkers::Job> streaming;
  // Received data frames whose tags a TagWorkers thread checks, in arrival order: delivered
  // (their recv's callback) once checked.
  struct Verifying {
    std::shared_ptr<TagWorkers::Job> job;
    Tag received{};
    coll::Callback claimed;
  };
  std::deque<Verifying> verifying;

  // Write side.
  std::deque<OutFrame> outq;
  bool bye_received = false;
};

std::size_t TcpTransport::KeyHash::operator()(const Key& k) const noexcept {
  return std::hash<std::string>()(k.name) ^
         (static_cast<std::size_t>(k.peer) * 0x9e3779b97f4a7c15ull);
}

TcpTransport::TcpTransport(EventLoop& loop, TcpTransportOptions options)
    : loop_(loop), options_(std::move(options)), pool_(options_.pool_cache_bytes) {
  options_.read_buffer_bytes = std::max<std::size_t>(options_.read_buffer_bytes, 256);
}

TcpTransport::~TcpTransport() {
  tag_workers_.reset();  // no thread reads a frame, or posts to the loop, any more
  alive_.reset();
  // The loop is not running any more (or this is its thread): unregister and close everything.
  auto close_all = [this](std::shared_ptr<Connection>& c) {
    if (c) close_connection(*c);
  };
  for (auto& c : peers_)
    close_all(c);
  for (auto& c : dialing_)
    close_all(c);
  for (auto& [fd, c] : handshaking_)
    close_connection(*c);
  if (listener_.valid()) loop_.remove_fd(listener_.get());
  for (auto id : retry_timer_)
    loop_.cancel_timer(id);
  loop_.cancel_timer(connect_deadline_timer_);
  loop_.cancel_timer(shutdown_timer_);
  loop_.cancel_timer(listener_pause_timer_);
  for (auto& [key, q] : arrived_) {
    for (Arrival& a : q)
      pool_.release(a.data);
  }
}

void TcpTransport::log(const std::string& line) const {
  const std::string full = "[adaptsim-tcp rank " + std::to_string(rank_) + "] " + line;
  if (options_.log) {
    options_.log(full);
  } else {
    std::cerr << full << std::endl;
  }
}

void TcpTransport::complete(coll::Callback cb) {
  if (!cb) return;
  // The loop's tasks are copyable (std::function); a callback is move-only, so it is shared.
  loop_.defer([alive = std::weak_ptr<bool>(alive_), this,
               cb = std::make_shared<coll::Callback>(std::move(cb))] {
    if (alive.expired() || failed_) return;
    (*cb)();
  });
}

std::string TcpTransport::peer_name(int rank) const {
  std::string s = "rank " + std::to_string(rank);
  if (rank >= 0 && rank < static_cast<int>(addresses_.size())) {
    s += " (" + addresses_[static_cast<std::size_t>(rank)].str() + ")";
  }
  return s;
}

// ---------------------------------------------------------------------------------------------
// Setup

void TcpTransport::start(const ClusterSpec& cluster, UniqueFd listener, coll::Callback on_ready) {
  if (started_) throw std::logic_error("TcpTransport::start called twice");
  cluster.validate();
  started_ = true;
  rank_ = cluster.rank;
  size_ = cluster.size();
  secret_ = cluster.secret;
  job_id_ = secret_.job_id();
  addresses_ = cluster.addresses;
  host_of_rank_ = cluster.hosts();
  const auto n = static_cast<std::size_t>(size_);
  peers_.assign(n, nullptr);
  departed_.assign(n, false);
  dialing_.assign(n, nullptr);
  retry_delay_.assign(n, options_.connect_retry_ns);
  retry_timer_.assign(n, 0);
  last_connect_error_.assign(n, "");
  on_ready_ = std::move(on_ready);
  int tag_threads = options_.tag_threads;
  if (tag_threads < 0) {
    // The ranks on this machine: those listening on this rank's address (every loopback address
    // counts as one machine; emulated hosts of one machine, host_of_rank, do not count apart).
    auto machine = [](const std::string& host) {
      return host.rfind("127.", 0) == 0 || host == "localhost" ? std::string("loopback") : host;
    };
    const std::string here = machine(addresses_.at(static_cast<std::size_t>(rank_)).host);
    tag_threads = TagWorkers::default_threads(static_cast<int>(
        std::count_if(addresses_.begin(), addresses_.end(),
                      [&](const SocketAddress& a) { return machine(a.host) == here; })));
  }
  if (tag_threads > 0 && size_ > 1) {
    alive_weak_ = alive_;
    tag_workers_ = std::make_unique<TagWorkers>(tag_threads, [this] { on_tag_job_done(); });
  }

  listener_ = std::move(listener);
  if (listener_.valid()) {
    // Accepted sockets inherit the buffer sizes, and the window scale is chosen at the SYN.
    check_congestion_control(options_.congestion_control);
    tune_socket(listener_.get(), options_.socket_buffer_bytes, options_.congestion_control);
    loop_.add_fd(listener_.get(), EPOLLIN, [this](std::uint32_t) { on_listener_readable(); });
  }
  if (size_ == 1) {
    ready_ = true;
    complete(std::move(on_ready_));
    return;
  }
  for (int p = 0; p < rank_; ++p)
    connect_to(p);
  connect_deadline_timer_ =
      loop_.add_timer(options_.connect_timeout_ns, [this] { check_connect_deadline(); });
}

void TcpTransport::check_connect_deadline() {
  connect_deadline_timer_ = 0;
  if (ready_ || failed_) return;
  std::string missing;
  int count = 0;
  for (int r = 0; r < size_; ++r) {
    if (r == rank_ || peers_[static_cast<std::size_t>(r)]) continue;
    if (count++ > 0) missing += ", ";
    missing += peer_name(r);
    if (r < rank_) {
      const std::string& e = last_connect_error_[static_cast<std::size_t>(r)];
      missing += e.empty() ? " (dialing)" : " (last error: " + e + ")";
    } else {
      missing += " (never connected to us)";
    }
  }
  fail("could not connect to " + missing + " within " +
       format_seconds(to_seconds(options_.connect_timeout_ns)));
}

void TcpTransport::on_listener_readable() {
  for (;;) {
    std::string remote;
    const int fd = accept_from(listener_.get(), remote);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      // Out of descriptors or memory: stop accepting for a moment instead of spinning.
      log("accept failed: " + errno_text(errno) + "; pausing accepts for 100 ms");
      loop_.remove_fd(listener_.get());
      listener_pause_timer_ = loop_.add_timer(100 * kNsPerMs, [this] {
        listener_pause_timer_ = 0;
        if (listener_.valid() && !failed_ && !shutting_down_) {
          loop_.add_fd(listener_.get(), EPOLLIN, [this](std::uint32_t) { on_listener_readable(); });
        }
      });
      return;
    }
    UniqueFd owned(fd);
    if (handshaking_.size() >= options_.max_pending_handshakes) {
      ++rejected_connections_;
      log("rejected connection from " + remote + ": too many connections in handshake");
      continue;
    }
    tune_socket(fd, options_.socket_buffer_bytes, options_.congestion_control);
    auto c = std::make_shared<Connection>();
    c->fd = std::move(owned);
    c->state = Connection::State::kHandshake;
    c->remote = remote;
    c->rbuf.resize(options_.read_buffer_bytes);
    loop_.add_fd(fd, EPOLLIN, [this, c](std::uint32_t ev) { on_event(c, ev); });
    c->handshake_timer = loop_.add_timer(options_.handshake_timeout_ns, [this, c] {
      c->handshake_timer = 0;
      drop(c, "no handshake within " + format_seconds(to_seconds(options_.handshake_timeout_ns)));
    });
    handshaking_[fd] = std::move(c);
  }
}

void TcpTransport::connect_to(int peer) {
  const auto p = static_cast<std::size_t>(peer);
  retry_timer_[p] = 0;
  if (failed_ || ready_ || peers_[p]) return;
  const SocketAddress& address = addresses_[p];
  std::pair<sockaddr_storage, socklen_t> resolved;
  try {
    resolved = resolve_address(address);
  } catch (const std::exception& e) {
    retry_connect(peer, e.what());
    return;
  }
  UniqueFd fd(::socket(resolved.first.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) {
    retry_connect(peer, "socket: " + errno_text(errno));
    return;
  }
  tune_socket(fd.get(), options_.socket_buffer_bytes, options_.congestion_control);
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&resolved.first), resolved.second) !=
          0 &&
      errno != EINPROGRESS) {
    retry_connect(peer, errno_text(errno));
    return;
  }
  auto c = std::make_shared<Connection>();
  c->fd = std::move(fd);
  c->state = Connection::State::kDialing;
  c->outgoing = true;
  c->peer = peer;
  c->remote = address.str();
  c->rbuf.resize(options_.read_buffer_bytes);
  loop_.add_fd(c->fd.get(), EPOLLOUT, [this, c](std::uint32_t ev) { on_event(c, ev); });
  dialing_[p] = std::move(c);
}

void TcpTransport::retry_connect(int peer, const std::string& why) {
  const auto p = static_cast<std::size_t>(peer);
  last_connect_error_[p] = why;
  if (failed_ || ready_ || peers_[p] || retry_timer_[p] != 0) return;
  const TimeNs delay = retry_delay_[p];
  retry_delay_[p] = std::min(delay * 2, options_.max_connect_retry_ns);
  retry_timer_[p] = loop_.add_timer(delay, [this, peer] { connect_to(peer); });
}

void TcpTransport::on_connect_event(const std::shared_ptr<Connection>& c, std::uint32_t) {
  int err = 0;
  socklen_t len = sizeof err;
  if (::getsockopt(c->fd.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
  if (err != 0) {
    drop(c, errno_text(err));
    return;
  }
  c->state = Connection::State::kHandshake;
  c->nonce = random_nonce();
  OutFrame hello;
  FrameHeader h;
  h.kind = FrameKind::kHello;
  h.job_id = job_id_;
  h.src_rank = static_cast<std::uint32_t>(rank_);
  h.payload_bytes = kHelloPayloadBytes;
  encode_frame_header(h, hello.head.data());
  encode_hello_payload(
      {static_cast<std::uint32_t>(c->peer), static_cast<std::uint32_t>(size_), c->nonce},
      hello.head.data() + kFrameHeaderBytes);
  hello.head_bytes = kFrameHeaderBytes + kHelloPayloadBytes;
  hello.tag = handshake_tag(secret_, kHelloLabel, {view(hello.head.data(), hello.head_bytes)});
  hello.sealed = true;
  // No reply timer here: giving up early and dialing again would leave the acceptor with a
  // dead half of an established connection. The connect deadline bounds the wait.
  update_interest(*c);
  enqueue(*c, std::move(hello));
}

void TcpTransport::on_handshake_frame(const std::shared_ptr<Connection>& c) {
  // First the proof: nothing else a stranger says is looked at.
  const ByteView frame[] = {view(c->raw_header.data(), c->raw_header.size()),
                            view(c->hello.data(), c->hello.size())};
  const bool authentic =
      c->outgoing ? hello_ack_authentic(*c, frame[0], frame[1], c->tag.data())
                  : tags_equal(handshake_tag(secret_, kHelloLabel, {frame[0], frame[1]}).data(),
                               c->tag.data());
  if (!authentic) {
    drop(c, std::string(frame_kind_name(c->header.kind)) +
                " frame failed authentication: the peer does not know this job's secret");
    return;
  }
  const HelloPayload hello = decode_hello_payload(c->hello.data());
  const std::uint32_t expected = hello.expected_peer, cluster_size = hello.cluster_size;
  const auto src = static_cast<int>(c->header.src_rank);
  if (cluster_size != static_cast<std::uint32_t>(size_)) {
    drop(c, "peer believes the cluster has " + std::to_string(cluster_size) + " ranks, not " +
                std::to_string(size_));
    return;
  }
  if (expected != static_cast<std::uint32_t>(rank_)) {
    drop(c, "handshake addressed to rank " + std::to_string(expected) + ", this is rank " +
                std::to_string(rank_));
    return;
  }
  if (c->outgoing) {
    if (src != c->peer) {
      drop(c, "the process at " + c->remote + " says it is rank " + std::to_string(src) +
                  ", expected rank " + std::to_string(c->peer));
      return;
    }
    dialing_[static_cast<std::size_t>(src)] = nullptr;
    key_as_dialer(*c, hello.nonce);
    establish(c, src);
    return;
  }
  // Accepted: only higher ranks dial us, each once.
  if (src <= rank_ || src >= size_) {
    drop(c, "hello from rank " + std::to_string(src) + ", which must not dial rank " +
                std::to_string(rank_));
    return;
  }
  if (peers_[static_cast<std::size_t>(src)]) {
    drop(c, "rank " + std::to_string(src) + " is already connected");
    return;
  }
  handshaking_.erase(c->fd.get());
  c->nonce = random_nonce();
  const SessionKeys keys =
      derive_session_keys(secret_, static_cast<std::uint32_t>(src),
                          static_cast<std::uint32_t>(rank_), hello.nonce, c->nonce);
  c->tx = FrameMac(keys.acceptor_to_dialer);
  c->rx = FrameMac(keys.dialer_to_acceptor);
  OutFrame ack;
  FrameHeader h;
  h.kind = FrameKind::kHelloAck;
  h.job_id = job_id_;
  h.src_rank = static_cast<std::uint32_t>(rank_);
  h.payload_bytes = kHelloPayloadBytes;
  encode_frame_header(h, ack.head.data());
  encode_hello_payload(
      {static_cast<std::uint32_t>(src), static_cast<std::uint32_t>(size_), c->nonce},
      ack.head.data() + kFrameHeaderBytes);
  ack.head_bytes = kFrameHeaderBytes + kHelloPayloadBytes;
  ack.tag = handshake_tag(
      secret_, kHelloAckLabel,
      {view(ack.head.data(), ack.head_bytes), view(hello.nonce.data(), hello.nonce.size())});
  ack.sealed = true;
  establish(c, src);
  enqueue(*c, std::move(ack));
}

void TcpTransport::establish(const std::shared_ptr<Connection>& c, int peer) {
  loop_.cancel_timer(c->handshake_timer);
  c->handshake_timer = 0;
  c->state = Connection::State::kEstablished;
  c->peer = peer;
  c->remote = addresses_[static_cast<std::size_t>(peer)].str();
  peers_[static_cast<std::size_t>(peer)] = c;
  if (++established_ == size_ - 1) {
    ready_ = true;
    loop_.cancel_timer(connect_deadline_timer_);
    connect_deadline_timer_ = 0;
    complete(std::move(on_ready_));
  }
}

// ---------------------------------------------------------------------------------------------
// Reading

void TcpTransport::on_event(const std::shared_ptr<Connection>& c, std::uint32_t events) {
  if (c->closed || failed_) return;
  if (c->state == Connection::State::kDialing) {
    on_connect_event(c, events);
    return;
  }
  if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) on_readable(c);
  if (!c->closed && !failed_ && (events & EPOLLOUT)) flush(c);
}

void TcpTransport::on_readable(const std::shared_ptr<Connection>& c) {
  struct Guard {
    bool& flag;
    explicit Guard(bool& f) : flag(f) { flag = true; }
    ~Guard() { flag = false; }
  } guard(c->in_read);
  std::size_t total = 0;
  while (!c->closed && !failed_) {
    if (!consume_buffer(c)) return;
    if (total >= options_.read_budget_bytes) return;  // level-triggered: the rest comes next turn
    ssize_t n = 0;
    if (c->rstate == Connection::ReadState::kPayload) {
      // The read buffer is empty here: the payload goes straight to its destination, and
      // whatever follows it (the next frames) into the read buffer.
      const std::size_t remaining = c->header.payload_bytes - c->got;
      const std::size_t want = c->streaming ? std::min(remaining, kStreamReadBytes) : remaining;
      iovec iov[2] = {{c->dst + c->got, want}, {c->rbuf.data(), c->rbuf.size()}};
      c->rbeg = c->rend = 0;
      n = ::readv(c->fd.get(), iov, want < remaining ? 1 : 2);
      if (n > 0) {
        const std::size_t take = std::min(static_cast<std::size_t>(n), want);
        c->got += take;
        c->rend = static_cast<std::size_t>(n) - take;
      }
    } else {
      if (c->rbeg > 0) {
        std::memmove(c->rbuf.data(), c->rbuf.data() + c->rbeg, c->rend - c->rbeg);
        c->rend -= c->rbeg;
        c->rbeg = 0;
      }
      n = ::recv(c->fd.get(), c->rbuf.data() + c->rend, c->rbuf.size() - c->rend, 0);
      if (n > 0) c->rend += static_cast<std::size_t>(n);
    }
    if (n == 0) {
      on_peer_closed(c, "the peer closed the connection");
      return;
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      on_peer_closed(c, errno_text(errno));
      return;
    }
    total += static_cast<std::size_t>(n);
  }
}

bool TcpTransport::consume_buffer(const std::shared_ptr<Connection>& c) {
  using RS = Connection::ReadState;
  for (;;) {
    if (c->closed || failed_) return false;
    switch (c->rstate) {
      case RS::kHeader: {
        if (c->rend - c->rbeg < kFrameHeaderBytes) return true;
        const std::string err =
            decode_frame_header(c->rbuf.data() + c->rbeg, options_.limits, c->header);
        std::memcpy(c->raw_header.data(), c->rbuf.data() + c->rbeg, kFrameHeaderBytes);
        c->rbeg += kFrameHeaderBytes;
        if (!err.empty()) {
          drop(c, err);
          return false;
        }
        if (!on_header(c)) return false;
        c->name.clear();
        c->rstate = RS::kName;
        break;
      }
      case RS::kName: {
        const std::size_t need = c->header.name_bytes - c->name.size();
        const std::size_t take = std::min(need, c->rend - c->rbeg);
        c->name.append(reinterpret_cast<const char*>(c->rbuf.data() + c->rbeg), take);
        c->rbeg += take;
        if (c->name.size() < c->header.name_bytes) return true;
        c->got = 0;  // before on_name: a streamed check starts from it
        if (!on_name(c)) return false;
        c->rstate = RS::kPayload;
        break;
      }
      case RS::kPayload: {
        const std::size_t remaining = c->header.payload_bytes - c->got;
        const std::size_t take = std::min(remaining, c->rend - c->rbeg);
        if (take > 0) {
          std::memcpy(c->dst + c->got, c->rbuf.data() + c->rbeg, take);
          c->got += take;
          c->rbeg += take;
        }
        // on_readable comes here after every read, so each piece is published as it lands (the
        // last one too: the job must have it all before its tag is in).
        if (c->streaming) tag_workers_->publish(c->streaming, c->got);
        if (take < remaining) return true;
        c->tag_got = 0;
        c->rstate = RS::kTag;
        break;
      }
      case RS::kTag: {
        const std::size_t take = std::min(kTagBytes - c->tag_got, c->rend - c->rbeg);
        std::memcpy(c->tag.data() + c->tag_got, c->rbuf.data() + c->rbeg, take);
        c->tag_got += take;
        c->rbeg += take;
        if (c->tag_got < kTagBytes) return true;
        if (c->state == Connection::State::kEstablished && verify_later(*c)) {
          c->rstate = RS::kHeader;
          // A streamed check may be done already (on_tags_done found it still streaming).
          if (!deliver_verified(*c)) return false;
          break;
        }
        if (c->state == Connection::State::kEstablished && !authenticate(c)) return false;
        if (!on_frame_complete(c)) return false;
        c->rstate = RS::kHeader;
        break;
      }
    }
  }
}

bool TcpTransport::on_header(const std::shared_ptr<Connection>& c) {
  const FrameHeader& h = c->header;
  if (h.job_id != job_id_) {
    drop(c, std::string(frame_kind_name(h.kind)) + " frame of another job (job id " +
                hex_id(h.job_id) + ", this job's is " + hex_id(job_id_) + ")");
    return false;
  }
  if (c->state == Connection::State::kEstablished) {
    if (h.src_rank != static_cast<std::uint32_t>(c->peer)) {
      drop(c, "frame claims to come from rank " + std::to_string(h.src_rank));
      return false;
    }
    if (h.kind == FrameKind::kBye && (h.name_bytes != 0 || h.payload_bytes != 0)) {
      drop(c, "malformed goodbye frame");
      return false;
    }
    if (h.kind == FrameKind::kAbort &&
        (h.name_bytes != 0 || h.payload_bytes > kMaxAbortReasonBytes)) {
      drop(c, "malformed abort frame");
      return false;
    }
    if (h.kind != FrameKind::kData && h.kind != FrameKind::kBye && h.kind != FrameKind::kAbort) {
      drop(c, "unexpected " + std::string(frame_kind_name(h.kind)) + " frame after the handshake");
      return false;
    }
    return true;
  }
  const FrameKind expected = c->outgoing ? FrameKind::kHelloAck : FrameKind::kHello;
  if (h.kind != expected) {
    drop(c, "expected a " + std::string(frame_kind_name(expected)) + " frame, got a " +
                std::string(frame_kind_name(h.kind)) + " frame");
    return false;
  }
  if (h.name_bytes != 0 || h.payload_bytes != kHelloPayloadBytes) {
    drop(c, "malformed " + std::string(frame_kind_name(h.kind)) + " frame");
    return false;
  }
  return true;
}

bool TcpTransport::authenticate(const std::shared_ptr<Connection>& c) {
  const std::size_t payload = c->header.payload_bytes;
  const Tag want = c->rx.tag(c->rx_seq++, {view(c->raw_header.data(), c->raw_header.size()),
                                           view(c->name.data(), c->name.size()),
                                           view(payload > 0 ? c->dst : nullptr, payload)});
  if (tags_equal(want.data(), c->tag.data())) return true;
  fail(auth_failure(c->header.kind, c->peer));
  return false;
}

std::string TcpTransport::auth_failure(FrameKind kind, int peer) const {
  return "a " + std::string(frame_kind_name(kind)) + " frame from " + peer_name(peer) +
         " failed authentication (altered in flight, or not sent by this job)";
}

std::shared_ptr<TagWorkers::Job> TcpTransport::received_frame_job(Connection& c) {
  const std::size_t size = c.header.payload_bytes;
  auto job = std::make_shared<TagWorkers::Job>();
  job->key = c.rx.key();
  job->seq = c.rx_seq++;  // the frame's place in the connection's sequence, taken now
  job->header = c.raw_header;
  job->name = c.name;
  job->payload = view(size > 0 ? c.dst : nullptr, size);
  return job;
}

void TcpTransport::start_streaming(Connection& c) {
  const std::size_t size = c.header.payload_bytes;
  if (!tag_workers_ || c.state != Connection::State::kEstablished ||
      c.header.kind != FrameKind::kData || c.staged || size < options_.tag_offload_min_bytes) {
    return;
  }
  std::shared_ptr<TagWorkers::Job> job = received_frame_job(c);
  job->streaming = true;
  job->available = c.got;
  c.streaming = job;
  ++streamed_frames_;
  tag_workers_->submit(std::move(job));
}

bool TcpTransport::verify_later(Connection& c) {
  if (c.streaming) {  // all of the payload is published (kPayload)
    c.verifying.push_back({std::move(c.streaming), c.tag, std::move(c.claimed)});
    c.streaming = nullptr;
    c.claimed = nullptr;
    c.dst = nullptr;
    return true;
  }
  const std::size_t size = c.header.payload_bytes;
  if (!tag_workers_ || c.header.kind != FrameKind::kData || c.staged ||
      size < options_.tag_offload_min_bytes) {
    return false;
  }
  std::shared_ptr<TagWorkers::Job> job = received_frame_job(c);
  c.verifying.push_back({job, c.tag, std::move(c.claimed)});
  c.claimed = nullptr;
  c.dst = nullptr;
  tag_workers_->submit(std::move(job));
  return true;
}

bool TcpTransport::deliver_verified(Connection& c) {
  while (!c.verifying.empty() && c.verifying.front().job->done.load()) {
    Connection::Verifying v = std::move(c.verifying.front());
    c.verifying.pop_front();
    if (v.job->error || !tags_equal(v.job->tag.data(), v.received.data())) {
      fail(auth_failure(FrameKind::kData, c.peer));
      return false;
    }
    complete(std::move(v.claimed));
  }
  return true;
}

void TcpTransport::on_tag_job_done() {
  if (tags_notified_.exchange(true)) return;
  loop_.post([this, alive = alive_weak_] {
    if (!alive.expired()) on_tags_done();
  });
}

void TcpTransport::on_tags_done() {
  tags_notified_.store(false);
  for (std::size_t p = 0; p < peers_.size() && !failed_; ++p) {
    const std::shared_ptr<Connection> c = peers_[p];
    if (!c || !deliver_verified(*c)) continue;
    if (!c->closed && !c->want_write && !c->outq.empty()) flush(c);
  }
}

bool TcpTransport::on_name(const std::shared_ptr<Connection>& c) {
  c->staged = false;
  c->dst = nullptr;
  if (c->state != Connection::State::kEstablished) {
    c->dst = c->hello.data();
    return true;
  }
  if (c->header.kind == FrameKind::kAbort) {
    c->abort_reason.assign(c->header.payload_bytes, '\0');
    c->dst = reinterpret_cast<std::byte*>(c->abort_reason.data());
    return true;
  }
  if (c->header.kind != FrameKind::kData) return true;  // goodbye: no payload
  const std::size_t size = c->header.payload_bytes;
  auto it = posted_.find(Key{c->peer, c->name});
  if (it != posted_.end() && !it->second.empty()) {
    PostedRecv& pr = it->second.front();
    if (pr.into.size != size) {
      fail("message '" + c->name + "' from " + peer_name(c->peer) + " has " + std::to_string(size) +
           " bytes, but its recv was posted for " + std::to_string(pr.into.size) + " bytes");
      return false;
    }
    c->dst = pr.into.data;
    c->claimed = std::move(pr.done);
    it->second.pop_front();
    if (it->second.empty()) posted_.erase(it);
    start_streaming(*c);
    return true;
  }
  c->dst = pool_.acquire(size);
  c->staged = true;
  return true;
}

bool TcpTransport::on_frame_complete(const std::shared_ptr<Connection>& c) {
  if (c->state != Connection::State::kEstablished) {
    on_handshake_frame(c);
    return !c->closed && !failed_;
  }
  if (c->header.kind == FrameKind::kAbort) {
    std::string reason = std::move(c->abort_reason);
    for (char& ch : reason) {
      if (static_cast<unsigned char>(ch) < 0x20 || static_cast<unsigned char>(ch) == 0x7f) ch = ' ';
    }
    close_connection(*c);
    // Our own view too: when a timeout cascades, the rank that reported first may not be the one
    // that knows who is silent.
    const std::string here = describe_pending();
    fail(peer_name(c->peer) + " failed: " + reason +
         (posted_.empty() ? "" : " (meanwhile this rank was " + here + ")"));
    return false;
  }
  if (c->header.kind == FrameKind::kBye) {
    c->bye_received = true;
    departed_[static_cast<std::size_t>(c->peer)] = true;
    for (const auto& [key, q] : posted_) {
      if (key.peer == c->peer && !q.empty()) {
        fail(peer_name(c->peer) + " shut down while message '" + key.name +
             "' was still expected from it");
        return false;
      }
    }
    return true;
  }
  if (c->staged) {
    arrived_[Key{c->peer, std::move(c->name)}].push_back({c->dst, c->header.payload_bytes});
    c->name.clear();
  } else {
    complete(std::move(c->claimed));
    c->claimed = nullptr;
  }
  c->dst = nullptr;
  c->staged = false;
  return true;
}

// ---------------------------------------------------------------------------------------------
// Writing

void TcpTransport::enqueue(Connection& c, OutFrame frame) {
  c.outq.push_back(std::move(frame));
  if (!c.want_write && c.state != Connection::State::kDialing) {
    // The shared_ptr is only needed by flush's callees that may drop the connection.
    std::shared_ptr<Connection> self;
    const int p = c.peer;
    if (c.state == Connection::State::kEstablished && p >= 0 &&
        peers_[static_cast<std::size_t>(p)].get() == &c) {
      self = peers_[static_cast<std::size_t>(p)];
    } else if (c.outgoing && p >= 0 && dialing_[static_cast<std::size_t>(p)].get() == &c) {
      self = dialing_[static_cast<std::size_t>(p)];
    }
    if (self) flush(self);
  }
}

void TcpTransport::seal(Connection& c, OutFrame& f) {
  f.tag =
      c.tx.tag(c.tx_seq++, {view(f.head.data(), f.head_bytes), view(f.name.data(), f.name.size()),
                            view(f.payload.data, f.payload.size)});
  f.sealed = true;
}

void TcpTransport::prepare_tag(Connection& c, OutFrame& f) {
  if (f.job) {
    if (!f.job->done.load()) return;
    if (f.job->error) throw RuntimeFailure("ChaCha20-Poly1305 failed (OpenSSL)");
    f.tag = f.job->tag;
    f.sealed = true;
    f.job.reset();
    return;
  }
  if (!tag_workers_ || !f.is_data || f.payload.size < options_.tag_offload_min_bytes) {
    seal(c, f);
    return;
  }
  auto job = std::make_shared<TagWorkers::Job>();
  job->key = c.tx.key();
  job->seq = c.tx_seq++;
  std::memcpy(job->header.data(), f.head.data(), kFrameHeaderBytes);
  job->name = f.name;
  job->payload = view(f.payload.data, f.payload.size);
  f.job = job;
  tag_workers_->submit(std::move(job));
}

void TcpTransport::update_interest(Connection& c) {
  if (c.closed) return;
  loop_.modify_fd(c.fd.get(), EPOLLIN | (c.want_write ? EPOLLOUT : 0u));
}

void TcpTransport::flush(const std::shared_ptr<Connection>& c) {
  while (!c->outq.empty() && !c->closed) {
    iovec iov[kMaxIov];
    int n_iov = 0;
    std::size_t gathered = 0;
    bool blocked = false;  // a frame's tag is still being computed: nothing after it is written
    for (OutFrame& f : c->outq) {
      if (n_iov + 4 > kMaxIov || gathered >= kMaxGatherBytes) break;
      if (!f.sealed) prepare_tag(*c, f);
      gathered += f.total() - f.written;
      if (blocked) continue;  // only starts the tags of the frames behind it
      f.unwritten_iov(iov, &n_iov);
      blocked = !f.sealed;
    }
    // Everything of the first frame but its tag is written: on_tags_done flushes again.
    if (n_iov == 0) break;
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<std::size_t>(n_iov);
    const ssize_t n = ::sendmsg(c->fd.get(), &msg, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        if (!c->want_write) {
          c->want_write = true;
          update_interest(*c);
        }
        return;
      }
      const std::string why = "send failed: " + errno_text(errno);
      // The peer may have said why before it went away: read what it sent first (an abort frame
      // names the root cause), then report the loss.
      if (!c->in_read) on_readable(c);
      if (!c->closed && !failed_) on_peer_closed(c, why);
      return;
    }
    auto left = static_cast<std::size_t>(n);
    const TimeNs sent_at = options_.record_sends ? EventLoop::now_ns() : 0;
    while (!c->outq.empty()) {
      OutFrame& f = c->outq.front();
      if (f.first_byte_ns < 0) f.first_byte_ns = sent_at;
      const std::size_t rest = f.total() - f.written;
      if (left < rest) {
        f.written += left;
        break;
      }
      left -= rest;
      complete(std::move(f.done));
      const bool data = f.is_data, bye = f.is_bye;
      if (data && options_.record_sends) record_send(c->peer, f);
      c->outq.pop_front();
      if (bye) ::shutdown(c->fd.get(), SHUT_WR);  // our last byte: the peer will read EOF
      if (data) after_data_sent();
    }
  }
  if (c->want_write && !c->closed) {
    c->want_write = false;
    update_interest(*c);
  }
}

std::vector<SentMessage> TcpTransport::sent_messages() const {
  std::lock_guard lock(sent_mutex_);
  return sent_;
}

void TcpTransport::record_send(int peer, const OutFrame& frame) {
  std::lock_guard lock(sent_mutex_);
  sent_.push_back({.dst = peer,
                   .bytes = frame.payload.size,
                   .first_byte_ns = frame.first_byte_ns,
                   .last_byte_ns = EventLoop::now_ns()});
}

void TcpTransport::after_data_sent() {
  // A count only (read once the run is over): no ordering with other memory needed.
  const std::uint64_t sent = data_frames_sent_.fetch_add(1, std::memory_order_relaxed) + 1;
  const FaultInjection& f = options_.fault;
  if (f.action == FaultAction::kNone || sent != f.after_sends) return;
  if (f.action == FaultAction::kKillProcess) {
    log("fault injection: killing this process after " + plural(f.after_sends, "sent message"));
    ::kill(::getpid(), SIGKILL);
    return;
  }
  // Drop everything on a later turn (we are inside flush of one of these connections).
  loop_.defer([alive = std::weak_ptr<bool>(alive_), this] {
    if (alive.expired()) return;
    for (auto& c : peers_) {
      if (c) close_connection(*c);
    }
    fail("fault injection: dropped every connection after " +
         plural(options_.fault.after_sends, "sent message"));
  });
}

void TcpTransport::send(int peer, const std::string& name, coll::ConstBytes data,
                        coll::Callback done) {
  if (failed_) return;
  if (peer < 0 || peer >= size_ || peer == rank_) {
    throw std::invalid_argument("send '" + name + "' to invalid peer " + std::to_string(peer));
  }
  if (name.size() > options_.limits.max_name_bytes) {
    throw std::invalid_argument("message name of " + std::to_string(name.size()) +
                                " bytes exceeds the limit of " +
                                std::to_string(options_.limits.max_name_bytes));
  }
  if (data.data == nullptr && data.size > 0) {
    throw std::invalid_argument("send '" + name + "': null buffer of " + std::to_string(data.size) +
                                " bytes");
  }
  const std::shared_ptr<Connection>& c = peers_[static_cast<std::size_t>(peer)];
  if (!c || c->closed) {
    fail("cannot send '" + name + "' to " + peer_name(peer) + ": " +
         (departed_[static_cast<std::size_t>(peer)] ? "it has shut down" : "not connected"));
    return;
  }
  OutFrame f;
  FrameHeader h;
  h.kind = FrameKind::kData;
  h.job_id = job_id_;
  h.src_rank = static_cast<std::uint32_t>(rank_);
  h.name_bytes = static_cast<std::uint32_t>(name.size());
  h.payload_bytes = data.size;
  encode_frame_header(h, f.head.data());
  f.name = name;
  f.payload = data;
  f.is_data = true;
  f.done = std::move(done);
  enqueue(*c, std::move(f));
}

// ---------------------------------------------------------------------------------------------
// Receiving, reducing, copying

bool TcpTransport::arrived(int peer, const std::string& name) const {
  const auto it = arrived_.find(Key{peer, name});
  return it != arrived_.end() && !it->second.empty();
}

void TcpTransport::recv(int peer, const std::string& name, coll::Bytes into, coll::Callback done) {
  if (failed_) return;
  if (peer < 0 || peer >= size_ || peer == rank_) {
    throw std::invalid_argument("recv '" + name + "' from invalid peer " + std::to_string(peer));
  }
  if (into.data == nullptr && into.size > 0) {
    throw std::invalid_argument("recv '" + name + "': null buffer of " + std::to_string(into.size) +
                                " bytes");
  }
  auto size_mismatch = [&](std::size_t got) {
    fail("message '" + name + "' from " + peer_name(peer) + " has " + std::to_string(got) +
         " bytes, but its recv was posted for " + std::to_string(into.size) + " bytes");
  };
  Key key{peer, name};
  // 1. A message that arrived completely before this recv (FIFO: the oldest first).
  auto it = arrived_.find(key);
  if (it != arrived_.end() && !it->second.empty()) {
    const Arrival a = it->second.front();
    it->second.pop_front();
    if (it->second.empty()) arrived_.erase(it);
    if (a.size != into.size) {
      pool_.release(a.data);
      size_mismatch(a.size);
      return;
    }
    if (a.size > 0) std::memcpy(into.data, a.data, a.size);
    pool_.release(a.data);
    complete(std::move(done));
    return;
  }
  // 2. A message being staged right now: take it over, so the rest lands in place.
  const std::shared_ptr<Connection>& c = peers_[static_cast<std::size_t>(peer)];
  if (c && !c->closed && c->state == Connection::State::kEstablished &&
      (c->rstate == Connection::ReadState::kPayload || c->rstate == Connection::ReadState::kTag) &&
      c->staged && c->header.kind == FrameKind::kData && c->name == name) {
    if (c->header.payload_bytes != into.size) {
      size_mismatch(c->header.payload_bytes);
      return;
    }
    if (c->got > 0) std::memcpy(into.data, c->dst, c->got);
    pool_.release(c->dst);
    c->dst = into.data;
    c->staged = false;
    c->claimed = std::move(done);
    start_streaming(*c);  // from the bytes in place now
    return;
  }
  // 3. Not here yet.
  if (departed_[static_cast<std::size_t>(peer)]) {
    fail("recv '" + name + "' from " + peer_name(peer) + ", which has already shut down");
    return;
  }
  posted_[std::move(key)].push_back({into, std::move(done)});
}

void TcpTransport::reduce(coll::Bytes out, coll::ConstBytes a, coll::ConstBytes b,
                          coll::DType dtype, coll::ReduceOp op, coll::Callback done) {
  if (failed_) return;
  const std::size_t es = coll::dtype_size(dtype);
  if (a.size < out.size || b.size < out.size || out.size % es != 0) {
    throw std::invalid_argument("reduce: operands of " + std::to_string(a.size) + " and " +
                                std::to_string(b.size) + " bytes for an output of " +
                                std::to_string(out.size) + " bytes");
  }
  if (out.size > 0) coll::reduce_elements(out.data, a.data, b.data, out.size / es, dtype, op);
  complete(std::move(done));
}

void TcpTransport::copy(coll::Bytes dst, coll::ConstBytes src, coll::Callback done) {
  if (failed_) return;
  if (dst.size > 0 && dst.data != src.data) {
    std::memmove(dst.data, src.data, std::min(dst.size, src.size));
  }
  complete(std::move(done));
}

coll::Bytes TcpTransport::acquire_scratch(std::size_t size) {
  return {pool_.acquire(size), size};
}

void TcpTransport::release_scratch(coll::Bytes buffer) {
  pool_.release(buffer.data);
}

// ---------------------------------------------------------------------------------------------
// Teardown

void TcpTransport::close_connection(Connection& c) {
  if (c.closed) return;
  c.closed = true;
  if (c.fd.valid()) loop_.remove_fd(c.fd.get());
  c.fd.reset();
  loop_.cancel_timer(c.handshake_timer);
  c.handshake_timer = 0;
  if (c.staged) pool_.release(c.dst);
  c.staged = false;
  c.dst = nullptr;
  c.claimed = nullptr;
  if (tag_workers_) {
    for (OutFrame& f : c.outq) {
      if (f.job) tag_workers_->retract(f.job);
    }
    // A payload cut off mid-way: its job waits (parked) for bytes that never come.
    if (c.streaming) tag_workers_->retract(c.streaming);
    c.streaming = nullptr;
    // Frames received before the connection closed (a goodbye, then EOF) are still delivered.
    for (Connection::Verifying& v : c.verifying)
      tag_workers_->finish(v.job);
    if (!c.verifying.empty()) {
      loop_.defer([this, alive = std::weak_ptr<bool>(alive_)] {
        if (!alive.expired()) on_tags_done();
      });
    }
  }
  c.outq.clear();
}

void TcpTransport::drop(const std::shared_ptr<Connection>& c, const std::string& reason) {
  if (c->closed) return;
  if (c->state == Connection::State::kEstablished) {
    close_connection(*c);
    fail("dropped the connection to " + peer_name(c->peer) + ": " + reason);
    return;
  }
  if (c->outgoing) {
    close_connection(*c);
    dialing_[static_cast<std::size_t>(c->peer)] = nullptr;
    retry_connect(c->peer, reason);
    return;
  }
  ++rejected_connections_;
  log("rejected connection from " + c->remote + ": " + reason);
  handshaking_.erase(c->fd.get());
  close_connection(*c);
}

void TcpTransport::on_peer_closed(const std::shared_ptr<Connection>& c, const std::string& how) {
  if (c->state != Connection::State::kEstablished) {
    drop(c, how);
    return;
  }
  close_connection(*c);
  if (c->bye_received || shutting_down_) {
    check_shutdown_done();
    return;
  }
  fail("lost the connection to " + peer_name(c->peer) + ": " + how);
}

void TcpTransport::shutdown(TimeNs timeout_ns, coll::Callback done) {
  if (shutting_down_) return;
  shutting_down_ = true;
  shutdown_done_ = std::move(done);
  if (listener_.valid()) {
    loop_.remove_fd(listener_.get());
    listener_.reset();
  }
  loop_.cancel_timer(listener_pause_timer_);
  for (auto& [fd, c] : handshaking_)
    close_connection(*c);
  handshaking_.clear();
  if (failed_) {
    check_shutdown_done();
    return;
  }
  for (auto& c : peers_) {
    if (!c || c->closed) continue;
    OutFrame bye;
    FrameHeader h;
    h.kind = FrameKind::kBye;
    h.job_id = job_id_;
    h.src_rank = static_cast<std::uint32_t>(rank_);
    encode_frame_header(h, bye.head.data());
    bye.is_bye = true;
    enqueue(*c, std::move(bye));
  }
  shutdown_timer_ = loop_.add_timer(timeout_ns, [this] {
    shutdown_timer_ = 0;
    for (auto& c : peers_) {
      if (c) close_connection(*c);
    }
    check_shutdown_done();
  });
  check_shutdown_done();
}

bool TcpTransport::take_hello_ack(Connection& c, TimeNs deadline_ns) {
  // Only an answer the loop has not begun to parse (bytes of it may wait in the read buffer):
  // one cut in the middle of the loop's own parsing is left, and the connection closed bare.
  if (c.rstate != Connection::ReadState::kHeader) return false;
  constexpr std::size_t kAckBytes = kFrameHeaderBytes + kHelloPayloadBytes + kTagBytes;
  std::array<std::byte, kAckBytes> ack{};
  std::size_t have = std::min(c.rend - c.rbeg, kAckBytes);
  std::memcpy(ack.data(), c.rbuf.data() + c.rbeg, have);
  while (have < kAckBytes) {
    const ssize_t n = ::recv(c.fd.get(), ack.data() + have, kAckBytes - have, MSG_DONTWAIT);
    if (n > 0) {
      have += static_cast<std::size_t>(n);
      continue;
    }
    if (n == 0) return false;  // the peer closed: nothing to tell it
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return false;
    const TimeNs left = deadline_ns - EventLoop::now_ns();
    if (left <= 0) return false;  // no answer yet: the peer has not counted the connection
    pollfd p{c.fd.get(), POLLIN, 0};
    ::poll(&p, 1, static_cast<int>((left + kNsPerMs - 1) / kNsPerMs));
  }
  // The checks of on_header and on_handshake_frame, without their log lines.
  FrameHeader h;
  if (!decode_frame_header(ack.data(), options_.limits, h).empty() ||
      h.kind != FrameKind::kHelloAck || h.job_id != job_id_ ||
      h.src_rank != static_cast<std::uint32_t>(c.peer) || h.name_bytes != 0 ||
      h.payload_bytes != kHelloPayloadBytes) {
    return false;
  }
  const std::byte* payload = ack.data() + kFrameHeaderBytes;
  if (!hello_ack_authentic(c, view(ack.data(), kFrameHeaderBytes),
                           view(payload, kHelloPayloadBytes), payload + kHelloPayloadBytes)) {
    return false;
  }
  const HelloPayload hello = decode_hello_payload(payload);
  if (hello.expected_peer != static_cast<std::uint32_t>(rank_) ||
      hello.cluster_size != static_cast<std::uint32_t>(size_)) {
    return false;
  }
  key_as_dialer(c, hello.nonce);
  return true;
}

bool TcpTransport::hello_ack_authentic(const Connection& c, ByteView header, ByteView payload,
                                       const std::byte* tag) const {
  // The acceptor's tag covers the dialer's nonce too: an answer to this hello, not a replay.
  const Tag want = handshake_tag(secret_, kHelloAckLabel,
                                 {header, payload, view(c.nonce.data(), c.nonce.size())});
  return tags_equal(want.data(), tag);
}

void TcpTransport::key_as_dialer(Connection& c, const Nonce& acceptor_nonce) {
  const SessionKeys keys =
      derive_session_keys(secret_, static_cast<std::uint32_t>(rank_),
                          static_cast<std::uint32_t>(c.peer), c.nonce, acceptor_nonce);
  c.tx = FrameMac(keys.dialer_to_acceptor);
  c.rx = FrameMac(keys.acceptor_to_dialer);
}

void TcpTransport::wait_acknowledged(Connection& c, TimeNs deadline_ns) {
  while (true) {
    int unacked = 0;  // bytes in the send queue not yet acknowledged by the peer (tcp(7))
    if (::ioctl(c.fd.get(), SIOCOUTQ, &unacked) != 0 || unacked == 0) return;
    const TimeNs left = deadline_ns - EventLoop::now_ns();
    if (left <= 0) return;
    ::usleep(static_cast<useconds_t>(std::min<TimeNs>(left, kNsPerMs) / 1000));
  }
}

void TcpTransport::send_abort(Connection& c, const std::string& reason, TimeNs deadline_ns) {
  // Writes the iovecs completely unless the socket fails or the deadline passes.
  auto write_all = [&](iovec* iov, int n_iov) {
    while (n_iov > 0) {
      msghdr msg{};
      msg.msg_iov = iov;
      msg.msg_iovlen = static_cast<std::size_t>(n_iov);
      const ssize_t n = ::sendmsg(c.fd.get(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) return false;
        const TimeNs left = deadline_ns - EventLoop::now_ns();
        if (left <= 0) return false;
        pollfd p{c.fd.get(), POLLOUT, 0};
        ::poll(&p, 1, static_cast<int>((left + kNsPerMs - 1) / kNsPerMs));
        continue;
      }
      auto done = static_cast<std::size_t>(n);
      while (n_iov > 0 && done >= iov->iov_len) {
        done -= iov->iov_len;
        ++iov;
        --n_iov;
      }
      if (n_iov > 0) {
        iov->iov_base = static_cast<char*>(iov->iov_base) + done;
        iov->iov_len -= done;
      }
    }
    return true;
  };
  // A frame cut in the middle would hide the abort behind it, and a sealed frame left out would
  // break the sequence the abort's tag counts on: finish every sealed frame first. Their
  // payloads are still valid, since the collectives that sent them have not completed (their
  // callers are still waiting).
  if (!c.tx.keyed()) return;
  for (OutFrame& f : c.outq) {
    if (!f.sealed && f.job) {       // its sequence number is taken: finish it here
      tag_workers_->finish(f.job);  // done afterwards: computed here if it was still queued
      f.tag = !f.job->error ? f.job->tag
                            : c.tx.tag(f.job->seq, {view(f.head.data(), f.head_bytes),
                                                    view(f.name.data(), f.name.size()),
                                                    view(f.payload.data, f.payload.size)});
      f.sealed = true;
      f.job.reset();
    }
    if (!f.sealed) break;
    iovec iov[4];
    int n_iov = 0;
    f.unwritten_iov(iov, &n_iov);
    if (!write_all(iov, n_iov)) return;
  }
  const std::string text = reason.substr(0, kMaxAbortReasonBytes);
  std::array<std::byte, kFrameHeaderBytes> head{};
  FrameHeader h;
  h.kind = FrameKind::kAbort;
  h.job_id = job_id_;
  h.src_rank = static_cast<std::uint32_t>(rank_);
  h.payload_bytes = text.size();
  encode_frame_header(h, head.data());
  Tag tag = c.tx.tag(c.tx_seq++, {view(head.data(), head.size()), view(text.data(), text.size())});
  iovec iov[3] = {{head.data(), head.size()},
                  {const_cast<char*>(text.data()), text.size()},
                  {tag.data(), tag.size()}};
  write_all(iov, 3);
}

void TcpTransport::check_shutdown_done() {
  if (!shutting_down_ || !shutdown_done_) return;
  if (!failed_) {
    for (const auto& c : peers_) {
      if (c && !c->closed) return;
    }
  }
  loop_.cancel_timer(shutdown_timer_);
  shutdown_timer_ = 0;
  // Not through complete(): it must run even when the transport failed.
  loop_.defer([alive = std::weak_ptr<bool>(alive_),
               done = std::make_shared<coll::Callback>(std::move(shutdown_done_))] {
    if (!alive.expired()) (*done)();
  });
  shutdown_done_ = nullptr;
}

void TcpTransport::fail(const std::string& reason) {
  if (failed_) return;
  failed_ = true;
  failure_ = reason;
  // Telling the peers is worth a short wait (a full socket buffer), never a long one.
  const TimeNs abort_deadline = EventLoop::now_ns() + 200 * kNsPerMs;
  // A peer this rank dialed may have answered the hello already and counted the connection as
  // established: closed bare, with its hello-ack unread (a reset), it would report this rank as
  // lost, naming a survivor instead of the cause. Take the answer within the same wait and tell
  // that peer too (fault campaign D3, docs/reliability.md).
  for (auto& c : dialing_) {
    if (c && !c->closed && c->state == Connection::State::kHandshake && c->outq.empty() &&
        take_hello_ack(*c, abort_deadline)) {
      send_abort(*c, reason, abort_deadline);
    }
  }
  for (auto& c : peers_) {
    if (c && !c->closed) send_abort(*c, reason, abort_deadline);
  }
  // Closed with bytes from the peer still unread, a socket resets its connection at once and
  // drops what it had not sent yet: the abort too, and the peer would report this rank as lost,
  // naming a survivor (kill campaign on a testbed, case 8: an abort behind a chunk still queued
  // on a capped NIC). Wait, within the same deadline, until each peer has acknowledged every
  // byte sent; what then arrives before the reset stays readable on the peer's side.
  for (auto& c : peers_) {
    if (c && !c->closed) wait_acknowledged(*c, abort_deadline);
  }
  for (auto& c : peers_) {
    if (c) close_connection(*c);
  }
  for (auto& c : dialing_) {
    if (c) close_connection(*c);
  }
  for (auto& [fd, c] : handshaking_)
    close_connection(*c);
  handshaking_.clear();
  if (listener_.valid()) {
    loop_.remove_fd(listener_.get());
    listener_.reset();
  }
  for (auto& id : retry_timer_) {
    loop_.cancel_timer(id);
    id = 0;
  }
  loop_.cancel_timer(connect_deadline_timer_);
  loop_.cancel_timer(listener_pause_timer_);
  for (auto& c : peers_) {
    if (c) c->verifying.clear();  // their tags are done (close_connection): callbacks dropped
  }
  posted_.clear();
  for (auto& [key, q] : arrived_) {
    for (Arrival& a : q)
      pool_.release(a.data);
  }
  arrived_.clear();
  on_ready_ = nullptr;
  check_shutdown_done();
  if (failure_handler_) failure_handler_(reason);
}

std::string TcpTransport::describe_pending(std::size_t max_items) const {
  std::vector<std::string> items;
  if (started_ && !ready_) {
    std::string missing;
    for (int r = 0; r < size_; ++r) {
      if (r == rank_ || peers_[static_cast<std::size_t>(r)]) continue;
      missing += (missing.empty() ? "" : ", ") + peer_name(r);
    }
    items.push_back("connections from/to " + missing);
  }
  for (const auto& c : peers_) {
    if (c && !c->closed && c->rstate == Connection::ReadState::kPayload && !c->staged &&
        c->header.kind == FrameKind::kData) {
      items.push_back("the rest of '" + c->name + "' from " + peer_name(c->peer) + " (" +
                      std::to_string(c->got) + " of " + std::to_string(c->header.payload_bytes) +
                      " bytes)");
    }
  }
  for (const auto& [key, q] : posted_) {
    if (q.empty()) continue;
    items.push_back("'" + key.name + "' from " + peer_name(key.peer) +
                    (q.size() > 1 ? " (x" + std::to_string(q.size()) + ")" : ""));
  }
  for (const auto& c : peers_) {
    if (c && !c->closed && !c->outq.empty()) {
      items.push_back(plural(c->outq.size(), "message") + " to " + peer_name(c->peer) +
                      " not fully sent");
    }
  }
  if (items.empty()) return "nothing pending on the network";
  std::sort(items.begin() + (started_ && !ready_ ? 1 : 0), items.end());
  std::string s = "waiting for ";
  for (std::size_t i = 0; i < items.size() && i < max_items; ++i) {
    s += (i > 0 ? "; " : "") + items[i];
  }
  if (items.size() > max_items) s += "; and " + std::to_string(items.size() - max_items) + " more";
  return s;
}

}  // namespace adaptsim::tcp
