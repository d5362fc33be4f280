#include "sim/topo/topology.h"

#include <doctest/doctest.h>

#include <set>

#include "sim/core/error.h"
#include "sim/topo/cluster_spec.h"
#include "sim/topo/symmetry.h"

using namespace adaptsim;
using namespace adaptsim::topo;

namespace {

ClusterSpec vms(int servers) {
  ClusterSpec c;
  c.name = "vms";
  c.servers = servers;
  c.server.pcie = {16e9, 1000};
  c.server.nic = {1.25e9, 10000};
  return c;
}

ClusterSpec fat_tree(int servers, int per_leaf, int spines, LinkParams uplink) {
  ClusterSpec c = vms(servers);
  c.fabric.kind = FabricKind::kFatTree;
  c.fabric.servers_per_leaf = per_leaf;
  c.fabric.spines = spines;
  c.fabric.uplink = uplink;
  return c;
}

}  // namespace

TEST_CASE("a switched cluster routes host to host through both NICs and the switch") {
  Topology t = build_cluster(vms(4));
  CHECK(t.rank_count() == 4);
  const auto& path = t.route(t.rank_host(0), t.rank_host(3));
  // cpu0 -> nic0 (pcie), nic0 -> switch (eth), switch -> nic3 (eth), nic3 -> cpu3 (pcie)
  REQUIRE(path.size() == 4);
  CHECK(t.path_latency(path) == 2 * 1000 + 2 * 10000);
  CHECK(t.path_bandwidth(path) == doctest::Approx(1.25e9));
  CHECK(t.node(t.channel(path[1]).to).name == "switch");
}

TEST_CASE("an egress cap applies to the NIC's upstream direction only") {
  ClusterSpec c = vms(2);
  c.server.nic_egress_bandwidth_Bps = 0.5e9;
  Topology t = build_cluster(c);
  const auto& up = t.route(t.rank_host(0), t.rank_host(1));
  CHECK(t.channel(up[1]).params.bandwidth_Bps == doctest::Approx(0.5e9));   // nic0 -> switch
  CHECK(t.channel(up[2]).params.bandwidth_Bps == doctest::Approx(1.25e9));  // switch -> nic1
}

TEST_CASE("GPUs never forward traffic") {
  // Two GPUs on one host, NVLinked; a third GPU's host route must not pass through a GPU.
  ClusterSpec c = vms(1);
  c.server.gpus = 3;
  c.server.nvlink = {25e9, 700};
  c.server.nvlinks = {{0, 1, 1}, {1, 2, 1}};
  Topology t = build_cluster(c);
  const auto& p = t.route(t.rank_gpu(0), t.rank_gpu(2));
  for (ChannelId ch : p) {
    const auto to = t.channel(ch).to;
    if (to != t.rank_gpu(2)) CHECK(t.node(to).kind != NodeKind::kGpu);
  }
  // GPU0 -> GPU1 uses the direct NVLink.
  const auto& direct = t.route(t.rank_gpu(0), t.rank_gpu(1));
  REQUIRE(direct.size() == 1);
  CHECK(t.channel(direct[0]).kind == LinkKind::kNvLink);
}

TEST_CASE("fat-tree routes spread over spines (ECMP) and stay shortest") {
  Topology t = build_cluster(fat_tree(16, 4, 4, {5e9, 1000}));
  std::set<std::string> spines;
  for (int a = 0; a < 4; ++a) {
    for (int b = 12; b < 16; ++b) {
      const auto& p = t.route(t.rank_host(a), t.rank_host(b));
      CHECK(p.size() == 6);  // cpu-nic-leaf-spine-leaf-nic-cpu
      spines.insert(t.node(t.channel(p[2]).to).name);
    }
  }
  CHECK(spines.size() > 1);
}

TEST_CASE("a WAN region without links is a disconnected topology") {
  ClusterSpec c = vms(2);
  c.fabric.kind = FabricKind::kWan;
  c.fabric.regions = {{"eu", 1}, {"us", 1}};
  Topology t = build_cluster(c);
  // Rank 0 (eu) and rank 1 (us) are the only pair, and neither their GPUs nor their hosts meet.
  CHECK_FALSE(t.reachable(t.rank_gpu(0), t.rank_gpu(1)));
  CHECK(t.reachable(t.rank_gpu(0), t.rank_host(0)));
  const auto gap = t.disconnected_pair();
  REQUIRE(gap.has_value());
  CHECK(gap->first == t.rank_gpu(0));
  CHECK(gap->second == t.rank_gpu(1));
  CHECK_THROWS_WITH_AS(t.check_connected(),
                       doctest::Contains("no path from s0.gpu0 to s1.gpu0 (disconnected topology)"),
                       InputError);
  c.fabric.wan_links = {{"eu", "us", {0.1e9, 40'000'000}}};
  Topology ok = build_cluster(c);
  CHECK_NOTHROW(ok.check_connected());
  CHECK_FALSE(ok.disconnected_pair().has_value());
  CHECK(ok.path_latency(ok.route(ok.rank_host(0), ok.rank_host(1))) ==
        40'000'000 + 2 * 10000 + 2 * 1000);
}

TEST_CASE("DGX-style PCIe switches put GPUs and NICs on their socket") {
  ClusterSpec c = vms(1);
  c.server.gpus = 4;
  c.server.cpus = 2;
  c.server.smp = {20e9, 500};
  c.server.nics = 2;
  c.server.pcie_switches = {{0, {0, 1}, {0}}, {1, {2, 3}, {1}}};
  Topology t = build_cluster(c);
  CHECK(t.node(t.rank_host(0)).name == "s0.cpu0");
  CHECK(t.node(t.rank_host(3)).name == "s0.cpu1");
  c.server.pcie_switches = {{0, {0, 9}, {}}};
  CHECK_THROWS_AS(build_cluster(c), InputError);
}

namespace {

// The channel from node `from` to node `to` (named).
ChannelId channel(const Topology& t, const char* from, const char* to) {
  const std::vector<ChannelId>& path = t.route(*t.find(from), *t.find(to));
  REQUIRE(path.size() == 1);
  return path[0];
}

}  // namespace

TEST_CASE("servers behind one switch are interchangeable, each channel mapped to server 0's") {
  ClusterSpec c = vms(4);
  c.server.nic_egress_bandwidth_Bps = 0.5e9;  // up and down differ
  c.extra_hosts = 1;                          // a host outside the job, fixed by the symmetry
  const Topology t = build_cluster(c);
  const auto s = server_symmetry(t);
  REQUIRE(s.has_value());
  CHECK(s->servers == 4);
  CHECK(s->ranks_per_server == 1);
  REQUIRE(s->representative.size() == t.channel_count());
  CHECK(s->representative[channel(t, "s3.nic0", "switch")] == channel(t, "s0.nic0", "switch"));
  CHECK(s->representative[channel(t, "switch", "s2.nic0")] == channel(t, "switch", "s0.nic0"));
  CHECK(s->representative[channel(t, "s1.cpu0", "s1.nic0")] == channel(t, "s0.cpu0", "s0.nic0"));
  CHECK(s->representative[channel(t, "s0.nic0", "switch")] == channel(t, "s0.nic0", "switch"));
  CHECK(s->representative[channel(t, "s4.nic0", "switch")] == channel(t, "s4.nic0", "switch"));
  // An inter-server route is its own only shortest path.
  CHECK(t.route_is_unique(t.rank_host(0), t.rank_host(3)));
}

TEST_CASE("several GPUs per server: ranks in server order, the same places on every server") {
  ClusterSpec c = vms(3);
  c.server.gpus = 4;
  c.server.cpus = 2;
  c.server.smp = {20e9, 500};
  const Topology t = build_cluster(c);
  const auto s = server_symmetry(t);
  REQUIRE(s.has_value());
  CHECK(s->servers == 3);
  CHECK(s->ranks_per_server == 4);
  CHECK(s->representative[channel(t, "s2.gpu3", "s2.cpu1")] == channel(t, "s0.gpu3", "s0.cpu1"));
}

TEST_CASE("servers that can be told apart are not interchangeable") {
  SUBCASE("one server's link differs") {
    Topology t = build_cluster(vms(4));
    const ChannelId up = channel(t, "s2.nic0", "switch");
    LinkParams p = t.channel(up).params;
    p.bandwidth_Bps *= 2;
    t.set_channel_params(up, p);
    CHECK_FALSE(server_symmetry(t).has_value());
  }
  SUBCASE("one server's CPU reduces faster") {
    Topology t = build_cluster(vms(4));
    t.mutable_node(*t.find("s1.cpu0")).reduce_bandwidth_Bps = 1e9;
    CHECK_FALSE(server_symmetry(t).has_value());
  }
  SUBCASE("servers on different leaves of a fat tree") {
    CHECK_FALSE(server_symmetry(build_cluster(fat_tree(4, 2, 2, {1.25e9, 1000}))).has_value());
  }
  SUBCASE("one server") {
    CHECK_FALSE(server_symmetry(build_cluster(vms(1))).has_value());
  }
}

TEST_CASE("two NICs per server: equally short routes, chosen by ECMP's hash") {
  ClusterSpec c = vms(2);
  c.server.nics = 2;
  const Topology t = build_cluster(c);
  // The servers are still interchangeable, but which NIC a route takes depends on the pair.
  CHECK(server_symmetry(t).has_value());
  CHECK_FALSE(t.route_is_unique(t.rank_host(0), t.rank_host(1)));
}

TEST_CASE(
    "a route is the same whichever pairs were asked before (hubs' ways kept per destination)") {
  // Leaves with 16 hosts and 16 spines are hubs (a port count the walk keeps per destination);
  // routes between leaves choose among 16 spines by ECMP's hash.
  const ClusterSpec c = fat_tree(64, 16, 16, {5e9, 1000});
  const Topology forward = build_cluster(c);
  const Topology backward = build_cluster(c);
  const int n = forward.rank_count();
  std::vector<std::vector<ChannelId>> routes;
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) {
      if (a != b) routes.push_back(forward.route(forward.rank_host(a), forward.rank_host(b)));
    }
  }
  std::size_t i = routes.size();
  std::set<ChannelId> spine_links;
  for (int a = n - 1; a >= 0; --a) {
    for (int b = n - 1; b >= 0; --b) {
      if (a == b) continue;
      const std::vector<ChannelId>& r =
          backward.route(backward.rank_host(a), backward.rank_host(b));
      REQUIRE(i > 0);
      // The pairs were asked in the other order: route (a, b) is entry a * (n - 1) + ...
      const std::size_t at = static_cast<std::size_t>(a) * static_cast<std::size_t>(n - 1) +
                             static_cast<std::size_t>(b < a ? b : b - 1);
      CHECK(r == routes[at]);
      // A chain of channels from a's host to b's, two hops within a leaf, four across.
      NodeId node = backward.rank_host(a);
      for (ChannelId ch : r) {
        CHECK(backward.channel(ch).from == node);
        node = backward.channel(ch).to;
      }
      CHECK(node == backward.rank_host(b));
      CHECK(r.size() == (a / 16 == b / 16 ? 4u : 6u));
      if (a / 16 != b / 16) spine_links.insert(r[2]);  // cpu->nic, nic->leaf, leaf->spine
      --i;
    }
  }
  CHECK(spine_links.size() == 4 * 16);  // every leaf's every uplink carries some pair
}
