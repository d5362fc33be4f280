#include "sim/train/nccl_model.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <map>
#include <set>
#include <string>

#include "sim/core/error.h"

namespace adaptsim::train {

GpuArch gpu_arch_of(std::string_view gpu_model) {
  auto has = [&](std::string_view s) { return gpu_model.find(s) != std::string_view::npos; };
  if (has("H100") || has("H200") || has("h100")) return GpuArch::kHopper;
  if (has("A100") || has("a100")) return GpuArch::kAmpere;
  return GpuArch::kVolta;  // NCCL's oldest constant set (K80, P100, V100, T4)
}
namespace {

// ---------------------------------------------------------------------------------------------
// Constants. Index order follows NCCL: algorithm Tree = 0, Ring = 1; protocol LL, LL128, Simple.
// Latencies are NCCL ~2.7 (src/graph/tuning.cc at NVIDIA/nccl commit 01afd20a, FACTS 1.6): the
// KungFu experiments (2020) ran NCCL 2.4-2.7. Bandwidth refinements are the later tuning.cc's
// (PEERS-simulators.md 3.2, NCCL 2.30), which added per-architecture caps.
// ---------------------------------------------------------------------------------------------

constexpr int kTree = 0;
constexpr int kRing = 1;
constexpr int kHwNvLink = 0;
constexpr int kHwPci = 1;
constexpr int kHwNet = 2;
// The most channels NCCL builds (MAXCHANNELS, src/include/core.h: 16 in v2.4.2-1).
constexpr int kMaxChannels = 16;

// baseLat[algo][proto], us (NCCL 2.7 tuning.cc; FACTS 1.6).
constexpr double kBaseLatency_us[2][3] = {{4.4, 4.4, 0.0}, {3.6, 10.0, 8.4}};

// hwLat[hw][algo][proto], us, per hop (NCCL 2.7 tuning.cc; FACTS 1.6). Tree/Simple "is the latency
// of a 256 kB chunk" (tuning.cc comment), hence its size. PCI Tree: FACTS 1.6 lists none; NCCL 2.7
// itself has {1.0, 1.9, 28} (read from tuning.cc at 01afd20a), used here rather than the 2.30
// value {1.0, 1.9, 4.0} of PEERS 3.3, to keep one NCCL version's latencies.
constexpr double kHwLatency_us[3][2][3] = {
    {{0.52, 1.2, 28.0}, {0.47, 1.9, 3.4}},  // NVLink
    {{1.0, 1.9, 28.0}, {1.0, 2.5, 5.7}},    // PCI
    {{5.0, 8.5, 50.0}, {2.7, 4.0, 9.6}},    // NET
};

// llMaxBws, GB/s (PEERS 3.2, NCCL 2.30 tuning.cc): one node, by GPU architecture: Volta 39.0,
// Ampere 87.7, Hopper 141.0; several nodes, by CPU vendor: Intel 39.0 (2 nodes) / 20.4 (> 2). The
// DGX-1 and the KungFu testbeds had Intel CPUs, so the Intel row is used for every multi-node case.
constexpr double kLlMaxBwOneNode_GBps[3] = {39.0, 87.7, 141.0};
constexpr double kLlMaxBwTwoNodes_GBps = 39.0;
constexpr double kLlMaxBwManyNodes_GBps = 20.4;

// Per-channel caps [arch][1 node / 2 nodes / > 2 nodes], GB/s: perChMaxTreeBws,
// perChMaxRingLL128Bws, perChMaxTreeLL128Bws of NCCL tuning.cc (v2.19-era; the Volta/Ampere rows
// are unchanged since their introduction, the Hopper row is the latest seen, {38.7, 41.4, 36.0}).
constexpr double kPerChMaxTreeBw_GBps[3][3] = {
    {26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}};
constexpr double kPerChMaxRingLl128Bw_GBps[3][3] = {
    {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}};
constexpr double kPerChMaxTreeLl128Bw_GBps[3][3] = {
    {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}};

// Protocol efficiencies (PEERS 3.2, NCCL tuning.cc): LL carries 4 B of data per 8 B line (x0.5);
// LL128 120 of 128 B (x0.92 on rings, 120/128 on multi-node trees, 7/9 on single-node trees);
// Tree x0.92 and Tree/LL x1/3.8 are tuning.cc's fitted factors.
constexpr double kRingLlEfficiency = 0.5;
constexpr double kRingLl128Efficiency = 0.92;
constexpr double kTreeEfficiency = 0.92;
constexpr double kTreeLlEfficiency = 1.0 / 3.8;
constexpr double kTreeLl128EfficiencyOneNode = 7.0 / 9.0;
constexpr double kTreeLl128EfficiencyMultiNode = 120.0 / 128.0;

// One NVLink (2.0, 3.0 and 4.0 alike) carries 25 GB/s per direction: V100 6 links = 150 GB/s,
// A100 12 = 300, H100 18 = 450 (FACTS 5.2; NVIDIA/nccl#1374). Used to count NVSwitch channels.
constexpr double kNvLinkPerLink_Bps = 25e9;

// What NCCL's topology search takes one NVLink to carry, by architecture (src/graph/topo.h,
// ncclTopoNVLinkBw, v2.28.9-1: SM70_NVLINK_BW 20.0, SM80_NVLINK_BW 20.0, SM90_NVLINK_BW 20.6 GB/s;
// v2.18.1-1 the same but SM90 20.0): the protocol's overhead on the wire, about 20 % of the 25 GB/s
// line rate ("with the protocol overhead (~20%) NCCL can get an effective NVLink bandwidth of
// 370GB/s", sjeaugey, NVIDIA/nccl-tests#212, on H100's 18 links). A channel's bandwidth inside a
// node is one such link's (the search's bwIntra), so a ring's bus bandwidth is links x this.
// NVLS (NCCL 2.28.9, src/graph/tuning.cc): nvlsEfficiency 0.85 on Hopper (0 before: no NVLS),
// the NVLink hwLat of NVLS/Simple 25 us (base latency 0); src/graph/search.cc: the speeds the
// search tries on Hopper (sm90SpeedArrayIntra, GB/s, fastest first).
constexpr double kNvlsEfficiencyHopper = 0.85;
constexpr double kNvlsLatency_us = 25.0;
constexpr double kSm90SpeedsIntra_GBps[] = {60.0, 50.0, 40.0, 30.0, 24.0, 20.0,
                                            15.0, 12.0, 11.0, 6.0,  3.0};
constexpr int kMaxNvlsArity = 32;  // NCCL_MAX_NVLS_ARITY, src/include/device.h

double nccl_nvlink_Bps(GpuArch arch) {
  switch (arch) {
    case GpuArch::kHopper:
      return 20.6e9;
    case GpuArch::kAmpere:
    case GpuArch::kVolta:
      return 20.0e9;
  }
  return 20.0e9;
}

// pack_directed_rings: bounds on the search, in cycles kept and cycles tried (a DGX-1 needs a few
// hundred tries; the bounds keep a dense 16-GPU graph under a second).
constexpr std::size_t kMaxCycles = 1 << 16;
constexpr long kMaxSearchSteps = 1 << 22;
constexpr long kMaxEnumerateSteps = 1 << 22;

int arch_index(GpuArch arch) {
  return static_cast<int>(arch);
}

// Column of the per-node-count tables: 1 node, 2 nodes, more.
int nodes_index(int n_nodes) {
  return n_nodes == 1 ? 0 : n_nodes == 2 ? 1 : 2;
}

int floor_log2(int x) {  // NCCL's log2i
  int r = 0;
  while (x > 1) {
    x >>= 1;
    ++r;
  }
  return r;
}

void validate(const NcclCommParams& p) {
  auto fail = [](const std::string& what) { throw InputError("NCCL model: " + what); };
  if (p.n_ranks < 1) fail("n_ranks must be >= 1, got " + std::to_string(p.n_ranks));
  if (p.n_nodes < 1 || p.n_nodes > p.n_ranks) {
    fail("n_nodes must be in [1, n_ranks = " + std::to_string(p.n_ranks) + "], got " +
         std::to_string(p.n_nodes));
  }
  if (p.n_ranks == 1) return;
  if (p.channels < 1) fail("channels must be >= 1, got " + std::to_string(p.channels));
  if (!(p.intra_bw_per_channel_GBps > 0)) fail("intra_bw_per_channel_GBps must be > 0");
  if (p.n_nodes > 1 && !(p.inter_bw_per_channel_GBps > 0)) {
    fail("inter_bw_per_channel_GBps must be > 0 across " + std::to_string(p.n_nodes) + " nodes");
  }
}

}  // namespace

std::string_view nccl_coll_name(NcclColl coll) {
  switch (coll) {
    case NcclColl::kAllReduce:
      return "AllReduce";
    case NcclColl::kReduce:
      return "Reduce";
    case NcclColl::kBroadcast:
      return "Broadcast";
    case NcclColl::kAllGather:
      return "AllGather";
    case NcclColl::kReduceScatter:
      return "ReduceScatter";
  }
  return "?";
}

std::string_view nccl_algo_name(NcclAlgo algo) {
  switch (algo) {
    case NcclAlgo::kRing:
      return "RING";
    case NcclAlgo::kTree:
      return "TREE";
    case NcclAlgo::kNvls:
      return "NVLS";
  }
  return "?";
}

std::string_view nccl_proto_name(NcclProto proto) {
  switch (proto) {
    case NcclProto::kLL:
      return "LL";
    case NcclProto::kLL128:
      return "LL128";
    case NcclProto::kSimple:
      return "SIMPLE";
  }
  return "?";
}

std::vector<NcclEstimate> nccl_estimates(NcclColl coll, std::uint64_t bytes,
                                         const NcclCommParams& p) {
  validate(p);
  if (p.n_ranks == 1) {
    return {
        {NcclAlgo::kRing, NcclProto::kSimple, 0.0, std::numeric_limits<double>::infinity(), 0.0}};
  }
  const int n = p.n_ranks;
  const int nodes = p.n_nodes;
  const int ppn = n / nodes;
  const int arch = arch_index(p.arch);
  const int col = nodes_index(nodes);
  const int intra_hw = p.intra == NcclIntraLink::kNvLink ? kHwNvLink : kHwPci;

  // NCCL's busBw = nChannels x graph bw, with graph bw = bwIntra (<= 2 nodes) or bwInter. The
  // search bounds a ring channel by every hop it crosses, the NIC included, so across nodes the
  // channel's bandwidth is min(intra, inter) here whatever the node count.
  const double per_channel_GBps =
      nodes == 1 ? p.intra_bw_per_channel_GBps
                 : std::min(p.intra_bw_per_channel_GBps, p.inter_bw_per_channel_GBps);
  const double bus_bw = p.channels * per_channel_GBps;
  const double ll_max_bw = nodes == 1   ? kLlMaxBwOneNode_GBps[arch]
                           : nodes == 2 ? kLlMaxBwTwoNodes_GBps
                                        : kLlMaxBwManyNodes_GBps;

  const bool allreduce = coll == NcclColl::kAllReduce;
  const int nsteps = allreduce ? 2 * (n - 1)
                     : (coll == NcclColl::kAllGather || coll == NcclColl::kReduceScatter) ? n - 1
                                                                                          : n;
  const int inter_steps = allreduce ? 2 * (nodes - 1) : nodes - 1;

  std::vector<NcclEstimate> out;
  for (int a : {kTree, kRing}) {
    if (a == kTree && !allreduce) continue;  // NCCL 2.7 trees implement AllReduce only
    for (int proto = 0; proto < 3; ++proto) {
      const auto pr = static_cast<NcclProto>(proto);
      // LL128 relies on 128-byte stores arriving whole and in order, which NVLink guarantees and
      // PCIe does not; NCCL enables it by default only on NVLink ("other cases ... may cause
      // silent data corruption", tuning.cc).
      if (pr == NcclProto::kLL128 && p.intra != NcclIntraLink::kNvLink) continue;

      double bw = bus_bw;
      if (a == kRing && pr == NcclProto::kLL) bw = std::min(ll_max_bw, bw * kRingLlEfficiency);
      if (a == kRing && pr == NcclProto::kLL128) {
        bw = std::min(bw * kRingLl128Efficiency, p.channels * kPerChMaxRingLl128Bw_GBps[arch][col]);
      }
      if (a == kTree) {
        bw = std::min(bw * kTreeEfficiency, p.channels * kPerChMaxTreeBw_GBps[arch][col]);
      }
      if (a == kTree && pr == NcclProto::kLL) bw = std::min(bw * kTreeLlEfficiency, ll_max_bw);
      if (a == kTree && pr == NcclProto::kLL128) {
        const double eff = nodes == 1 ? kTreeLl128EfficiencyOneNode : kTreeLl128EfficiencyMultiNode;
        bw = std::min(bw * eff, p.channels * kPerChMaxTreeLl128Bw_GBps[arch][col]);
      }
      // busBw -> algBw: a ring moves nsteps/nRanks of the buffer over each link; a tree AllReduce
      // goes up and down (x0.5).
      const double algbw = a == kRing ? bw * n / nsteps : bw * 0.5;

      const double intra_lat = kHwLatency_us[intra_hw][a][proto];
      const double inter_lat = kHwLatency_us[kHwNet][a][proto];
      double lat = kBaseLatency_us[a][proto];
      if (a == kRing) {
        lat += (nsteps - inter_steps) * intra_lat + inter_steps * inter_lat;
      } else {
        lat += 2 * ((ppn - 1) * intra_lat + floor_log2(nodes) * inter_lat);
      }

      NcclEstimate e;
      e.algo = a == kRing ? NcclAlgo::kRing : NcclAlgo::kTree;
      e.proto = pr;
      e.latency_us = lat;
      e.algbw_GBps = algbw;
      e.time_us = lat + static_cast<double>(bytes) / (1000.0 * algbw);
      out.push_back(e);
    }
  }
  // NVLS, after Tree and Ring in NCCL's order (tuning.cc, NCCL 2.28.9): per channel
  // min(bwIntra x nvlsEfficiency x (nChannels - 1) / nChannels x 2 (an AllReduce pipelines its
  // reduce and its broadcast), bwInter); busBw = nChannels x that; algBw = busBw x n / nsteps;
  // latency the NVLink hwLat alone. Simple protocol, AllReduce, one node.
  if (allreduce && nodes == 1 && p.nvls_channels >= 2) {
    const double ch = p.nvls_channels;
    const double intra = p.nvls_bw_intra_GBps * kNvlsEfficiencyHopper * (ch - 1) / ch * 2.0;
    const double bw = ch * std::min(intra, p.nvls_bw_inter_GBps);
    NcclEstimate e;
    e.algo = NcclAlgo::kNvls;
    e.proto = NcclProto::kSimple;
    e.latency_us = kNvlsLatency_us;
    e.algbw_GBps = bw * n / nsteps;
    e.time_us = e.latency_us + static_cast<double>(bytes) / (1000.0 * e.algbw_GBps);
    out.push_back(e);
  }
  return out;
}

NcclEstimate nccl_predict(NcclColl coll, std::uint64_t bytes, const NcclCommParams& p) {
  const std::vector<NcclEstimate> all = nccl_estimates(coll, bytes, p);
  NcclEstimate best = all.front();
  for (const NcclEstimate& e : all) {
    if (e.time_us < best.time_us) best = e;  // strict: ties keep NCCL's order
  }
  return best;
}

// ---------------------------------------------------------------------------------------------
// Ring packing
// ---------------------------------------------------------------------------------------------

namespace {

class RingPacker {
 public:
  explicit RingPacker(const std::vector<std::vector<int>>& capacity)
      : n_(static_cast<int>(capacity.size())), residual_(n_ * n_, 0) {
    for (int i = 0; i < n_; ++i) {
      for (int j = 0; j < n_; ++j)
        residual_[i * n_ + j] = i == j ? 0 : capacity[i][j];
    }
  }

  int run() {
    std::vector<int> path{0};
    std::vector<bool> used(n_, false);
    used[0] = true;
    enumerate(path, used);
    bound_ = optimistic_bound();
    search(0, 0);
    return best_;
  }

 private:
  // Directed Hamiltonian cycles through node 0, each stored as its n edges (from * n + to).
  void enumerate(std::vector<int>& path, std::vector<bool>& used) {
    if (cycles_.size() >= kMaxCycles || --enumerate_steps_left_ <= 0) return;
    const int u = path.back();
    if (static_cast<int>(path.size()) == n_) {
      if (residual_[u * n_ + 0] > 0) {
        std::vector<int> edges;
        for (int k = 0; k < n_; ++k)
          edges.push_back(path[k] * n_ + path[(k + 1) % n_]);
        cycles_.push_back(std::move(edges));
      }
      return;
    }
    for (int v = 0; v < n_; ++v) {
      if (used[v] || residual_[u * n_ + v] == 0) continue;
      used[v] = true;
      path.push_back(v);
      enumerate(path, used);
      path.pop_back();
      used[v] = false;
    }
  }

  // No packing can exceed the smallest residual out- or in-capacity of a node.
  int optimistic_bound() const {
    int bound = std::numeric_limits<int>::max();
    for (int v = 0; v < n_; ++v) {
      int out = 0, in = 0;
      for (int w = 0; w < n_; ++w) {
        out += residual_[v * n_ + w];
        in += residual_[w * n_ + v];
      }
      bound = std::min({bound, out, in});
    }
    return bound;
  }

  bool fits(const std::vector<int>& edges) const {
    return std::all_of(edges.begin(), edges.end(), [&](int e) { return residual_[e] > 0; });
  }

  // Cycles are taken in non-decreasing index order (a cycle may repeat where capacity allows), so
  // every multiset of cycles is visited once.
  void search(std::size_t first, int count) {
    best_ = std::max(best_, count);
    if (best_ >= bound_ || --steps_left_ <= 0) return;
    if (count + optimistic_bound() <= best_) return;
    for (std::size_t i = first; i < cycles_.size(); ++i) {
      if (--steps_left_ <= 0) return;
      if (!fits(cycles_[i])) continue;
      for (int e : cycles_[i])
        --residual_[e];
      search(i, count + 1);
      for (int e : cycles_[i])
        ++residual_[e];
      if (best_ >= bound_ || steps_left_ <= 0) return;
    }
  }

  int n_;
  std::vector<int> residual_;
  std::vector<std::vector<int>> cycles_;
  int bound_ = 0;
  int best_ = 0;
  long steps_left_ = kMaxSearchSteps;
  long enumerate_steps_left_ = kMaxEnumerateSteps;
};

// What one server contributes: the intra-node part of the communicator's graph.
struct ServerChannels {
  NcclIntraLink intra = NcclIntraLink::kPcie;
  int channels = 1;
  double bw_per_channel_Bps = 0;
  bool nvswitch = false;  // the GPUs reach each other through an NVSwitch
};

// NCCL's NVLS graph on one node (src/graph/search.cc ncclTopoCompute, NCCL 2.28.9): one channel
// per GPU, each with that GPU as its head (minChannels = maxChannels = GPUs, at most
// NCCL_MAX_NVLS_ARITY). The first speed tried is the fastest with speed <= maxBw (a GPU's NVLink
// bandwidth, `link_GBps`) and speed x channels <= totalBw x n / (n - 1); the search then lowers
// it until every channel fits: a channel takes its speed on each GPU's NVSwitch link in each
// direction, twice on its head's (ncclTopoSearchTryNvls), (channels + 1) x speed per link. That
// speed is bwIntra; pass 2 raises bwInter, which no link bounds inside one node (GPU-NVSwitch paths
// count against bwIntra, ncclTopoFollowPath), to the next speeds up while it is below 2 x bwIntra.
void nvls_graph(int gpus, double link_GBps, NcclCommParams& p) {
  const int channels = std::min(gpus, kMaxNvlsArity);
  constexpr int speeds = static_cast<int>(std::size(kSm90SpeedsIntra_GBps));
  const double total = link_GBps * gpus / (gpus - 1);
  int i = 0;
  while (i < speeds - 1 &&
         (kSm90SpeedsIntra_GBps[i] > link_GBps || kSm90SpeedsIntra_GBps[i] * channels > total)) {
    ++i;
  }
  while (i < speeds - 1 && (channels + 1) * kSm90SpeedsIntra_GBps[i] > link_GBps)
    ++i;
  if ((channels + 1) * kSm90SpeedsIntra_GBps[i] > link_GBps) return;  // no NVLS graph
  const double intra = kSm90SpeedsIntra_GBps[i];
  double inter = intra;
  while (i > 0 && inter < 2 * intra)
    inter = kSm90SpeedsIntra_GBps[--i];
  p.nvls_channels = channels;
  p.nvls_bw_intra_GBps = intra;
  p.nvls_bw_inter_GBps = inter;
}

double both_ways_bw(const topo::Topology& t, topo::ChannelId c) {
  const topo::Channel& ch = t.channel(c);
  return std::min(ch.params.bandwidth_Bps, t.channel(ch.reverse).params.bandwidth_Bps);
}

class TopologyView {
 public:
  TopologyView(const topo::Topology& t, GpuArch arch) : t_(t), arch_(arch), out_(t.node_count()) {
    for (topo::ChannelId c = 0; c < t.channel_count(); ++c)
      out_[t.channel(c).from].push_back(c);
  }

  ServerChannels server_channels(int server, const std::vector<int>& ranks) const {
    std::vector<topo::NodeId> gpus;
    for (int r : ranks)
      gpus.push_back(t_.rank_gpu(r));
    ServerChannels sc;
    if (gpus.size() > 1) {
      if (const double port = nvswitch_port_bw(gpus); port > 0) {
        sc.intra = NcclIntraLink::kNvLink;
        sc.channels = std::max(1, static_cast<int>(std::lround(port / kNvLinkPerLink_Bps)));
        sc.bw_per_channel_Bps = std::min(port / sc.channels, nccl_nvlink_Bps(arch_));
        sc.nvswitch = true;
        return sc;
      }
      if (const double unit = nvlink_unit_bw(server); unit > 0) {
        const int rings = pack_directed_rings(nvlink_capacity(gpus, unit));
        if (rings > 0) {
          sc.intra = NcclIntraLink::kNvLink;
          sc.channels = rings;
          sc.bw_per_channel_Bps = std::min(unit, nccl_nvlink_Bps(arch_));
          return sc;
        }
      }
    }
    // PCIe: one channel at the GPU <-> host path's bottleneck (also the GPU <-> NIC path when a
    // node holds one GPU of the communicator).
    double bw = std::numeric_limits<double>::infinity();
    for (int r : ranks) {
      const topo::NodeId gpu = t_.rank_gpu(r), host = t_.rank_host(r);
      bw = std::min(
          {bw, t_.path_bandwidth(t_.route(gpu, host)), t_.path_bandwidth(t_.route(host, gpu))});
    }
    sc.bw_per_channel_Bps = bw;
    return sc;
  }

  // The server's first `count` NICs: how many, the sum of their fabric link bandwidth (min of the
  // two directions), and the smallest per-connection limit among them (infinite: none).
  struct Nics {
    int cards = 0;
    double total_Bps = 0;
    double stream_Bps = std::numeric_limits<double>::infinity();
  };
  Nics nics(int server, int count) const {
    Nics out;
    for (topo::NodeId v = 0; v < t_.node_count() && count > 0; ++v) {
      const topo::Node& node = t_.node(v);
      if (node.kind != topo::NodeKind::kNic || node.server != server) continue;
      double nic = 0;
      for (topo::ChannelId c : out_[v]) {
        const topo::Channel& ch = t_.channel(c);
        if (ch.kind == topo::LinkKind::kPcie) continue;
        nic = std::max(nic, both_ways_bw(t_, c));
        for (const topo::ChannelId d : {c, ch.reverse}) {
          const double s = t_.channel(d).params.stream_bandwidth_Bps;
          if (s > 0) out.stream_Bps = std::min(out.stream_Bps, s);
        }
      }
      out.total_Bps += nic;
      ++out.cards;
      --count;
    }
    return out;
  }

 private:
  bool is_gpu_of(topo::NodeId v, int server) const {
    const topo::Node& n = t_.node(v);
    return n.kind == topo::NodeKind::kGpu && n.server == server;
  }

  // The smallest per-GPU NVSwitch port bandwidth over `gpus`; 0 unless every one has a port.
  double nvswitch_port_bw(const std::vector<topo::NodeId>& gpus) const {
    double port = std::numeric_limits<double>::infinity();
    for (topo::NodeId g : gpus) {
      double mine = 0;
      for (topo::ChannelId c : out_[g]) {
        const topo::Channel& ch = t_.channel(c);
        if (ch.kind == topo::LinkKind::kNvLink &&
            t_.node(ch.to).kind == topo::NodeKind::kNvSwitch) {
          mine = std::max(mine, both_ways_bw(t_, c));
        }
      }
      if (mine == 0) return 0;
      port = std::min(port, mine);
    }
    return port;
  }

  // One NVLink's bandwidth: the smallest GPU-GPU NVLink channel of the server (the topology keeps
  // c parallel links as one channel of c times the bandwidth). 0 if the server has none.
  double nvlink_unit_bw(int server) const {
    double unit = 0;
    for (topo::NodeId v = 0; v < t_.node_count(); ++v) {
      if (!is_gpu_of(v, server)) continue;
      for (topo::ChannelId c : out_[v]) {
        const topo::Channel& ch = t_.channel(c);
        if (ch.kind != topo::LinkKind::kNvLink || !is_gpu_of(ch.to, server)) continue;
        const double bw = ch.params.bandwidth_Bps;
        if (bw > 0 && (unit == 0 || bw < unit)) unit = bw;
      }
    }
    return unit;
  }

  std::vector<std::vector<int>> nvlink_capacity(const std::vector<topo::NodeId>& gpus,
                                                double unit) const {
    const std::size_t k = gpus.size();
    std::vector<std::vector<int>> cap(k, std::vector<int>(k, 0));
    for (std::size_t i = 0; i < k; ++i) {
      for (topo::ChannelId c : out_[gpus[i]]) {
        const topo::Channel& ch = t_.channel(c);
        if (ch.kind != topo::LinkKind::kNvLink) continue;
        const auto j = std::find(gpus.begin(), gpus.end(), ch.to) - gpus.begin();
        if (static_cast<std::size_t>(j) == k) continue;
        cap[i][j] += static_cast<int>(std::lround(ch.params.bandwidth_Bps / unit));
      }
    }
    return cap;
  }

  const topo::Topology& t_;
  GpuArch arch_;
  std::vector<std::vector<topo::ChannelId>> out_;
};

}  // namespace

int pack_directed_rings(const std::vector<std::vector<int>>& capacity) {
  const std::size_t n = capacity.size();
  for (const auto& row : capacity) {
    if (row.size() != n) throw InputError("pack_directed_rings: capacity must be square");
    for (int c : row) {
      if (c < 0) throw InputError("pack_directed_rings: negative capacity");
    }
  }
  if (n < 2) return 0;
  return RingPacker(capacity).run();
}

std::string_view nccl_net_name(NcclNetTransport transport) {
  return transport == NcclNetTransport::kSocket ? "socket" : "ib";
}

NcclCommParams nccl_params_from_topology(const topo::Topology& topology,
                                         const std::vector<int>& ranks, GpuArch arch,
                                         const NcclNet& net) {
  if (net.socket_interfaces < 1) {
    throw InputError("NCCL model: sockets need at least one interface");
  }
  if (ranks.empty()) throw InputError("NCCL model: a communicator needs at least one rank");
  std::map<int, std::vector<int>> by_server;
  std::set<int> seen;
  for (int r : ranks) {
    if (r < 0 || r >= topology.rank_count()) {
      throw InputError("NCCL model: rank " + std::to_string(r) + " is not in topology '" +
                       topology.name + "' (" + std::to_string(topology.rank_count()) + " ranks)");
    }
    if (!seen.insert(r).second) {
      throw InputError("NCCL model: rank " + std::to_string(r) + " is listed twice");
    }
    by_server[topology.rank_server(r)].push_back(r);
  }

  NcclCommParams p;
  p.n_ranks = static_cast<int>(ranks.size());
  p.n_nodes = static_cast<int>(by_server.size());
  p.arch = arch;

  const TopologyView view(topology, arch);
  p.intra = NcclIntraLink::kNvLink;
  p.channels = std::numeric_limits<int>::max();
  double intra_Bps = std::numeric_limits<double>::infinity();
  double nic_Bps = std::numeric_limits<double>::infinity();
  double stream_Bps = std::numeric_limits<double>::infinity();
  int cards = std::numeric_limits<int>::max();
  const bool sockets = net.transport == NcclNetTransport::kSocket;
  for (const auto& [server, server_ranks] : by_server) {
    const ServerChannels sc = view.server_channels(server, server_ranks);
    // NVLS needs Hopper's NVSwitch multicast (search.cc: an NVS node and compute capability
    // >= 9.0); across nodes NCCL runs NVLS Tree instead, not modelled.
    if (sc.nvswitch && arch == GpuArch::kHopper && p.n_nodes == 1) {
      nvls_graph(static_cast<int>(server_ranks.size()), sc.channels * sc.bw_per_channel_Bps / 1e9,
                 p);
    }
    if (sc.intra == NcclIntraLink::kPcie) p.intra = NcclIntraLink::kPcie;
    p.channels = std::min(p.channels, sc.channels);
    intra_Bps = std::min(intra_Bps, sc.bw_per_channel_Bps);
    if (p.n_nodes > 1) {
      const TopologyView::Nics n =
          view.nics(server, sockets ? net.socket_interfaces : std::numeric_limits<int>::max());
      nic_Bps = std::min(nic_Bps, n.total_Bps);
      cards = std::min(cards, n.cards);
      if (sockets) stream_Bps = std::min(stream_Bps, n.stream_Bps);
    }
  }
  p.intra_bw_per_channel_GBps = intra_Bps / 1e9;
  if (p.n_nodes > 1) {
    if (!(nic_Bps > 0)) {
      throw InputError("NCCL model: topology '" + topology.name +
                       "' has servers without a network link, but the communicator spans " +
                       std::to_string(p.n_nodes) + " servers");
    }
    // NCCL 2.4's rings across nodes (src/transport/net.cu netGetRings, v2.4.2-1 and v2.4.8-1):
    // each ring enters and leaves a node through a network card no other ring of that node uses,
    // so at most one ring per card (and per ring found inside the node); with NVLink inside the
    // nodes every ring is then duplicated (src/misc/rings.cu ncclGetRings, "Duplicate the rings
    // in case of multinode+NVLink"), up to MAXCHANNELS = 16 (src/include/core.h).
    const int rings = std::min(p.channels, cards);
    p.channels = p.intra == NcclIntraLink::kNvLink ? std::min(2 * rings, kMaxChannels) : rings;
    // Sockets: a channel's connection moves at most the per-connection limit, and a duplicated
    // ring leaves a node through the same GPU as its original, whose one proxy thread does the
    // socket I/O of both (v2.4.2-1 src/transport.cu: one proxy thread per rank; net_socket.cu
    // sends and receives inline, no helper threads before v2.4.8), so the channels through one
    // boundary GPU share one core's socket throughput, taken as that same limit [D]. NCCL 2.4.2's
    // sockets measured so: 1.85-1.95 GB/s busbw over 32 Gbit/s TCP whether 1, 2, 4 or 8 rings
    // (NVIDIA/nccl#209), where 2.3.7 grew to 3.75. rings <= channels, so the proxy thread's share
    // is also within each connection's limit.
    p.inter_bw_per_channel_GBps = std::min(nic_Bps, stream_Bps * rings) / p.channels / 1e9;
  }
  return p;
}

}  // namespace adaptsim::train
