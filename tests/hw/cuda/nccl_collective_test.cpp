// The NCCL sweep's conventions that need no GPU: counts, the collectives it runs, sizes, options.
// (Names and bus-bandwidth factors: tests/coll/collective_test.cpp.)
#include "hw/nccl/collective.h"

#include <doctest/doctest.h>

#include <iterator>
#include <stdexcept>
#include <vector>

#include "hw/nccl/sweep.h"
#include "sim/core/error.h"

using namespace adaptsim;
using namespace adaptsim::hw;
using coll::Collective;

TEST_CASE("per-rank counts: the size is the whole array and pieces align to 4 elements") {
  // 1 MiB of float32 = 262144 elements.
  const auto ar = collective_counts(Collective::kAllReduce, 1 << 20, 4, 8);
  CHECK(ar.send_count == 262144);
  CHECK(ar.recv_count == 262144);
  CHECK(ar.param_count == 262144);
  CHECK(ar.size_bytes == 1 << 20);
  // All-gather over 8 ranks: 262144 / 8 = 32768 per rank, a multiple of 4.
  const auto ag = collective_counts(Collective::kAllGather, 1 << 20, 4, 8);
  CHECK(ag.send_count == 32768);
  CHECK(ag.recv_count == 262144);
  CHECK(ag.param_count == 32768);
  CHECK(ag.size_bytes == 1 << 20);
  const auto rs = collective_counts(Collective::kReduceScatter, 1 << 20, 4, 8);
  CHECK(rs.send_count == 262144);
  CHECK(rs.recv_count == 32768);
  CHECK(rs.param_count == 32768);
  // 100 floats over 3 ranks: 100 / (4 x 3) = 8 pieces of 4 -> 32 per rank, 96 in all.
  const auto odd = collective_counts(Collective::kAllGather, 400, 4, 3);
  CHECK(odd.param_count == 32);
  CHECK(odd.size_bytes == 96 * 4);
  // 8 bytes cannot be split over 8 ranks: count 0 (the sweep skips the size).
  CHECK(collective_counts(Collective::kReduceScatter, 8, 4, 8).param_count == 0);
  CHECK(collective_counts(Collective::kBroadcast, 8, 4, 8).param_count == 2);
}

TEST_CASE("--collective names the sweep's collectives: all is every one of them") {
  CHECK(parse_sweep_collectives("all", "--collective") ==
        std::vector<Collective>(std::begin(kSweepCollectives), std::end(kSweepCollectives)));
  CHECK(parse_sweep_collectives("broadcast,all_reduce", "--collective") ==
        std::vector<Collective>{Collective::kBroadcast, Collective::kAllReduce});
  // alltoall is a collective, but not one the sweep runs.
  CHECK_FALSE(sweep_runs(Collective::kAllToAll));
  CHECK_THROWS_WITH_AS(parse_sweep_collectives("alltoall", "--collective"),
                       "--collective: the NCCL sweep does not run \"alltoall\" (known: "
                       "all_reduce, all_gather, reduce_scatter, broadcast, all)",
                       InputError);
  CHECK_THROWS_WITH_AS(parse_sweep_collectives("all_reduse", "--collective"),
                       doctest::Contains("--collective: unknown collective \"all_reduse\""),
                       InputError);
  CHECK_THROWS_AS(collective_counts(Collective::kAllToAll, 1024, 4, 2), std::invalid_argument);
}

TEST_CASE("sweep sizes run from min to max by the step factor") {
  // 8 B x 2^k up to 1 GiB = 2^30: k = 0..27, 28 sizes.
  const auto sizes = sweep_sizes(8, 1ull << 30, 2);
  REQUIRE(sizes.size() == 28);
  CHECK(sizes.front() == 8);
  CHECK(sizes.back() == 1ull << 30);
  CHECK(sweep_sizes(1000, 1000, 1) == std::vector<std::uint64_t>{1000});
  CHECK(sweep_sizes(3, 100, 4) == std::vector<std::uint64_t>{3, 12, 48});
  // No overflow past 2^64.
  CHECK(sweep_sizes(1ull << 62, UINT64_MAX, 2).size() == 2);
  CHECK_THROWS_AS(sweep_sizes(0, 8, 2), InputError);
  CHECK_THROWS_AS(sweep_sizes(16, 8, 2), InputError);
  CHECK_THROWS_AS(sweep_sizes(8, 16, 1), InputError);
}

TEST_CASE("sweep options are validated without a GPU") {
  SweepOptions ok;
  CHECK_NOTHROW(validate_sweep_options(ok));
  SweepOptions bad = ok;
  bad.iters = 0;
  CHECK_THROWS_AS(validate_sweep_options(bad), InputError);
  bad = ok;
  bad.collectives.clear();
  CHECK_THROWS_AS(validate_sweep_options(bad), InputError);
  bad = ok;
  bad.gpus = -1;
  CHECK_THROWS_AS(validate_sweep_options(bad), InputError);
  bad = ok;
  bad.collectives = {Collective::kReduce};
  CHECK_THROWS_WITH_AS(validate_sweep_options(bad),
                       doctest::Contains("the NCCL sweep does not run \"reduce\""), InputError);
}
