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

TEST_CASE("build_connected blames the topology key that leaves the gap, with file and line") {
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
  CHECK_THROWS_WITH_AS(build_connected(load_topology(w)), doctest::Contains(wan_error.c_str()),
                       InputError);

  // A link from a region to itself joins nothing: an error at its `between` (line 12).
  std::string self = wan;
  self.replace(self.find("[eu, us]"), 8, "[eu, eu]");
  const fs::path sl = write_temp("self.yaml", self);
  const std::string self_error =
      sl.string() + ":12: key 'fabric.links[0].between': a WAN link joins";
  CHECK_THROWS_WITH_AS(load_topology(sl), doctest::Contains(self_error.c_str()), InputError);

  // A connected topology: build_connected returns the built cluster (2 + 2 + 2 VMs).
  const topo::Topology ok = build_connected(load_topology(kTopologies / "wan-regions.yaml"));
  CHECK(ok.rank_count() == 6);
}
