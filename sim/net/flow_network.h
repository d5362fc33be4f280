#pragma once
// Flow-level contention model: active flows share resource capacity max-min fairly.
//
// A resource is one direction of a link (a channel), or a virtual resource such as a device's
// reduction throughput. A flow carries a number of bytes across a fixed set of resources; while it
// is active, it transmits at its max-min fair rate, which changes whenever a flow starts or ends
// or a capacity changes. A flow completes `latency` after its last byte left the source, i.e.
// completion = start + transmission time at the changing rates + path latency.
//
// Recomputation is incremental: a change only re-solves the connected component of flows and
// resources that it touches (flows linked through shared resources), because the max-min
// allocation of one component is independent of every other. Changes within one instant are
// coalesced: they mark resources dirty and a single re-solve runs after the instant's other
// events (no simulated time passes in between, so no byte is sent at a stale rate).
// Rate-neutral changes are not re-solved at all: the allocation is a function of the multiset of
// flow descriptors (resources, ACK resources, cap, share and, under Sharing::kTcp, latency and
// whether the message fits TCP's initial window), so a flow that ends in the same instant as an
// identical one starts (a connection's next queued chunk) leaves every rate as it was; the new
// flow takes the old one's rate. Only the changes left unpaired mark resources dirty.

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/core/event_engine.h"
#include "sim/core/time.h"
#include "sim/net/link_stats.h"
#include "sim/net/maxmin.h"

namespace adaptsim::net {

using ResourceId = std::uint32_t;

// How active flows share capacity.
//   kMaxMin:     max-min fairness by progressive filling over the touched component (exact).
//   kBottleneck: each flow gets the smallest fair share (capacity / flows) along its path,
//                recomputed only for flows on the touched resources. Capacity a flow cannot use
//                because it is limited elsewhere is not redistributed, so rates are lower bounds
//                of max-min's; equal to max-min when every flow's bottleneck is shared only by
//                flows bottlenecked there too (e.g. symmetric collectives). Cost per change is
//                O(flows on the touched links), for very large clusters.
//   kTcp:        how loss-based TCP shares drop-tail buffers. A resource's buffer (its queue
//                delay, set_queue_delay) holds a standing queue while TCP senders could push more
//                into it than it drains: it is saturated and some flow is limited there, not by a
//                paced resource (one without a buffer: a host's own NIC, whose qdisc the sender's
//                stack keeps short) or its own cap, and is larger than TCP's initial window.
//                Loss-based congestion control grows its window until such a buffer is full, so
//                flows through it see its queue delay in their RTT. Rates are max-min weighted by
//                1 / RTT (RTT = 2 x path latency + the standing queues on the path and on the
//                ACKs' path, FlowSpec::ack_resources), as TCP shares a FIFO bottleneck (the
//                RTT-aware sharing of SimGrid's LV08/CM02 models); which buffers stand, and which
//                flows are paced (limited by a paced resource or their cap), is found with unit
//                weights, then the weighted solve runs. A connection's share (FlowSpec::share)
//                multiplies the weight of a flow that is not paced: it is how its window fares
//                in a buffer it fills, while a paced flow gets its NIC's even split
//                (docs/validation.md item 18). A flow that fills no buffer but whose ACKs queue
//                in one sends at most window / RTT, its window the mean of the flows filling
//                that buffer (rate x RTT): a sender whose own port is full (docs/validation.md
//                items 14-16). With no buffers this is plain max-min. Delivery is not delayed
//                by the queues: how full
//                a buffer really is depends on how many bytes the senders still have
//                (docs/validation.md), which a rate model does not track.
enum class Sharing { kMaxMin, kBottleneck, kTcp };

// Sharing::kTcp, optionally: each connection's congestion window (FlowNetwork::set_tcp_windows).
// Flows through a shared FIFO get rates in proportion to their windows, and a window is what the
// connection's history left it: Linux's CUBIC (net/ipv4/tcp_cubic.c) grows it only while it
// limits the sender, i.e. while the connection fills a standing buffer (a bulk flow that never
// idles keeps growing; a training connection that sends in bursts does not), and the buffer's
// overflows cut it. Measured on the testbed (docs/figures.md, Figure 5, "That measurement"):
// four backlogged connections held windows of 1200-2700 segments beside a training connection's
// 400-900 in one FIFO, and took rates in that proportion. Off by default: with every window
// equal the allocation is the plain kTcp one.
struct TcpWindowOptions {
  bool enabled = false;
  // net.ipv4.tcp_slow_start_after_idle (Linux's default 1): a connection idle for longer than its
  // retransmission timeout restarts from its initial window (RFC 5681 section 4.1;
  // tcp_cwnd_restart halves the window for every RTO of idle, down to the initial window).
  bool restart_after_idle = true;
  // CUBIC's HyStart (tcp_cubic.c's hystart=1, detect: delay): slow start ends once the round
  // trip exceeds the connection's smallest by clamp(min/8, 4 ms, 16 ms), from 16 segments up.
  bool hystart = true;
  // The depth of a standing buffer from the windows that fill it (a fluid queue): the segments
  // they hold in flight beyond what the path's round trip carries at the buffer's rate, up to the
  // buffer's size (then it overflows and the windows are cut); and the windows' growth clocked by
  // their ACKs (rate x time / MSS segments acknowledged: +1 each in slow start, at most +1/2 in
  // congestion avoidance) instead of by the round trip. Off (the default): a standing buffer is
  // always full, as without windows. Measured against the live runs in docs/figures.md,
  // Figure 5, "A queue from the windows": not better overall, hence off.
  bool queue_from_windows = false;
};

class FlowNetwork {
 public:
  using Callback = InlineCallback;  // move-only; one or two per message
  static constexpr double kInfiniteBytes = std::numeric_limits<double>::infinity();

  struct FlowId {
    std::uint32_t index = UINT32_MAX;
    std::uint32_t generation = 0;
    bool valid() const { return index != UINT32_MAX; }
  };

  struct FlowSpec {
    std::vector<ResourceId> resources;
    double bytes = 0;  // kInfiniteBytes for a background flow that runs until stop()
    TimeNs latency = 0;
    double rate_cap_Bps = MaxMinSolver::kUncapped;
    // Sharing::kTcp: the flow's relative claim on a contended buffer (its connection's long-run
    // share, 1 = fair); multiplies the 1 / RTT weight where the flow is not paced by its NIC.
    double share = 1;
    // Sharing::kTcp: the resources the flow's ACKs cross (the reverse path). A standing queue
    // there lengthens the flow's RTT, and a flow whose window is bounded (see solve_tcp) then
    // sends at most window / RTT. Only read: the ACKs' bytes are not carried.
    std::vector<ResourceId> ack_resources;
    Callback on_complete;  // runs at completion; not for stopped flows
    // Runs when the last byte has left the source (completion minus the path latency): a
    // connection may start its next message then, as a TCP sender does.
    Callback on_transmitted;
    // The TCP connection the flow is a message of (0: none), whose congestion window it uses
    // under set_tcp_windows; the caller's key, e.g. its (sender, receiver) pair.
    std::uint64_t connection = 0;
  };

  explicit FlowNetwork(EventEngine& engine, Sharing sharing = Sharing::kMaxMin)
      : engine_(engine), sharing_(sharing) {}
  FlowNetwork(const FlowNetwork&) = delete;
  FlowNetwork& operator=(const FlowNetwork&) = delete;

  Sharing sharing() const { return sharing_; }
  // Congestion windows per connection (TcpWindowOptions); Sharing::kTcp only (throws otherwise).
  void set_tcp_windows(const TcpWindowOptions& options);
  const TcpWindowOptions& tcp_windows() const { return tcp_windows_; }
  // A connection's congestion window in segments (its initial window if it never sent), and
  // the number of times its buffer's overflows cut it, for tests and traces.
  double window_segments(std::uint64_t connection) const;
  std::uint64_t window_cuts(std::uint64_t connection) const;
  ResourceId add_resource(double capacity_Bps, std::string name);
  // The drop-tail buffer in front of a resource, as time at its rate (Sharing::kTcp).
  void set_queue_delay(ResourceId r, TimeNs queue_ns) { resources_.at(r).queue_ns = queue_ns; }
  std::size_t resource_count() const { return resources_.size(); }
  // Sharing::kTcp: whether the resource's buffer held a standing queue at its last re-solve.
  bool standing_queue(ResourceId r) const { return resources_.at(r).standing; }
  // Sharing::kTcp: the delay of that standing queue at the last re-solve, ns (the buffer's whole
  // queue_ns unless TcpWindowOptions::queue_from_windows sets it from the windows).
  double queue_delay_ns(ResourceId r) const { return resources_.at(r).queue_delay_ns; }
  const std::string& resource_name(ResourceId r) const { return resources_[r].name; }
  double capacity(ResourceId r) const { return resources_[r].capacity; }
  // Changes a capacity now; the rates of every flow in the touched component are recomputed.
  void set_capacity(ResourceId r, double capacity_Bps);

  FlowId start(FlowSpec spec);
  // The same, taking spec's callbacks and copying its resource lists, so that a caller starting
  // many flows reuses its vectors (Network::transfer).
  FlowId start_from(FlowSpec& spec);
  // Removes an active flow without running its completion callback (background traffic).
  // Returns false if the flow already finished or was stopped.
  bool stop(FlowId id);

  // Current rate of an active flow (bytes/s), 0 if it is not transmitting.
  double rate(FlowId id) const;
  std::size_t active_flows() const { return active_count_; }
  // Total bytes each resource has carried so far (for per-link traffic reports).
  double bytes_carried(ResourceId r) const;
  // Hands every interval of bytes a flow carries to `recorder` from now on (null: none); the
  // recorder must outlive its use (simctl run --link-stats, link_stats.h).
  void set_recorder(LinkRecorder* recorder) { recorder_ = recorder; }
  // Work counters, for benchmarks: component re-solves, flows re-rated by them, and flows that
  // started in the place of an identical one and took its rate without a re-solve.
  std::uint64_t solves() const { return solves_; }
  std::uint64_t flows_paired() const { return flows_paired_; }
  // Re-solves done by a local repair instead of a component solve (max-min sharing).
  std::uint64_t repairs() const { return repairs_; }
  std::uint64_t flows_rerated() const { return flows_rerated_; }

 private:
  static constexpr std::uint32_t kNotQueued = UINT32_MAX;
  LinkRecorder* recorder_ = nullptr;
  // TCP's initial window, 10 segments of 1448 payload bytes (RFC 6928; 1500-byte MTU with
  // timestamps). A message no larger leaves in one flight and never grows a window, so it cannot
  // fill a buffer (Sharing::kTcp): control messages do not make standing queues.
  static constexpr double kInitialWindowBytes = 10 * 1448;

  struct Resource {
    double capacity;
    std::string name;
    std::vector<std::uint32_t> flows;      // active (transmitting) flows crossing it
    std::vector<std::uint32_t> ack_flows;  // active flows whose ACKs cross it (ack_resources)
    double carried_bytes = 0;
    TimeNs queue_ns = 0;
    bool standing = false;      // Sharing::kTcp: its buffer holds a standing queue (last solve)
    std::uint32_t filling = 0;  // Sharing::kTcp: flows limited here that fill it (last solve)
    double fill_window = 0;     // Sharing::kTcp solve scratch: sum of its filling flows' windows
                                // per unit share (rate / share × RTT, bytes)
    // Sharing::kTcp solve scratch: the standing queue's delay (queue_ns, or with
    // TcpWindowOptions::queue_from_windows what the windows filling it hold beyond the path).
    double queue_delay_ns = 0;
    std::uint32_t stamp = 0;
    // Progressive-filling scratch, valid while stamp == the current solve's stamp.
    double remaining = 0;
    double unfrozen_weight = 0;  // sum of the weights of its unfrozen flows
    std::uint32_t unfrozen = 0;
    std::uint32_t version = 0;
  };
  struct Flow {
    std::vector<ResourceId> resources;
    double remaining = 0;  // bytes still to transmit as of `updated`
    double bytes = 0;      // the whole message
    double rate = 0;
    double cap = MaxMinSolver::kUncapped;
    TimeNs updated = 0;
    TimeNs latency = 0;
    TimeNs drain_at = kTimeNever;  // when the last byte leaves at the current rate
    Callback on_complete;
    Callback on_transmitted;
    std::uint32_t generation = 0;
    std::uint32_t stamp = 0;
    std::uint32_t heap_pos = kNotQueued;  // position in drain_heap_
    bool transmitting = false;
    bool frozen = false;                       // solve scratch
    double share = 1;                          // FlowSpec::share
    std::vector<ResourceId> ack_resources;     // FlowSpec::ack_resources
    double own_cap = MaxMinSolver::kUncapped;  // FlowSpec::rate_cap_Bps (cap: + window cap)
    double weight = 1;  // solve scratch: (share, or 1 if paced) / RTT under Sharing::kTcp, else 1
    double rtt_ns = 0;  // solve scratch (Sharing::kTcp): RTT with the standing queues it crosses
    bool data_queue = false;  // solve scratch (Sharing::kTcp): its data path crosses one
    // Solve scratch (Sharing::kTcp): limited by its own NIC or its cap (last marking).
    bool paced = false;
    bool in_use = false;
    bool pending_start = false;  // started in this instant, not yet rated
    bool fresh = false;          // started unpaired in this instant (reallocate scratch)
    std::uint32_t pos = 0;       // solve scratch: position in comp_flows_
    // The resource it froze at in the last solve that rated it (UINT32_MAX: its cap): where
    // max-min's bottleneck condition is checked for it (repair_locally).
    ResourceId bottleneck = UINT32_MAX;
    std::uint32_t window = UINT32_MAX;  // its connection's window (set_tcp_windows), or none
  };
  // A connection's congestion window (TcpWindowOptions), in segments of kMss bytes, with the
  // state of Linux's CUBIC that moves it (tcp_cubic.c: bictcp_update, hystart_update,
  // cubictcp_recalc_ssthresh, cubictcp_cwnd_event) and tcp_cwnd_restart's.
  struct Window {
    double cwnd = 10;  // RFC 6928's initial window
    double ssthresh = std::numeric_limits<double>::infinity();
    double min_rtt_ns = std::numeric_limits<double>::infinity();
    double srtt_ns = 0;
    double grow_rtt_ns = 0;  // the round trip at which it grows (note_growing)
    double ack_rate = 0;     // bytes/s its ACKs acknowledge while it grows (its flow's rate)
    double w_last_max = 0;   // CUBIC's last_max_cwnd
    double origin = 0;       // bic_origin_point
    double k_s = 0;          // bic_K
    double w_est = 0;        // the Reno-friendly estimate (tcp_friendliness)
    TimeNs epoch = -1;       // epoch_start (-1: none)
    TimeNs updated = 0;      // grown up to here
    TimeNs idle_since = -1;
    TimeNs last_cut = -1;
    std::uint32_t active = 0;  // its flows in flight
    std::uint32_t flow = 0;    // its latest flow (the tick re-solves there)
    std::uint64_t cuts = 0;
    bool growing = false;  // it limited its sender at the last solve (filled a standing buffer)
  };
  // A flow that ended or started in the current instant, with what its rate depends on.
  struct Change {
    std::uint64_t key;   // hash of the descriptor (equal descriptors, equal keys)
    std::uint32_t flow;  // started: the flow; ended: UINT32_MAX
    std::uint32_t generation;
    std::uint32_t begin;  // ended: its resources then ACK resources in ended_resources_
    std::uint32_t n_resources;
    std::uint32_t n_ack;
    double cap;
    double share;
    TimeNs latency;
    bool small;
    double rate;            // ended: its rate until now
    ResourceId bottleneck;  // ended: Flow::bottleneck
    bool paired;
  };

  struct FillItem {
    double share;
    std::uint32_t id;       // resource, or flow for a rate-cap item
    std::uint32_t version;  // resource version (stale entries are skipped)
    bool cap;               // true: a flow's own rate cap
  };

  void settle(Flow& f);  // accounts bytes sent since f.updated at f.rate
  // Records a flow that starts (transmitting) or ends (before detach) in this instant.
  void note_started(std::uint32_t index);
  void note_ended(std::uint32_t index);
  Change describe(const Flow& f) const;
  // Pairs ended and started flows with equal descriptors (the started one takes the rate) and
  // marks the resources of the rest dirty.
  void pair_changes();
  // The level at which resource r saturates with its fresh flows (see pair_changes).
  double saturation_level(ResourceId r);
  // Max-min only: re-solves the flows on the dirty resources, and those the change reaches,
  // holding every other rate; false if it reached too far (then the component is solved).
  bool repair_locally();
  void schedule_resolve();
  // Marks resources as changed and schedules the coalesced re-solve for this instant.
  void touch(std::span<const ResourceId> resources);
  void reallocate();
  void reallocate_bottleneck();
  // Re-solves every component the dirty resources reach (above the restart level).
  void solve_components();
  void apply_rate(std::uint32_t index, double rate);
  void fill_component();  // progressive filling over comp_flows_/comp_resources_ -> new_rates_
  void solve_tcp();       // Sharing::kTcp: standing queues, RTT weights, weighted filling
  // set_tcp_windows: a flow starting or ending on its connection's window; growing the windows of
  // the component's flows up to now, cutting those whose buffer overflows, and their weights'
  // factors (window over the mean window of the flows filling the same buffer); after a solve,
  // which windows grow until the next one, and the tick that re-solves while any does.
  void attach_window(std::uint32_t index, std::uint64_t connection);
  void detach_window(Flow& f);
  void grow(Window& w, TimeNs now);
  void cut(Window& w);
  void update_windows();
  // Per resource of the component, the windows of the flows filling it (window_sum_, _count_,
  // from filling_pairs_) and the smallest round trip without queues among them (window_base_).
  void sum_filling_windows();
  // Each standing buffer's queue delay (Resource::queue_delay_ns) for the RTTs of solve_tcp.
  void set_queue_delays();
  void note_growing();
  void on_window_tick();
  static constexpr double kMss = 1448;
  void mark_standing_queues();
  void on_drained(std::uint32_t index);
  void detach(std::uint32_t index);
  void release(std::uint32_t index);

  // Drain-time heap: one engine event for the earliest drain instead of one per flow, so that
  // re-rating a flow costs a heap update, not an event cancel + reschedule.
  bool drain_less(std::uint32_t a, std::uint32_t b) const;
  void drain_update(std::uint32_t index);  // insert, move or (drain_at == never) remove
  void drain_remove(std::uint32_t index);
  void drain_sift_up(std::size_t pos);
  void drain_sift_down(std::size_t pos);
  void drain_swap(std::size_t a, std::size_t b);
  void rearm_drain_event();
  void on_drain_event();

  EventEngine& engine_;
  Sharing sharing_;
  std::vector<Resource> resources_;
  std::vector<Flow> flows_;
  std::vector<std::uint32_t> free_flows_;
  std::size_t active_count_ = 0;
  std::uint32_t stamp_ = 0;
  std::uint64_t solves_ = 0;
  std::uint64_t flows_rerated_ = 0;
  std::uint64_t flows_paired_ = 0;
  std::uint64_t repairs_ = 0;

  std::vector<Change> started_;
  std::vector<Change> ended_;
  std::vector<ResourceId> ended_resources_;
  std::vector<std::uint32_t> fresh_;
  std::vector<double> level_scratch_;
  double restart_level_ = 0;
  // Moving averages of the flow entries a repair and a component solve scan (repair_locally).
  double repair_work_ = 0;
  double solve_work_ = 0;
  std::uint32_t repair_trial_ = 0;
  bool capacity_changed_ = false;

  std::vector<ResourceId> dirty_;
  bool resolve_pending_ = false;

  TcpWindowOptions tcp_windows_;
  std::vector<Window> windows_;
  std::unordered_map<std::uint64_t, std::uint32_t> window_of_;
  std::vector<double> window_factor_;  // solve scratch, by comp position
  std::vector<bool> window_factor_set_;
  std::vector<bool> window_capped_;  // solve scratch: held at window / RTT (solve_tcp)
  std::vector<double> window_sum_;   // solve scratch, by resource
  std::vector<std::uint32_t> window_count_;
  std::vector<double> window_base_;   // solve scratch, by resource (ns)
  std::vector<bool> window_missing_;  // solve scratch, by resource: a filling flow has no window
  bool window_tick_pending_ = false;

  std::vector<std::uint32_t> drain_heap_;
  EventEngine::EventId drain_event_;
  TimeNs drain_event_at_ = kTimeNever;

  // Scratch for reallocate().
  std::vector<std::uint32_t> comp_flows_;
  std::vector<ResourceId> comp_resources_;
  std::vector<ResourceId> queue_;
  std::vector<FillItem> fill_heap_;
  std::vector<double> new_rates_;
  // Sharing::kTcp: (flow, resource) for every flow filling a standing buffer (last marking).
  std::vector<std::pair<std::uint32_t, ResourceId>> filling_pairs_;
};

}  // namespace adaptsim::net
