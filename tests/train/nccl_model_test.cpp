#include "sim/train/nccl_model.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include "sim/core/error.h"
#include "sim/io/topology_loader.h"
#include "sim/topo/cluster_spec.h"

using namespace adaptsim;
using namespace adaptsim::train;
namespace fs = std::filesystem;

namespace {

const fs::path kTopologies = fs::path(ADAPTSIM_SOURCE_DIR) / "topologies";

constexpr std::uint64_t kMiB = 1 << 20;

// A hand-written candidate: its time is latency + bytes / (1000 * algbw), GB/s = 1000 B/us.
struct Expected {
  NcclAlgo algo;
  NcclProto proto;
  double latency_us;
  double algbw_GBps;
  double time(std::uint64_t bytes) const { return latency_us + bytes / (1000.0 * algbw_GBps); }
};

// NCCL's choice: the first candidate (NCCL's order) of minimum time.
Expected pick(const std::vector<Expected>& candidates, std::uint64_t bytes) {
  Expected best = candidates.front();
  for (const Expected& e : candidates) {
    if (e.time(bytes) < best.time(bytes)) best = e;
  }
  return best;
}

void check_matches(const std::vector<Expected>& expected, NcclColl coll, std::uint64_t bytes,
                   const NcclCommParams& p) {
  const std::vector<NcclEstimate> got = nccl_estimates(coll, bytes, p);
  REQUIRE(got.size() == expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO(nccl_algo_name(got[i].algo) << "/" << nccl_proto_name(got[i].proto));
    CHECK(got[i].algo == expected[i].algo);
    CHECK(got[i].proto == expected[i].proto);
    CHECK(got[i].latency_us == doctest::Approx(expected[i].latency_us));
    CHECK(got[i].algbw_GBps == doctest::Approx(expected[i].algbw_GBps));
    CHECK(got[i].time_us == doctest::Approx(expected[i].time(bytes)));
  }
  const Expected want = pick(expected, bytes);
  const NcclEstimate chosen = nccl_predict(coll, bytes, p);
  INFO("size " << bytes << " chosen " << nccl_algo_name(chosen.algo) << "/"
               << nccl_proto_name(chosen.proto));
  CHECK(chosen.algo == want.algo);
  CHECK(chosen.proto == want.proto);
  CHECK(chosen.time_us == doctest::Approx(want.time(bytes)));
}

// A DGX-1-like node: 8 V100 on NVLink, 6 channels of 25 GB/s; several join with 4x 100 Gb/s NICs
// (50 GB/s per server, spread over the 6 channels).
NcclCommParams dgx1_like(int nodes) {
  NcclCommParams p;
  p.n_nodes = nodes;
  p.n_ranks = 8 * nodes;
  p.arch = GpuArch::kVolta;
  p.intra = NcclIntraLink::kNvLink;
  p.channels = 6;
  p.intra_bw_per_channel_GBps = 25.0;
  p.inter_bw_per_channel_GBps = nodes > 1 ? 50.0 / 6 : 0.0;
  return p;
}

}  // namespace

TEST_CASE("one NVLink node, AllReduce: every candidate and NCCL's choice follow the formulas") {
  const NcclCommParams p = dgx1_like(1);
  // busBw = 6 channels x 25 GB/s = 150 GB/s. Ring: nsteps = 2(8-1) = 14, no network step,
  // algBw = busBw' x 8/14. Tree: ppn - 1 = 7 hops, log2(1) = 0; tree busBw = min(150 x 0.92,
  // 6 x 26.5) = 138, algBw = busBw' x 0.5.
  const double ring = 8.0 / 14;
  const double tree_bus = std::min(150 * 0.92, 6 * 26.5);
  const std::vector<Expected> expected = {
      {NcclAlgo::kTree, NcclProto::kLL, 4.4 + 2 * (7 * 0.52), std::min(tree_bus / 3.8, 39.0) * 0.5},
      {NcclAlgo::kTree, NcclProto::kLL128, 4.4 + 2 * (7 * 1.2),
       std::min(tree_bus * 7 / 9, 6 * 20.0) * 0.5},
      {NcclAlgo::kTree, NcclProto::kSimple, 0.0 + 2 * (7 * 28.0), tree_bus * 0.5},
      {NcclAlgo::kRing, NcclProto::kLL, 3.6 + 14 * 0.47, std::min(39.0, 150 * 0.5) * ring},
      {NcclAlgo::kRing, NcclProto::kLL128, 10.0 + 14 * 1.9, std::min(150 * 0.92, 6 * 20.0) * ring},
      {NcclAlgo::kRing, NcclProto::kSimple, 8.4 + 14 * 3.4, 150 * ring},
  };
  for (std::uint64_t bytes : {std::uint64_t{8}, kMiB, 256 * kMiB}) {
    check_matches(expected, NcclColl::kAllReduce, bytes, p);
  }
  // 8 B: Ring/LL's 10.18 us beats Tree/LL's 11.68 us; 256 MiB: Ring/Simple's 85.7 GB/s wins.
  CHECK(nccl_predict(NcclColl::kAllReduce, 8, p).proto == NcclProto::kLL);
  CHECK(nccl_predict(NcclColl::kAllReduce, 8, p).algo == NcclAlgo::kRing);
  CHECK(nccl_predict(NcclColl::kAllReduce, 256 * kMiB, p).proto == NcclProto::kSimple);
  CHECK(nccl_predict(NcclColl::kAllReduce, 256 * kMiB, p).algo == NcclAlgo::kRing);
}

TEST_CASE("16 ranks on 2 nodes, AllReduce: the network bounds each channel") {
  const NcclCommParams p = dgx1_like(2);
  // Per channel min(25, 50/6) GB/s: busBw = 6 x 50/6 = 50 GB/s. Ring: nsteps = 30, of which
  // 2(2-1) = 2 cross the network; algBw = busBw' x 16/30. Tree: 7 intra hops, log2(2) = 1 network
  // hop; tree busBw = min(50 x 0.92, 6 x 18.5) = 46. llMaxBw = 39.0 (2 nodes, Intel).
  const double bus = 6 * std::min(25.0, 50.0 / 6);
  const double ring = 16.0 / 30;
  const double tree_bus = std::min(bus * 0.92, 6 * 18.5);
  const std::vector<Expected> expected = {
      {NcclAlgo::kTree, NcclProto::kLL, 4.4 + 2 * (7 * 0.52 + 1 * 5.0),
       std::min(tree_bus / 3.8, 39.0) * 0.5},
      {NcclAlgo::kTree, NcclProto::kLL128, 4.4 + 2 * (7 * 1.2 + 1 * 8.5),
       std::min(tree_bus * 120 / 128, 6 * 20.0) * 0.5},
      {NcclAlgo::kTree, NcclProto::kSimple, 0.0 + 2 * (7 * 28.0 + 1 * 50.0), tree_bus * 0.5},
      {NcclAlgo::kRing, NcclProto::kLL, 3.6 + 28 * 0.47 + 2 * 2.7,
       std::min(39.0, bus * 0.5) * ring},
      {NcclAlgo::kRing, NcclProto::kLL128, 10.0 + 28 * 1.9 + 2 * 4.0,
       std::min(bus * 0.92, 6 * 20.0) * ring},
      {NcclAlgo::kRing, NcclProto::kSimple, 8.4 + 28 * 3.4 + 2 * 9.6, bus * ring},
  };
  for (std::uint64_t bytes : {std::uint64_t{8}, kMiB, 256 * kMiB}) {
    check_matches(expected, NcclColl::kAllReduce, bytes, p);
  }
  // 8 B: Tree/LL 21.68 us < Ring/LL 22.16 us.
  CHECK(nccl_predict(NcclColl::kAllReduce, 8, p).proto == NcclProto::kLL);
  CHECK(nccl_predict(NcclColl::kAllReduce, 256 * kMiB, p).proto == NcclProto::kSimple);
  CHECK(nccl_predict(NcclColl::kAllReduce, 256 * kMiB, p).algo == NcclAlgo::kRing);
}

TEST_CASE("32 ranks on 4 nodes, AllReduce: the > 2-node constants apply") {
  const NcclCommParams p = dgx1_like(4);
  // busBw = 50 GB/s. Ring: nsteps = 62, 2(4-1) = 6 network steps, algBw x 32/62; llMaxBw = 20.4.
  // Tree: 7 intra hops, log2(4) = 2 network hops; tree busBw = min(46, 6 x 10.0).
  const double bus = 6 * (50.0 / 6);
  const double ring = 32.0 / 62;
  const double tree_bus = std::min(bus * 0.92, 6 * 10.0);
  const std::vector<Expected> expected = {
      {NcclAlgo::kTree, NcclProto::kLL, 4.4 + 2 * (7 * 0.52 + 2 * 5.0),
       std::min(tree_bus / 3.8, 20.4) * 0.5},
      {NcclAlgo::kTree, NcclProto::kLL128, 4.4 + 2 * (7 * 1.2 + 2 * 8.5),
       std::min(tree_bus * 120 / 128, 6 * 20.0) * 0.5},
      {NcclAlgo::kTree, NcclProto::kSimple, 0.0 + 2 * (7 * 28.0 + 2 * 50.0), tree_bus * 0.5},
      {NcclAlgo::kRing, NcclProto::kLL, 3.6 + 56 * 0.47 + 6 * 2.7,
       std::min(20.4, bus * 0.5) * ring},
      {NcclAlgo::kRing, NcclProto::kLL128, 10.0 + 56 * 1.9 + 6 * 4.0,
       std::min(bus * 0.92, 6 * 20.0) * ring},
      {NcclAlgo::kRing, NcclProto::kSimple, 8.4 + 56 * 3.4 + 6 * 9.6, bus * ring},
  };
  for (std::uint64_t bytes : {std::uint64_t{8}, kMiB, 256 * kMiB}) {
    check_matches(expected, NcclColl::kAllReduce, bytes, p);
  }
  CHECK(nccl_predict(NcclColl::kAllReduce, 8, p).proto == NcclProto::kLL);
  CHECK(nccl_predict(NcclColl::kAllReduce, 256 * kMiB, p).proto == NcclProto::kSimple);
  CHECK(nccl_predict(NcclColl::kAllReduce, 256 * kMiB, p).algo == NcclAlgo::kRing);
}

TEST_CASE("collectives other than AllReduce use rings only, with their own step counts") {
  const NcclCommParams one = dgx1_like(1);
  // AllGather on 8 ranks: nsteps = 7, algBw = busBw' x 8/7.
  check_matches(
      {{NcclAlgo::kRing, NcclProto::kLL, 3.6 + 7 * 0.47, std::min(39.0, 150 * 0.5) * 8 / 7},
       {NcclAlgo::kRing, NcclProto::kLL128, 10.0 + 7 * 1.9, std::min(150 * 0.92, 6 * 20.0) * 8 / 7},
       {NcclAlgo::kRing, NcclProto::kSimple, 8.4 + 7 * 3.4, 150.0 * 8 / 7}},
      NcclColl::kAllGather, 64 * kMiB, one);
  // Broadcast: nsteps = n = 8, algBw = busBw (nccl-tests factor 1).
  check_matches({{NcclAlgo::kRing, NcclProto::kLL, 3.6 + 8 * 0.47, std::min(39.0, 75.0)},
                 {NcclAlgo::kRing, NcclProto::kLL128, 10.0 + 8 * 1.9, std::min(138.0, 120.0)},
                 {NcclAlgo::kRing, NcclProto::kSimple, 8.4 + 8 * 3.4, 150.0}},
                NcclColl::kBroadcast, kMiB, one);
  // ReduceScatter over 2 nodes: nsteps = 15, of which 2 - 1 = 1 crosses the network.
  const NcclCommParams two = dgx1_like(2);
  check_matches(
      {{NcclAlgo::kRing, NcclProto::kLL, 3.6 + 14 * 0.47 + 1 * 2.7, std::min(39.0, 25.0) * 16 / 15},
       {NcclAlgo::kRing, NcclProto::kLL128, 10.0 + 14 * 1.9 + 1 * 4.0,
        std::min(50 * 0.92, 6 * 20.0) * 16 / 15},
       {NcclAlgo::kRing, NcclProto::kSimple, 8.4 + 14 * 3.4 + 1 * 9.6, 50.0 * 16 / 15}},
      NcclColl::kReduceScatter, 4 * kMiB, two);
  // Reduce over 2 nodes: nsteps = 16, one network step.
  check_matches({{NcclAlgo::kRing, NcclProto::kLL, 3.6 + 15 * 0.47 + 1 * 2.7, 25.0},
                 {NcclAlgo::kRing, NcclProto::kLL128, 10.0 + 15 * 1.9 + 1 * 4.0, 46.0},
                 {NcclAlgo::kRing, NcclProto::kSimple, 8.4 + 15 * 3.4 + 1 * 9.6, 50.0}},
                NcclColl::kReduce, 4 * kMiB, two);
}

TEST_CASE("PCIe nodes: no LL128, PCI hop latencies") {
  NcclCommParams p;
  p.n_ranks = 4;
  p.arch = GpuArch::kVolta;
  p.intra = NcclIntraLink::kPcie;
  p.channels = 1;
  p.intra_bw_per_channel_GBps = 12.0;
  // busBw = 12 GB/s; Ring nsteps = 6, algBw x 4/6; Tree 3 hops, tree busBw = min(11.04, 26.5).
  check_matches({{NcclAlgo::kTree, NcclProto::kLL, 4.4 + 2 * (3 * 1.0),
                  std::min(12 * 0.92 / 3.8, 39.0) * 0.5},
                 {NcclAlgo::kTree, NcclProto::kSimple, 0.0 + 2 * (3 * 28.0), 12 * 0.92 * 0.5},
                 {NcclAlgo::kRing, NcclProto::kLL, 3.6 + 6 * 1.0, std::min(39.0, 6.0) * 4 / 6},
                 {NcclAlgo::kRing, NcclProto::kSimple, 8.4 + 6 * 5.7, 12.0 * 4 / 6}},
                NcclColl::kAllReduce, 32 * kMiB, p);
}

TEST_CASE("Hopper single node uses the Hopper LL cap and per-channel LL128 cap") {
  NcclCommParams p;
  p.n_ranks = 8;
  p.arch = GpuArch::kHopper;
  p.channels = 18;
  p.intra_bw_per_channel_GBps = 25.0;
  // busBw = 450: Ring/LL min(141.0, 225) x 8/14; Ring/LL128 min(414, 18 x 36.7) x 8/14.
  const std::vector<NcclEstimate> e = nccl_estimates(NcclColl::kAllReduce, kMiB, p);
  REQUIRE(e.size() == 6);
  CHECK(e[3].algbw_GBps == doctest::Approx(141.0 * 8 / 14));
  CHECK(e[4].algbw_GBps == doctest::Approx(std::min(450 * 0.92, 18 * 36.7) * 8 / 14));
}

TEST_CASE("a single rank costs nothing: zero bytes cost the latency only") {
  NcclCommParams solo;
  const NcclEstimate e = nccl_predict(NcclColl::kAllReduce, 256 * kMiB, solo);
  CHECK(e.time_us == 0.0);
  CHECK(e.latency_us == 0.0);
  const NcclCommParams p = dgx1_like(1);
  const NcclEstimate z = nccl_predict(NcclColl::kAllReduce, 0, p);
  CHECK(z.time_us == doctest::Approx(z.latency_us));
  CHECK(z.time_us == doctest::Approx(3.6 + 14 * 0.47));  // Ring/LL has the smallest latency
}

TEST_CASE("inconsistent parameters are rejected with a message") {
  NcclCommParams p = dgx1_like(2);
  p.inter_bw_per_channel_GBps = 0;
  CHECK_THROWS_AS(nccl_predict(NcclColl::kAllReduce, 1, p), InputError);
  p = dgx1_like(1);
  p.n_nodes = 9;
  CHECK_THROWS_WITH_AS(nccl_predict(NcclColl::kAllReduce, 1, p), doctest::Contains("n_nodes"),
                       InputError);
  p = dgx1_like(1);
  p.channels = 0;
  CHECK_THROWS_AS(nccl_estimates(NcclColl::kAllReduce, 1, p), InputError);
}

TEST_CASE("ring packing: edge-disjoint directed Hamiltonian cycles") {
  using Cap = std::vector<std::vector<int>>;
  // 4 GPUs, every pair joined by 2 NVLinks (nccl#713's V100 box, where NCCL dumps 6 ring
  // channels): 6 links out of each GPU, each ring takes one, so at most 6 -- and 6 exist (the 3
  // Hamiltonian cycles of K4, both directions, each edge used once per direction per cycle pair).
  CHECK(pack_directed_rings(Cap{{0, 2, 2, 2}, {2, 0, 2, 2}, {2, 2, 0, 2}, {2, 2, 2, 0}}) == 6);
  // A single undirected ring of one link per pair: both directions, 2 rings.
  CHECK(pack_directed_rings(Cap{{0, 1, 0, 1}, {1, 0, 1, 0}, {0, 1, 0, 1}, {1, 0, 1, 0}}) == 2);
  // A path 0-1-2 has no Hamiltonian cycle.
  CHECK(pack_directed_rings(Cap{{0, 1, 0}, {1, 0, 1}, {0, 1, 0}}) == 0);
  // Two GPUs with 3 links: 0 -> 1 -> 0 three times.
  CHECK(pack_directed_rings(Cap{{0, 3}, {3, 0}}) == 3);
  CHECK(pack_directed_rings(Cap{{0}}) == 0);
  // 16 GPUs fully meshed by single links: far too many cycles to enumerate; the bounded search
  // stops and still returns a valid packing (at least one ring, at most 15).
  Cap mesh(16, std::vector<int>(16, 1));
  for (int i = 0; i < 16; ++i)
    mesh[i][i] = 0;
  const int rings = pack_directed_rings(mesh);
  CHECK(rings >= 1);
  CHECK(rings <= 15);
  // 16 GPUs on a path: no cycle, and the search ends.
  Cap path(16, std::vector<int>(16, 0));
  for (int i = 0; i + 1 < 16; ++i)
    path[i][i + 1] = path[i + 1][i] = 1;
  CHECK(pack_directed_rings(path) == 0);
  CHECK_THROWS_AS(pack_directed_rings(Cap{{0, 1}}), InputError);
}

TEST_CASE(
    "DGX-1: 6 NVLink rings of 20 GB/s: half a DGX-1 packs 4: 2 servers, a ring per NIC, doubled") {
  io::LoadedTopology t = io::load_topology(kTopologies / "dgx1.yaml");
  {
    const topo::Topology topo = topo::build_cluster(t.spec);
    std::vector<int> all(8);
    std::iota(all.begin(), all.end(), 0);
    const NcclCommParams p = nccl_params_from_topology(topo, all, GpuArch::kVolta);
    // Each V100 has 6 NVLinks, so at most 6 rings (one link out and one in per ring); the
    // cube-mesh is 3 edge-disjoint undirected Hamiltonian cycles ("three interwoven rings",
    // DGX-1V whitepaper), each usable in both directions: 6.
    CHECK(p.n_ranks == 8);
    CHECK(p.n_nodes == 1);
    CHECK(p.intra == NcclIntraLink::kNvLink);
    CHECK(p.channels == 6);
    // Each ring on one 25 GB/s NVLink, taken at NCCL's 20 GB/s for Volta (src/graph/topo.h).
    CHECK(p.intra_bw_per_channel_GBps == doctest::Approx(20.0));
    CHECK(p.inter_bw_per_channel_GBps == 0.0);

    // GPUs 0-3: links 0-1, 0-2, 1-3 single, 0-3, 1-2, 2-3 double. GPU 0 has 4 links here, so at
    // most 4 rings; 0123 and 0213 in both directions use each single link once per direction.
    const NcclCommParams half = nccl_params_from_topology(topo, {0, 1, 2, 3}, GpuArch::kVolta);
    CHECK(half.channels == 4);
    CHECK(half.intra == NcclIntraLink::kNvLink);

    // GPUs 0 and 5 share no NVLink: PCIe, one channel at the 12 GB/s PCIe attachment.
    const NcclCommParams far = nccl_params_from_topology(topo, {0, 5}, GpuArch::kVolta);
    CHECK(far.intra == NcclIntraLink::kPcie);
    CHECK(far.channels == 1);
    CHECK(far.intra_bw_per_channel_GBps == doctest::Approx(12.0));
  }
  t.spec.servers = 2;
  const topo::Topology topo = topo::build_cluster(t.spec);
  std::vector<int> all(16);
  std::iota(all.begin(), all.end(), 0);
  const NcclCommParams p = nccl_params_from_topology(topo, all, GpuArch::kVolta);
  // NCCL 2.4: one ring per NIC (4 of the 6 NVLink rings), doubled across NVLink nodes: 8
  // channels; 4 NICs x 100 Gb/s = 50 GB/s per server spread over them.
  CHECK(p.n_ranks == 16);
  CHECK(p.n_nodes == 2);
  CHECK(p.channels == 8);
  CHECK(p.inter_bw_per_channel_GBps == doctest::Approx(4 * 12.5 / 8));
  // The GPUs of the second server alone: one node again.
  const NcclCommParams second =
      nccl_params_from_topology(topo, {8, 9, 10, 11, 12, 13, 14, 15}, GpuArch::kVolta);
  CHECK(second.n_nodes == 1);
  CHECK(second.channels == 6);
  CHECK_THROWS_AS(nccl_params_from_topology(topo, {0, 16}, GpuArch::kVolta), InputError);
  CHECK_THROWS_AS(nccl_params_from_topology(topo, {1, 1}, GpuArch::kVolta), InputError);
}

TEST_CASE("DGX-1 x 2 over NCCL's socket transport: a ring per interface, each connection bounded") {
  io::LoadedTopology t = io::load_topology(kTopologies / "dgx1.yaml");
  t.spec.servers = 2;
  std::vector<int> all(16);
  std::iota(all.begin(), all.end(), 0);
  NcclNet sockets;
  sockets.transport = NcclNetTransport::kSocket;
  {
    // As shipped: IP over InfiniBand carries 20 Gbit/s = 2.5 GB/s per connection. One
    // interface (ib0) is one card: one ring, doubled, 2 channels, both leaving the node through
    // the same GPU, whose one proxy thread moves 2.5 GB/s: 1.25 GB/s each (12.5 GB/s / 2 and
    // the connection's 2.5 are above that).
    const topo::Topology topo = topo::build_cluster(t.spec);
    const NcclCommParams one = nccl_params_from_topology(topo, all, GpuArch::kVolta, sockets);
    CHECK(one.channels == 2);
    CHECK(one.inter_bw_per_channel_GBps == doctest::Approx(1.25));
    // Four interfaces: 4 rings through 4 GPUs, doubled: 8 channels of 4 x 2.5 / 8 = 1.25.
    sockets.socket_interfaces = 4;
    const NcclCommParams four = nccl_params_from_topology(topo, all, GpuArch::kVolta, sockets);
    CHECK(four.channels == 8);
    CHECK(four.inter_bw_per_channel_GBps == doctest::Approx(1.25));
    // More interfaces than NICs: the NICs there are.
    sockets.socket_interfaces = 9;
    const NcclCommParams nine = nccl_params_from_topology(topo, all, GpuArch::kVolta, sockets);
    CHECK(nine.channels == 8);
    CHECK(nine.inter_bw_per_channel_GBps == doctest::Approx(1.25));
    // IB verbs ignore the per-connection limit of the IP path: 4 x 12.5 / 8.
    CHECK(nccl_params_from_topology(topo, all, GpuArch::kVolta).inter_bw_per_channel_GBps ==
          doctest::Approx(50.0 / 8));
    // Inside one server the transport does not matter.
    const NcclCommParams local =
        nccl_params_from_topology(topo, {0, 1, 2, 3, 4, 5, 6, 7}, GpuArch::kVolta, sockets);
    CHECK(local.channels == 6);
    CHECK(local.inter_bw_per_channel_GBps == 0.0);
    // The time follows: a 100 MB ring over sockets takes longer than over IB verbs.
    sockets.socket_interfaces = 1;
    const NcclEstimate ib = nccl_predict(NcclColl::kAllReduce, 100'000'000,
                                         nccl_params_from_topology(topo, all, GpuArch::kVolta));
    const NcclEstimate sock = nccl_predict(NcclColl::kAllReduce, 100'000'000, one);
    CHECK(sock.algo == NcclAlgo::kRing);
    CHECK(sock.time_us > 3 * ib.time_us);
    sockets.socket_interfaces = 0;
    CHECK_THROWS_AS(nccl_params_from_topology(topo, all, GpuArch::kVolta, sockets), InputError);
  }
  // Without the per-connection limit (nor a proxy thread's), four interfaces give IB verbs'
  // channels; one gives its 2 channels half of ib0's 12.5 GB/s each.
  t.spec.server.nic.stream_bandwidth_Bps = 0;
  const topo::Topology topo = topo::build_cluster(t.spec);
  sockets.socket_interfaces = 4;
  CHECK(nccl_params_from_topology(topo, all, GpuArch::kVolta, sockets).inter_bw_per_channel_GBps ==
        doctest::Approx(50.0 / 8));
  sockets.socket_interfaces = 1;
  CHECK(nccl_params_from_topology(topo, all, GpuArch::kVolta, sockets).inter_bw_per_channel_GBps ==
        doctest::Approx(12.5 / 2));
}

TEST_CASE("HGX H100 and A100: NVSwitch, one channel per NVLink at NCCL's own figure for the link") {
  // 450 GB/s per GPU = 18 NVLinks of 25 GB/s; NCCL's search takes each at 20.6 GB/s on Hopper
  // (src/graph/topo.h SM90_NVLINK_BW): a ring's bus bandwidth 18 x 20.6 = 370.8 GB/s, NCCL's
  // ~370 with NCCL_ALGO=Ring (NVIDIA/nccl-tests#212). A100: 12 links, 20.0 each (SM80).
  std::vector<int> all(8);
  std::iota(all.begin(), all.end(), 0);
  const topo::Topology h100 =
      topo::build_cluster(io::load_topology(kTopologies / "hgx-h100.yaml").spec);
  const NcclCommParams p = nccl_params_from_topology(h100, all, GpuArch::kHopper);
  CHECK(p.intra == NcclIntraLink::kNvLink);
  CHECK(p.channels == 450 / 25);
  CHECK(p.intra_bw_per_channel_GBps == doctest::Approx(20.6));
  CHECK(p.arch == GpuArch::kHopper);
  // NVLS (search.cc, NCCL 2.28.9): 8 heads; the first speed tried is the fastest with 8 x speed
  // <= 370.8 x 8/7 (50); a channel takes (8 + 1) x speed of a GPU's link, so 40 (9 x 40 = 360 <=
  // 370.8); pass 2 raises bwInter to 60 (50, 60 < 2 x 40). busBw = 8 x min(40 x 0.85 x 7/8 x 2,
  // 60) = 476 GB/s, NCCL's "~480GB/s (algbw ~275GB/s)" on 8 GPUs (sjeaugey, nccl-tests#212).
  CHECK(p.nvls_channels == 8);
  CHECK(p.nvls_bw_intra_GBps == 40.0);
  CHECK(p.nvls_bw_inter_GBps == 60.0);
  const std::uint64_t big = 16ull << 30;
  const NcclEstimate nvls = nccl_predict(NcclColl::kAllReduce, big, p);
  CHECK(nvls.algo == NcclAlgo::kNvls);
  CHECK(nvls.algbw_GBps == doctest::Approx(476.0 * 8 / 14));
  CHECK(nvls.latency_us == 25.0);
  // Without it (NCCL_NVLS_ENABLE=0) the ring: 18 x 20.6 = 370.8 GB/s busBw.
  NcclCommParams ring = p;
  ring.nvls_channels = 0;
  const NcclEstimate r = nccl_predict(NcclColl::kAllReduce, big, ring);
  CHECK(r.algo == NcclAlgo::kRing);
  CHECK(r.algbw_GBps == doctest::Approx(370.8 * 8 / 14));
  // Half the node's GPUs: the first speed is 60 (4 x 60 <= 370.8 x 4/3), then 5 x speed
  // <= 370.8: 60; bwInter stays 60 (the fastest).
  const NcclCommParams half = nccl_params_from_topology(h100, {0, 1, 2, 3}, GpuArch::kHopper);
  CHECK(half.nvls_channels == 4);
  CHECK(half.nvls_bw_intra_GBps == 60.0);
  CHECK(half.nvls_bw_inter_GBps == 60.0);
  // Across two nodes NCCL runs NVLS Tree (not modelled): no NVLS graph here.
  io::LoadedTopology two_spec = io::load_topology(kTopologies / "hgx-h100.yaml");
  two_spec.spec.servers = 2;
  const topo::Topology two = topo::build_cluster(two_spec.spec);
  std::vector<int> sixteen(16);
  std::iota(sixteen.begin(), sixteen.end(), 0);
  CHECK(nccl_params_from_topology(two, sixteen, GpuArch::kHopper).nvls_channels == 0);

  const topo::Topology a100 =
      topo::build_cluster(io::load_topology(kTopologies / "hgx-a100.yaml").spec);
  const NcclCommParams q = nccl_params_from_topology(a100, all, GpuArch::kAmpere);
  CHECK(q.channels == 300 / 25);
  CHECK(q.intra_bw_per_channel_GBps == doctest::Approx(20.0));
  CHECK(q.nvls_channels == 0);  // NVLS needs Hopper's NVSwitch multicast
  // A large all-reduce runs the ring at the links' sum: the bus bandwidth 240 GB/s, within 4 %
  // (the latency term) at 4 GiB.
  const std::uint64_t bytes = 4ull << 30;
  const NcclEstimate e = nccl_predict(NcclColl::kAllReduce, bytes, q);
  const double busbw = bytes / (e.time_us * 1e3) * 2 * 7 / 8;
  CHECK(busbw == doctest::Approx(240.0).epsilon(0.04));
}

TEST_CASE("cloud VMs: one GPU per server, every rank its own node, the NIC bounds") {
  const io::LoadedTopology t = io::load_topology(kTopologies / "cloud-vms.yaml");
  const topo::Topology topo = topo::build_cluster(t.spec);
  std::vector<int> all(topo.rank_count());
  std::iota(all.begin(), all.end(), 0);
  const NcclCommParams p = nccl_params_from_topology(topo, all, GpuArch::kVolta);
  CHECK(p.n_ranks == 8);
  CHECK(p.n_nodes == p.n_ranks);
  CHECK(p.intra == NcclIntraLink::kPcie);
  CHECK(p.channels == 1);
  CHECK(p.intra_bw_per_channel_GBps == doctest::Approx(12.0));            // PCIe 3.0 x16, achieved
  CHECK(p.inter_bw_per_channel_GBps == doctest::Approx(10e9 / 8 / 1e9));  // 10 Gbps NIC
  // Large AllReduce: Ring/Simple at busBw = 1 x min(12, 1.25) GB/s, algBw x 8/14.
  const NcclEstimate e = nccl_predict(NcclColl::kAllReduce, 256 * kMiB, p);
  CHECK(e.algo == NcclAlgo::kRing);
  CHECK(e.algbw_GBps == doctest::Approx(1.25 * 8 / 14));
}

TEST_CASE("DGX-1 large AllReduce busbw lies in a sanity band") {
  // A sanity band, not a target: FACTS 1.5 quotes ~120-140 GB/s [U] for 8 V100 on a DGX-1 (theory
  // bound 150 GB/s per direction); the model should land between 100 and 160 GB/s.
  const io::LoadedTopology t = io::load_topology(kTopologies / "dgx1.yaml");
  const topo::Topology topo = topo::build_cluster(t.spec);
  std::vector<int> all(8);
  std::iota(all.begin(), all.end(), 0);
  const NcclCommParams p = nccl_params_from_topology(topo, all, GpuArch::kVolta);
  const std::uint64_t bytes = 1024 * kMiB;
  const NcclEstimate e = nccl_predict(NcclColl::kAllReduce, bytes, p);
  // nccl-tests: algbw = S / t, busbw = algbw x 2(n-1)/n.
  const double busbw_GBps = bytes / (1000.0 * e.time_us) * 2.0 * 7 / 8;
  CHECK(busbw_GBps > 100.0);
  CHECK(busbw_GBps < 160.0);
}
