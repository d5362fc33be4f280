#pragma once
// NCCL's own analytical cost model (src/graph/tuning.cc): how long one NCCL collective takes, and
// which (algorithm, protocol) NCCL would pick for it. The training simulator does not flow-simulate
// NCCL; it asks this model.
//
// The model is NCCL's alpha-beta table: for every enabled (algorithm, protocol) a latency (us) and
// an algorithm bandwidth (GB/s), time_us = latency_us + bytes / (1000 * algbw_GBps), and NCCL takes
// the minimum. Latency constants are the NCCL ~2.7 ones (the KungFu experiments, 2020, ran NCCL
// 2.4-2.7); bandwidth refinements follow the later tuning.cc (the sources are in nccl_model.cpp).
// NVLS (NVLink SHARP: the NVSwitch reduces, Hopper on one node) follows NCCL 2.28's search and
// tuning (nccl_params_from_topology, nccl_estimates). Left out on purpose: treeCorrectionFactor
// (size-dependent tree fudge), the x1.9 "plateau" of multi-node Ring/Simple, CollNet, NVLS across
// nodes (NVLS Tree), PAT, and tuner plugins.
//
// nccl_params_from_topology() plays NCCL's topology search on a topo::Topology: it finds the
// number of channels (rings) and their per-channel bandwidth inside a server and across servers.

#include <cstdint>
#include <string_view>
#include <vector>

#include "sim/topo/topology.h"

namespace adaptsim::train {

enum class NcclColl { kAllReduce, kReduce, kBroadcast, kAllGather, kReduceScatter };
enum class NcclAlgo { kRing, kTree, kNvls };
enum class NcclProto { kLL, kLL128, kSimple };
enum class NcclIntraLink { kNvLink, kPcie };  // what connects GPUs inside a node
enum class GpuArch { kVolta, kAmpere, kHopper };
// The GPU generation named by a topology's or profile's GPU model ("V100-SXM2" -> Volta).
GpuArch gpu_arch_of(std::string_view gpu_model);

std::string_view nccl_coll_name(NcclColl coll);     // "AllReduce", ...
std::string_view nccl_algo_name(NcclAlgo algo);     // "RING", "TREE", "NVLS"
std::string_view nccl_proto_name(NcclProto proto);  // "LL", "LL128", "SIMPLE"

// What NCCL's topology search would find for a communicator, in the model's terms.
struct NcclCommParams {
  int n_ranks = 1;
  int n_nodes = 1;  // ranks per node = n_ranks / n_nodes (integer division, as NCCL)
  GpuArch arch = GpuArch::kVolta;
  NcclIntraLink intra = NcclIntraLink::kNvLink;
  int channels = 1;                      // rings (channels) NCCL builds
  double intra_bw_per_channel_GBps = 0;  // one channel inside a node (GB/s = 1e9 B/s); with one
                                         // GPU per node, the GPU <-> NIC path
  double inter_bw_per_channel_GBps = 0;  // one channel across nodes (network); 0 if n_nodes == 1
  // The NVLS graph (Hopper GPUs of one node on an NVSwitch; 0 channels: none, as with
  // NCCL_NVLS_ENABLE=0): one channel per GPU (its head), and the search's bwIntra and bwInter.
  int nvls_channels = 0;
  double nvls_bw_intra_GBps = 0;
  double nvls_bw_inter_GBps = 0;
};

struct NcclEstimate {
  NcclAlgo algo = NcclAlgo::kRing;
  NcclProto proto = NcclProto::kSimple;
  double latency_us = 0;  // the model's latency term
  double algbw_GBps = 0;  // the model's algorithm bandwidth (infinite for a single rank)
  double time_us = 0;     // latency_us + bytes / (1000 * algbw_GBps)
};

// Time of one collective of `bytes` (the nccl-tests "size": total buffer bytes) for every enabled
// (algorithm, protocol), in NCCL's order (Tree before Ring; LL, LL128, Simple). Tree only for
// AllReduce; LL128 only on NVLink. A single rank: one entry, time 0 (a local copy). bytes == 0:
// the latency only. Throws InputError on inconsistent parameters.
std::vector<NcclEstimate> nccl_estimates(NcclColl coll, std::uint64_t bytes,
                                         const NcclCommParams& p);

// NCCL's choice: the first estimate of minimum time.
NcclEstimate nccl_predict(NcclColl coll, std::uint64_t bytes, const NcclCommParams& p);

// How NCCL crosses servers: its net transport. NCCL takes IB verbs wherever libibverbs finds an
// active port, else its socket transport (src/init.cu initNet, v2.4.2-1 to v2.4.8-1 alike; a net
// plugin aside). Sockets run over the IP interfaces NCCL finds (src/include/socket.h
// findInterfaces: NCCL_SOCKET_IFNAME, else every "ib*" interface, else any but docker and lo),
// one TCP connection per channel and direction (src/transport/net_socket.cu: one fd per comm;
// v2.4.8 splits a connection over several sockets and threads only on AWS), through host memory
// (NCCL_PTR_HOST only: no GPUDirect RDMA).
enum class NcclNetTransport { kIb, kSocket };
struct NcclNet {
  NcclNetTransport transport = NcclNetTransport::kIb;
  // Sockets: how many of a server's NICs carry an IP interface NCCL finds (its first ones).
  int socket_interfaces = 1;
};
std::string_view nccl_net_name(NcclNetTransport transport);  // "ib", "socket"

// Derives NcclCommParams for the ranks `ranks` (topology rank ids, e.g. all GPUs, or the GPUs of
// one server). n_nodes = distinct servers. Per server, over the communicator's GPUs in it:
//   - GPUs on an NVSwitch: NVLink; channels = per-GPU NVSwitch bandwidth / 25 GB/s (one NVLink
//     2/3/4 link per direction), rounded, at least 1; per-channel bw = port bandwidth / channels,
//     at most what NCCL's search takes one NVLink to carry (src/graph/topo.h: 20.0 GB/s for
//     Volta and Ampere, 20.6 for Hopper: the protocol's ~20 % overhead).
//   - point-to-point NVLink (DGX-1): NVLink if at least one ring exists; channels = the number of
//     edge-disjoint directed Hamiltonian cycles packed over the GPUs (pack_directed_rings), an
//     NVLink of c links offering c units per direction; per-channel bw = one link's bandwidth,
//     taken as the smallest GPU-GPU NVLink channel bandwidth of the server, at most NCCL's
//     per-NVLink figure as above.
//   - otherwise PCIe: 1 channel at the bottleneck of the GPU <-> host CPU path.
// Across the communicator's servers the smallest channel count and bandwidth are taken (PCIe if
// any server is). Inter-node per-channel bw = the server's NIC bandwidth (min of the NIC's two
// directions) summed over its NICs, divided by channels (NCCL spreads channels over NICs); the
// fabric beyond the NICs is assumed non-blocking. Across servers NCCL 2.4 runs at most one ring
// per network card of a node, doubled where the nodes use NVLink (channels = 2 x min(rings inside
// a node, cards), at most 16). Over sockets (`net`), only the server's first
// net.socket_interfaces NICs count, a channel's connection carries at most the NICs' per-stream
// bandwidth (topo::LinkParams::stream_bandwidth_Bps), and the channels that leave a node through
// one GPU (a ring and its duplicate) share that much, one proxy thread's. Throws InputError on
// bad rank ids, or if servers must be joined but have no NIC.
NcclCommParams nccl_params_from_topology(const topo::Topology& topology,
                                         const std::vector<int>& ranks, GpuArch arch,
                                         const NcclNet& net = {});

// The most edge-disjoint directed Hamiltonian cycles over n nodes, where capacity[i][j] is the
// number of cycles that may use the directed edge i -> j (a cycle uses each of its edges once).
// Deterministic depth-first search with backtracking; for large dense graphs the search stops
// after a fixed budget and returns the best packing found. 0 if n < 2 or no cycle exists.
int pack_directed_rings(const std::vector<std::vector<int>>& capacity);

}  // namespace adaptsim::train
