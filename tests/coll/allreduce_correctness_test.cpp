// Every strategy computes the exact sum on every rank, for many rank counts, host layouts and
// sizes, with real data carried through the simulated transport.

#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "sim/coll/allreduce.h"
#include "tests/coll/sim_harness.h"

using namespace adaptsim;
using namespace adaptsim::coll;
using adaptsim::testing::SimCluster;
using adaptsim::testing::switched;

namespace {

// Value of element i on rank r: small integers, so float32 sums are exact.
float value(int r, std::size_t i) {
  return static_cast<float>((r + 1) * ((i % 13) + 1));
}

void check_allreduce(StrategyKind kind, int servers, int gpus, std::size_t count,
                     std::size_t chunk_bytes = 1 << 20) {
  fabric::SimTransportOptions opt;
  SimCluster c(switched(servers, gpus), opt);
  const int n = c.topology.rank_count();
  AllReduceOptions ao;
  ao.chunk_bytes = chunk_bytes;
  auto algo = make_allreduce(kind, c.hosts(), ao);
  std::vector<std::vector<float>> send(n, std::vector<float>(count)),
      recv(n, std::vector<float>(count, -1));
  int finished = 0;
  for (int r = 0; r < n; ++r) {
    for (std::size_t i = 0; i < count; ++i)
      send[r][i] = value(r, i);
    Workspace w;
    w.name = "grad";
    w.send = {reinterpret_cast<const std::byte*>(send[r].data()), count * 4};
    w.recv = {reinterpret_cast<std::byte*>(recv[r].data()), count * 4};
    w.count = count;
    algo->run(c.fabric.transport(r), w, [&] { ++finished; });
  }
  c.engine.run();
  REQUIRE(finished == n);
  const float factor = static_cast<float>(n * (n + 1) / 2);
  for (int r = 0; r < n; ++r) {
    for (std::size_t i = 0; i < count; ++i) {
      if (recv[r][i] != factor * static_cast<float>((i % 13) + 1)) {
        FAIL(strategy_name(kind) << " n=" << n << " count=" << count << " rank " << r << " element "
                                 << i << ": " << recv[r][i]);
      }
    }
  }
}

}  // namespace

TEST_CASE("all strategies x rank counts 1..9 x sizes give the exact sum (one GPU per host)") {
  for (StrategyKind k : all_strategies()) {
    for (int n = 1; n <= 9; ++n) {
      for (std::size_t count :
           {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{1001}}) {
        check_allreduce(k, n, 1, count, /*chunk_bytes=*/1024);
      }
    }
  }
}

TEST_CASE("multi-GPU hosts: intra-host stars and host masters") {
  for (StrategyKind k : all_strategies()) {
    check_allreduce(k, 3, 2, 777, 512);
    check_allreduce(k, 2, 4, 4099, 2048);
    check_allreduce(k, 1, 3, 100, 64);
  }
}

TEST_CASE("a size that is not a multiple of the chunk, with the default 1 MiB chunk") {
  // 300001 float32 = 1,200,004 bytes: 2 chunks of 150001 and 150000 elements.
  for (StrategyKind k : {StrategyKind::kMultiBinaryTreeStar, StrategyKind::kRing,
                         StrategyKind::kClassicRing, StrategyKind::kHalvingDoubling}) {
    check_allreduce(k, 5, 1, 300001);
  }
}

TEST_CASE("many named collectives run concurrently, issued in a different order on every rank") {
  fabric::SimTransportOptions opt;
  SimCluster c(switched(6, 1), opt);
  const int n = 6, tensors = 12;
  const std::size_t count = 333;
  auto algo = make_allreduce(StrategyKind::kMultiBinaryTreeStar, c.hosts(), {.chunk_bytes = 256});
  std::vector<std::vector<std::vector<float>>> send(n), recv(n);
  int finished = 0;
  for (int r = 0; r < n; ++r) {
    send[r].resize(tensors);
    recv[r].resize(tensors);
    std::vector<int> order(tensors);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), std::mt19937(r + 100));
    for (int t : order) {
      send[r][t].assign(count, static_cast<float>(r + t));
      recv[r][t].assign(count, 0);
      Workspace w;
      w.name = "tensor" + std::to_string(t);
      w.send = {reinterpret_cast<const std::byte*>(send[r][t].data()), count * 4};
      w.recv = {reinterpret_cast<std::byte*>(recv[r][t].data()), count * 4};
      w.count = count;
      algo->run(c.fabric.transport(r), w, [&] { ++finished; });
    }
  }
  c.engine.run();
  CHECK(finished == n * tensors);
  for (int r = 0; r < n; ++r) {
    for (int t = 0; t < tensors; ++t) {
      // sum over ranks of (r + t) = n(n-1)/2 + n t
      const float expect = static_cast<float>(n * (n - 1) / 2 + n * t);
      CHECK(
          std::all_of(recv[r][t].begin(), recv[r][t].end(), [&](float v) { return v == expect; }));
    }
  }
}

TEST_CASE("min and max reductions") {
  fabric::SimTransportOptions opt;
  SimCluster c(switched(4, 1), opt);
  for (ReduceOp op : {ReduceOp::kMin, ReduceOp::kMax}) {
    auto algo = make_allreduce(StrategyKind::kBinaryTreeStar, c.hosts());
    std::vector<std::vector<std::int32_t>> send(4, std::vector<std::int32_t>(5)), recv = send;
    for (int r = 0; r < 4; ++r) {
      for (int i = 0; i < 5; ++i)
        send[r][i] = (r * 7 + i * 3) % 11;
      Workspace w{"m",
                  {reinterpret_cast<const std::byte*>(send[r].data()), 20},
                  {reinterpret_cast<std::byte*>(recv[r].data()), 20},
                  5,
                  DType::kI32,
                  op};
      algo->run(c.fabric.transport(r), w, [] {});
    }
    c.engine.run();
    for (int i = 0; i < 5; ++i) {
      std::int32_t expect = send[0][i];
      for (int r = 1; r < 4; ++r) {
        expect = op == ReduceOp::kMin ? std::min(expect, send[r][i]) : std::max(expect, send[r][i]);
      }
      for (int r = 0; r < 4; ++r)
        CHECK(recv[r][i] == expect);
    }
  }
}
