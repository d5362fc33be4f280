#include "sim/topo/cluster_spec.h"

#include <map>
#include <string>

#include "sim/core/error.h"

namespace adaptsim::topo {
namespace {

std::string at(int server, const std::string& what) {
  std::string name(1, 's');  // appended, not "s" + ...: GCC 12 -Wrestrict false positive (105651)
  name.append(std::to_string(server)).append(1, '.').append(what);
  return name;
}

void require(bool ok, const std::string& spec_name, const std::string& message) {
  if (!ok) throw InputError("topology '" + spec_name + "': " + message);
}

// Adds one server's nodes and internal links (its GPUs as ranks unless it is an extra host);
// returns its NIC node ids.
std::vector<NodeId> add_server(Topology& topo, const ClusterSpec& spec, int s) {
  const ServerSpec& sv = spec.server;
  std::vector<NodeId> cpus, gpus, nics, pcie;
  for (int c = 0; c < sv.cpus; ++c) {
    Node n{at(s, "cpu" + std::to_string(c)), NodeKind::kCpu, s};
    n.reduce_bandwidth_Bps = sv.cpu_reduce_bandwidth_Bps;
    n.loopback_bandwidth_Bps = sv.cpu_loopback_bandwidth_Bps;
    n.memory_bandwidth_Bps = sv.cpu_memory_bandwidth_Bps;
    cpus.push_back(topo.add_node(n));
  }
  for (int c = 1; c < sv.cpus; ++c)
    topo.add_link(cpus[0], cpus[c], LinkKind::kSmp, sv.smp);
  for (int g = 0; g < sv.gpus; ++g) {
    Node n{at(s, "gpu" + std::to_string(g)), NodeKind::kGpu, s};
    n.reduce_bandwidth_Bps = sv.gpu_reduce_bandwidth_Bps;
    gpus.push_back(topo.add_node(n));
  }
  for (int k = 0; k < sv.nics; ++k) {
    nics.push_back(topo.add_node({at(s, "nic" + std::to_string(k)), NodeKind::kNic, s}));
  }

  // PCIe: through switches where given, else straight to a socket (round-robin over sockets).
  std::vector<NodeId> gpu_cpu(sv.gpus, cpus[0]);
  std::vector<bool> gpu_attached(sv.gpus, false), nic_attached(sv.nics, false);
  for (std::size_t p = 0; p < sv.pcie_switches.size(); ++p) {
    const PcieSwitchSpec& ps = sv.pcie_switches[p];
    require(ps.cpu >= 0 && ps.cpu < sv.cpus, spec.name,
            "pcie switch " + std::to_string(p) + " names cpu " + std::to_string(ps.cpu) +
                " but the server has " + std::to_string(sv.cpus));
    const NodeId sw = topo.add_node({at(s, "pcie" + std::to_string(p)), NodeKind::kPcieSwitch, s});
    topo.add_link(sw, cpus[ps.cpu], LinkKind::kPcie, sv.pcie);
    for (int g : ps.gpus) {
      require(g >= 0 && g < sv.gpus && !gpu_attached[g], spec.name,
              "pcie switch " + std::to_string(p) + " lists gpu " + std::to_string(g) +
                  " (out of range or attached twice)");
      topo.add_link(gpus[g], sw, LinkKind::kPcie, sv.pcie);
      gpu_attached[g] = true;
      gpu_cpu[g] = cpus[ps.cpu];
    }
    for (int k : ps.nics) {
      require(k >= 0 && k < sv.nics && !nic_attached[k], spec.name,
              "pcie switch " + std::to_string(p) + " lists nic " + std::to_string(k) +
                  " (out of range or attached twice)");
      topo.add_link(nics[k], sw, LinkKind::kPcie, sv.pcie);
      nic_attached[k] = true;
    }
  }
  for (int g = 0; g < sv.gpus; ++g) {
    if (gpu_attached[g]) continue;
    gpu_cpu[g] = cpus[g % sv.cpus];
    topo.add_link(gpus[g], gpu_cpu[g], LinkKind::kPcie, sv.pcie);
  }
  for (int k = 0; k < sv.nics; ++k) {
    if (!nic_attached[k]) topo.add_link(nics[k], cpus[k % sv.cpus], LinkKind::kPcie, sv.pcie);
  }

  for (const NvLinkSpec& l : sv.nvlinks) {
    require(l.a >= 0 && l.a < sv.gpus && l.b >= 0 && l.b < sv.gpus && l.a != l.b && l.count > 0,
            spec.name,
            "nvlink " + std::to_string(l.a) + "-" + std::to_string(l.b) + " is not a valid pair");
    LinkParams p = sv.nvlink;
    p.bandwidth_Bps *= l.count;
    topo.add_link(gpus[l.a], gpus[l.b], LinkKind::kNvLink, p);
  }
  if (sv.nvswitch) {
    const NodeId nvs = topo.add_node({at(s, "nvswitch"), NodeKind::kNvSwitch, s});
    for (NodeId g : gpus)
      topo.add_link(g, nvs, LinkKind::kNvLink, *sv.nvswitch);
  }
  if (s < spec.servers) {
    for (int g = 0; g < sv.gpus; ++g)
      topo.add_rank(gpus[g], gpu_cpu[g]);
  }
  return nics;
}

void attach_nic(Topology& topo, const ServerSpec& sv, NodeId nic, NodeId fabric_port) {
  LinkParams egress = sv.nic;
  if (sv.nic_egress_bandwidth_Bps) egress.bandwidth_Bps = *sv.nic_egress_bandwidth_Bps;
  topo.add_link(nic, fabric_port, sv.nic_kind, egress, sv.nic);
}

}  // namespace

Topology build_cluster(const ClusterSpec& spec) {
  const ServerSpec& sv = spec.server;
  require(spec.servers >= 1, spec.name, "servers must be >= 1");
  require(sv.gpus >= 1, spec.name, "a server needs at least one GPU");
  require(sv.cpus >= 1, spec.name, "a server needs at least one CPU socket");
  require(sv.nics >= 0, spec.name, "nics must be >= 0");
  require(spec.hosts() == 1 || sv.nics >= 1, spec.name, "servers without NICs cannot be joined");
  require(spec.extra_hosts >= 0, spec.name, "extra hosts must be >= 0");
  require(spec.extra_hosts == 0 || spec.fabric.kind != FabricKind::kWan, spec.name,
          "a wan fabric places every server in a region; extra hosts outside the job need a "
          "switch or fat_tree fabric");

  Topology topo;
  topo.name = spec.name;
  topo.description = spec.description;
  std::vector<std::vector<NodeId>> nics(spec.hosts());
  for (int s = 0; s < spec.hosts(); ++s)
    nics[s] = add_server(topo, spec, s);

  const FabricSpec& fb = spec.fabric;
  switch (fb.kind) {
    case FabricKind::kSwitch: {
      if (sv.nics == 0) break;
      const NodeId sw = topo.add_node({"switch", NodeKind::kSwitch, -1});
      for (auto& server_nics : nics) {
        for (NodeId nic : server_nics)
          attach_nic(topo, sv, nic, sw);
      }
      break;
    }
    case FabricKind::kFatTree: {
      require(fb.servers_per_leaf >= 1 && fb.spines >= 1, spec.name,
              "fat_tree needs servers_per_leaf >= 1 and spines >= 1");
      const int leaves = (spec.hosts() + fb.servers_per_leaf - 1) / fb.servers_per_leaf;
      std::vector<NodeId> leaf_ids, spine_ids;
      for (int l = 0; l < leaves; ++l) {
        leaf_ids.push_back(topo.add_node({"leaf" + std::to_string(l), NodeKind::kSwitch, -1}));
      }
      for (int p = 0; p < fb.spines; ++p) {
        spine_ids.push_back(topo.add_node({"spine" + std::to_string(p), NodeKind::kSwitch, -1}));
      }
      for (NodeId l : leaf_ids) {
        for (NodeId p : spine_ids)
          topo.add_link(l, p, sv.nic_kind, fb.uplink);
      }
      for (int s = 0; s < spec.hosts(); ++s) {
        for (NodeId nic : nics[s])
          attach_nic(topo, sv, nic, leaf_ids[s / fb.servers_per_leaf]);
      }
      break;
    }
    case FabricKind::kWan: {
      int total = 0;
      std::map<std::string, NodeId> routers;
      for (const WanRegionSpec& r : fb.regions) {
        require(!routers.count(r.name), spec.name, "region '" + r.name + "' is listed twice");
        routers[r.name] = topo.add_node({"router." + r.name, NodeKind::kRouter, -1});
        for (int i = 0; i < r.servers; ++i, ++total) {
          require(total < spec.servers, spec.name,
                  "regions hold more servers than the topology's " + std::to_string(spec.servers));
          for (NodeId nic : nics[total])
            attach_nic(topo, sv, nic, routers[r.name]);
        }
      }
      require(total == spec.servers, spec.name,
              "regions hold " + std::to_string(total) + " servers, the topology has " +
                  std::to_string(spec.servers));
      for (const WanLinkSpec& l : fb.wan_links) {
        require(routers.count(l.a) && routers.count(l.b), spec.name,
                "wan link " + l.a + "-" + l.b + " names an unknown region");
        topo.add_link(routers[l.a], routers[l.b], LinkKind::kWan, l.params);
      }
      break;
    }
  }
  return topo;
}

}  // namespace adaptsim::topo
