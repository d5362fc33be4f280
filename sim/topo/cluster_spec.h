#pragma once
// A cluster described by parameters (servers of identical build, joined by a fabric), from which
// build_cluster() generates the node/link graph. The topology YAML files fill this struct
// (sim/io/topology_loader); tests fill it directly.

#include <optional>
#include <string>
#include <vector>

#include "sim/topo/topology.h"

namespace adaptsim::topo {

struct PcieSwitchSpec {
  int cpu = 0;            // socket the switch hangs off
  std::vector<int> gpus;  // local GPU indices behind it
  std::vector<int> nics;  // local NIC indices behind it
};

struct NvLinkSpec {
  int a = 0;
  int b = 0;
  int count = 1;  // parallel NVLinks between a and b; capacity is count x the per-link bandwidth
};

struct ServerSpec {
  int gpus = 1;
  std::string gpu_model;
  double gpu_reduce_bandwidth_Bps = 0;        // 0: reductions on the GPU are not charged
  int cpus = 1;                               // sockets
  double cpu_reduce_bandwidth_Bps = 0;        // element-wise sum on the host, bytes of output per s
  double cpu_loopback_bandwidth_Bps = 0;      // one process-to-process stream on one host
  double cpu_memory_bandwidth_Bps = 0;        // per socket; 0: unbounded
  LinkParams smp;                             // between sockets (QPI/UPI), when cpus > 1
  LinkParams pcie;                            // each PCIe attachment (GPU or NIC), per direction
  std::vector<PcieSwitchSpec> pcie_switches;  // empty: GPUs and NICs attach to CPU sockets directly
  LinkParams nvlink;                          // one NVLink, per direction
  std::vector<NvLinkSpec> nvlinks;            // point-to-point NVLink wiring
  std::optional<LinkParams> nvswitch;         // per-GPU port into one NVSwitch fabric
  int nics = 1;
  LinkKind nic_kind = LinkKind::kEthernet;
  LinkParams nic;                                  // NIC <-> fabric, ingress (fabric to NIC)
  std::optional<double> nic_egress_bandwidth_Bps;  // egress cap if different from ingress
};

enum class FabricKind { kSwitch, kFatTree, kWan };

struct WanRegionSpec {
  std::string name;
  int servers = 0;
};

struct WanLinkSpec {
  std::string a;
  std::string b;
  LinkParams params;
};

struct FabricSpec {
  FabricKind kind = FabricKind::kSwitch;
  // kFatTree: two levels, every leaf wired to every spine.
  int servers_per_leaf = 1;
  int spines = 1;
  LinkParams uplink;  // leaf <-> spine
  // kWan: regions each with a router; servers attach to their region's router.
  std::vector<WanRegionSpec> regions;
  std::vector<WanLinkSpec> wan_links;
};

struct ClusterSpec {
  std::string name;
  std::string description;
  int servers = 1;
  // Hosts outside the job (a scenario's background traffic names them x0, x1, ...): built like
  // servers (nodes "s<servers + i>.*", the same NIC and place in the fabric) after the servers,
  // but running no rank. Not a topology file's key: scenarios add them.
  int extra_hosts = 0;
  int hosts() const { return servers + extra_hosts; }
  ServerSpec server;
  FabricSpec fabric;
};

// Builds the topology. Node names: "s<i>.gpu<j>", "s<i>.cpu<k>", "s<i>.pcie<k>", "s<i>.nic<k>",
// "s<i>.nvswitch", "switch", "leaf<i>", "spine<j>", "router.<region>". Ranks are GPUs in server
// order. Throws InputError on inconsistent specs (a GPU index out of range, ...).
Topology build_cluster(const ClusterSpec& spec);

}  // namespace adaptsim::topo
