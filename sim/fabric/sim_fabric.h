#pragma once
// Transport over the simulated network: the simulator's implementation of coll::Transport.
//
// Each rank is placed on an endpoint node: its host CPU (host-staged runtimes such as KungFu's
// TCP layer and MPI: traffic crosses host memory and NICs) or its GPU (device-direct paths, as
// NCCL uses NVLink/PCIe/GPUDirect). Messages between a pair of ranks go through one connection
// that carries them one at a time in send order (a TCP connection per peer pair, as KungFu's
// connection pool keeps), so concurrent chunks to the same peer pipeline instead of all finishing
// together. Each message is one flow on the contended network. A message that arrives before its
// receive is posted waits in the receiver's mailbox, keyed by (source, name).
//
// A message whose buffer is real (a test's data, a control message such as Horovod's negotiation
// or the step agreement) carries its bytes: they are copied at send time and placed at delivery,
// and reductions over real buffers compute real results. Size-only buffers (data == nullptr, the
// simulated gradients) cost time and no memory.

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <boost/container/small_vector.hpp>

#include "sim/coll/transport.h"
#include "sim/net/network.h"

namespace adaptsim::fabric {

enum class Endpoint { kHost, kGpu };

struct SimTransportOptions {
  Endpoint endpoint = Endpoint::kHost;
  // One connection per ordered rank pair carrying messages one at a time (true), or every message
  // its own concurrent flow (false).
  bool serialize_per_peer = true;
  // Fixed sender-side cost per message (LogGP's o): framing, syscalls, scheduling.
  TimeNs per_message_overhead_ns = 0;
  // Serialised connections only: the sender's kernel socket buffer. A send completes (its `done`
  // runs, the sender moves on) once its last byte is in the buffer, i.e. once no more than this
  // many of the connection's bytes up to and including it are still to leave the NIC; 0: only
  // when its last byte left. (Accepted at message granularity: when the message ahead whose
  // last byte leaves brings it within the buffer.) The buffer also bounds the connection's
  // rate: a byte stays in it until acknowledged, so no more than this many are in flight and a
  // connection between two hosts sends at most socket_buffer_bytes / RTT (the bandwidth-delay
  // product; RFC 7323 section 1), which matters where round trips are long (WAN links).
  double socket_buffer_bytes = 0;
  // Keep every message's transmission (SimFabric::transmissions): per-connection traces.
  bool record_transmissions = false;
  // Host endpoints only: each rank's transport is one thread (adaptsim's hw/tcp runs a rank's
  // sockets, and its copies, on one event loop: hw/tcp/runtime.h), so everything the rank sends
  // and receives shares that thread's copy rate, one resource per rank on both ends of every
  // transfer. The rate is the host's loopback stream bandwidth (topo::Node, from
  // server.cpu.loopback_bandwidth or a calibration's loopback p2p fit): a ping-pong moves one
  // stream through one thread on each side. false: a rank's sends and receives are limited by
  // the network alone (KungFu's Go runtime runs each connection on its own goroutine).
  bool one_transport_thread = false;
  // With one_transport_thread: the CPU cores of each host (0: not modelled). A transfer between
  // two ranks of one host is then also CPU work on that host: its sender's and its receiver's
  // transport threads each run a core's worth per loopback_bandwidth of bytes, so the transfer
  // crosses the host's CPU resource, of capacity host_cores x loopback_bandwidth / 2 (transfer
  // bytes per second). The environment puts its compute on the same resource (SimFabric::
  // host_cpu), so the host's cores are shared among compute and transport threads (max-min per
  // flow: an approximation of the kernel's fair share per thread).
  int host_cores = 0;
  // Random packet loss on the path (links' `loss`): how TCP recovers a message whose last
  // segment is lost (TailLoss, below).
  struct TailLoss {
    bool enabled = true;
    // TCP_RTO_MIN (include/net/tcp.h), the floor of Linux's retransmission timeout; this
    // machine's net.ipv4.tcp_rto_min_us reads 200000.
    TimeNs rto_min_ns = 200'000'000;
    // TCP_TIMEOUT_MIN, 2 jiffies: 8 ms at CONFIG_HZ=250 (Debian's kernels; /proc/config.gz of
    // the testbed's kernel here).
    TimeNs probe_min_ns = 8'000'000;
    // Each message's draws: (seed, src, dst, its number among the messages).
    std::uint64_t seed = 1;
  };
  // On a lossy path a segment lost inside a message is found within a round trip by the SACKs
  // of the segments after it (RACK, Linux's default, net.ipv4.tcp_recovery = 1): the flow's
  // resent bytes and Padhye's window bound stand for that (net::Network::transfer). A lost last
  // segment has no later segment to reveal it. Linux's tail loss probe (tcp_schedule_loss_probe,
  // net/ipv4/tcp_output.c; net.ipv4.tcp_early_retrans = 3) then waits 2 srtt + rto_min_ns once
  // that segment is the only one out (from the ACK of the one before), capped by the
  // retransmission timer, srtt + rto_min_ns (tcp_rtt_estimator floors rttvar at rto_min); with
  // two or more trailing segments lost it waits 2 srtt + probe_min_ns and the probe's SACK
  // reveals the rest (RACK, a round trip). A probe that is lost too leaves the segment to the
  // retransmission timer, which doubles at every further loss (tcp_retransmit_timer). If the
  // connection sends new data before then, that data's SACK reveals the hole a round trip
  // later. A byte stream delivers in order: the connection's later messages wait behind the
  // hole. Each message draws its losses with the path's loss rate per segment (MSS 1448,
  // net::Network::kLossMssBytes); srtt is the path's round trip without queues.
  // Parallel (unserialised) messages are each their own connection, with no later data.
  TailLoss tail_loss;
  // A lossy connection's rate as measured (io::LossRateTable, scripts/testbed-loss.sh): each
  // message of a connection whose path drops a fraction p of its packets is capped at the
  // goodput interpolated linearly in p between the measured points, which hold what one
  // connection's congestion control makes of random loss at the measured link rate and round trip
  // (a measurement of one testbed: valid for paths like it). A path beyond the largest measured p
  // is an InputError naming the file. Empty: none.
  struct LossRates {
    std::string file;
    std::vector<std::pair<double, double>> points;  // (drop probability, bytes/s), first at 0
  };
  LossRates loss_rates;
};

// One message on the network: from its first byte leaving `src` (after the per-message overhead)
// to its last (`end`; it arrives a path latency later).
struct Transmission {
  int src = 0;
  int dst = 0;
  TimeNs start = 0;
  TimeNs end = 0;
  std::size_t bytes = 0;
};

class SimFabric {
 public:
  SimFabric(net::Network& network, SimTransportOptions options);
  ~SimFabric();
  SimFabric(const SimFabric&) = delete;
  SimFabric& operator=(const SimFabric&) = delete;

  int size() const { return static_cast<int>(ranks_.size()); }
  coll::Transport& transport(int rank);
  topo::NodeId endpoint_of(int rank) const;
  // Messages and payload bytes delivered so far (all ranks).
  std::uint64_t messages_delivered() const { return messages_; }
  double bytes_delivered() const { return bytes_; }
  // The CPU resource of `rank`'s host (SimTransportOptions::host_cores) and the rate of one of its
  // cores in the resource's units; unset where the cores are not modelled.
  struct HostCpu {
    net::ResourceId resource = 0;
    double core_Bps = 0;
  };
  std::optional<HostCpu> host_cpu(int rank) const;
  // Folds the fabric onto server 0, where that is exact: the topology's rank-holding servers are
  // interchangeable (topo::server_symmetry) and every route between two ranks is the only
  // shortest one; nothing in the options tells ranks apart (a transport thread per rank, loss,
  // recorded transmissions) and nothing is on the network yet. Then a collective whose ranks
  // relate by `symmetry` (coll::AllReduce::rank_symmetry; kXor also needs a power of two ranks
  // and of ranks per server) does on every server what it does on server 0, at the same times:
  // only server 0's ranks need run it. Each of their flows crosses server 0's counterparts of
  // its channels (net::Network::fold_channels), sharing them as it and its images share theirs,
  // and a message to rank d arrives at rank d mod g (g ranks per server) from the sender moved
  // by the same shift (or xor) that brings d there: the image of it that server 0 receives.
  // Returns g, or 0 (the fabric unchanged) where the run cannot be folded; a fabric folded once
  // answers g again for the same symmetry and throws std::logic_error for another. Exactness is
  // tested against unfolded runs (tests/run/fold_test.cpp).
  int fold_servers(coll::RankSymmetry symmetry);
  // Every message's transmission so far, in the order their last bytes left
  // (SimTransportOptions::record_transmissions; empty otherwise).
  const std::vector<Transmission>& transmissions() const { return transmissions_; }
  // How many message names have ids now (tests: they are forgotten when none is in use).
  std::size_t names_known() const { return name_ids_.size(); }

 private:
  class RankTransport;
  struct Message {
    int src = 0;
    int dst = 0;
    std::uint32_t name = 0;  // its name's id (hold_name)
    coll::ConstBytes data;
    std::vector<std::byte> snapshot;  // copy of the payload when data is real
    coll::Callback on_sent;
    std::uint64_t seq = 0;   // its number among the fabric's messages, from 0 (in post order)
    TimeNs repaired_at = 0;  // unserialised: when its lost last segment arrives again (0: none)
  };
  // A FIFO on a vector: nothing allocated while empty (std::deque allocates ~600 bytes at
  // construction), storage reused once drained.
  template <class T>
  struct Fifo {
    std::vector<T> items;
    std::size_t head = 0;
    bool empty() const { return head == items.size(); }
    T& front() { return items[head]; }
    template <class... Args>
    void emplace_back(Args&&... args) {
      items.emplace_back(std::forward<Args>(args)...);
    }
    void pop_front() {
      if (++head == items.size()) {
        items.clear();
        head = 0;
      } else if (head >= 64 && 2 * head >= items.size()) {
        items.erase(items.begin(), items.begin() + static_cast<std::ptrdiff_t>(head));
        head = 0;
      }
    }
  };
  struct Connection {
    Fifo<Message*> queue;
    bool busy = false;
    double posted_bytes = 0;       // cumulative bytes posted on this connection
    double transmitted_bytes = 0;  // cumulative bytes of messages whose last byte left
    // Posted messages whose send has not completed yet, in order, with their cumulative end.
    Fifo<std::pair<Message*, double>> unaccepted;
    // Messages whose last segment was lost and has not arrived again, by seq, with when it
    // will (SimTransportOptions::tail_loss): earlier if the connection sends new data first.
    struct Hole {
      std::uint64_t seq = 0;
      TimeNs repaired_at = 0;
    };
    std::vector<Hole> holes;
    std::vector<Message*> held;  // arrived behind a hole, in order
    bool blocked(std::uint64_t seq) const {
      return std::any_of(holes.begin(), holes.end(), [&](const Hole& h) { return h.seq <= seq; });
    }
    bool idle() const {
      return !busy && queue.empty() && unaccepted.empty() && holes.empty() && held.empty();
    }
  };
  using ConnectionKey = std::pair<int, int>;

  // Messages come from a pool the fabric owns (every one it made, for its whole life; the free
  // ones listed): a message allocates nothing per send once the pool and its strings and
  // snapshots have grown to the run's needs.
  Message* new_message();
  void free_message(Message* m);
  // Message names by id, so that the mailboxes match integers: a name used by a message in
  // flight, an arrival or a posted receive is held (its count of such uses above zero); when
  // none is held the ids are forgotten (names such as Horovod's per-cycle ones would otherwise
  // pile up over a long run), at most once the table has grown past a bound.
  std::uint32_t hold_name(std::string_view name);
  void release_name();
  // The id of a name in use, if any.
  std::optional<std::uint32_t> name_id(std::string_view name) const;
  struct NameHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, std::uint32_t, NameHash, std::equal_to<>> name_ids_;
  std::uint64_t names_held_ = 0;
  // The connection of an ordered rank pair, made on first use; an idle one is closed (its map
  // node kept for the next connection to open: no allocation per ring step at 1024 ranks).
  Connection& open_connection(const ConnectionKey& key);
  void close_connection(std::map<ConnectionKey, Connection>::iterator it);
  void post(Message* m);
  void pump(Connection& c);
  // Takes the sends now within the socket buffer off `c.unaccepted`; returns their callbacks.
  using Accepted = boost::container::small_vector<coll::Callback, 2>;
  Accepted accept_sends(Connection& c);
  // Delivers m to its receiver and frees it.
  void deliver(Message* m);
  // A message whose flow has completed: delivered, or held behind a lost segment.
  void arrive(Message* m);
  // When m's lost last segment arrives again, if its last segment (sent `sent_at`) is lost.
  std::optional<TimeNs> tail_repair(const Message& m, TimeNs sent_at) const;
  // The connection starts sending new data now: its holes are found a round trip later.
  void new_data_reveals_holes(const ConnectionKey& key, Connection& c);
  void schedule_repair(const ConnectionKey& key, const Connection::Hole& hole);
  void repair(const ConnectionKey& key, std::uint64_t seq);
  // The path's loss rate per packet and its round trip between two ranks' endpoints.
  struct PathLoss {
    double loss = 0;
    TimeNs rtt_ns = 0;
  };
  PathLoss path_loss(int src, int dst) const;
  // SimTransportOptions::loss_rates at the path between two ranks, as the flow's rate (the
  // measured goodput / (1 - p)); uncapped where the path is clean.
  double measured_loss_rate(int src, int dst) const;
  // Starts m's flow now on connection c (null: unserialised); transmitted(m, c) runs when its
  // last byte has left.
  void transmit(Message& m, Connection* c);
  void transmitted(Message& m, Connection* c);

  net::Network& network_;
  SimTransportOptions options_;
  std::vector<std::unique_ptr<RankTransport>> ranks_;
  std::vector<std::unique_ptr<Message>> messages_made_;
  std::vector<Message*> free_messages_;
  std::map<ConnectionKey, Connection> connections_;
  std::vector<std::map<ConnectionKey, Connection>::node_type> closed_connections_;
  int fold_ranks_ = 0;  // fold_servers
  coll::RankSymmetry fold_symmetry_ = coll::RankSymmetry::kNone;
  std::uint64_t messages_ = 0;
  std::uint64_t posted_ = 0;    // messages posted so far (the next one's seq)
  std::size_t open_holes_ = 0;  // holes on all connections (none: nothing is held)
  double bytes_ = 0;
  std::vector<Transmission> transmissions_;
  std::vector<net::ResourceId> transport_threads_;  // per rank (one_transport_thread)
  std::map<topo::NodeId, HostCpu> host_cpu_;        // per host node (host_cores)
};

}  // namespace adaptsim::fabric
