#include "sim/fabric/sim_fabric.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "sim/core/error.h"
#include "sim/core/flat_index.h"
#include "sim/core/rng.h"
#include "sim/topo/symmetry.h"

namespace adaptsim::fabric {

using coll::Bytes;
using coll::Callback;
using coll::ConstBytes;
using coll::DType;
using coll::ReduceOp;
using coll::Transport;

// One rank's view: its mailbox and its reduction resource.
class SimFabric::RankTransport final : public Transport {
 public:
  RankTransport(SimFabric& fabric, int rank) : fabric_(fabric), rank_(rank) {}

  int rank() const override { return rank_; }
  int size() const override { return fabric_.size(); }
  int host_of(int r) const override { return fabric_.network_.topology().rank_server(r); }

  void send(int peer, const std::string& name, ConstBytes data, Callback done) override {
    if (peer < 0 || peer >= size() || peer == rank_) {
      throw std::invalid_argument("send to invalid peer " + std::to_string(peer));
    }
    Message* m = fabric_.new_message();
    m->src = rank_;
    m->dst = peer;
    m->name = fabric_.hold_name(name);
    m->data = data;
    if (data.data) m->snapshot.assign(data.data, data.data + data.size);
    m->on_sent = std::move(done);
    fabric_.post(m);
  }

  bool arrived(int peer, const std::string& name) const override {
    const std::optional<std::uint32_t> id = fabric_.name_id(name);
    return id && arrived_.find(key(peer, *id)) != nullptr;
  }

  void recv(int peer, const std::string& name, Bytes into, Callback done) override {
    if (const std::optional<std::uint32_t> id = fabric_.name_id(name)) {
      if (Queue<Arrival>* q = arrived_.find(key(peer, *id))) {
        Arrival a = q->pop();
        if (q->empty()) arrived_.close(key(peer, *id));
        fabric_.release_name();  // the arrival's
        place(a, into);
        engine().schedule_after(0, std::move(done));
        return;
      }
    }
    const std::uint32_t id = fabric_.hold_name(name);  // the receive's, until a message matches it
    waiting_.open(key(peer, id)).push({into, std::move(done)});
  }

  void reduce(Bytes out, ConstBytes a, ConstBytes b, DType dtype, ReduceOp op,
              Callback done) override {
    if (out.data && a.data && b.data) {
      reduce_elements(out.data, a.data, b.data, out.size / dtype_size(dtype), dtype, op);
    }
    fabric_.network_.reduce(fabric_.endpoint_of(rank_), static_cast<double>(out.size),
                            std::move(done));
  }

  void copy(Bytes dst, ConstBytes src, Callback done) override {
    if (dst.data && src.data && dst.data != src.data) std::memmove(dst.data, src.data, dst.size);
    engine().schedule_after(0, std::move(done));
  }

  Bytes acquire_scratch(std::size_t size) override {
    auto* p = new std::byte[size];
    return {p, size};
  }
  void release_scratch(Bytes buffer) override { delete[] buffer.data; }

  // Called by the fabric when a message for this rank has fully arrived.
  // The message's name stays held: by its arrival, or until the receive it matches is done.
  void on_arrival(Message& m) {
    const std::uint64_t k = key(m.src, m.name);
    Arrival a{std::move(m.snapshot), m.data.size};
    if (Queue<Waiter>* q = waiting_.find(k)) {
      Waiter w = q->pop();
      if (q->empty()) waiting_.close(k);
      fabric_.release_name();  // the message's
      fabric_.release_name();  // the receive's
      place(a, w.into);
      w.done();
      return;
    }
    arrived_.open(k).push(std::move(a));
  }

 private:
  // A mailbox's key: the peer and the message name's id.
  static std::uint64_t key(int peer, std::uint32_t name) {
    return static_cast<std::uint64_t>(static_cast<std::uint32_t>(peer)) << 32 | name;
  }
  // The entries under one key, oldest first: almost always one (a name is used once per pair and
  // collective), held in place; only more allocate.
  template <class T>
  class Queue {
   public:
    bool empty() const { return !first_; }
    void push(T v) {
      if (!first_) {
        first_.emplace(std::move(v));
      } else {
        rest_.emplace_back(std::move(v));
      }
    }
    T pop() {
      T v = std::move(*first_);
      first_.reset();
      if (!rest_.empty()) {
        first_.emplace(std::move(rest_.front()));
        rest_.pop_front();
      }
      return v;
    }

   private:
    std::optional<T> first_;
    Fifo<T> rest_;
  };
  struct Arrival {
    std::vector<std::byte> payload;
    std::size_t size = 0;
  };
  struct Waiter {
    Bytes into;
    Callback done;
  };

  // A mailbox: the queues by key (FlatIndex) in a pool. A name is used once per pair and
  // collective, so entries come and go with every message; the index and the pool keep their
  // storage.
  template <class T>
  class Mailbox {
   public:
    Queue<T>* find(std::uint64_t k) {
      const std::uint32_t* i = index_.find(k);
      return i ? &items_[*i] : nullptr;
    }
    const Queue<T>* find(std::uint64_t k) const { return const_cast<Mailbox*>(this)->find(k); }
    // The queue for k, made (empty) if absent. Invalidates pointers from find().
    Queue<T>& open(std::uint64_t k) {
      if (Queue<T>* q = find(k)) return *q;
      std::uint32_t item;
      if (!free_items_.empty()) {
        item = free_items_.back();
        free_items_.pop_back();
      } else {
        item = static_cast<std::uint32_t>(items_.size());
        items_.emplace_back();
      }
      index_.insert(k, item);
      return items_[item];
    }
    // Removes k's queue, which must be there and empty.
    void close(std::uint64_t k) { free_items_.push_back(index_.erase(k)); }

   private:
    FlatIndex index_;
    std::vector<Queue<T>> items_;
    std::vector<std::uint32_t> free_items_;
  };

  EventEngine& engine() { return fabric_.network_.engine(); }

  static void place(const Arrival& a, Bytes into) {
    if (a.size != into.size) {
      throw std::logic_error("message of " + std::to_string(a.size) +
                             " bytes received into a buffer of " + std::to_string(into.size));
    }
    if (into.data && !a.payload.empty()) std::memcpy(into.data, a.payload.data(), a.size);
  }

  SimFabric& fabric_;
  const int rank_;
  Mailbox<Arrival> arrived_;
  Mailbox<Waiter> waiting_;
};

SimFabric::SimFabric(net::Network& network, SimTransportOptions options)
    : network_(network), options_(options) {
  const int n = network.topology().rank_count();
  for (int r = 0; r < n; ++r)
    ranks_.push_back(std::make_unique<RankTransport>(*this, r));
  if (!options_.one_transport_thread) return;
  if (options_.endpoint != Endpoint::kHost) {
    throw InputError(
        "transport_threads: one models a host transport (endpoint: host), not GPU "
        "endpoints");
  }
  for (int r = 0; r < n; ++r) {
    const topo::Node& host = network.topology().node(endpoint_of(r));
    if (!(host.loopback_bandwidth_Bps > 0)) {
      throw InputError("transport_threads: one needs the loopback bandwidth of " + host.name +
                       " (its transport thread's copy rate): set server.cpu.loopback_bandwidth "
                       "or apply a calibration with a loopback p2p fit");
    }
    transport_threads_.push_back(network.flows().add_resource(
        host.loopback_bandwidth_Bps, "rank" + std::to_string(r) + ".transport_thread"));
    if (options_.host_cores > 0 && !host_cpu_.contains(endpoint_of(r))) {
      const double core_Bps = host.loopback_bandwidth_Bps / 2;
      host_cpu_[endpoint_of(r)] = {
          network.flows().add_resource(options_.host_cores * core_Bps, host.name + ".cpu"),
          core_Bps};
    }
  }
}

std::optional<SimFabric::HostCpu> SimFabric::host_cpu(int rank) const {
  const auto it = host_cpu_.find(endpoint_of(rank));
  if (it == host_cpu_.end()) return std::nullopt;
  return it->second;
}

SimFabric::~SimFabric() = default;

int SimFabric::fold_servers(coll::RankSymmetry symmetry) {
  if (fold_ranks_ > 0) {
    // Folded already: its ranks' programs must relate as the fold assumed.
    if (symmetry != fold_symmetry_) {
      throw std::logic_error("fold_servers: the fabric is folded for another rank symmetry");
    }
    return fold_ranks_;
  }
  if (symmetry == coll::RankSymmetry::kNone || options_.one_transport_thread ||
      options_.record_transmissions || !options_.loss_rates.points.empty() || network_.has_loss() ||
      network_.share_dispersion() > 0 || network_.flows().tcp_windows().enabled || posted_ > 0 ||
      network_.flows().active_flows() > 0) {
    return 0;
  }
  const topo::Topology& topo = network_.topology();
  std::optional<topo::ServerSymmetry> servers = topo::server_symmetry(topo);
  if (!servers) return 0;
  const int g = servers->ranks_per_server;
  if (symmetry == coll::RankSymmetry::kXor &&
      !(std::has_single_bit(static_cast<unsigned>(size())) &&
        std::has_single_bit(static_cast<unsigned>(g)))) {
    return 0;
  }
  // Server 0's routes to server 1 and back, and within server 0, each the only shortest path:
  // then every server pair's are images of them (no ECMP hash of node ids picks among ties).
  for (int a = 0; a < g; ++a) {
    for (int b = 0; b < g; ++b) {
      const topo::NodeId x = endpoint_of(a), y = endpoint_of(g + b), z = endpoint_of(b);
      if (!topo.route_is_unique(x, y) || !topo.route_is_unique(y, x)) return 0;
      if (x != z && !topo.route_is_unique(x, z)) return 0;
    }
  }
  network_.fold_channels(std::move(servers->representative));
  fold_ranks_ = g;
  fold_symmetry_ = symmetry;
  return g;
}

Transport& SimFabric::transport(int rank) {
  return *ranks_.at(rank);
}

topo::NodeId SimFabric::endpoint_of(int rank) const {
  const auto& topo = network_.topology();
  return options_.endpoint == Endpoint::kHost ? topo.rank_host(rank) : topo.rank_gpu(rank);
}

SimFabric::Message* SimFabric::new_message() {
  if (free_messages_.empty()) return messages_made_.emplace_back(std::make_unique<Message>()).get();
  Message* m = free_messages_.back();
  free_messages_.pop_back();
  return m;
}

std::uint32_t SimFabric::hold_name(std::string_view name) {
  ++names_held_;
  auto it = name_ids_.find(name);
  if (it == name_ids_.end()) {
    it = name_ids_.emplace(std::string(name), static_cast<std::uint32_t>(name_ids_.size())).first;
  }
  return it->second;
}

void SimFabric::release_name() {
  // Forgetting costs the table's size, so only once it is large: a run whose names repeat (a
  // collective's chunks, step after step) keeps them.
  constexpr std::size_t kForgetAbove = 1 << 16;
  if (--names_held_ == 0 && name_ids_.size() > kForgetAbove) name_ids_.clear();
}

std::optional<std::uint32_t> SimFabric::name_id(std::string_view name) const {
  const auto it = name_ids_.find(name);
  if (it == name_ids_.end()) return std::nullopt;
  return it->second;
}

void SimFabric::free_message(Message* m) {
  m->snapshot.clear();
  m->on_sent = nullptr;
  m->repaired_at = 0;
  free_messages_.push_back(m);
}

SimFabric::Connection& SimFabric::open_connection(const ConnectionKey& key) {
  if (const auto it = connections_.find(key); it != connections_.end()) return it->second;
  if (closed_connections_.empty()) return connections_[key];
  auto node = std::move(closed_connections_.back());
  closed_connections_.pop_back();
  node.key() = key;
  // Closed idle: its queues are empty (their storage kept); only the byte counts start over.
  node.mapped().posted_bytes = 0;
  node.mapped().transmitted_bytes = 0;
  return connections_.insert(std::move(node)).position->second;
}

void SimFabric::close_connection(std::map<ConnectionKey, Connection>::iterator it) {
  closed_connections_.push_back(connections_.extract(it));
}

void SimFabric::post(Message* m) {
  m->seq = posted_++;
  if (!options_.serialize_per_peer) {
    network_.engine().schedule_after(options_.per_message_overhead_ns,
                                     [this, m] { transmit(*m, nullptr); });
    return;
  }
  Connection& c = open_connection({m->src, m->dst});
  c.posted_bytes += static_cast<double>(m->data.size);
  c.unaccepted.emplace_back(m, c.posted_bytes);
  c.queue.emplace_back(m);
  // Within the socket buffer at once: the send completes on a later event, not inside send().
  for (Callback& cb : accept_sends(c))
    network_.engine().schedule_after(0, std::move(cb));
  pump(c);
}

SimFabric::Accepted SimFabric::accept_sends(Connection& c) {
  Accepted done;
  while (!c.unaccepted.empty() &&
         c.unaccepted.front().second - c.transmitted_bytes <= options_.socket_buffer_bytes) {
    Message* m = c.unaccepted.front().first;
    c.unaccepted.pop_front();
    if (m->on_sent) done.push_back(std::exchange(m->on_sent, nullptr));
  }
  return done;
}

void SimFabric::pump(Connection& c) {
  if (c.busy || c.queue.empty()) return;
  c.busy = true;
  Message* m = c.queue.front();
  c.queue.pop_front();
  network_.engine().schedule_after(options_.per_message_overhead_ns, [this, &c, m] {
    if (!c.holes.empty()) new_data_reveals_holes({m->src, m->dst}, c);
    transmit(*m, &c);
  });
}

void SimFabric::transmitted(Message& m, Connection* c) {
  const TimeNs now = network_.engine().now();
  if (c == nullptr) {  // unserialised: the message's own connection
    if (const auto at = tail_repair(m, now)) m.repaired_at = *at;
    if (m.on_sent) std::exchange(m.on_sent, nullptr)();
    return;
  }
  // The last byte left: the connection takes the next message while this one is still in
  // flight, and the sends now within the socket buffer (this one at least) complete.
  const ConnectionKey key{m.src, m.dst};
  c->busy = false;
  c->transmitted_bytes += static_cast<double>(m.data.size);
  if (const auto at = tail_repair(m, now)) {
    c->holes.push_back({m.seq, *at});
    ++open_holes_;
    schedule_repair(key, c->holes.back());
  }
  for (Callback& cb : accept_sends(*c))
    cb();
  pump(*c);
  // An idle connection holds nothing a fresh one would not (every posted byte has left: the
  // socket buffer's accounting starts from equal counts either way), so it closes: a cluster
  // keeps the connections in use, not every pair that ever spoke (n^2 at 1024 VMs).
  if (c->idle()) close_connection(connections_.find(key));
}

std::optional<TimeNs> SimFabric::tail_repair(const Message& m, TimeNs sent_at) const {
  const SimTransportOptions::TailLoss& o = options_.tail_loss;
  if (!o.enabled || !network_.has_loss()) return std::nullopt;
  const PathLoss path = path_loss(m.src, m.dst);
  if (!(path.loss > 0)) return std::nullopt;
  // The message's own draws: (seed, src, dst, its number among the fabric's messages).
  std::uint64_t state = mix64(
      o.seed ^ mix64(static_cast<std::uint64_t>(m.src) << 32 | static_cast<std::uint32_t>(m.dst)) ^
      mix64(m.seq + 0x7461696cULL));  // "tail"
  const auto uniform = [&state] {
    state = mix64(state + 0x9e3779b97f4a7c15ULL);
    return static_cast<double>(state >> 11) * 0x1p-53;
  };
  if (uniform() >= path.loss) return std::nullopt;
  const TimeNs rtt = path.rtt_ns;
  const TimeNs rto = rtt + o.rto_min_ns;  // srtt + rttvar floored at rto_min
  const double segments =
      std::max(1.0, std::ceil(static_cast<double>(m.data.size) / net::Network::kLossMssBytes));
  TimeNs probe_at = 0;     // when the probe (the last segment again) is sent
  TimeNs after_probe = 0;  // from the probe's arrival to the hole's last segment's
  if (segments >= 2 && uniform() < path.loss) {
    // Two or more trailing segments lost: the probe is armed with them all out; its SACK shows
    // the others lost (RACK), resent a round trip after the probe arrives.
    probe_at = sent_at + std::min(2 * rtt + o.probe_min_ns, rto);
    after_probe = rtt;
  } else {
    // Only the last is out once the ACK of the one before is in (a round trip after it left;
    // a one-segment message is alone at once).
    probe_at = sent_at + (segments >= 2 ? rtt : 0) + std::min(2 * rtt + o.rto_min_ns, rto);
  }
  // A lost probe: the retransmission timer, armed as the probe leaves, doubling per loss, at
  // most tcp_retries2 (15, Linux's default) times; the connection would fail after that.
  constexpr int kMaxRetransmissions = 15;
  TimeNs resent_at = probe_at;
  TimeNs backoff = rto;
  for (int i = 0; i < kMaxRetransmissions && uniform() < path.loss; ++i, backoff *= 2)
    resent_at += backoff;
  return resent_at + rtt / 2 + (resent_at == probe_at ? after_probe : 0);
}

void SimFabric::new_data_reveals_holes(const ConnectionKey& key, Connection& c) {
  // The new data's first segment is SACKed a round trip from now; RACK then resends what was
  // sent before it and is still missing (its reordering window, min_rtt / 4, has passed), which
  // arrives half a round trip later.
  const TimeNs at = network_.engine().now() + path_loss(key.first, key.second).rtt_ns * 3 / 2;
  for (Connection::Hole& h : c.holes) {
    if (at < h.repaired_at) {
      h.repaired_at = at;
      schedule_repair(key, h);
    }
  }
}

void SimFabric::schedule_repair(const ConnectionKey& key, const Connection::Hole& hole) {
  network_.engine().schedule_at(hole.repaired_at,
                                [this, key, seq = hole.seq] { repair(key, seq); });
}

void SimFabric::repair(const ConnectionKey& key, std::uint64_t seq) {
  // A connection whose holes are all repaired may be gone; a hole whose repair came earlier is.
  const auto it = connections_.find(key);
  if (it == connections_.end()) return;
  Connection& c = it->second;
  const auto h = std::find_if(c.holes.begin(), c.holes.end(),
                              [&](const Connection::Hole& x) { return x.seq == seq; });
  if (h == c.holes.end() || h->repaired_at > network_.engine().now()) return;
  c.holes.erase(h);
  --open_holes_;
  std::size_t n = 0;
  while (n < c.held.size() && !c.blocked(c.held[n]->seq))
    ++n;
  // Taken out first: a delivery may post (and pump) on this connection.
  const std::vector<Message*> ready(c.held.begin(), c.held.begin() + n);
  c.held.erase(c.held.begin(), c.held.begin() + static_cast<std::ptrdiff_t>(n));
  if (c.idle()) close_connection(it);
  for (Message* m : ready)
    deliver(m);
}

double SimFabric::measured_loss_rate(int src, int dst) const {
  const double p = path_loss(src, dst).loss;
  if (!(p > 0)) return net::MaxMinSolver::kUncapped;
  const auto& points = options_.loss_rates.points;
  // iptables keeps a drop probability in 32 bits (testbed-loss.sh prints 0.03959999979 for the
  // 0.0396 of two 2 % links): a path within 1e-6 of a measured probability is at it.
  constexpr double kSameProbability = 1e-6;
  const auto hi = std::lower_bound(points.begin(), points.end(),
                                   std::make_pair(p * (1 - kSameProbability), 0.0));  // >= p
  if (hi == points.end()) {
    const topo::Topology& t = network_.topology();
    throw InputError(options_.loss_rates.file + ": measured up to a drop probability of " +
                     std::to_string(points.back().first) + "; the path " +
                     t.node(endpoint_of(src)).name + " -> " + t.node(endpoint_of(dst)).name +
                     " drops " + std::to_string(p) + " of its packets (measure that loss too)");
  }
  double goodput = hi->second;
  if (hi != points.begin() && hi->first > p * (1 + kSameProbability)) {
    const auto lo = hi - 1;
    goodput = lo->second + (hi->second - lo->second) * (p - lo->first) / (hi->first - lo->first);
  }
  // The table holds what the receiver got; the flow carries the resent packets too
  // (net::Network::transfer sends bytes / (1 - p)).
  return goodput / (1 - p);
}

SimFabric::PathLoss SimFabric::path_loss(int src, int dst) const {
  const topo::NodeId a = endpoint_of(src), b = endpoint_of(dst);
  if (a == b) return {};  // one host's ranks: no network between them
  const double loss = 1 - network_.path_delivery(a, b);
  return {loss, loss > 0 ? network_.round_trip_ns(a, b) : 0};
}

void SimFabric::arrive(Message* m) {
  if (!options_.serialize_per_peer) {
    if (m->repaired_at > network_.engine().now()) {
      network_.engine().schedule_at(m->repaired_at, [this, m] { deliver(m); });
      return;
    }
  } else if (open_holes_ > 0) {
    if (const auto it = connections_.find({m->src, m->dst});
        it != connections_.end() && it->second.blocked(m->seq)) {
      it->second.held.push_back(m);
      return;
    }
  }
  deliver(m);
}

void SimFabric::transmit(Message& m, Connection* c) {
  const TimeNs start = network_.engine().now();
  Message* msg = &m;
  std::array<net::ResourceId, 3> threads{};
  std::span<const net::ResourceId> also;
  const topo::NodeId src = endpoint_of(m.src), dst = endpoint_of(m.dst);
  if (!transport_threads_.empty()) {
    threads = {transport_threads_[m.src], transport_threads_[m.dst], 0};
    also = std::span<const net::ResourceId>(threads.data(), 2);
    // Both ends on one host: the two threads' copying is that host's CPU work.
    if (const auto cpu = src == dst ? host_cpu_.find(src) : host_cpu_.end();
        cpu != host_cpu_.end()) {
      threads[2] = cpu->second.resource;
      also = threads;
    }
  }
  double cap = net::MaxMinSolver::kUncapped;
  if (options_.serialize_per_peer && options_.socket_buffer_bytes > 0 && src != dst) {
    const TimeNs rtt = std::max<TimeNs>(network_.round_trip_ns(src, dst), 1);
    cap = options_.socket_buffer_bytes / (static_cast<double>(rtt) * 1e-9);
  }
  if (!options_.loss_rates.points.empty()) cap = std::min(cap, measured_loss_rate(m.src, m.dst));
  network_.transfer(
      src, dst, static_cast<double>(m.data.size), [this, msg] { arrive(msg); }, cap,
      [this, msg, c, start] {
        if (options_.record_transmissions) {
          transmissions_.push_back(
              {msg->src, msg->dst, start, network_.engine().now(), msg->data.size});
        }
        transmitted(*msg, c);
      },
      also,
      // The pair's one connection (a rank's messages to a peer are one TCP stream).
      (static_cast<std::uint64_t>(m.src) + 1) << 32 | (static_cast<std::uint64_t>(m.dst) + 1));
}

void SimFabric::deliver(Message* m) {
  ++messages_;
  bytes_ += static_cast<double>(m->data.size);
  if (fold_ranks_ > 0) {
    // The image of m that arrives on server 0: sender and receiver moved by what brings the
    // receiver there (for kXor, shift holds only bits above the rank's place on its server).
    const int shift = m->dst - m->dst % fold_ranks_;
    m->src = fold_symmetry_ == coll::RankSymmetry::kXor ? m->src ^ shift
                                                        : (m->src - shift + size()) % size();
    m->dst -= shift;
  }
  ranks_[m->dst]->on_arrival(*m);
  free_message(m);
}

}  // namespace adaptsim::fabric
