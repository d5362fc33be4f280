// Fuzz target: hw/tcp's frame decoder, fed bytes as they come off a socket. A real TcpTransport
// (rank 0 of a two-rank job, its event loop on a thread) listens on loopback; each input is
// written to one connection to it, which is then half-closed, and the target waits until the
// transport has closed its end. The first byte picks who speaks:
//
//   even: a stranger. The rest goes out as raw bytes, straight into the handshake parser
//         (header validation, limits, the hello's tag). One transport serves every such input:
//         strangers must never disturb it, so after each one it must still be healthy.
//   odd:  an insider. The target completes a real handshake with the job's secret (hello with
//         its HMAC tag, the acceptor's reply, the session keys of auth.h), then sends the rest as
//         frames it seals with valid tags, so the parser behind the authentication (kinds,
//         names, sizes against posted receives, goodbye and abort frames) is reached. Records:
//         kind u8 | name length u8 | payload length u16 (little-endian) | name | payload; the top
//         bit of kind sends the frame with a zeroed tag instead. A fresh transport per input,
//         with receives posted for "g" (64 bytes) and "h" (0 bytes).
//
// A crash, a sanitizer report, an exception escaping the transport or its loop, or a transport
// that never closes the connection (5 s) is a finding.

#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "hw/tcp/auth.h"
#include "hw/tcp/cluster_spec.h"
#include "hw/tcp/event_loop.h"
#include "hw/tcp/frame.h"
#include "hw/tcp/socket_util.h"
#include "hw/tcp/tcp_transport.h"

namespace {

using namespace adaptsim;
using namespace adaptsim::tcp;

[[noreturn]] void finding(const std::string& what) {
  std::fprintf(stderr, "tcp_frame_fuzz: %s\n", what.c_str());
  std::abort();
}

// Everything on this one thread: the target's socket is served by the transport's own event
// loop, so an input costs a few loop turns and no thread hand-off.
class Harness {
 public:
  Harness() {
    loop_.set_error_handler([](std::exception_ptr e) {
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& x) {
        finding(std::string("exception escaped the event loop: ") + x.what());
      }
    });
    shared_ = make_rank0(shared_address_);
  }

  void stranger(const std::uint8_t* data, std::size_t size) {
    UniqueFd fd = dial(shared_address_);
    send_all(fd.get(), data, size);
    ::shutdown(fd.get(), SHUT_WR);
    run_until_closed(fd.get(), nullptr);
    if (shared_->failed())
      finding("a stranger's bytes failed the transport: " + shared_->failure());
  }

  void insider(const std::uint8_t* data, std::size_t size) {
    SocketAddress address;
    std::unique_ptr<TcpTransport> rank0 = make_rank0(address);
    UniqueFd fd = dial(address);
    // The handshake, as a dialing rank 1 does it (tcp_transport.cpp).
    std::vector<std::byte> hello(kFrameHeaderBytes + kHelloPayloadBytes);
    FrameHeader h;
    h.kind = FrameKind::kHello;
    h.job_id = secret_.job_id();
    h.src_rank = 1;
    h.payload_bytes = kHelloPayloadBytes;
    encode_frame_header(h, hello.data());
    const Nonce mine = random_nonce();
    encode_hello_payload({0, 2, mine}, hello.data() + kFrameHeaderBytes);
    const Tag hello_tag = handshake_tag(secret_, "adaptsim-tcp v2 hello", {hello});
    hello.insert(hello.end(), hello_tag.begin(), hello_tag.end());
    send_all(fd.get(), hello.data(), hello.size());
    // Once the reply is in: the session key, then the frames.
    auto on_ack = [&](const std::byte* ack) {
      const HelloPayload reply = decode_hello_payload(ack + kFrameHeaderBytes);
      FrameMac tx(derive_session_keys(secret_, 1, 0, mine, reply.nonce).dialer_to_acceptor);
      const std::vector<std::byte> frames = sealed_frames(tx, data, size);
      send_all(fd.get(), frames.data(), frames.size());
      ::shutdown(fd.get(), SHUT_WR);
    };
    run_until_closed(fd.get(), on_ack);
    rank0.reset();
  }

 private:
  std::unique_ptr<TcpTransport> make_rank0(SocketAddress& address) {
    UniqueFd listener = listen_tcp({"127.0.0.1", 0});
    address = local_address(listener.get());
    ClusterSpec spec;
    spec.rank = 0;
    spec.secret = secret_;
    spec.addresses = {address, {"127.0.0.1", 9}};  // rank 1 dials us; its address is unused
    TcpTransportOptions o;
    o.connect_timeout_ns = 3600 * kNsPerSecond;
    o.handshake_timeout_ns = 2 * kNsPerSecond;
    o.log = [](const std::string&) {};
    auto t = std::make_unique<TcpTransport>(loop_, o);
    t->set_failure_handler([](const std::string&) {});
    t->start(spec, std::move(listener), [] {});
    t->recv(1, "g", {g_.data(), g_.size()}, [] {});
    t->recv(1, "h", {nullptr, 0}, [] {});
    return t;
  }

  static UniqueFd dial(const SocketAddress& a) {
    auto [addr, len] = resolve_address(a);
    UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd.valid()) finding(std::string("socket: ") + std::strerror(errno));
    if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), len) != 0) {
      // libFuzzer's timer signal can interrupt the call; the connection then completes on its own.
      pollfd p{fd.get(), POLLOUT, 0};
      int err = errno;
      if (err == EINTR && ::poll(&p, 1, 5000) == 1) {
        socklen_t el = sizeof err;
        ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &el);
      }
      if (err != 0) finding(std::string("cannot connect to the transport: ") + std::strerror(err));
    }
    return fd;
  }

  // Blocking writes of inputs far below the socket buffers; stops early once the transport has
  // dropped the connection (that is allowed at any byte).
  static void send_all(int fd, const void* data, std::size_t n) {
    const auto* p = static_cast<const char*>(data);
    while (n > 0) {
      const ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return;
      p += w;
      n -= static_cast<std::size_t>(w);
    }
  }

  std::vector<std::byte> sealed_frames(FrameMac& tx, const std::uint8_t* data,
                                       std::size_t size) const {
    std::uint64_t seq = 0;
    std::vector<std::byte> out;
    std::size_t at = 0;
    while (at + 4 <= size) {
      const std::uint8_t kind = data[at];
      const std::size_t name_len = data[at + 1];
      std::size_t payload_len = data[at + 2] | (static_cast<std::size_t>(data[at + 3]) << 8);
      at += 4;
      const std::size_t name_take = std::min(name_len, size - at);
      const auto* name = reinterpret_cast<const std::byte*>(data + at);
      at += name_take;
      payload_len = std::min(payload_len, size - at);
      const auto* payload = reinterpret_cast<const std::byte*>(data + at);
      at += payload_len;
      FrameHeader f;
      f.kind = static_cast<FrameKind>(kind & 0x7f);  // unknown kinds too: the header says so
      f.job_id = secret_.job_id();
      f.src_rank = 1;
      f.name_bytes = static_cast<std::uint32_t>(name_take);
      f.payload_bytes = payload_len;
      std::array<std::byte, kFrameHeaderBytes> head{};
      encode_frame_header(f, head.data());
      Tag tag{};
      if (!(kind & 0x80)) tag = tx.tag(seq++, {head, {name, name_take}, {payload, payload_len}});
      out.insert(out.end(), head.begin(), head.end());
      out.insert(out.end(), name, name + name_take);
      out.insert(out.end(), payload, payload + payload_len);
      out.insert(out.end(), tag.begin(), tag.end());
    }
    return out;
  }

  // Runs the loop until the transport has closed `fd`'s peer end (EOF or reset), feeding the
  // first kFrameHeaderBytes + kHelloPayloadBytes + kTagBytes bytes read to `on_ack` if given.
  void run_until_closed(int fd, const std::function<void(const std::byte*)>& on_ack) {
    std::vector<std::byte> got;
    const std::size_t ack_bytes = kFrameHeaderBytes + kHelloPayloadBytes + kTagBytes;
    bool acked = false;
    loop_.add_fd(fd, EPOLLIN, [&](std::uint32_t) {
      std::byte buf[4096];
      for (;;) {
        const ssize_t r = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
        if (r <= 0) {  // EOF or reset: the transport let go
          loop_.remove_fd(fd);
          loop_.stop();
          return;
        }
        if (on_ack && !acked) {
          got.insert(got.end(), buf, buf + r);
          if (got.size() >= ack_bytes) {
            acked = true;
            on_ack(got.data());
          }
        }
      }
    });
    const auto deadline = loop_.add_timer(
        5 * kNsPerSecond, [] { finding("the transport did not close the connection within 5 s"); });
    loop_.run();
    loop_.cancel_timer(deadline);
    // Reset rather than close: no TIME_WAIT is left on either side, so a million inputs do not
    // run out of loopback ports.
    linger hard{1, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
  }

  EventLoop loop_;
  JobSecret secret_ = JobSecret::random();
  std::vector<std::byte> g_ = std::vector<std::byte>(64);
  SocketAddress shared_address_;
  std::unique_ptr<TcpTransport> shared_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static Harness* harness = new Harness();  // lives for the process: strangers share its rank 0
  if (size == 0) return 0;
  if (data[0] % 2 == 0) {
    harness->stranger(data + 1, size - 1);
  } else {
    harness->insider(data + 1, size - 1);
  }
  return 0;
}
