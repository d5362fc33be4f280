#pragma once
// What a testbed consists of, computed from a topology without touching the machine: names,
// addresses, the traffic-control settings of every shaped link, and the ordered `ip`/`tc`
// commands that build it. Testbed (testbed.h) executes a plan; tests check plans without root.
//
// Model (one Linux host emulating a cluster):
//   server i  -> network namespace "<prefix>-h<i>" with one interface eth0, address
//                10.<x>.<1 + i/250>.<1 + i%250>/16, the other end of a veth pair "<prefix>-v<i>"
//                plugged into its switch bridge;
//   switch    -> one bridge "<prefix>-br";
//   fat_tree  -> one bridge per leaf "<prefix>-l<k>" (servers_per_leaf servers each) and one
//                spine bridge "<prefix>-sp", every leaf joined to it by a veth pair
//                "<prefix>-u<k>a" (leaf end) / "<prefix>-u<k>b" (spine end). A single spine bridge
//                stands in for all `spines` (parallel bridges would make an L2 loop), so the pair
//                is capped at spines x uplink_bandwidth: the leaf's whole uplink capacity, as if
//                ECMP spread flows perfectly. Oversubscription is preserved.
//   wan       -> one bridge per region with servers "<prefix>-l<k>" and a hub bridge
//                "<prefix>-sp", every region joined to the hub by a veth pair "<prefix>-u<k>a"
//                (region end) / "<prefix>-u<k>b" (hub end). The WAN link between regions j and k
//                is two classes, one on each region's end (traffic to the other region, told by
//                its destination address), each capped at the link's bandwidth and shared fairly
//                by the region's sending hosts; the hub forwards what the regions' ends let
//                through. Regions whose simulated path is not their direct link, a WAN link with
//                a loss or with a latency the testbed cannot add (more than 1 ms) are refused.
//
// Shaping: a link's cap is enforced on the egress of the sending end, so each direction is its
// own queue like the full-duplex links of the simulator: host egress (upstream) on eth0 inside the
// namespace, host ingress on "<prefix>-v<i>" (bridge towards host), uplinks on both ends (leaf end:
// leaf -> spine, spine end: spine -> leaf), there shared fairly among the leaf's hosts.
// Latency is not emulated (no netem on this kernel); the paths add only the real stack's RTT.

#include <cstdint>
#include <string>
#include <vector>

#include "sim/core/time.h"
#include "sim/topo/cluster_spec.h"

namespace adaptsim::testbed {

// The longest interface name Linux accepts (IFNAMSIZ - 1).
inline constexpr std::size_t kMaxInterfaceName = 15;

// How one direction of a link is shaped:
//   tc qdisc add dev D root handle 1: htb default 1
//   tc class add dev D parent 1: classid 1:1 htb rate R ceil R burst B cburst B quantum Q
//   tc qdisc add dev D parent 1:1 handle 10: bfifo limit L
// htb rather than tbf because its class takes packets of any size (GSO super-packets of up to
// 64 KiB cross veths) and the leaf FIFO's depth can be set apart from the burst.
struct Shaping {
  double rate_Bps = 0;
  // Tokens the class may bank: the longest burst at line rate above the cap. max(1 ms at the rate,
  // 64 KiB): one ms keeps the cap exact on any window of ~10 ms or more, and one GSO super-packet
  // (64 KiB) must fit or large sends stall.
  std::uint64_t burst_bytes = 0;
  // Bytes a class sends per round; one class, so only needs to cover a GSO super-packet. Setting
  // it explicitly avoids htb's rate/10 default, which exceeds the kernel's 200000 limit above
  // 16 Mbit/s and draws "quantum is big" warnings.
  std::uint64_t quantum_bytes = 0;
  // Depth of the FIFO behind the shaper, as queueing time at the rate (queue_delay) but at least
  // four 64 KiB super-packets. A time-sized buffer (instead of txqueuelen = 1000 packets, 60 ms at
  // 200 Mbit/s) bounds the RTT inflation under load, like a switch port's buffer.
  std::uint64_t queue_limit_bytes = 0;
};

Shaping make_shaping(double rate_Bps, TimeNs queue_delay_ns);

// The tc commands for one shaped device; `netns` empty for the root namespace.
std::vector<std::vector<std::string>> tc_shaping_commands(const std::string& netns,
                                                          const std::string& device,
                                                          const Shaping& shaping);

// The tc commands that change a device's shaping (tc_shaping_commands') to `shaping` in place:
// the class's rate and burst, the FIFO's depth. Packets in flight stay queued.
std::vector<std::vector<std::string>> tc_change_shaping_commands(const std::string& netns,
                                                                 const std::string& device,
                                                                 const Shaping& shaping);

// Shaping shared fairly among the hosts behind a link (the fat tree's leaf uplinks): under the
// capped class 1:1, one htb class per host (rate cap/n, ceil cap, equal quanta) fed by a u32
// match on the host's address (source when the host sends through the link, destination when it
// receives), plus a default class 1:2 for ARP and strays. Backlogged hosts get equal shares by
// htb's round robin among siblings and an idle host's share is borrowed, i.e. max-min among the
// hosts as in the simulator. A plain FIFO would leave the split to TCP: two flows through one
// 200 Mbit/s FIFO split anywhere from 23/169 to 96/95 Mbit/s over 2 s on the build machine.
std::vector<std::vector<std::string>> tc_fair_shaping_commands(
    const std::string& netns, const std::string& device, const Shaping& shaping,
    const std::vector<std::string>& host_ips, bool match_source);

// "200000000bit": tc's exact bit rate.
std::string tc_rate(double rate_Bps);

struct PlannedHost {
  std::string ns;           // "<prefix>-h<i>"
  std::string ip;           // dotted quad, no prefix length
  std::string bridge_port;  // root-namespace end of the veth, "<prefix>-v<i>"
  std::string bridge;       // the switch or leaf bridge it is plugged into
  double egress_Bps = 0;    // host -> network (the NIC's egress cap, or its bandwidth)
  double ingress_Bps = 0;   // network -> host (the NIC's bandwidth)
};

// One direction of a WAN link (regions `from` -> `to`): a class on `from`'s region end, capped at
// the link's bandwidth, shared fairly by the sending hosts, taking the packets to `to`'s hosts.
struct PlannedWanLink {
  std::string device;  // the `from` region's uplink end
  std::string from, to;
  double bandwidth_Bps = 0;
  std::vector<std::string> src_ips, dst_ips;
};

// The tc commands of one region end's WAN classes (every link leaving the region): under an htb
// root, a class per destination region at its link's bandwidth, under it one class per sending
// host (rate cap/n, ceil cap), each fed by u32 matches on (source host, destination host), and a
// default class for ARP and strays at line rate.
std::vector<std::vector<std::string>> tc_wan_shaping_commands(
    const std::string& device, const std::vector<PlannedWanLink>& links, TimeNs queue_delay_ns);

struct PlannedUplink {
  std::string leaf_bridge, spine_bridge;
  std::string leaf_end, spine_end;  // veth ends: leaf_end is a port of leaf_bridge
  double bandwidth_Bps = 0;         // per direction, shared fairly by the leaf's hosts
  std::vector<std::string> leaf_host_ips;
};

// Objects a testbed creates, recorded in its state file before they are made.
enum class ObjectKind { kNetns, kLink };
struct PlannedObject {
  ObjectKind kind = ObjectKind::kLink;
  std::string name;
  friend bool operator==(const PlannedObject&, const PlannedObject&) = default;
};

// One command of the build; `creates` is set for the command that makes a new object.
struct PlanStep {
  std::vector<std::string> argv;
  bool creates_object = false;
  PlannedObject object;
};

struct PlanOptions {
  std::string prefix = "adaptsim";
  std::uint8_t subnet_octet = 213;  // x of 10.x.0.0/16
  TimeNs queue_delay_ns = 5 * kNsPerMs;
};

struct TestbedPlan {
  std::string prefix;
  std::string subnet;  // "10.x.0.0/16"
  topo::FabricKind fabric = topo::FabricKind::kSwitch;
  std::vector<std::string> bridges;  // switch: one; fat tree: leaves then the spine
  std::vector<PlannedHost> hosts;
  std::vector<PlannedUplink> uplinks;  // wan: the regions' uplinks to the hub (not shaped)
  std::vector<PlannedWanLink> wan_links;
  TimeNs queue_delay_ns = 0;
  // Probability that a host drops an arriving packet (iptables in its namespace): the loss of
  // the two NIC links a host-to-host packet crosses; 0: no drops, no iptables.
  double input_drop_probability = 0;
  std::vector<PlanStep> steps;  // in execution order
};

// Throws InputError for what the testbed cannot build: a WAN it cannot emulate (above), extra
// hosts beside a WAN, servers without a NIC, an
// invalid prefix (letters and digits only, starting with a letter) or one too long for the
// interface names the topology needs.
TestbedPlan make_plan(const topo::ClusterSpec& spec, const PlanOptions& options);

// The host's address: 10.<x>.<1 + i/250>.<1 + i%250>.
std::string host_address(std::uint8_t subnet_octet, int host);

// Whether `name` is one of the names a testbed with `prefix` creates (namespace or interface),
// whatever the topology: used to sweep leftovers whose state file is lost.
bool is_testbed_name(const std::string& prefix, const std::string& name);

// Whether the prefix is acceptable (letters and digits, starting with a letter, 1..12 chars);
// the message says why not.
bool valid_prefix(const std::string& prefix, std::string* why);

// An IPv4 network "a.b.c.d/len" in host byte order.
struct Ipv4Net {
  std::uint32_t address = 0;
  int length = 0;
};
// Parses "a.b.c.d/len" or "a.b.c.d" (/32); nullopt-like false when malformed.
bool parse_ipv4_net(const std::string& text, Ipv4Net* out);
bool overlaps(const Ipv4Net& a, const Ipv4Net& b);

// The first x in `candidates` whose 10.x.0.0/16 overlaps none of `in_use` (addresses and routes
// of the root namespace); throws RuntimeFailure when all collide.
std::uint8_t choose_subnet_octet(const std::vector<Ipv4Net>& in_use,
                                 const std::vector<std::uint8_t>& candidates);

// Default candidates: 10.213 .. 10.254, then 10.200 .. 10.212 (rarely used by clouds, docker or
// VPNs, which favour 10.0 - 10.100 and 172.16/12).
std::vector<std::uint8_t> default_subnet_candidates();

}  // namespace adaptsim::testbed
