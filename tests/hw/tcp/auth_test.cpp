// A job's secret and frame authentication (hw/tcp/auth.h): the primitives against a published
// vector and their properties; a rank without the secret never becomes a peer; a byte flipped in
// flight by a man in the middle fails the collective, and the same relay without the flip does not.

#include <doctest/doctest.h>

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "hw/tcp/auth.h"
#include "hw/tcp/socket_util.h"
#include "sim/coll/strategy.h"
#include "sim/core/error.h"
#include "tests/hw/tcp/tcp_test_support.h"

using namespace adaptsim;
using namespace adaptsim::tcp;
using namespace adaptsim::tcp::testing;

namespace {

std::string hex(const Tag& t) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s;
  for (std::byte b : t) {
    s += kDigits[std::to_integer<unsigned>(b) >> 4];
    s += kDigits[std::to_integer<unsigned>(b) & 15];
  }
  return s;
}

ByteView text(std::string_view s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

// Relays one connection between a dialer and `target`; in the dialer->target direction the byte
// at stream offset `flip_at` is XORed with 0x01 (no flip when it lies beyond the stream).
class TamperingRelay {
 public:
  TamperingRelay(SocketAddress target, std::size_t flip_at)
      : listener_(listen_tcp({"127.0.0.1", 0})), target_(std::move(target)), flip_at_(flip_at) {
    address_ = local_address(listener_.get());
    thread_ = std::thread([this] { run(); });
  }
  ~TamperingRelay() {
    stop_ = true;
    thread_.join();
  }
  const SocketAddress& address() const { return address_; }
  bool flipped() const { return flipped_; }

 private:
  void run() {
    pollfd lp{listener_.get(), POLLIN, 0};
    while (!stop_ && ::poll(&lp, 1, 50) == 0) {
    }
    if (stop_) return;
    UniqueFd in(::accept(listener_.get(), nullptr, nullptr));
    auto [addr, len] = resolve_address(target_);
    UniqueFd out(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!in.valid() || ::connect(out.get(), reinterpret_cast<const sockaddr*>(&addr), len) != 0)
      return;
    std::size_t forwarded = 0;  // dialer -> target
    std::vector<char> buf(1 << 16);
    // A direction ends when its source closes: that is passed on as a half-close, and the other
    // direction goes on, so the last bytes one end wrote (an abort frame) reach the other before
    // anything resets its connection.
    bool open[2] = {true, true};
    while (!stop_ && (open[0] || open[1])) {
      pollfd p[2] = {{open[0] ? in.get() : -1, POLLIN, 0}, {open[1] ? out.get() : -1, POLLIN, 0}};
      if (::poll(p, 2, 50) <= 0) continue;
      for (int i = 0; i < 2; ++i) {
        if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        const ssize_t n = ::recv(p[i].fd, buf.data(), buf.size(), 0);
        if (n <= 0) {
          open[i] = false;
          ::shutdown(i == 0 ? out.get() : in.get(), SHUT_WR);
          continue;
        }
        if (i == 0) {
          if (flip_at_ >= forwarded && flip_at_ < forwarded + static_cast<std::size_t>(n)) {
            buf[flip_at_ - forwarded] ^= 0x01;
            flipped_ = true;
          }
          forwarded += static_cast<std::size_t>(n);
        }
        const int to = i == 0 ? out.get() : in.get();
        for (ssize_t done = 0; done < n;) {
          const ssize_t w =
              ::send(to, buf.data() + done, static_cast<std::size_t>(n - done), MSG_NOSIGNAL);
          if (w <= 0) break;  // that end is gone: what it would have read is dropped
          done += w;
        }
      }
    }
  }

  UniqueFd listener_;
  SocketAddress target_;
  SocketAddress address_;
  std::size_t flip_at_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> flipped_{false};
  std::thread thread_;
};

}  // namespace

TEST_CASE(
    "frame tags: RFC 8439 ChaCha20-Poly1305 as computed independently, and every part, byte and "
    "sequence number counts") {
  // Expected tags from a second implementation (Debian's python3-cryptography 38, through its
  // one-shot AEAD API): ChaCha20Poly1305(key).encrypt(seq.to_bytes(12, 'little'), b"", aad),
  // key = bytes 0x80..0x9f (RFC 8439's example key), aad = the parts joined.
  SecretKey rfc_key{};
  for (std::size_t i = 0; i < rfc_key.size(); ++i)
    rfc_key[i] = static_cast<std::byte>(0x80 + i);
  FrameMac rfc(rfc_key);
  CHECK(hex(rfc.tag(0, {})) == "3ae5d3f2a376d317eaea5aef0215ba54");
  CHECK(hex(rfc.tag(7, {text("adaptsim frame")})) == "7a29e4a3b8cea691007878728151da97");
  std::vector<std::byte> payload(100000);
  for (std::size_t i = 0; i < payload.size(); ++i)
    payload[i] = static_cast<std::byte>(i * 7);
  CHECK(hex(rfc.tag(5, {text("header"), text("name"), payload})) ==
        "f902f565a3206ddbce40977ee5a2c756");

  FrameMac mac(JobSecret::random().key());
  const Tag base = mac.tag(5, {text("header"), text("name"), payload});
  // Same content split differently: the tag is over the concatenation.
  CHECK(mac.tag(5, {text("headern"), text("ame"), payload}) == base);
  CHECK(mac.tag(6, {text("header"), text("name"), payload}) != base);  // replayed elsewhere
  payload[77777] ^= std::byte{0x80};
  CHECK(mac.tag(5, {text("header"), text("name"), payload}) != base);
  payload[77777] ^= std::byte{0x80};
  CHECK(mac.tag(5, {text("header"), text("name"), payload}) == base);
  CHECK(FrameMac(JobSecret::random().key()).tag(5, {text("header"), text("name"), payload}) !=
        base);
  CHECK(tags_equal(base.data(), base.data()));
  Tag other = base;
  other[15] ^= std::byte{1};
  CHECK_FALSE(tags_equal(base.data(), other.data()));
}

TEST_CASE(
    "session keys differ by direction, nonce and secret, and the job id is stable and public") {
  const JobSecret s = JobSecret::random();
  const Nonce a = random_nonce(), b = random_nonce();
  CHECK(a != b);
  const SessionKeys k = derive_session_keys(s, 1, 0, a, b);
  CHECK(k.dialer_to_acceptor != k.acceptor_to_dialer);
  CHECK(derive_session_keys(s, 1, 0, a, b).dialer_to_acceptor == k.dialer_to_acceptor);
  CHECK(derive_session_keys(s, 1, 0, b, a).dialer_to_acceptor != k.dialer_to_acceptor);
  CHECK(derive_session_keys(s, 2, 0, a, b).dialer_to_acceptor != k.dialer_to_acceptor);
  CHECK(derive_session_keys(JobSecret::random(), 1, 0, a, b).dialer_to_acceptor !=
        k.dialer_to_acceptor);
  CHECK(s.job_id() == JobSecret(s.key()).job_id());
  CHECK(s.job_id() != JobSecret::random().job_id());
}

TEST_CASE("a job secret: random, hex round trip, and files that are private and long enough") {
  const JobSecret s = JobSecret::random();
  CHECK_FALSE(s.empty());
  CHECK(JobSecret().empty());
  CHECK(s.key() != JobSecret::random().key());
  CHECK(s.hex().size() == 64);
  CHECK(JobSecret::from_hex(s.hex(), "x").key() == s.key());
  CHECK_THROWS_WITH_AS(
      JobSecret::from_hex("abc", "ADAPTSIM_JOB_SECRET"),
      "ADAPTSIM_JOB_SECRET: expected a job secret of 64 hex digits, got 3 characters", InputError);
  CHECK_THROWS_WITH_AS(JobSecret::from_hex(std::string(64, 'g'), "v"),
                       doctest::Contains("64 hex digits"), InputError);
  CHECK_THROWS_WITH_AS(JobSecret::from_hex(std::string(64, '0'), "v"),
                       "v: the job secret is all zeros", InputError);

  const std::string dir = make_temp_dir();
  const std::string path = dir + "/job.secret";
  std::ofstream(path) << "0123456789abcdefXYZ";
  ::chmod(path.c_str(), 0600);
  const JobSecret f = JobSecret::from_file(path);
  CHECK(JobSecret::from_file(path).key() == f.key());  // every host reading it agrees
  std::ofstream(path) << "0123456789abcdefXYz";        // one byte differs
  CHECK(JobSecret::from_file(path).key() != f.key());
  ::chmod(path.c_str(), 0640);
  CHECK_THROWS_WITH_AS(JobSecret::from_file(path),
                       (path +
                        ": the secret file may be read by group or others (mode 0640); "
                        "chmod 600 " +
                        path)
                           .c_str(),
                       InputError);
  ::chmod(path.c_str(), 0600);
  std::ofstream(path) << "short";
  CHECK_THROWS_WITH_AS(JobSecret::from_file(path), doctest::Contains("has 5 bytes, at least 16"),
                       InputError);
  CHECK_THROWS_WITH_AS(JobSecret::from_file(dir), doctest::Contains("not a regular file"),
                       InputError);
  CHECK_THROWS_WITH_AS(JobSecret::from_file(dir + "/missing"),
                       doctest::Contains("cannot read the secret file"), InputError);
  std::filesystem::remove_all(dir);
}

TEST_CASE("a rank with the wrong secret never becomes a peer: both sides fail to connect") {
  auto log = std::make_shared<LogCapture>();
  ThreadCluster cluster(
      2, {},
      [&](int) {
        RuntimeOptions o = test_options(log);
        o.transport.connect_timeout_ns = 1 * kNsPerSecond;
        return o;
      },
      /*connect_now=*/false);
  std::atomic<int> collectives{0};
  const auto errors = cluster.run_all([&](int r, Runtime& rt) {
    ClusterSpec s = cluster.spec();
    s.rank = r;
    if (r == 1) s.secret = JobSecret::random();
    rt.connect(s);
    ++collectives;  // never reached
  });
  CHECK(collectives == 0);
  INFO(errors[0] << " | " << errors[1]);
  CHECK(errors[0].find("could not connect to rank 1") != std::string::npos);
  CHECK(errors[1].find("could not connect to rank 0") != std::string::npos);
  // Its public job id differs too, so rank 0 names it as another job's (the transport test
  // forges this job's id with a wrong secret, which fails the tag instead).
  CHECK(log->contains("hello frame of another job (job id "));
  CHECK(cluster.rank(0).rejected_connections() >= 1);
}

// Rank 1 reaches rank 0 through a relay that flips the byte at `flip_at` of rank 1's stream;
// returns each rank's error ("" = none) after one 400,000-byte all-reduce.
std::vector<std::string> allreduce_through_relay(std::size_t flip_at, bool& flipped,
                                                 int tag_threads = 0) {
  auto log = std::make_shared<LogCapture>();
  ThreadCluster cluster(
      2, {},
      [&](int) {
        RuntimeOptions o = test_options(log);
        o.transport.tag_threads = tag_threads;  // 2: tags computed and checked on helper threads
        o.transport.tag_offload_min_bytes = 0;
        return o;
      },
      /*connect_now=*/false);
  TamperingRelay relay(cluster.address(0), flip_at);
  const std::size_t count = 100000;
  auto errors = cluster.run_all([&](int r, Runtime& rt) {
    ClusterSpec s = cluster.spec();
    s.rank = r;
    if (r == 1) s.addresses[0] = relay.address();
    rt.connect(s);
    auto algo = coll::make_allreduce(coll::StrategyKind::kClassicRing, rt.host_of_rank());
    std::vector<float> send(count, static_cast<float>(r + 1)), recv(count, 0.0f);
    coll::Workspace w;
    w.name = "grad";
    w.send = {reinterpret_cast<const std::byte*>(send.data()), send.size() * sizeof(float)};
    w.recv = {reinterpret_cast<std::byte*>(recv.data()), recv.size() * sizeof(float)};
    w.count = count;
    rt.run_allreduce(*algo, w, 10 * kNsPerSecond);
    if (std::any_of(recv.begin(), recv.end(), [](float v) { return v != 3.0f; }))
      throw std::runtime_error("wrong sum");
  });
  flipped = relay.flipped();
  return errors;
}

TEST_CASE(
    "a byte flipped in flight fails the collective at its frame, and the same relay unflipped "
    "works, with tags on the loop thread and on helper threads") {
  // Rank 1's stream starts with the hello (header 32 + payload 24 + tag 16 = 72 bytes); its
  // first data frame's header, name and 200,000-byte payload (a ring segment) follow, so offset
  // 5,000 lies inside that payload.
  for (const int tag_threads : {0, 2}) {
    CAPTURE(tag_threads);
    bool flipped = false;
    const auto clean = allreduce_through_relay(~std::size_t{0}, flipped, tag_threads);
    INFO(clean[0] << " | " << clean[1]);
    CHECK_FALSE(flipped);
    CHECK(clean[0].empty());
    CHECK(clean[1].empty());

    const auto errors = allreduce_through_relay(5000, flipped, tag_threads);
    INFO(errors[0] << " | " << errors[1]);
    CHECK(flipped);
    CHECK(errors[0].find("a data frame from rank 1") != std::string::npos);
    CHECK(errors[0].find("failed authentication (altered in flight, or not sent by this job)") !=
          std::string::npos);
    // Rank 1 learns why from rank 0's abort (itself authenticated); no rank saw a wrong sum.
    CHECK(errors[1].find("failed authentication") != std::string::npos);
    CHECK(errors[0].find("wrong sum") == std::string::npos);
    CHECK(errors[1].find("wrong sum") == std::string::npos);
  }
}
