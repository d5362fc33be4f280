// The live TCP transport runs every sim/coll strategy unchanged and computes exact results;
// ranks are threads of this process, each with its own event loop and transport, talking over
// real loopback sockets. Failures (dead peers, silent peers, strays) end in errors that name the
// peer, within the timeout.

#include <doctest/doctest.h>

#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <numeric>
#include <random>
#include <thread>

#include "hw/tcp/frame.h"
#include "hw/tcp/runtime.h"
#include "sim/coll/allreduce.h"
#include "sim/core/error.h"
#include "tests/hw/tcp/tcp_test_support.h"
#include "tests/support/time_scale.h"

using namespace adaptsim;
using namespace adaptsim::tcp;
using namespace adaptsim::tcp::testing;
using coll::DType;
using coll::ReduceOp;
using coll::StrategyKind;

namespace {

constexpr TimeNs kTimeout = 10 * kNsPerSecond;

template <typename T>
coll::ConstBytes cbytes(const std::vector<T>& v) {
  return {reinterpret_cast<const std::byte*>(v.data()), v.size() * sizeof(T)};
}
template <typename T>
coll::Bytes bytes(std::vector<T>& v) {
  return {reinterpret_cast<std::byte*>(v.data()), v.size() * sizeof(T)};
}

coll::Workspace workspace(const std::string& name, const std::vector<float>& send,
                          std::vector<float>& recv) {
  coll::Workspace w;
  w.name = name;
  w.send = cbytes(send);
  w.recv = bytes(recv);
  w.count = send.size();
  return w;
}

// Value of element i on rank r: small integers, so float32 sums are exact.
float value(int r, std::size_t i) {
  return static_cast<float>((r + 1) * ((i % 13) + 1));
}

std::string join_errors(const std::vector<std::string>& errors) {
  std::string s;
  for (std::size_t r = 0; r < errors.size(); ++r) {
    if (!errors[r].empty()) s += "\n  rank " + std::to_string(r) + ": " + errors[r];
  }
  return s;
}

// A raw client connection to a rank's port, for playing a stray or malicious peer.
UniqueFd dial(const SocketAddress& a) {
  auto [addr, len] = resolve_address(a);
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  REQUIRE(::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), len) == 0);
  return fd;
}

void send_all(int fd, const void* data, std::size_t n) {
  const auto* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w <= 0) return;  // the rank may already have dropped us: that is the point
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

// A hello as a dialer sends it (frame.h): header with `job_id`, payload, and the tag under
// `secret` (the real job's id with a wrong secret is a stranger that guessed the public id).
std::vector<std::byte> hello_frame(std::uint64_t job_id, const JobSecret& secret, std::uint32_t src,
                                   std::uint32_t dst, std::uint32_t size) {
  std::vector<std::byte> f(kFrameHeaderBytes + kHelloPayloadBytes);
  FrameHeader h;
  h.kind = FrameKind::kHello;
  h.job_id = job_id;
  h.src_rank = src;
  h.payload_bytes = kHelloPayloadBytes;
  encode_frame_header(h, f.data());
  encode_hello_payload({dst, size, random_nonce()}, f.data() + kFrameHeaderBytes);
  const Tag tag = handshake_tag(secret, "adaptsim-tcp v2 hello", {ByteView(f.data(), f.size())});
  f.insert(f.end(), tag.begin(), tag.end());
  return f;
}

// Every strategy all-reduces value(r, i) over the cluster's n ranks at every count, in chunks of
// `chunk_bytes`; each rank's error text (empty when its sums were exact).
std::vector<std::string> sum_every_strategy(ThreadCluster& cluster, int n,
                                            const std::vector<std::size_t>& counts,
                                            std::uint64_t chunk_bytes) {
  return cluster.run_all([&](int r, Runtime& rt) {
    for (StrategyKind kind : coll::all_strategies()) {
      for (std::size_t count : counts) {
        auto algo = coll::make_allreduce(kind, rt.host_of_rank(), {.chunk_bytes = chunk_bytes});
        std::vector<float> send(count), recv(count, -1);
        for (std::size_t i = 0; i < count; ++i)
          send[i] = value(r, i);
        rt.run_allreduce(*algo, workspace("grad", send, recv), kTimeout);
        const float factor = static_cast<float>(n * (n + 1) / 2);
        for (std::size_t i = 0; i < count; ++i) {
          if (recv[i] != factor * static_cast<float>((i % 13) + 1)) {
            throw std::runtime_error(std::string(coll::strategy_name(kind)) + " count " +
                                     std::to_string(count) + " element " + std::to_string(i));
          }
        }
      }
    }
  });
}

}  // namespace

TEST_CASE("every strategy x 1..8 ranks x sizes 0 B, 4 B, odd, multi-chunk gives the exact sum") {
  // Sizes in float32 elements: 0 B, 4 B, 28 B, 4004 B (many 1 KiB chunks), and 1,200,004 B,
  // which is not a multiple of the default 1 MiB chunk (2 chunks of 150001 and 150000).
  struct Case {
    std::size_t count;
    std::size_t chunk_bytes;
  };
  const std::vector<Case> cases = {
      {0, 1024}, {1, 1024}, {7, 1024}, {1001, 1024}, {300001, 1 << 20}};
  for (int n = 1; n <= 8; ++n) {
    // From 4 ranks on, two ranks per host, so the topology-aware strategies build intra-host
    // stars and host masters.
    ThreadCluster cluster(n, hosts_by_block(n, n >= 4 ? 2 : 1));
    const auto errors = cluster.run_all([&](int r, Runtime& rt) {
      std::string first_error;
      for (StrategyKind kind : coll::all_strategies()) {
        for (const Case& c : cases) {
          auto algo = coll::make_allreduce(kind, rt.host_of_rank(), {.chunk_bytes = c.chunk_bytes});
          std::vector<float> send(c.count), recv(c.count, -1);
          for (std::size_t i = 0; i < c.count; ++i)
            send[i] = value(r, i);
          rt.run_allreduce(*algo, workspace("grad", send, recv), kTimeout);
          // sum over ranks of (r + 1) * k = n (n + 1) / 2 * k
          const float factor = static_cast<float>(n * (n + 1) / 2);
          for (std::size_t i = 0; i < c.count && first_error.empty(); ++i) {
            if (recv[i] != factor * static_cast<float>((i % 13) + 1)) {
              first_error = std::string(coll::strategy_name(kind)) + " n=" + std::to_string(n) +
                            " count=" + std::to_string(c.count) + " element " + std::to_string(i) +
                            " = " + std::to_string(recv[i]);
            }
          }
        }
      }
      if (!first_error.empty()) throw std::runtime_error(first_error);
    });
    INFO("n = " << n << join_errors(errors));
    CHECK(
        std::all_of(errors.begin(), errors.end(), [](const std::string& e) { return e.empty(); }));
  }
}

TEST_CASE("frame tags on helper threads: every strategy, every frame's tag off the loop thread") {
  // tag_threads 2 with no size threshold: every data frame is sealed and checked by TagWorkers
  // (the sends wait for their tags, the deliveries for their checks), whatever its size; the
  // sums stay exact and every rank runs the 2 threads asked for.
  const int n = 4;
  ThreadCluster cluster(n, hosts_by_block(n, 2), [](int) {
    RuntimeOptions o = test_options();
    o.transport.tag_threads = 2;
    o.transport.tag_offload_min_bytes = 0;
    return o;
  });
  for (int r = 0; r < n; ++r)
    CHECK(cluster.rank(r).tag_threads() == 2);
  const std::vector<std::size_t> counts = {0, 1, 1001, 300001};
  const auto errors = sum_every_strategy(cluster, n, counts, 64 << 10);
  INFO(join_errors(errors));
  CHECK(std::all_of(errors.begin(), errors.end(), [](const std::string& e) { return e.empty(); }));
}

TEST_CASE(
    "frame tags checked as payloads arrive: every strategy and size, in many pieces, exact sums") {
  // A received data frame of at least tag_offload_min_bytes whose recv is posted has its tag
  // checked by a helper thread while its payload arrives (TagWorkers' streaming jobs). Small
  // socket buffers make every payload arrive in pieces of tens of KiB, and 1 MiB chunks make
  // frames of several times TagWorkers::kStreamChunkBytes, so jobs park and are queued again
  // many times per frame; one helper thread is shared by a rank's streamed checks and its sent
  // frames' tags. Sums stay exact, and every rank streamed frames.
  const int n = 4;
  for (const int tag_threads : {1, 2}) {
    CAPTURE(tag_threads);
    ThreadCluster cluster(n, hosts_by_block(n, 2), [&](int) {
      RuntimeOptions o = test_options();
      o.transport.tag_threads = tag_threads;
      o.transport.tag_offload_min_bytes = 4096;
      o.transport.socket_buffer_bytes = 32 << 10;
      return o;
    });
    const std::vector<std::size_t> counts = {0, 1001, 300001, 1 << 20};
    const auto errors = sum_every_strategy(cluster, n, counts, 1 << 20);
    INFO(join_errors(errors));
    CHECK(
        std::all_of(errors.begin(), errors.end(), [](const std::string& e) { return e.empty(); }));
    for (int r = 0; r < n; ++r) {
      CAPTURE(r);
      CHECK(cluster.rank(r).streamed_frames() > 0);
    }
  }
}

TEST_CASE("frame tags: the default is no helper thread where a host's cores are all taken") {
  // TagWorkers::default_threads: the cores this process may use, shared by the host's ranks,
  // less one loop thread each, at most 2.
  CHECK(TagWorkers::default_threads(1 << 20) == 0);
  cpu_set_t set;
  REQUIRE(::sched_getaffinity(0, sizeof set, &set) == 0);
  const int cores = CPU_COUNT(&set);
  CHECK(TagWorkers::default_threads(1) == std::clamp(cores - 1, 0, 2));
  CHECK(TagWorkers::default_threads(cores) == 0);
}

TEST_CASE(
    "many named collectives of mixed strategies run concurrently, in a different order per rank") {
  const int n = 6, tensors = 24;
  ThreadCluster cluster(n, hosts_by_block(n, 2));
  std::vector<std::vector<std::vector<float>>> results(n);
  const auto errors = cluster.run_all([&](int r, Runtime& rt) {
    const auto& kinds = coll::all_strategies();
    std::vector<std::unique_ptr<coll::AllReduce>> algos;
    std::vector<std::vector<float>> send(tensors);
    auto& recv = results[static_cast<std::size_t>(r)];
    recv.resize(tensors);
    for (int t = 0; t < tensors; ++t) {
      algos.push_back(coll::make_allreduce(kinds[static_cast<std::size_t>(t) % kinds.size()],
                                           rt.host_of_rank(), {.chunk_bytes = 256}));
      const std::size_t count = 333 + 50 * static_cast<std::size_t>(t);
      send[static_cast<std::size_t>(t)].assign(count, static_cast<float>(r + t));
      recv[static_cast<std::size_t>(t)].assign(count, 0);
    }
    std::vector<int> order(tensors);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), std::mt19937(static_cast<unsigned>(r) + 100));
    rt.run("24 concurrent all-reduces", kTimeout, [&](coll::Transport& t, coll::Callback done) {
      auto remaining = std::make_shared<int>(tensors);
      auto all_done = std::make_shared<coll::Callback>(std::move(done));  // move-only: shared
      for (int k : order) {
        const auto ks = static_cast<std::size_t>(k);
        algos[ks]->run(t, workspace("tensor" + std::to_string(k), send[ks], recv[ks]),
                       [remaining, all_done] {
                         if (--*remaining == 0) (*all_done)();
                       });
      }
    });
  });
  INFO(join_errors(errors));
  REQUIRE(
      std::all_of(errors.begin(), errors.end(), [](const std::string& e) { return e.empty(); }));
  for (int r = 0; r < n; ++r) {
    for (int t = 0; t < tensors; ++t) {
      // sum over ranks of (r + t) = n (n - 1) / 2 + n t
      const float expect = static_cast<float>(n * (n - 1) / 2 + n * t);
      const auto& v = results[static_cast<std::size_t>(r)][static_cast<std::size_t>(t)];
      CHECK(std::all_of(v.begin(), v.end(), [&](float x) { return x == expect; }));
    }
  }
}

TEST_CASE("float16, bfloat16 and float64 sums, and min and max, are exact") {
  const int n = 5;  // not a power of two: halving-doubling folds a pair
  const std::size_t count = 1001;
  ThreadCluster cluster(n);
  const auto errors = cluster.run_all([&](int r, Runtime& rt) {
    std::string first_error;
    for (DType dtype : {DType::kF16, DType::kBF16, DType::kF64}) {
      const std::size_t es = coll::dtype_size(dtype);
      auto encode = [&](double v, std::byte* out) {
        if (dtype == DType::kF16) {
          const std::uint16_t h = coll::float_to_half(static_cast<float>(v));
          std::memcpy(out, &h, 2);
        } else if (dtype == DType::kBF16) {
          const std::uint16_t b = coll::float_to_bfloat16(static_cast<float>(v));
          std::memcpy(out, &b, 2);
        } else {
          std::memcpy(out, &v, 8);
        }
      };
      auto decode = [&](const std::byte* in) -> double {
        std::uint16_t h = 0;
        if (dtype == DType::kF64) {
          double d = 0;
          std::memcpy(&d, in, 8);
          return d;
        }
        std::memcpy(&h, in, 2);
        return dtype == DType::kF16 ? coll::half_to_float(h) : coll::bfloat16_to_float(h);
      };
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax}) {
        // Inputs: sum (r + i) mod 5 (totals <= 20, exact even in bfloat16);
        // min/max (7 r + 3 i) mod 11.
        auto input = [&](int rank, std::size_t i) {
          return op == ReduceOp::kSum
                     ? static_cast<double>((static_cast<std::size_t>(rank) + i) % 5)
                     : static_cast<double>((static_cast<std::size_t>(rank) * 7 + i * 3) % 11);
        };
        for (StrategyKind kind : {StrategyKind::kClassicRing, StrategyKind::kHalvingDoubling,
                                  StrategyKind::kMultiBinaryTreeStar, StrategyKind::kRing}) {
          auto algo = coll::make_allreduce(kind, rt.host_of_rank(), {.chunk_bytes = 512});
          std::vector<std::byte> send(count * es), recv(count * es, std::byte{0xff});
          for (std::size_t i = 0; i < count; ++i)
            encode(input(r, i), send.data() + i * es);
          coll::Workspace w{
              "typed", {send.data(), send.size()}, {recv.data(), recv.size()}, count, dtype, op};
          rt.run_allreduce(*algo, w, kTimeout);
          for (std::size_t i = 0; i < count && first_error.empty(); ++i) {
            double expect = input(0, i);
            for (int q = 1; q < n; ++q) {
              expect = op == ReduceOp::kSum   ? expect + input(q, i)
                       : op == ReduceOp::kMin ? std::min(expect, input(q, i))
                                              : std::max(expect, input(q, i));
            }
            const double got = decode(recv.data() + i * es);
            if (got != expect) {
              first_error = std::string(coll::dtype_name(dtype)) + " " +
                            std::string(coll::reduce_op_name(op)) + " " +
                            std::string(coll::strategy_name(kind)) + " element " +
                            std::to_string(i) + ": " + std::to_string(got) +
                            " != " + std::to_string(expect);
            }
          }
        }
      }
    }
    if (!first_error.empty()) throw std::runtime_error(first_error);
  });
  INFO(join_errors(errors));
  CHECK(std::all_of(errors.begin(), errors.end(), [](const std::string& e) { return e.empty(); }));
}

TEST_CASE("odd byte counts (uint8) split into uneven segments and chunks still sum exactly") {
  // 1, 7, 1001 and 65537 bytes over 3 and 5 ranks: ring segments and KungFu chunks (100 B) of
  // unequal lengths, and empty segments where there are fewer bytes than ranks.
  for (int n : {3, 5}) {
    ThreadCluster cluster(n);
    const auto errors = cluster.run_all([&](int r, Runtime& rt) {
      for (StrategyKind kind : coll::all_strategies()) {
        auto algo = coll::make_allreduce(kind, rt.host_of_rank(), {.chunk_bytes = 100});
        for (std::size_t count :
             {std::size_t{1}, std::size_t{7}, std::size_t{1001}, std::size_t{65537}}) {
          std::vector<std::uint8_t> send(count), recv(count, 0xff);
          for (std::size_t i = 0; i < count; ++i)
            send[i] = static_cast<std::uint8_t>((r + i) % 7);
          coll::Workspace w{"bytes", cbytes(send), bytes(recv), count, DType::kU8, ReduceOp::kSum};
          rt.run_allreduce(*algo, w, kTimeout);
          for (std::size_t i = 0; i < count; ++i) {
            // sum over ranks q of (q + i) mod 7 (at most 5 * 6 = 30: no uint8 overflow)
            unsigned expect = 0;
            for (int q = 0; q < n; ++q)
              expect += static_cast<unsigned>((q + i) % 7);
            if (recv[i] != expect) {
              throw std::runtime_error(std::string(coll::strategy_name(kind)) + " count " +
                                       std::to_string(count) + " byte " + std::to_string(i));
            }
          }
        }
      }
    });
    INFO("n = " << n << join_errors(errors));
    CHECK(
        std::all_of(errors.begin(), errors.end(), [](const std::string& e) { return e.empty(); }));
  }
}

TEST_CASE(
    "callbacks never run inside the call that registered them, even for a message already here") {
  ThreadCluster cluster(2);
  std::vector<char> msg(64, 'x');
  std::atomic<int> inline_calls{0};
  const auto errors = cluster.run_all([&](int r, Runtime& rt) {
    if (r == 0) {
      rt.run("send", kTimeout, [&](coll::Transport& t, coll::Callback done) {
        auto inside = std::make_shared<bool>(true);
        t.send(1, "early", {reinterpret_cast<const std::byte*>(msg.data()), msg.size()},
               [inside, &inline_calls, done = std::move(done)]() mutable {
                 if (*inside) ++inline_calls;
                 done();
               });
        *inside = false;
      });
      return;
    }
    // Let the message arrive and be staged before the recv is posted.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::vector<char> into(64, 0);
    rt.run("recv, reduce, copy", kTimeout, [&](coll::Transport& t, coll::Callback done) {
      auto inside = std::make_shared<bool>(true);
      auto check = [inside, &inline_calls] {
        if (*inside) ++inline_calls;
      };
      auto left = std::make_shared<int>(3);
      auto finish = [left, done = std::make_shared<coll::Callback>(std::move(done))] {
        if (--*left == 0) (*done)();
      };
      t.recv(0, "early", {reinterpret_cast<std::byte*>(into.data()), into.size()}, [check, finish] {
        check();
        finish();
      });
      t.reduce({reinterpret_cast<std::byte*>(into.data()), 0}, {}, {}, DType::kF32, ReduceOp::kSum,
               [check, finish] {
                 check();
                 finish();
               });
      t.copy({}, {}, [check, finish] {
        check();
        finish();
      });
      *inside = false;
    });
    CHECK(std::string(into.begin(), into.end()) == std::string(64, 'x'));
  });
  INFO(join_errors(errors));
  CHECK(errors[0].empty());
  CHECK(errors[1].empty());
  CHECK(inline_calls == 0);
}

TEST_CASE(
    "a large message lands intact whether its recv is posted before, during or after arrival") {
  ThreadCluster cluster(2);
  const std::size_t size = 24 << 20;
  std::vector<std::uint32_t> pattern(size / 4);
  for (std::size_t i = 0; i < pattern.size(); ++i)
    pattern[i] = static_cast<std::uint32_t>(i * 2654435761u);
  for (int delay_ms : {0, 3, 300}) {
    std::vector<std::uint32_t> got(pattern.size(), 0);
    const auto errors = cluster.run_all([&](int r, Runtime& rt) {
      if (r == 0) {
        rt.run("send", kTimeout, [&](coll::Transport& t, coll::Callback done) {
          t.send(1, "big", cbytes(pattern), std::move(done));
        });
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
        rt.run("recv", kTimeout, [&](coll::Transport& t, coll::Callback done) {
          t.recv(0, "big", bytes(got), std::move(done));
        });
      }
    });
    INFO("delay " << delay_ms << " ms" << join_errors(errors));
    CHECK(errors[0].empty());
    CHECK(errors[1].empty());
    CHECK(got == pattern);
  }
}

TEST_CASE("a recv whose size differs from the message fails, naming the message and the peer") {
  ThreadCluster cluster(2);
  std::vector<float> eight(2, 1.0f), four(1, 0.0f);
  const auto errors = cluster.run_all([&](int r, Runtime& rt) {
    if (r == 0) {
      rt.run("send", kTimeout, [&](coll::Transport& t, coll::Callback done) {
        t.send(1, "sized", cbytes(eight), std::move(done));
      });
    } else {
      rt.run("recv", kTimeout, [&](coll::Transport& t, coll::Callback done) {
        t.recv(0, "sized", bytes(four), std::move(done));
      });
    }
  });
  CHECK(errors[0].empty());
  CHECK(errors[1].find("rank 1: recv failed: message 'sized' from rank 0 (127.0.0.1:") == 0);
  CHECK(errors[1].find("has 8 bytes, but its recv was posted for 4 bytes") != std::string::npos);
}

TEST_CASE(
    "garbage, strangers without the secret and impostors are rejected while collectives complete") {
  auto log = std::make_shared<LogCapture>();
  const int n = 3;
  ThreadCluster cluster(
      n, {},
      [&](int) {
        RuntimeOptions o = test_options(log);
        o.transport.handshake_timeout_ns = 200 * kNsPerMs;
        return o;
      },
      /*connect_now=*/false);
  const SocketAddress target = cluster.address(0);
  const JobSecret& secret = cluster.spec().secret;
  const std::uint64_t job = secret.job_id();

  auto attack = [&] {
    std::vector<UniqueFd> keep;
    {  // garbage bytes
      UniqueFd fd = dial(target);
      std::vector<char> junk(4096, 'G');
      send_all(fd.get(), junk.data(), junk.size());
      keep.push_back(std::move(fd));
    }
    {  // a well-formed hello of another job
      const JobSecret other = JobSecret::random();
      UniqueFd fd = dial(target);
      auto f = hello_frame(other.job_id(), other, 2, 0, n);
      send_all(fd.get(), f.data(), f.size());
      keep.push_back(std::move(fd));
    }
    {  // this job's public id, but a wrong secret
      UniqueFd fd = dial(target);
      auto f = hello_frame(job, JobSecret::random(), 2, 0, n);
      send_all(fd.get(), f.data(), f.size());
      keep.push_back(std::move(fd));
    }
    {  // the secret, but rank 0 is dialed only by higher ranks: an insider claiming rank 0
      UniqueFd fd = dial(target);
      auto f = hello_frame(job, secret, 0, 0, n);
      send_all(fd.get(), f.data(), f.size());
      keep.push_back(std::move(fd));
    }
    {  // a header announcing a 1 GiB name
      UniqueFd fd = dial(target);
      std::array<std::byte, kFrameHeaderBytes> h{};
      FrameHeader fh;
      fh.kind = FrameKind::kHello;
      fh.job_id = job;
      fh.name_bytes = 1u << 30;
      encode_frame_header(fh, h.data());
      send_all(fd.get(), h.data(), h.size());
      keep.push_back(std::move(fd));
    }
    {  // data before any handshake
      UniqueFd fd = dial(target);
      std::array<std::byte, kFrameHeaderBytes> h{};
      FrameHeader fh;
      fh.kind = FrameKind::kData;
      fh.job_id = job;
      fh.src_rank = 1;
      fh.payload_bytes = 16;
      encode_frame_header(fh, h.data());
      send_all(fd.get(), h.data(), h.size());
      keep.push_back(std::move(fd));
    }
    keep.push_back(dial(target));  // connects and says nothing
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  };

  // Strays before the mesh exists (queued in the backlog) and while collectives run.
  std::thread before(attack);
  before.join();
  cluster.connect_all();
  std::thread during(attack);
  const auto errors = cluster.run_all([&](int r, Runtime& rt) {
    auto algo = coll::make_allreduce(StrategyKind::kClassicRing, rt.host_of_rank());
    for (int it = 0; it < 30; ++it) {
      std::vector<float> send(10000), recv(10000);
      for (std::size_t i = 0; i < send.size(); ++i)
        send[i] = value(r, i);
      rt.run_allreduce(*algo, workspace("grad", send, recv), kTimeout);
      for (std::size_t i = 0; i < recv.size(); ++i) {
        // n (n + 1) / 2 = 6
        if (recv[i] != 6.0f * static_cast<float>((i % 13) + 1))
          throw std::runtime_error("wrong sum");
      }
    }
  });
  during.join();
  INFO(join_errors(errors));
  CHECK(std::all_of(errors.begin(), errors.end(), [](const std::string& e) { return e.empty(); }));
  // 7 strays per attack, two attacks, all at rank 0 (the silent ones by the handshake timeout).
  for (int i = 0; i < 100 && cluster.rank(0).rejected_connections() < 14; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  CHECK(cluster.rank(0).rejected_connections() == 14);
  CHECK(log->contains("bad magic"));
  CHECK(log->contains("hello frame of another job (job id "));
  CHECK(
      log->contains("hello frame failed authentication: the peer does not know this job's secret"));
  CHECK(log->contains("hello from rank 0, which must not dial rank 0"));
  CHECK(log->contains("name of 1073741824 bytes exceeds the limit"));
  CHECK(log->contains("expected a hello frame, got a data frame"));
  CHECK(log->contains("no handshake within"));
  for (int r = 0; r < n; ++r)
    CHECK_FALSE(cluster.rank(r).failed());
}

TEST_CASE("a peer that dies mid-collective makes every other rank fail at once, naming it") {
  const int n = 4;
  // Also with every tag on helper threads: frames whose tags are still being computed or checked
  // when the transport fails are given up without touching the callers' buffers afterwards.
  for (const int tag_threads : {0, 2}) {
    CAPTURE(tag_threads);
    ThreadCluster cluster(n, {}, [&](int r) {
      RuntimeOptions o = test_options();
      o.transport.tag_threads = tag_threads;
      o.transport.tag_offload_min_bytes = 0;
      if (r == 2) o.transport.fault = {FaultAction::kDropConnections, 3};
      return o;
    });
    const std::string dead = "rank 2 (" + cluster.address(2).str() + ")";
    // Under the sanitizers (ADAPTSIM_TEST_TIME_SCALE) the work before the fault runs several
    // times slower: the timeout and the bound below it scale alike (TSan took 2.8-3.0 s here).
    const double scale = adaptsim::testing::time_scale();
    const double start = now_s();
    const auto errors = cluster.run_all([&](int, Runtime& rt) {
      auto algo = coll::make_allreduce(StrategyKind::kClassicRing, rt.host_of_rank());
      std::vector<float> send(1 << 20, 1.0f), recv(1 << 20);
      for (int it = 0; it < 10; ++it)
        rt.run_allreduce(*algo, workspace("grad", send, recv),
                         static_cast<TimeNs>(5 * scale * kNsPerSecond));
    });
    const double elapsed = now_s() - start;
    INFO(join_errors(errors));
    CHECK(errors[2].find("fault injection") != std::string::npos);
    for (int r : {0, 1, 3}) {
      CHECK(errors[static_cast<std::size_t>(r)].find("rank " + std::to_string(r) +
                                                     ": all-reduce 'grad' failed") == 0);
      CHECK(errors[static_cast<std::size_t>(r)].find(dead) != std::string::npos);
    }
    CHECK(elapsed < 2.0 * scale);  // far below the timeout: a lost connection is noticed at once
  }
}

TEST_CASE("a silent peer makes the collective time out with a message naming it") {
  ThreadCluster cluster(3);
  const std::string silent = "rank 1 (" + cluster.address(1).str() + ")";
  const double start = now_s();
  std::vector<double> ended(3, 0);
  const auto errors = cluster.run_all([&](int r, Runtime& rt) {
    if (r == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1000));  // never joins
      return;
    }
    auto algo = coll::make_allreduce(StrategyKind::kStar, rt.host_of_rank());
    std::vector<float> send(100, 1.0f), recv(100);
    try {
      rt.run_allreduce(*algo, workspace("grad", send, recv), 300 * kNsPerMs);
    } catch (...) {
      ended[static_cast<std::size_t>(r)] = now_s() - start;
      throw;
    }
  });
  INFO(join_errors(errors));
  // STAR: the root, rank 0, waits for rank 1's contribution; rank 2 waits for rank 0's
  // broadcast. Whichever timer fires first, rank 0's message names the silent rank 1.
  CHECK(errors[0].find("rank 0: all-reduce 'grad' ") == 0);
  CHECK(errors[0].find("timed out after 0.3 s") != std::string::npos);
  CHECK(errors[0].find("from " + silent) != std::string::npos);
  CHECK(errors[2].find("timed out") != std::string::npos);
  CHECK(ended[0] >= 0.29);
  CHECK(ended[0] < 1.5);
  CHECK(ended[2] < 1.5);
}

TEST_CASE(
    "connecting fails after the connect timeout, naming the rank and address that never came") {
  const std::vector<int> ports = free_ports(2);
  ClusterSpec spec;
  spec.secret = JobSecret::random();
  spec.addresses = {{"127.0.0.1", static_cast<std::uint16_t>(ports[0])},
                    {"127.0.0.1", static_cast<std::uint16_t>(ports[1])}};
  RuntimeOptions o = test_options();
  o.transport.connect_timeout_ns = 500 * kNsPerMs;

  SUBCASE("the dialing side") {
    spec.rank = 1;  // dials rank 0, which does not exist
    Runtime rt(spec.addresses[1], o);
    const double start = now_s();
    CHECK_THROWS_WITH_AS(
        rt.connect(spec),
        doctest::Contains(("could not connect to rank 0 (127.0.0.1:" + std::to_string(ports[0]) +
                           ") (last error: Connection refused) within 0.5 s")
                              .c_str()),
        RuntimeFailure);
    CHECK(now_s() - start < 2.0);
  }
  SUBCASE("the accepting side") {
    spec.rank = 0;  // waits for rank 1, which never dials
    Runtime rt(spec.addresses[0], o);
    CHECK_THROWS_WITH_AS(rt.connect(spec),
                         doctest::Contains(("rank 1 (127.0.0.1:" + std::to_string(ports[1]) +
                                            ") (never connected to us)")
                                               .c_str()),
                         RuntimeFailure);
    CHECK(rt.failed());
  }
}

TEST_CASE("no rank leaves a barrier before the last one entered it") {
  const int n = 5;
  ThreadCluster cluster(n);
  std::vector<double> entered(n), left(n);
  const auto errors = cluster.run_all([&](int r, Runtime& rt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(40 * r));
    entered[static_cast<std::size_t>(r)] = now_s();
    rt.barrier(kTimeout);
    left[static_cast<std::size_t>(r)] = now_s();
    rt.barrier(kTimeout);  // and again: repeated barriers match in order
  });
  INFO(join_errors(errors));
  CHECK(std::all_of(errors.begin(), errors.end(), [](const std::string& e) { return e.empty(); }));
  CHECK(*std::min_element(left.begin(), left.end()) >=
        *std::max_element(entered.begin(), entered.end()));
}

TEST_CASE("after a failure every call fails at once with the first reason") {
  ThreadCluster cluster(2, {}, [](int) {
    RuntimeOptions o = test_options();
    o.shutdown_timeout_ns = 100 * kNsPerMs;  // rank 1 does not wait long for rank 0's goodbye
    return o;
  });
  cluster.destroy(1);  // a graceful goodbye: rank 0 is not failed by it
  Runtime& rt = cluster.rank(0);
  CHECK_FALSE(rt.failed());
  auto algo = coll::make_allreduce(StrategyKind::kStar, rt.host_of_rank());
  std::vector<float> send(4, 1.0f), recv(4);
  // Rank 0 is the STAR root and needs rank 1's data, which will never come.
  CHECK_THROWS_WITH_AS(rt.run_allreduce(*algo, workspace("grad", send, recv), kTimeout),
                       doctest::Contains("shut down"), RuntimeFailure);
  CHECK_THROWS_WITH_AS(rt.barrier(kTimeout), doctest::Contains("rank 0: barrier failed"),
                       RuntimeFailure);
}
