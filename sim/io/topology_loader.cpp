#include "sim/io/topology_loader.h"

#include <algorithm>

#include "sim/core/error.h"

namespace adaptsim::io {
namespace {

// The documented maximum of `servers` (README: topologies), and of a fat tree's spines (no real
// one has more than a few hundred).
constexpr int kMaxServers = 1 << 20;
constexpr int kMaxSpines = 1 << 16;
constexpr std::int64_t kMaxClusterNodes = std::int64_t{1} << 24;
constexpr std::int64_t kMaxClusterLinks = std::int64_t{1} << 25;
constexpr double kMaxLinkLoss = 0.10;

topo::LinkParams read_link_fields(MapReader& m) {
  topo::LinkParams p;
  p.bandwidth_Bps = m.bandwidth_Bps("bandwidth");
  p.latency_ns = m.duration_ns("latency");
  p.queue_ns = m.duration_ns_or("queue", 0);
  p.loss = m.percent_or("loss", 0);
  // The loss model (net::Network::transfer) is Padhye et al.'s window bound without timeouts,
  // derived for small loss rates.
  if (!(p.loss >= 0 && p.loss <= kMaxLinkLoss)) {
    m.fail("loss", "expected a packet loss rate from 0% to 10%");
  }
  p.stream_bandwidth_Bps = m.bandwidth_Bps_or("stream_bandwidth", 0);
  return p;
}

topo::LinkParams read_link(MapReader& parent, std::string_view key) {
  MapReader m = parent.map(key);
  const topo::LinkParams p = read_link_fields(m);
  m.finish();
  return p;
}

std::vector<int> int_list(MapReader& m, std::string_view key) {
  std::vector<int> out;
  if (!m.has(key)) {
    m.accept(key);
    return out;
  }
  for (std::int64_t v : m.integer_list(key))
    out.push_back(static_cast<int>(v));
  return out;
}

topo::ServerSpec read_server(MapReader& s) {
  topo::ServerSpec sv;
  sv.gpus = static_cast<int>(s.integer_or("gpus", 1, 1, 1 << 16));
  sv.gpu_model = s.string_or("gpu_model", "");
  if (auto gpu = s.optional_map("gpu")) {
    sv.gpu_reduce_bandwidth_Bps = gpu->bandwidth_Bps_or("reduce_bandwidth", 0);
    gpu->finish();
  }
  sv.cpus = static_cast<int>(s.integer_or("cpus", 1, 1, 64));
  if (auto cpu = s.optional_map("cpu")) {
    sv.cpu_reduce_bandwidth_Bps = cpu->bandwidth_Bps_or("reduce_bandwidth", 0);
    sv.cpu_loopback_bandwidth_Bps = cpu->bandwidth_Bps_or("loopback_bandwidth", 0);
    sv.cpu_memory_bandwidth_Bps = cpu->bandwidth_Bps_or("memory_bandwidth", 0);
    cpu->finish();
  }
  if (sv.cpus > 1) {
    sv.smp = read_link(s, "smp");
  } else {
    s.accept("smp");
  }
  sv.pcie = read_link(s, "pcie");
  if (s.has("pcie_switches")) {
    const auto items = s.list("pcie_switches");
    for (std::size_t i = 0; i < items.size(); ++i) {
      MapReader ps = MapReader::item_map(s, "pcie_switches", i, items[i]);
      topo::PcieSwitchSpec spec;
      spec.cpu = static_cast<int>(ps.integer_or("cpu", 0, 0, sv.cpus - 1));
      spec.gpus = int_list(ps, "gpus");
      spec.nics = int_list(ps, "nics");
      ps.finish();
      sv.pcie_switches.push_back(spec);
    }
  } else {
    s.accept("pcie_switches");
  }
  if (auto nv = s.optional_map("nvlink")) {
    sv.nvlink = read_link_fields(*nv);
    const auto links = nv->list("links");
    for (std::size_t i = 0; i < links.size(); ++i) {
      const YAML::Node& l = links[i];
      if (!l.IsSequence() || (l.size() != 2 && l.size() != 3)) {
        nv->fail("links", "entry " + std::to_string(i) +
                              " must be [gpu_a, gpu_b] or [gpu_a, gpu_b, link_count]");
      }
      try {
        sv.nvlinks.push_back({l[0].as<int>(), l[1].as<int>(), l.size() == 3 ? l[2].as<int>() : 1});
      } catch (const YAML::Exception&) {
        nv->fail("links", "entry " + std::to_string(i) + " must hold integers");
      }
    }
    nv->finish();
  }
  if (auto nvs = s.optional_map("nvswitch")) {
    sv.nvswitch = read_link_fields(*nvs);
    nvs->finish();
  }
  MapReader nic = s.map("nic");
  sv.nics = static_cast<int>(nic.integer_or("count", 1, 0, 64));
  const std::string kind = nic.choice_or("kind", {"ethernet", "infiniband"}, "ethernet");
  sv.nic_kind = kind == "ethernet" ? topo::LinkKind::kEthernet : topo::LinkKind::kInfiniBand;
  sv.nic = read_link_fields(nic);
  if (nic.has("egress_bandwidth")) {
    sv.nic_egress_bandwidth_Bps = nic.bandwidth_Bps("egress_bandwidth");
  } else {
    nic.accept("egress_bandwidth");
  }
  nic.finish();
  s.finish();
  return sv;
}

topo::FabricSpec read_fabric(MapReader& f, int servers) {
  topo::FabricSpec fb;
  const std::string kind = f.choice("kind", {"switch", "fat_tree", "wan"});
  if (kind == "switch") {
    fb.kind = topo::FabricKind::kSwitch;
  } else if (kind == "fat_tree") {
    fb.kind = topo::FabricKind::kFatTree;
    fb.servers_per_leaf = static_cast<int>(f.integer("servers_per_leaf", 1, kMaxServers));
    fb.spines = static_cast<int>(f.integer("spines", 1, kMaxSpines));
    fb.uplink = read_link(f, "uplink");
  } else {
    fb.kind = topo::FabricKind::kWan;
    const auto regions = f.list("regions");
    for (std::size_t i = 0; i < regions.size(); ++i) {
      MapReader r = MapReader::item_map(f, "regions", i, regions[i]);
      fb.regions.push_back({r.string("name"), static_cast<int>(r.integer("servers", 0, servers))});
      r.finish();
    }
    const auto links = f.list("links");
    for (std::size_t i = 0; i < links.size(); ++i) {
      MapReader l = MapReader::item_map(f, "links", i, links[i]);
      const auto between = l.string_list("between");
      if (between.size() != 2) l.fail("between", "expected two region names");
      if (between[0] == between[1]) l.fail("between", "a WAN link joins two different regions");
      fb.wan_links.push_back({between[0], between[1], read_link_fields(l)});
      l.finish();
    }
  }
  f.finish();
  return fb;
}

// The cluster build_cluster() would make: its nodes and full-duplex links, counted from the spec.
// A run builds it whole for every task, so its size is bounded (2^24 nodes, 2^25 links: about
// 4 GB of topology; 1,048,576 one-GPU cloud VMs are 3.1 M of each, a 65,536-server DGX-1 cluster
// 1.2 M nodes), and a spec beyond it is refused here rather than by memory running out.
void check_cluster_size(MapReader& top, const topo::ClusterSpec& spec) {
  const topo::ServerSpec& sv = spec.server;
  const std::int64_t servers = spec.servers;
  const std::int64_t per_server_nodes = std::int64_t{sv.gpus} + sv.cpus + sv.nics +
                                        static_cast<std::int64_t>(sv.pcie_switches.size()) +
                                        (sv.nvswitch ? 1 : 0);
  const std::int64_t per_server_links = std::int64_t{sv.cpus} - 1 + sv.gpus + sv.nics +
                                        static_cast<std::int64_t>(sv.pcie_switches.size()) +
                                        static_cast<std::int64_t>(sv.nvlinks.size()) +
                                        (sv.nvswitch ? sv.gpus : 0);
  std::int64_t nodes = servers * per_server_nodes;
  std::int64_t links = servers * per_server_links + servers * sv.nics;
  const topo::FabricSpec& fb = spec.fabric;
  if (fb.kind == topo::FabricKind::kFatTree) {
    const std::int64_t leaves = (servers + fb.servers_per_leaf - 1) / fb.servers_per_leaf;
    nodes += leaves + fb.spines;
    links += leaves * fb.spines;
  } else if (fb.kind == topo::FabricKind::kWan) {
    nodes += static_cast<std::int64_t>(fb.regions.size());
    links += static_cast<std::int64_t>(fb.wan_links.size());
  } else {
    nodes += 1;
  }
  if (nodes > kMaxClusterNodes || links > kMaxClusterLinks) {
    top.fail("servers", "the cluster would have " + std::to_string(nodes) + " nodes and " +
                            std::to_string(links) +
                            " links; expected at most 16777216 nodes and 33554432 links (fewer "
                            "servers, or smaller servers)");
  }
}

// "file:line" of `key` itself inside `map` (the line a reader looks for), else of the map.
std::string key_location(const Document& doc, const YAML::Node& map, std::string_view key) {
  if (map.IsMap()) {
    for (auto it = map.begin(); it != map.end(); ++it) {
      if (it->first.IsScalar() && it->first.Scalar() == key) return doc.where(it->first);
    }
  }
  return doc.where(map);
}

}  // namespace

LoadedTopology load_topology(const std::filesystem::path& path, const Params& overrides) {
  return load_topology(Document::load_file(path), overrides);
}

LoadedTopology load_topology(const Document& doc, const Params& overrides) {
  const std::filesystem::path& path = doc.path();
  MapReader top(doc, doc.root(), "");

  // Parameters: declared defaults, then the scenario's overrides.
  auto params = std::make_shared<Params>();
  LoadedTopology out;
  if (auto p = top.optional_map("params")) {
    for (auto it = p->node().begin(); it != p->node().end(); ++it) {
      const std::string name = it->first.Scalar();
      p->accept(name);
      (*params)[name] = Param{it->second, doc.where(it->second)};
    }
  }
  for (const auto& [name, value] : overrides) {
    auto it = params->find(name);
    if (it == params->end()) {
      std::vector<std::string> names;
      for (const auto& [k, _] : *params)
        names.push_back(k);
      const std::string guess = closest(name, names);
      std::string declared;
      for (const auto& n : names)
        declared += (declared.empty() ? "" : ", ") + n;
      throw InputError(value.where + ": key 'topology.params." + name + "': topology " +
                       path.filename().string() + " has no parameter '" + name + "'" +
                       (guess.empty() ? "" : " (did you mean '" + guess + "'?)") +
                       "; it declares: " + (declared.empty() ? "none" : declared));
    }
    // reset(), not `=`: assigning a YAML::Node writes the value into the topology's document.
    it->second.value.reset(value.value);
    it->second.where = value.where;
    it->second.document = value.document;
  }
  for (const auto& [name, p] : *params) {
    out.params.emplace_back(name, p.value.IsScalar()                    ? p.value.Scalar()
                                  : p.value.IsMap() && p.value["value"] ? p.value["value"].Scalar()
                                                                        : YAML::Dump(p.value));
  }
  top.set_params(params);

  topo::ClusterSpec& spec = out.spec;
  spec.name = top.string("name");
  spec.description = top.string_or("description", "");
  // A WAN topology may leave `servers` out: it is then the sum over its regions.
  const bool derive_servers = !top.has("servers");
  spec.servers =
      derive_servers ? kMaxServers : static_cast<int>(top.integer("servers", 1, kMaxServers));
  MapReader server = top.map("server");
  spec.server = read_server(server);
  MapReader fabric = top.map("fabric");
  spec.fabric = read_fabric(fabric, spec.servers);
  if (spec.fabric.kind == topo::FabricKind::kWan) {
    std::int64_t held = 0;
    for (const auto& r : spec.fabric.regions)
      held += r.servers;
    if (held > kMaxServers) {
      fabric.fail("regions", "the regions hold " + std::to_string(held) +
                                 " servers; expected at most 1048576");
    }
    if (derive_servers) spec.servers = static_cast<int>(held);
    if (held == 0) fabric.fail("regions", "the regions hold no servers");
    if (held != spec.servers) {
      fabric.fail("regions", "the regions hold " + std::to_string(held) +
                                 " servers; expected the topology's servers, " +
                                 std::to_string(spec.servers));
    }
  } else if (derive_servers) {
    top.fail("servers", "missing required key");
  }
  check_cluster_size(top, spec);
  top.finish();
  out.path = path;
  out.quantities = top.quantities();
  out.key_where["server"] = key_location(doc, doc.root(), "server");
  out.key_where["fabric"] = key_location(doc, doc.root(), "fabric");
  if (spec.fabric.kind == topo::FabricKind::kWan) {
    out.key_where["fabric.links"] = key_location(doc, fabric.node(), "links");
  }
  return out;
}

namespace {

// check_connected's reduced cluster and, for each of its servers, the full cluster's index.
struct ReducedCluster {
  topo::ClusterSpec spec;
  std::vector<int> full_server;
};

ReducedCluster reduce(const topo::ClusterSpec& full) {
  ReducedCluster r{full, {}};
  const auto keep = [&](int first, int count) {  // servers first .. first + count - 1
    for (int i = 0; i < count; ++i)
      r.full_server.push_back(first + i);
  };
  switch (full.fabric.kind) {
    case topo::FabricKind::kSwitch:
      r.spec.servers = std::min(full.servers, 2);
      keep(0, r.spec.servers);
      break;
    case topo::FabricKind::kFatTree: {
      // Two servers of the first leaf and the first server of the second, if there is one.
      const int per_leaf = std::max(full.fabric.servers_per_leaf, 1);
      r.spec.fabric.servers_per_leaf = std::min(per_leaf, 2);
      r.spec.fabric.spines = std::min(full.fabric.spines, 1);
      const int first_leaf = std::min(full.servers, r.spec.fabric.servers_per_leaf);
      keep(0, first_leaf);
      if (full.servers > per_leaf) keep(per_leaf, 1);
      r.spec.servers = static_cast<int>(r.full_server.size());
      break;
    }
    case topo::FabricKind::kWan: {
      int first = 0;
      for (topo::WanRegionSpec& region : r.spec.fabric.regions) {
        const int count = std::min(region.servers, 2);
        keep(first, count);
        first += region.servers;
        region.servers = count;
      }
      r.spec.servers = static_cast<int>(r.full_server.size());
      break;
    }
  }
  return r;
}

// "s<i>.gpu0" of the reduced cluster as the full cluster names it (topo::build_cluster's names).
std::string full_name(const std::string& name, const std::vector<int>& full_server) {
  const auto dot = name.find('.');
  if (name.size() < 3 || name[0] != 's' || dot == std::string::npos) return name;
  const int reduced = std::stoi(name.substr(1, dot - 1));
  return "s" + std::to_string(full_server.at(static_cast<std::size_t>(reduced))) + name.substr(dot);
}

}  // namespace

int check_connected(const LoadedTopology& topology) {
  const topo::ClusterSpec& spec = topology.spec;
  const ReducedCluster reduced = reduce(spec);
  const topo::Topology t = topo::build_cluster(reduced.spec);
  const auto error_at = [&](const std::string& key, const std::string& message) {
    const auto it = topology.key_where.find(key);
    const std::string where = it != topology.key_where.end() ? it->second : topology.path.string();
    return InputError(where + ": key '" + key + "': " + message);
  };
  if (t.rank_count() == 0) throw error_at("server", "the topology has no GPUs");
  const auto gap = t.disconnected_pair();
  if (!gap) return spec.servers * spec.server.gpus;
  // The two endpoints' common server, if any: then the gap is inside the server's wiring.
  const int server_a = t.node(gap->first).server;
  const int server_b = t.node(gap->second).server;
  std::string key = "fabric";
  if (server_a >= 0 && server_a == server_b) {
    key = "server";
  } else if (topology.spec.fabric.kind == topo::FabricKind::kWan) {
    key = "fabric.links";
  }
  throw error_at(key, "no path from " + full_name(t.node(gap->first).name, reduced.full_server) +
                          " to " + full_name(t.node(gap->second).name, reduced.full_server) +
                          " (disconnected topology)");
}

double slowest_bandwidth_Bps(const topo::ClusterSpec& spec) {
  const topo::ServerSpec& sv = spec.server;
  double slowest = sv.pcie.bandwidth_Bps;
  const auto consider = [&](double bandwidth_Bps) {
    if (bandwidth_Bps > 0) slowest = std::min(slowest, bandwidth_Bps);
  };
  if (sv.cpus > 1) consider(sv.smp.bandwidth_Bps);
  if (!sv.nvlinks.empty()) consider(sv.nvlink.bandwidth_Bps);
  if (sv.nvswitch) consider(sv.nvswitch->bandwidth_Bps);
  if (sv.nics > 0) consider(sv.nic.bandwidth_Bps);
  if (sv.nic_egress_bandwidth_Bps) consider(*sv.nic_egress_bandwidth_Bps);
  consider(sv.cpu_loopback_bandwidth_Bps);
  if (spec.fabric.kind == topo::FabricKind::kFatTree) consider(spec.fabric.uplink.bandwidth_Bps);
  for (const topo::WanLinkSpec& l : spec.fabric.wan_links)
    consider(l.params.bandwidth_Bps);
  return slowest;
}

std::string shared_host_without_loopback(const topo::ClusterSpec& spec) {
  const topo::ServerSpec& sv = spec.server;
  if (sv.cpu_loopback_bandwidth_Bps > 0 || sv.cpus < 1) return "";
  // Each GPU's host, as topo::build_cluster attaches it: its PCIe switch's socket, else g % cpus.
  std::vector<int> ranks_on(static_cast<std::size_t>(sv.cpus), 0);
  for (int g = 0; g < sv.gpus; ++g) {
    int cpu = g % sv.cpus;
    for (const topo::PcieSwitchSpec& ps : sv.pcie_switches) {
      if (std::find(ps.gpus.begin(), ps.gpus.end(), g) != ps.gpus.end()) cpu = ps.cpu;
    }
    if (cpu >= 0 && cpu < sv.cpus && ++ranks_on[static_cast<std::size_t>(cpu)] == 2) {
      return "s0.cpu" + std::to_string(cpu);
    }
  }
  return "";
}

std::vector<std::string> topology_parameters(const std::filesystem::path& path) {
  Document doc = Document::load_file(path);
  std::vector<std::string> names;
  const YAML::Node params = doc.root()["params"];
  if (params.IsMap()) {
    for (auto it = params.begin(); it != params.end(); ++it)
      names.push_back(it->first.Scalar());
  }
  return names;
}

}  // namespace adaptsim::io
