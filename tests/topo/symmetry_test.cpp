#include "sim/topo/symmetry.h"

#include <doctest/doctest.h>

#include "sim/topo/cluster_spec.h"

using namespace adaptsim;
using namespace adaptsim::topo;

namespace {

ClusterSpec vms(int servers) {
  ClusterSpec c;
  c.name = "vms";
  c.servers = servers;
  c.server.pcie = {16e9, 1000};
  c.server.nic = {1.25e9, 10000};
  c.server.nic_egress_bandwidth_Bps = 0.5e9;
  return c;
}

// The channel from node `from` to node `to` (named).
ChannelId channel(const Topology& t, const char* from, const char* to) {
  const std::vector<ChannelId>& path = t.route(*t.find(from), *t.find(to));
  REQUIRE(path.size() == 1);
  return path[0];
}

}  // namespace

TEST_CASE("servers behind one switch are interchangeable, each channel mapped to server 0's") {
  ClusterSpec c = vms(4);
  c.extra_hosts = 1;  // a host outside the job, fixed by the symmetry
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
    ClusterSpec c = vms(4);
    c.fabric.kind = FabricKind::kFatTree;
    c.fabric.servers_per_leaf = 2;
    c.fabric.spines = 2;
    c.fabric.uplink = {1.25e9, 1000};
    CHECK_FALSE(server_symmetry(build_cluster(c)).has_value());
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
