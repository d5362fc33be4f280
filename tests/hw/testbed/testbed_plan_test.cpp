// The testbed's plan from a topology, without root: names, addresses, tc arguments, build order.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>

#include "hw/testbed/testbed_plan.h"
#include "sim/core/error.h"
#include "sim/io/topology_loader.h"

namespace {

using namespace adaptsim;
using namespace adaptsim::testbed;
using Argv = std::vector<std::string>;

topo::ClusterSpec load(const std::string& file,
                       const std::vector<std::pair<std::string, std::string>>& params) {
  io::Params overrides;
  for (const auto& [k, v] : params)
    overrides[k] = io::Param{YAML::Load(v), "test " + k};
  return io::load_topology(std::filesystem::path(ADAPTSIM_SOURCE_DIR) / "topologies" / file,
                           overrides)
      .spec;
}

bool has_step(const TestbedPlan& plan, const Argv& argv) {
  return std::any_of(plan.steps.begin(), plan.steps.end(),
                     [&](const PlanStep& s) { return s.argv == argv; });
}

std::size_t step_index(const TestbedPlan& plan, const Argv& argv) {
  for (std::size_t i = 0; i < plan.steps.size(); ++i) {
    if (plan.steps[i].argv == argv) return i;
  }
  return plan.steps.size();
}

}  // namespace

TEST_CASE("a NIC loss: every host drops arriving packets with both NIC links' probability") {
  // 1 % on each NIC link: a packet crosses two, 1 - 0.99^2 = 0.0199 of them are lost.
  const TestbedPlan plan =
      make_plan(load("cloud-vms.yaml", {{"servers", "3"}, {"nic_loss", "1%"}}), PlanOptions{});
  CHECK(plan.input_drop_probability == doctest::Approx(0.0199));
  for (int i = 0; i < 3; ++i) {
    CHECK(has_step(plan, {"ip", "netns", "exec", "adaptsim-h" + std::to_string(i), "iptables", "-A",
                          "INPUT", "-m", "statistic", "--mode", "random", "--probability",
                          "0.0199000000", "-j", "DROP"}));
  }
  // Without a loss no iptables command at all (the default path needs no iptables).
  const TestbedPlan clean = make_plan(load("cloud-vms.yaml", {{"servers", "3"}}), PlanOptions{});
  CHECK(clean.input_drop_probability == 0);
  for (const PlanStep& step : clean.steps)
    CHECK(std::find(step.argv.begin(), step.argv.end(), "iptables") == step.argv.end());
}

TEST_CASE("cloud-vms at 200 Mbit/s: four namespaces on one bridge, capped both ways") {
  const TestbedPlan plan = make_plan(
      load("cloud-vms.yaml", {{"servers", "4"}, {"nic_bandwidth", "200Mbps"}}), PlanOptions{});
  CHECK(plan.subnet == "10.213.0.0/16");
  REQUIRE(plan.bridges == std::vector<std::string>{"adaptsim-br"});
  REQUIRE(plan.hosts.size() == 4);
  CHECK(plan.uplinks.empty());
  for (int i = 0; i < 4; ++i) {
    const PlannedHost& h = plan.hosts[static_cast<std::size_t>(i)];
    CHECK(h.ns == "adaptsim-h" + std::to_string(i));
    CHECK(h.ip == "10.213.1." + std::to_string(i + 1));
    CHECK(h.bridge_port == "adaptsim-v" + std::to_string(i));
    CHECK(h.bridge == "adaptsim-br");
    // 200 Mbit/s = 25e6 B/s; without nic_egress_bandwidth egress equals ingress.
    CHECK(h.egress_Bps == doctest::Approx(25e6));
    CHECK(h.ingress_Bps == doctest::Approx(25e6));
  }
  // Burst max(25e6 B/s x 1 ms = 25000, 65536) = 65536; FIFO max(25e6 x 5 ms = 125000, 4 x 65536)
  // = 262144. Egress inside the namespace, ingress on the bridge port.
  CHECK(has_step(plan, {"tc", "-n", "adaptsim-h2", "qdisc", "add", "dev", "eth0", "root", "handle",
                        "1:", "htb", "default", "1"}));
  CHECK(has_step(plan, {"tc",     "-n",           "adaptsim-h2", "class",        "add",   "dev",
                        "eth0",   "parent",       "1:",          "classid",      "1:1",   "htb",
                        "rate",   "200000000bit", "ceil",        "200000000bit", "burst", "65536b",
                        "cburst", "65536b",       "quantum",     "65536"}));
  CHECK(has_step(plan, {"tc", "-n", "adaptsim-h2", "qdisc", "add", "dev", "eth0", "parent", "1:1",
                        "handle", "10:", "bfifo", "limit", "262144"}));
  CHECK(has_step(plan, {"tc",     "class",        "add",     "dev",          "adaptsim-v2",
                        "parent", "1:",           "classid", "1:1",          "htb",
                        "rate",   "200000000bit", "ceil",    "200000000bit", "burst",
                        "65536b", "cburst",       "65536b",  "quantum",      "65536"}));
  // The veth's host end is created inside the namespace, after the namespace and the bridge.
  const Argv veth = {"ip",   "link", "add",  "adaptsim-v0", "type",       "veth",
                     "peer", "name", "eth0", "netns",       "adaptsim-h0"};
  const std::size_t veth_at = step_index(plan, veth);
  REQUIRE(veth_at < plan.steps.size());
  CHECK(step_index(plan, {"ip", "netns", "add", "adaptsim-h0"}) < veth_at);
  CHECK(step_index(plan, {"ip", "link", "add", "adaptsim-br", "type", "bridge"}) < veth_at);
  CHECK(veth_at < step_index(plan, {"ip", "link", "set", "adaptsim-v0", "master", "adaptsim-br"}));
  CHECK(has_step(plan, {"ip", "-n", "adaptsim-h0", "addr", "add", "10.213.1.1/16", "dev", "eth0"}));
}

TEST_CASE("every object is recorded by the step that creates it") {
  const TestbedPlan plan = make_plan(load("cloud-vms.yaml", {{"servers", "3"}}), PlanOptions{});
  std::vector<PlannedObject> objects;
  for (const PlanStep& s : plan.steps) {
    if (s.creates_object) objects.push_back(s.object);
  }
  // One bridge, then per host its namespace and its veth (named by the root-namespace end).
  const std::vector<PlannedObject> expected = {
      {ObjectKind::kLink, "adaptsim-br"}, {ObjectKind::kNetns, "adaptsim-h0"},
      {ObjectKind::kLink, "adaptsim-v0"}, {ObjectKind::kNetns, "adaptsim-h1"},
      {ObjectKind::kLink, "adaptsim-v1"}, {ObjectKind::kNetns, "adaptsim-h2"},
      {ObjectKind::kLink, "adaptsim-v2"}};
  CHECK(objects == expected);
}

TEST_CASE("an egress cap below the NIC bandwidth shapes only the host's upstream") {
  const TestbedPlan plan = make_plan(
      load("cloud-vms.yaml",
           {{"servers", "2"}, {"nic_bandwidth", "200Mbps"}, {"nic_egress_bandwidth", "100Mbps"}}),
      PlanOptions{});
  // Egress 100 Mbit/s = 12.5e6 B/s, ingress 200 Mbit/s = 25e6 B/s.
  CHECK(plan.hosts[1].egress_Bps == doctest::Approx(12.5e6));
  CHECK(plan.hosts[1].ingress_Bps == doctest::Approx(25e6));
  CHECK(has_step(plan, {"tc",     "-n",           "adaptsim-h1", "class",        "add",   "dev",
                        "eth0",   "parent",       "1:",          "classid",      "1:1",   "htb",
                        "rate",   "100000000bit", "ceil",        "100000000bit", "burst", "65536b",
                        "cburst", "65536b",       "quantum",     "65536"}));
  CHECK(has_step(plan, {"tc",     "class",        "add",     "dev",          "adaptsim-v1",
                        "parent", "1:",           "classid", "1:1",          "htb",
                        "rate",   "200000000bit", "ceil",    "200000000bit", "burst",
                        "65536b", "cburst",       "65536b",  "quantum",      "65536"}));
}

TEST_CASE("shaping at 1 Gbit/s: the burst is 1 ms and the FIFO 5 ms at the rate") {
  // 1 Gbit/s = 125e6 B/s: burst 125e6 x 1e-3 = 125000 B (> 65536), FIFO 125e6 x 5e-3 = 625000 B.
  const Shaping s = make_shaping(125e6, 5 * kNsPerMs);
  CHECK(s.burst_bytes == 125000);
  CHECK(s.queue_limit_bytes == 625000);
  CHECK(s.quantum_bytes == 65536);
  CHECK(tc_rate(125e6) == "1000000000bit");
  const auto cmds = tc_shaping_commands("", "x-v0", s);
  REQUIRE(cmds.size() == 3);
  CHECK(cmds[1] == Argv{"tc",      "class",         "add",   "dev",     "x-v0",   "parent",
                        "1:",      "classid",       "1:1",   "htb",     "rate",   "1000000000bit",
                        "ceil",    "1000000000bit", "burst", "125000b", "cburst", "125000b",
                        "quantum", "65536"});
  // 100 Mbit/s = 12.5e6 B/s: 1 ms is 12500 B, below one GSO super-packet, so 65536.
  CHECK(make_shaping(12.5e6, 5 * kNsPerMs).burst_bytes == 65536);
}

TEST_CASE("fat tree: one bridge per leaf, a spine bridge, uplinks capped at spines x uplink") {
  PlanOptions o;
  o.prefix = "ft";
  const TestbedPlan plan = make_plan(load("fat-tree.yaml", {{"servers", "5"},
                                                            {"servers_per_leaf", "2"},
                                                            {"spines", "2"},
                                                            {"uplink_bandwidth", "100Mbps"}}),
                                     o);
  // ceil(5 / 2) = 3 leaves.
  CHECK(plan.bridges == std::vector<std::string>{"ft-l0", "ft-l1", "ft-l2", "ft-sp"});
  REQUIRE(plan.uplinks.size() == 3);
  CHECK(plan.uplinks[1].leaf_end == "ft-u1a");
  CHECK(plan.uplinks[1].spine_end == "ft-u1b");
  CHECK(plan.uplinks[1].leaf_bridge == "ft-l1");
  // Two spines x 100 Mbit/s = 200 Mbit/s = 25e6 B/s per direction.
  CHECK(plan.uplinks[1].bandwidth_Bps == doctest::Approx(25e6));
  CHECK(plan.hosts[0].bridge == "ft-l0");
  CHECK(plan.hosts[3].bridge == "ft-l1");
  CHECK(plan.hosts[4].bridge == "ft-l2");
  // Hosts keep the topology's 100 GbE NIC: 12.5e9 B/s.
  CHECK(plan.hosts[0].ingress_Bps == doctest::Approx(12.5e9));
  for (const char* end : {"ft-u1a", "ft-u1b"}) {
    CHECK(has_step(plan, {"tc",     "class",        "add",     "dev",          end,
                          "parent", "1:",           "classid", "1:1",          "htb",
                          "rate",   "200000000bit", "ceil",    "200000000bit", "burst",
                          "65536b", "cburst",       "65536b",  "quantum",      "65536"}));
  }
  // Leaf 1 holds hosts 2 and 3: one class each at 200 / 2 = 100 Mbit/s (ceil 200), matched by
  // source address on the leaf end (leaf -> spine) and by destination on the spine end.
  CHECK(has_step(plan,
                 {"tc",      "class",  "add",    "dev",    "ft-u1a",       "parent", "1:1",
                  "classid", "1:101",  "htb",    "rate",   "100000000bit", "ceil",   "200000000bit",
                  "burst",   "65536b", "cburst", "65536b", "quantum",      "65536"}));
  CHECK(has_step(
      plan, {"tc", "filter", "add", "dev", "ft-u1a", "parent", "1:", "protocol", "ip", "prio", "1",
             "u32", "match", "ip", "src", "10.213.1.4/32", "flowid", "1:101"}));
  CHECK(has_step(
      plan, {"tc", "filter", "add", "dev", "ft-u1b", "parent", "1:", "protocol", "ip", "prio", "1",
             "u32", "match", "ip", "dst", "10.213.1.3/32", "flowid", "1:100"}));
  CHECK(has_step(plan, {"tc", "qdisc", "add", "dev", "ft-u1b", "parent", "1:100", "handle",
                        "100:", "bfifo", "limit", "262144"}));
  CHECK(plan.uplinks[2].leaf_host_ips == std::vector<std::string>{"10.213.1.5"});
  CHECK(has_step(plan, {"ip", "link", "add", "ft-u1a", "type", "veth", "peer", "name", "ft-u1b"}));
  CHECK(has_step(plan, {"ip", "link", "set", "ft-u1b", "master", "ft-sp"}));
}

TEST_CASE(
    "wan: a bridge per region with servers, a hub, each link's direction capped at its region") {
  const std::vector<std::pair<std::string, std::string>> params = {
      {"servers_us", "2"},         {"servers_eu", "1"},         {"servers_asia", "0"},
      {"us_eu_latency", "10us"},   {"us_asia_latency", "10us"}, {"eu_asia_latency", "10us"},
      {"wan_bandwidth", "50Mbps"}, {"nic_bandwidth", "1Gbps"}};
  PlanOptions o;
  o.prefix = "wn";
  const TestbedPlan plan = make_plan(load("wan-regions.yaml", params), o);
  // asia has no server: no bridge, no link.
  CHECK(plan.bridges == std::vector<std::string>{"wn-l0", "wn-l1", "wn-sp"});
  REQUIRE(plan.hosts.size() == 3);
  CHECK(plan.hosts[0].bridge == "wn-l0");
  CHECK(plan.hosts[1].bridge == "wn-l0");
  CHECK(plan.hosts[2].bridge == "wn-l1");
  REQUIRE(plan.wan_links.size() == 2);
  const PlannedWanLink& us_eu = plan.wan_links[0];
  CHECK(us_eu.device == "wn-u0a");
  CHECK(us_eu.from == "us");
  CHECK(us_eu.to == "eu");
  CHECK(us_eu.bandwidth_Bps == doctest::Approx(50e6 / 8));
  CHECK(us_eu.src_ips == std::vector<std::string>{"10.213.1.1", "10.213.1.2"});
  CHECK(us_eu.dst_ips == std::vector<std::string>{"10.213.1.3"});
  CHECK(plan.wan_links[1].device == "wn-u1a");
  // The us end: the link's class at 50 Mbit/s, a class per sending host under it, each fed by
  // its (source, destination) pairs; the hub's ends are not shaped.
  CHECK(has_step(plan, {"tc",     "class",       "add",     "dev",         "wn-u0a",
                        "parent", "1:",          "classid", "1:10",        "htb",
                        "rate",   "50000000bit", "ceil",    "50000000bit", "burst",
                        "65536b", "cburst",      "65536b",  "quantum",     "65536"}));
  CHECK(has_step(plan,
                 {"tc",      "class",  "add",    "dev",    "wn-u0a",      "parent", "1:10",
                  "classid", "1:12",   "htb",    "rate",   "25000000bit", "ceil",   "50000000bit",
                  "burst",   "65536b", "cburst", "65536b", "quantum",     "65536"}));
  CHECK(has_step(
      plan, {"tc",    "filter", "add", "dev",           "wn-u0a", "parent", "1:",  "protocol",
             "ip",    "prio",   "1",   "u32",           "match",  "ip",     "src", "10.213.1.2/32",
             "match", "ip",     "dst", "10.213.1.3/32", "flowid", "1:12"}));
  for (const PlanStep& step : plan.steps) {
    const bool tc_on_hub = step.argv[0] == "tc" && std::find(step.argv.begin(), step.argv.end(),
                                                             "wn-u0b") != step.argv.end();
    CHECK_FALSE(tc_on_hub);
  }
  // The hosts' NICs as anywhere.
  CHECK(has_step(plan, {"ip", "link", "set", "wn-v2", "master", "wn-l1"}));
}

TEST_CASE("what cannot be emulated is bad input") {
  // A WAN latency the testbed cannot add (no netem).
  CHECK_THROWS_WITH_AS(make_plan(load("wan-regions.yaml", {}), PlanOptions{}),
                       doctest::Contains("has a latency of 40 ms, which the testbed cannot add"),
                       InputError);
  PlanOptions o;
  o.prefix = "bad-prefix";
  CHECK_THROWS_AS(make_plan(load("cloud-vms.yaml", {}), o), InputError);
  // 12 characters + "-v1000" = 18 > 15.
  o.prefix = "abcdefghijkl";
  CHECK_THROWS_WITH_AS(make_plan(load("cloud-vms.yaml", {{"servers", "1001"}}), o),
                       doctest::Contains("exceeds 15 characters"), InputError);
  o.prefix = "abcdefghijkl";  // "-br" and "-v0".."-v7" fit
  CHECK_NOTHROW(make_plan(load("cloud-vms.yaml", {}), o));
  // A per-connection limit through the NIC (IP over InfiniBand's): tc caps a whole NIC.
  CHECK_THROWS_WITH_AS(
      make_plan(load("dgx1.yaml", {{"servers", "2"}}), PlanOptions{}),
      doctest::Contains("limits each connection through its NIC (stream_bandwidth)"), InputError);
}

TEST_CASE("names and prefixes") {
  std::string why;
  CHECK(valid_prefix("adaptsim", &why));
  CHECK_FALSE(valid_prefix("", &why));
  CHECK_FALSE(valid_prefix("1abc", &why));
  CHECK_FALSE(valid_prefix("a-b", &why));
  CHECK_FALSE(valid_prefix("abcdefghijklm", &why));
  for (const char* n :
       {"tb-h0", "tb-h12", "tb-v3", "tb-br", "tb-sp", "tb-l2", "tb-u10a", "tb-u0b"}) {
    CHECK(is_testbed_name("tb", n));
  }
  for (const char* n : {"tb", "tb-", "tb-h", "tb-hx", "tb-x0", "tb-u0", "tb-u0c", "tb2-h0",
                        "tbx-br", "eth0", "tb-h0-h1"}) {
    CHECK_FALSE(is_testbed_name("tb", n));
  }
}

TEST_CASE("host addresses skip .0 and .255 and the subnet avoids this machine's networks") {
  CHECK(host_address(213, 0) == "10.213.1.1");
  CHECK(host_address(213, 249) == "10.213.1.250");
  CHECK(host_address(213, 250) == "10.213.2.1");
  Ipv4Net a, b;
  REQUIRE(parse_ipv4_net("10.213.5.0/24", &a));
  CHECK(a.address == ((10u << 24) | (213u << 16) | (5u << 8)));
  CHECK(a.length == 24);
  REQUIRE(parse_ipv4_net("10.214.0.1", &b));
  CHECK(b.length == 32);
  CHECK_FALSE(parse_ipv4_net("10.300.0.0/16", &b));
  CHECK_FALSE(parse_ipv4_net("default", &b));
  // 10.213.5.0/24 lies inside 10.213.0.0/16, so the next candidate, 214, is chosen.
  CHECK(choose_subnet_octet({a}, {213, 214}) == 214);
  // A default route (/0) overlaps everything but is not a clash.
  Ipv4Net any{0, 0};
  CHECK(choose_subnet_octet({any}, {213}) == 213);
  // 10.0.0.0/8 covers every candidate.
  Ipv4Net ten;
  REQUIRE(parse_ipv4_net("10.0.0.0/8", &ten));
  CHECK_THROWS_AS(choose_subnet_octet({ten}, default_subnet_candidates()), RuntimeFailure);
}
