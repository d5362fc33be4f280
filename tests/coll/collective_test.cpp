// nccl-tests' collective names and bus-bandwidth factors (doc/PERFORMANCE.md).
#include "sim/coll/collective.h"

#include <doctest/doctest.h>

#include "sim/core/error.h"

using namespace adaptsim;
using coll::Collective;

TEST_CASE("bus bandwidth factors follow nccl-tests") {
  // n = 8: all-reduce 2 (n - 1) / n = 14 / 8 = 1.75; all-gather, reduce-scatter, alltoall
  // (n - 1) / n = 7 / 8; broadcast, reduce, sendrecv 1.
  CHECK(coll::bus_bandwidth_factor(Collective::kAllReduce, 8) == doctest::Approx(1.75));
  CHECK(coll::bus_bandwidth_factor(Collective::kAllGather, 8) == doctest::Approx(0.875));
  CHECK(coll::bus_bandwidth_factor(Collective::kReduceScatter, 8) == doctest::Approx(0.875));
  CHECK(coll::bus_bandwidth_factor(Collective::kAllToAll, 8) == doctest::Approx(0.875));
  CHECK(coll::bus_bandwidth_factor(Collective::kBroadcast, 8) == 1.0);
  CHECK(coll::bus_bandwidth_factor(Collective::kReduce, 8) == 1.0);
  CHECK(coll::bus_bandwidth_factor(Collective::kSendRecv, 2) == 1.0);
  // n = 4: 2 x 3 / 4 = 1.5 and 3 / 4; n = 2: all-reduce busbw = algbw.
  CHECK(coll::bus_bandwidth_factor(Collective::kAllReduce, 4) == doctest::Approx(1.5));
  CHECK(coll::bus_bandwidth_factor(Collective::kAllGather, 4) == doctest::Approx(0.75));
  CHECK(coll::bus_bandwidth_factor(Collective::kAllReduce, 2) == doctest::Approx(1.0));
  // One rank: nothing crosses a link.
  CHECK(coll::bus_bandwidth_factor(Collective::kAllReduce, 1) == 0.0);
  CHECK(coll::bus_bandwidth_factor(Collective::kBroadcast, 1) == 1.0);
  CHECK_THROWS_WITH_AS(coll::bus_bandwidth_factor(Collective::kAllReduce, 0),
                       doctest::Contains("the rank count must be at least 1"), InputError);
}

TEST_CASE("collective names are nccl-tests' and round-trip") {
  for (Collective c : coll::kAllCollectives)
    CHECK(coll::parse_collective(coll::collective_name(c)) == c);
  CHECK(coll::collective_name(Collective::kAllToAll) == "alltoall");
  CHECK_FALSE(coll::parse_collective("all_reduse").has_value());
  CHECK(coll::known_collectives() ==
        "all_reduce, all_gather, reduce_scatter, broadcast, reduce, alltoall, sendrecv");
  CHECK(coll::collective_reduces(Collective::kReduce));
  CHECK_FALSE(coll::collective_reduces(Collective::kBroadcast));
}
