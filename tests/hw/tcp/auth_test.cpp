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
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "hw/tcp/auth.h"
#include "hw/tcp/frame.h"
#include "hw/tcp/socket_util.h"
#include "sim/coll/strategy.h"
#include "sim/core/error.h"
#include "tests/hw/tcp/tcp_test_support.h"
#include "tests/support/time_scale.h"

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

constexpr std::size_t kNever = ~std::size_t{0};
// A dialer's hello: header 32 + payload 24 + tag 16 bytes.
constexpr std::size_t kHelloFrameBytes = 72;

// What a TamperingRelay does to the dialer->target direction, by stream offset.
struct RelayFaults {
  std::size_t flip_at = kNever;  // this byte is XORed with 0x01
  std::size_t cut_at = kNever;   // both connections close after this many bytes: a peer dying
  // The bytes after the hello are held this long (times ADAPTSIM_TEST_TIME_SCALE), so that the
  // target has posted its recvs when the first data frame arrives (its payload then goes in
  // place, its tag checked as it arrives).
  int hold_ms = 0;
};

// Relays one connection between a dialer and `target` in pieces of at most 64 KiB, doing
// `faults` to the dialer->target direction (nothing when their offsets lie beyond the stream).
class TamperingRelay {
 public:
  TamperingRelay(SocketAddress target, RelayFaults faults)
      : listener_(listen_tcp({"127.0.0.1", 0})), target_(std::move(target)), faults_(faults) {
    address_ = local_address(listener_.get());
    thread_ = std::thread([this] { run(); });
  }
  ~TamperingRelay() {
    stop_ = true;
    thread_.join();
  }
  const SocketAddress& address() const { return address_; }
  bool flipped() const { return flipped_; }
  bool cut() const { return cut_; }

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
    bool held = false;
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
        ssize_t pass = n;
        if (i == 0) {
          if (faults_.hold_ms > 0 && forwarded >= kHelloFrameBytes && !held) {
            // Longer under sanitizers, whose ranks take longer to post their recvs.
            std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(
                faults_.hold_ms * adaptsim::testing::time_scale()));
            held = true;
          }
          const std::size_t flip_at = faults_.flip_at;
          if (flip_at >= forwarded && flip_at < forwarded + static_cast<std::size_t>(n)) {
            buf[flip_at - forwarded] ^= 0x01;
            flipped_ = true;
          }
          if (faults_.cut_at < forwarded + static_cast<std::size_t>(n)) {
            pass = static_cast<ssize_t>(faults_.cut_at - forwarded);
            cut_ = true;
          }
          forwarded += static_cast<std::size_t>(n);
        }
        const int to = i == 0 ? out.get() : in.get();
        for (ssize_t done = 0; done < pass;) {
          const ssize_t w =
              ::send(to, buf.data() + done, static_cast<std::size_t>(pass - done), MSG_NOSIGNAL);
          if (w <= 0) break;  // that end is gone: what it would have read is dropped
          done += w;
        }
        if (cut_) return;  // both closed without a goodbye, the target's frame cut off
      }
    }
  }

  UniqueFd listener_;
  SocketAddress target_;
  SocketAddress address_;
  RelayFaults faults_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> flipped_{false};
  std::atomic<bool> cut_{false};
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

TEST_CASE("a frame tag absorbed in pieces split anywhere equals frame_tag over the whole frame") {
  // TagWorkers checks a payload while it arrives: FrameTagStream gets the header, the name and
  // then the payload in whatever pieces the socket gave. ChaCha20-Poly1305's tag is over the
  // associated data's concatenation (RFC 8439, 2.8: AAD, zero padding to 16 bytes, then the
  // lengths), so every split must give frame_tag's: including the empty piece, pieces of 1 byte,
  // pieces not a multiple of Poly1305's 16-byte block and a split inside the header.
  std::mt19937_64 rng(19);
  for (int round = 0; round < 200; ++round) {
    CAPTURE(round);
    const SecretKey key = JobSecret::random().key();
    const std::uint64_t seq = rng();
    std::vector<std::byte> header(kFrameHeaderBytes), name(rng() % 40), payload(rng() % 300000);
    for (auto* v : {&header, &name, &payload}) {
      for (std::byte& b : *v)
        b = static_cast<std::byte>(rng());
    }
    const ByteView whole[3] = {header, name, payload};
    const Tag expect = frame_tag(key, seq, whole);

    std::vector<std::byte> frame(header);
    frame.insert(frame.end(), name.begin(), name.end());
    frame.insert(frame.end(), payload.begin(), payload.end());
    FrameTagStream stream(key, seq);
    for (std::size_t off = 0; off < frame.size();) {
      // Mostly small pieces, sometimes large ones or none.
      const std::size_t piece = round % 3 == 0 ? rng() % 7 : rng() % 70000;
      const std::size_t n = std::min(piece, frame.size() - off);
      stream.absorb(ByteView(frame).subspan(off, n));
      off += n;
    }
    CHECK(hex(stream.finish()) == hex(expect));
  }
  // A different sequence number or key is a different tag, split or not.
  const SecretKey key = JobSecret::random().key();
  const ByteView parts[1] = {text("frame")};
  FrameTagStream other_seq(key, 2);
  other_seq.absorb(text("fra"));
  other_seq.absorb(text("me"));
  CHECK(other_seq.finish() != frame_tag(key, 1, parts));
  FrameTagStream same(key, 1);
  same.absorb(text("fra"));
  same.absorb(text("me"));
  CHECK(same.finish() == frame_tag(key, 1, parts));
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

struct RelayRun {
  RelayFaults faults;
  int tag_threads = 0;  // 2: tags computed and checked on helper threads
  std::size_t tag_offload_min_bytes = 0;
  std::size_t count = 100000;  // floats
};
struct RelayResult {
  std::vector<std::string> errors;  // by rank, "" = none
  bool flipped = false;
  bool cut = false;
  std::uint64_t streamed_at_0 = 0;  // rank 0's frames checked as they arrived
  double seconds = 0;
};

// Rank 1 reaches rank 0 through a relay that does `run.faults` to rank 1's stream; one ring
// all-reduce of `run.count` floats (each rank's value r + 1, so the sum is 3).
RelayResult allreduce_through_relay(const RelayRun& run) {
  auto log = std::make_shared<LogCapture>();
  ThreadCluster cluster(
      2, {},
      [&](int) {
        RuntimeOptions o = test_options(log);
        o.transport.tag_threads = run.tag_threads;
        o.transport.tag_offload_min_bytes = run.tag_offload_min_bytes;
        return o;
      },
      /*connect_now=*/false);
  TamperingRelay relay(cluster.address(0), run.faults);
  const double start = now_s();
  RelayResult result;
  result.errors = cluster.run_all([&](int r, Runtime& rt) {
    ClusterSpec s = cluster.spec();
    s.rank = r;
    if (r == 1) s.addresses[0] = relay.address();
    rt.connect(s);
    auto algo = coll::make_allreduce(coll::StrategyKind::kClassicRing, rt.host_of_rank());
    std::vector<float> send(run.count, static_cast<float>(r + 1)), recv(run.count, 0.0f);
    coll::Workspace w;
    w.name = "grad";
    w.send = {reinterpret_cast<const std::byte*>(send.data()), send.size() * sizeof(float)};
    w.recv = {reinterpret_cast<std::byte*>(recv.data()), recv.size() * sizeof(float)};
    w.count = run.count;
    rt.run_allreduce(*algo, w, 10 * kNsPerSecond);
    if (std::any_of(recv.begin(), recv.end(), [](float v) { return v != 3.0f; }))
      throw std::runtime_error("wrong sum");
  });
  result.seconds = now_s() - start;
  result.flipped = relay.flipped();
  result.cut = relay.cut();
  result.streamed_at_0 = cluster.rank(0).streamed_frames();
  return result;
}

// A relay run whose flipped payload byte was detected: rank 0 fails the frame from rank 1, rank
// 1 learns why from rank 0's abort (itself authenticated), and no rank saw a wrong sum.
void check_flip_detected(const RelayResult& bad) {
  const auto& errors = bad.errors;
  INFO(errors[0] << " | " << errors[1]);
  CHECK(bad.flipped);
  CHECK(errors[0].find("a data frame from rank 1") != std::string::npos);
  CHECK(errors[0].find("failed authentication (altered in flight, or not sent by this job)") !=
        std::string::npos);
  CHECK(errors[1].find("failed authentication") != std::string::npos);
  CHECK(errors[0].find("wrong sum") == std::string::npos);
  CHECK(errors[1].find("wrong sum") == std::string::npos);
}

TEST_CASE(
    "a byte flipped in flight fails the collective at its frame, and the same relay unflipped "
    "works, with tags on the loop thread and on helper threads") {
  // Rank 1's stream starts with the hello (header 32 + payload 24 + tag 16 = 72 bytes); its
  // first data frame's header, name and 200,000-byte payload (a ring segment) follow, so offset
  // 5,000 lies inside that payload.
  for (const int tag_threads : {0, 2}) {
    CAPTURE(tag_threads);
    const RelayResult clean = allreduce_through_relay({.faults = {}, .tag_threads = tag_threads});
    INFO(clean.errors[0] << " | " << clean.errors[1]);
    CHECK_FALSE(clean.flipped);
    CHECK(clean.errors[0].empty());
    CHECK(clean.errors[1].empty());

    const RelayResult bad =
        allreduce_through_relay({.faults = {.flip_at = 5000}, .tag_threads = tag_threads});
    check_flip_detected(bad);
  }
}

TEST_CASE(
    "a byte flipped in the middle of a payload checked as it arrives fails the collective at its "
    "frame") {
  // 1,000,000 floats on 2 ranks: the ring's first frame from rank 1 carries a 1 MiB chunk, after
  // the 72-byte hello and its own header and name; offset 600,000 lies in the middle of that
  // payload. The relay holds rank 1's data until rank 0 posted its recvs, so the payload goes in
  // place and a helper thread absorbs it in the relay's 64 KiB pieces while it arrives; the
  // flipped byte is absorbed long before the tag arrives, and the frame must still fail.
  for (const int tag_threads : {1, 2}) {
    CAPTURE(tag_threads);
    const RelayRun run{.faults = {.hold_ms = 100},
                       .tag_threads = tag_threads,
                       .tag_offload_min_bytes = 4096,
                       .count = 1000000};
    const RelayResult clean = allreduce_through_relay(run);
    INFO(clean.errors[0] << " | " << clean.errors[1]);
    CHECK(clean.errors[0].empty());
    CHECK(clean.errors[1].empty());
    CHECK(clean.streamed_at_0 >= 1);

    RelayRun flip = run;
    flip.faults.flip_at = 600000;
    const RelayResult bad = allreduce_through_relay(flip);
    CHECK(bad.streamed_at_0 >= 1);
    check_flip_detected(bad);
  }
}

TEST_CASE(
    "a peer lost in the middle of a payload checked as it arrives fails the collective at once, "
    "naming the peer") {
  // As above, but the relay closes both connections after offset 600,000 without a goodbye:
  // rank 0's check of that frame waits (parked) for bytes that never come. It must be retracted
  // when the connection is lost, without a hang, and rank 0 fail with the lost peer's name.
  for (const int tag_threads : {1, 2}) {
    CAPTURE(tag_threads);
    const RelayResult lost = allreduce_through_relay({.faults = {.cut_at = 600000, .hold_ms = 100},
                                                      .tag_threads = tag_threads,
                                                      .tag_offload_min_bytes = 4096,
                                                      .count = 1000000});
    const auto& errors = lost.errors;
    INFO(errors[0] << " | " << errors[1]);
    CHECK(lost.cut);
    CHECK(lost.streamed_at_0 >= 1);
    CHECK(errors[0].find("rank 0: all-reduce 'grad' failed") == 0);
    CHECK(errors[0].find("lost the connection to rank 1 (") != std::string::npos);
    CHECK(errors[1].find("rank 1: all-reduce 'grad' failed") == 0);
    CHECK(errors[1].find("rank 0 (") != std::string::npos);
    // Far below the 10 s timeout: noticed at once (after the relay's hold).
    CHECK(lost.seconds < 3.0 + 0.1 * adaptsim::testing::time_scale());
  }
}
