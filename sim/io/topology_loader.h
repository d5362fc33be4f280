#pragma once
// Reads a topology file (topologies/*.yaml) into a topo::ClusterSpec.
//
// A topology declares named parameters with defaults under `params:` and refers to them as
// "${name}" anywhere in its body; a scenario overrides them (topology: {params: {servers: 16}}).
// Every quantity carries its unit and, in the shipped files, its source:
//   nic:
//     bandwidth: {value: 10Gbps, source: "..."}

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "sim/io/yaml_reader.h"
#include "sim/topo/cluster_spec.h"

namespace adaptsim::io {

struct LoadedTopology {
  topo::ClusterSpec spec;
  std::filesystem::path path;
  std::vector<SourcedQuantity> quantities;                  // every quantity read, with its source
  std::vector<std::pair<std::string, std::string>> params;  // resolved parameter values (text)
  // "file:line" of the keys that check_connected() may blame for a gap, by dotted key: "server",
  // "fabric" and, for a WAN, "fabric.links".
  std::map<std::string, std::string, std::less<>> key_where;
};

// `overrides`: parameter values set by a scenario; each names where it was given. An override of
// an undeclared parameter is an error located at the override.
LoadedTopology load_topology(const std::filesystem::path& path, const Params& overrides = {});
// The same from a topology file already parsed (read-only: a scenario's sweep points share one).
LoadedTopology load_topology(const Document& doc, const Params& overrides = {});

// Checks that build_cluster(topology.spec) builds and that every rank reaches every other; returns
// the rank count. A gap is an InputError located at the key that wires the two endpoints (the
// server's internals, the WAN's links, or the fabric):
//   wan.yaml:31: key 'fabric.links': no path from s0.gpu0 to s3.gpu0 (disconnected topology)
// One breadth-first search over a reduced cluster: at most two servers of each group that is
// wired identically (the whole switch, a fat-tree leaf and the first server of a second leaf,
// each WAN region). Identical servers have identical paths, so a gap exists in the full cluster
// exactly when it does in the reduced one, and the endpoints it names are the full cluster's
// (the first disconnected rank is always its group's first server, which the reduced cluster
// keeps). Time and memory do not grow with the server count: 1,048,576 cloud VMs check as fast
// as 2.
int check_connected(const LoadedTopology& topology);

// The smallest per-direction bandwidth of any link the spec wires (PCIe, SMP, NVLink, NVSwitch,
// NIC in and out, fabric uplinks, WAN links) and of the hosts' loopback: a workload checks that
// its largest message crosses it within a duration the simulator's time can hold.
double slowest_bandwidth_Bps(const topo::ClusterSpec& spec);

// A host CPU of the first server that two of its ranks share ("s0.cpu0") when the server's CPUs
// have no loopback_bandwidth, else empty: those ranks' host messages would have nothing to go
// over (net::Network refuses them at run time), so a workload whose host transport carries them
// refuses the topology when it is read.
std::string shared_host_without_loopback(const topo::ClusterSpec& spec);

// The parameter names a topology declares (for `simctl list topologies`).
std::vector<std::string> topology_parameters(const std::filesystem::path& path);

}  // namespace adaptsim::io
