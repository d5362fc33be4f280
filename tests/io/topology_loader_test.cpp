#include "sim/io/topology_loader.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "sim/core/error.h"
#include "sim/topo/topology.h"

using namespace adaptsim;
using namespace adaptsim::io;
namespace fs = std::filesystem;

namespace {

const fs::path kTopologies = fs::path(ADAPTSIM_SOURCE_DIR) / "topologies";

fs::path write_temp(const std::string& name, const std::string& text) {
  const fs::path dir = fs::temp_directory_path() / "adaptsim_io_test";
  fs::create_directories(dir);
  const fs::path p = dir / name;
  std::ofstream(p) << text;
  return p;
}

}  // namespace

TEST_CASE("every shipped topology loads, builds, is connected, and sources every quantity") {
  int files = 0;
  for (const auto& e : fs::directory_iterator(kTopologies)) {
    if (e.path().extension() != ".yaml") continue;
    ++files;
    INFO(e.path().string());
    const LoadedTopology t = load_topology(e.path());
    topo::Topology topo = topo::build_cluster(t.spec);
    CHECK_NOTHROW(topo.check_connected());
    CHECK(t.quantities.size() >= 4);
    for (const auto& q : t.quantities) {
      CHECK_MESSAGE(!q.source.empty(), e.path().filename().string()
                                           << ": " << q.key << " = " << q.text << " has no source");
    }
  }
  CHECK(files >= 6);  // cloud-vms, dgx1, hgx-h100, fat-tree, wan-regions, testbed-leaves
}

TEST_CASE("DGX-1: 8 GPUs, 6 NVLinks each, 4 IB NICs, two sockets") {
  const LoadedTopology t = load_topology(kTopologies / "dgx1.yaml");
  CHECK(t.spec.server.gpus == 8);
  std::vector<int> links(8, 0);
  for (const auto& l : t.spec.server.nvlinks) {
    links[l.a] += l.count;
    links[l.b] += l.count;
  }
  for (int g = 0; g < 8; ++g)
    CHECK(links[g] == 6);
  topo::Topology topo = topo::build_cluster(t.spec);
  // GPU0 -> GPU3 is a double NVLink: 50 GB/s in one hop.
  const auto& p = topo.route(topo.rank_gpu(0), topo.rank_gpu(3));
  REQUIRE(p.size() == 1);
  CHECK(topo.channel(p[0]).params.bandwidth_Bps == doctest::Approx(50e9));
}

TEST_CASE("scenario parameter overrides, and an undeclared one is an error at the override") {
  Params overrides;
  Document s = Document::parse_string("servers: 32\nsevers: 4\n", "scenario.yaml");
  overrides["servers"] = Param{s.root()["servers"], "scenario.yaml:1"};
  const LoadedTopology t = load_topology(kTopologies / "cloud-vms.yaml", overrides);
  CHECK(t.spec.servers == 32);
  overrides["severs"] = Param{s.root()["severs"], "scenario.yaml:2"};
  CHECK_THROWS_WITH_AS(load_topology(kTopologies / "cloud-vms.yaml", overrides),
                       doctest::Contains("scenario.yaml:2: key 'topology.params.severs'"),
                       InputError);
}

TEST_CASE("bad topology files: negative and unit-less bandwidth, unknown link key") {
  const std::string base =
      "name: t\nservers: 2\nserver:\n  pcie: {bandwidth: 12GB/s, latency: 1us}\n"
      "  nic:\n    bandwidth: BW\n    latency: 5us\nfabric: {kind: switch}\n";
  auto with = [&](const std::string& bw) {
    std::string text = base;
    text.replace(text.find("BW"), 2, bw);
    return write_temp("t.yaml", text);
  };
  CHECK_THROWS_WITH_AS(
      load_topology(with("-10Gbps")),
      doctest::Contains("t.yaml:6: key 'server.nic.bandwidth': expected a non-negative"),
      InputError);
  CHECK_THROWS_WITH_AS(load_topology(with("10")), doctest::Contains("bare number \"10\""),
                       InputError);
  CHECK_NOTHROW(load_topology(with("10Gbps")));
  const fs::path typo =
      write_temp("typo.yaml",
                 "name: t\nservers: 2\nserver:\n  pcie: {bandwith: 12GB/s, latency: 1us}\n  nic: "
                 "{bandwidth: 1Gbps, latency: 1us}\nfabric: {kind: switch}\n");
  CHECK_THROWS_WITH_AS(load_topology(typo), doctest::Contains("instead of 'bandwith'"), InputError);
}

TEST_CASE("a link's loss: a percentage from 0 % to 10 %") {
  auto with = [&](const std::string& loss) {
    return write_temp("loss.yaml",
                      "name: t\nservers: 2\nserver:\n  pcie: {bandwidth: 12GB/s, latency: 1us}\n"
                      "  nic:\n    bandwidth: 1Gbps\n    latency: 5us\n    loss: " +
                          loss + "\nfabric: {kind: switch}\n");
  };
  CHECK(load_topology(with("0.5%")).spec.server.nic.loss == doctest::Approx(0.005));
  CHECK_THROWS_WITH_AS(load_topology(with("12%")),
                       doctest::Contains("loss.yaml:8: key 'server.nic.loss': expected a packet "
                                         "loss rate from 0% to 10%"),
                       InputError);
  CHECK_THROWS_WITH_AS(load_topology(with("0.01")),
                       doctest::Contains("loss.yaml:8: key 'server.nic.loss'"), InputError);
  CHECK_THROWS_WITH_AS(load_topology(with("-1%")),
                       doctest::Contains("loss.yaml:8: key 'server.nic.loss'"), InputError);
}

TEST_CASE("check_connected blames the topology key that leaves the gap, with file and line") {
  // Three 1-GPU servers, one per region (s0 eu, s1 us, s2 asia); the one WAN link joins eu and us,
  // so rank 0 (s0.gpu0) reaches rank 1 but not rank 2 (s2.gpu0), and the `links:` key (line 11)
  // is to blame.
  const std::string wan =
      "name: w\n"
      "server:\n"
      "  pcie: {bandwidth: 12GB/s, latency: 1us}\n"
      "  nic: {bandwidth: 1Gbps, latency: 1us}\n"
      "fabric:\n"
      "  kind: wan\n"
      "  regions:\n"
      "    - {name: eu, servers: 1}\n"
      "    - {name: us, servers: 1}\n"
      "    - {name: asia, servers: 1}\n"
      "  links:\n"
      "    - {between: [eu, us], bandwidth: 1Gbps, latency: 10ms}\n";
  const fs::path w = write_temp("wan.yaml", wan);
  const std::string wan_error =
      w.string() +
      ":11: key 'fabric.links': no path from s0.gpu0 to s2.gpu0 (disconnected topology)";
  CHECK_THROWS_WITH_AS(check_connected(load_topology(w)), doctest::Contains(wan_error.c_str()),
                       InputError);

  // A link from a region to itself joins nothing: an error at its `between` (line 12).
  std::string self = wan;
  self.replace(self.find("[eu, us]"), 8, "[eu, eu]");
  const fs::path sl = write_temp("self.yaml", self);
  const std::string self_error =
      sl.string() + ":12: key 'fabric.links[0].between': a WAN link joins";
  CHECK_THROWS_WITH_AS(load_topology(sl), doctest::Contains(self_error.c_str()), InputError);

  // A connected topology: check_connected returns its ranks (2 + 2 + 2 VMs).
  CHECK(check_connected(load_topology(kTopologies / "wan-regions.yaml")) == 6);
}

TEST_CASE(
    "check_connected on a reduced cluster agrees with a search of the full one (issue 21 item 2)") {
  // The full cluster's answer, from its own search: the gap's endpoints or none.
  const auto full_gap = [](const topo::ClusterSpec& spec) -> std::string {
    const topo::Topology t = topo::build_cluster(spec);
    const auto gap = t.disconnected_pair();
    return gap ? "no path from " + t.node(gap->first).name + " to " + t.node(gap->second).name : "";
  };
  const auto checked_gap = [](const topo::ClusterSpec& spec) -> std::string {
    LoadedTopology loaded;
    loaded.spec = spec;
    try {
      const int ranks = check_connected(loaded);
      CHECK(ranks == spec.servers * spec.server.gpus);
      return "";
    } catch (const InputError& e) {
      const std::string m = e.what();
      const auto at = m.find("no path from");
      return m.substr(at, m.find(" (disconnected") - at);
    }
  };
  topo::ClusterSpec base;
  base.name = "t";
  base.server.gpus = 2;
  base.server.pcie = {12e9, 1000, 0};
  base.server.nic = {1.25e9, 1000, 0};
  int cases = 0;
  // WAN: three regions of 1 to 3 servers, every subset of the three possible links. Gaps are
  // between regions; their first rank is a region's first server, wherever the region starts.
  for (int mask = 0; mask < 8; ++mask) {
    for (int a = 1; a <= 3; ++a) {
      for (int b = 1; b <= 3; ++b) {
        for (int c = 1; c <= 3; ++c) {
          topo::ClusterSpec spec = base;
          spec.fabric.kind = topo::FabricKind::kWan;
          spec.fabric.regions = {{"x", a}, {"y", b}, {"z", c}};
          spec.servers = a + b + c;
          const std::pair<const char*, const char*> pairs[] = {{"x", "y"}, {"y", "z"}, {"x", "z"}};
          for (int k = 0; k < 3; ++k) {
            if (mask & (1 << k)) {
              spec.fabric.wan_links.push_back({pairs[k].first, pairs[k].second, {1e9, 1000, 0}});
            }
          }
          INFO("links " << mask << ", regions " << a << " " << b << " " << c);
          CHECK(checked_gap(spec) == full_gap(spec));
          ++cases;
        }
      }
    }
  }
  // Switch and fat tree: always connected, at every size and leaf split.
  for (int servers = 1; servers <= 7; ++servers) {
    topo::ClusterSpec sw = base;
    sw.servers = servers;
    CHECK(checked_gap(sw) == full_gap(sw));
    for (int per_leaf = 1; per_leaf <= 3; ++per_leaf) {
      topo::ClusterSpec ft = base;
      ft.servers = servers;
      ft.fabric.kind = topo::FabricKind::kFatTree;
      ft.fabric.servers_per_leaf = per_leaf;
      ft.fabric.spines = 2;
      ft.fabric.uplink = {1e9, 1000, 0};
      CHECK(checked_gap(ft) == full_gap(ft));
      cases += 2;
    }
  }
  CHECK(cases == 8 * 27 + 7 * 3 * 2);
}

TEST_CASE("check_connected answers for 1,048,576 servers without building them (issue 21 item 2)") {
  // The full cluster would be 3.1 M nodes; the reduced one is 2 servers. (A shortest-path tree per
  // rank took 763 MB at 4096 servers and passed 9.7 GB at this size.)
  const LoadedTopology t = load_topology(kTopologies / "cloud-vms.yaml",
                                         {{"servers", Param{YAML::Node(1 << 20), "test"}}});
  CHECK(check_connected(t) == 1 << 20);
  // Beyond what a run could build: 16,777,216 nodes (a DGX-1 is 18 nodes per server).
  CHECK_THROWS_WITH_AS(
      load_topology(kTopologies / "dgx1.yaml", {{"servers", Param{YAML::Node(1 << 20), "test"}}}),
      doctest::Contains("the cluster would have 18874369 nodes"), InputError);
  CHECK_NOTHROW(
      load_topology(kTopologies / "dgx1.yaml", {{"servers", Param{YAML::Node(1 << 16), "test"}}}));
}
