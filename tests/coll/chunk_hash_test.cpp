// KungFu's chunking (KUNGFU.md §2.4): a tensor is split by plan.EvenPartition into k parts whose
// lengths differ by at most one, the longer ones first, and chunk "part::<name>[b:e]" runs on the
// graph pair hash(name) mod m, where hash = sum of squared character codes. Observed here through
// a recording Transport over the simulated fabric: which rank acts as each chunk's root.

#include <doctest/doctest.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "sim/coll/allreduce.h"
#include "sim/coll/partition.h"
#include "tests/coll/sim_harness.h"

using namespace adaptsim;
using namespace adaptsim::coll;
using adaptsim::testing::SimCluster;
using adaptsim::testing::switched;

namespace {

// One rank's send and recv calls, in the order the algorithm made them.
struct Call {
  bool is_send = false;
  std::string name;
};

// Forwards everything to the simulated transport and records send/recv calls.
class RecordingTransport final : public DelegatingTransport {
 public:
  RecordingTransport(Transport& inner, std::vector<Call>& log)
      : DelegatingTransport(inner), log_(log) {}
  int rank() const override { return base_.rank(); }
  int size() const override { return base_.size(); }
  int host_of(int rank) const override { return base_.host_of(rank); }
  void send(int peer, const std::string& name, ConstBytes data, Callback done) override {
    log_.push_back({true, name});
    base_.send(peer, name, data, std::move(done));
  }
  void recv(int peer, const std::string& name, Bytes into, Callback done) override {
    log_.push_back({false, name});
    base_.recv(peer, name, into, std::move(done));
  }

 private:
  std::vector<Call>& log_;
};

// The root of a (reduce, broadcast) pair is the one rank that never receives after it has sent
// anything for the chunk: it receives its children's partials, then only sends the result down.
// Every other rank sends its partial up first and receives the result afterwards (leaves of a
// tree, links of a chain alike). Messages of the chunk are those whose name starts with its name.
std::set<int> observed_roots(const std::vector<std::vector<Call>>& logs, const std::string& chunk) {
  std::set<int> roots;
  for (std::size_t r = 0; r < logs.size(); ++r) {
    bool sent = false;
    bool recv_after_send = false;
    bool involved = false;
    for (const Call& c : logs[r]) {
      if (c.name.rfind(chunk, 0) != 0) continue;
      involved = true;
      if (c.is_send) {
        sent = true;
      } else if (sent) {
        recv_after_send = true;
      }
    }
    if (involved && !recv_after_send) roots.insert(static_cast<int>(r));
  }
  return roots;
}

int bcast_root(const GraphPair& pair) {
  int root = -1;
  for (int r = 0; r < pair.bcast.size(); ++r) {
    if (pair.bcast.prevs(r).empty()) {
      REQUIRE(root == -1);
      root = r;
    }
  }
  return root;
}

}  // namespace

TEST_CASE("even_partition: k parts differing by at most one, the first (length mod k) longer") {
  // [10, 27) has 17 elements; k = 5: 17 = 5 * 3 + 2, so the first 2 parts hold 4 and the other 3
  // hold 3: [10,14) [14,18) [18,21) [21,24) [24,27).
  const std::vector<Interval> parts = even_partition({10, 27}, 5);
  REQUIRE(parts.size() == 5);
  const std::vector<std::size_t> begins = {10, 14, 18, 21, 24};
  const std::vector<std::size_t> lengths = {4, 4, 3, 3, 3};
  for (std::size_t i = 0; i < parts.size(); ++i) {
    CHECK(parts[i].begin == begins[i]);
    CHECK(parts[i].length() == lengths[i]);
  }
  CHECK(parts.back().end == 27);
  // More parts than elements: 3 = 5 * 0 + 3, so lengths 1, 1, 1, 0, 0 (empty parts at the end).
  const std::vector<Interval> thin = even_partition({0, 3}, 5);
  REQUIRE(thin.size() == 5);
  CHECK(thin[0].length() == 1);
  CHECK(thin[2].length() == 1);
  CHECK(thin[3].length() == 0);
  CHECK(thin[4].begin == 3);
  CHECK(thin[4].end == 3);
  CHECK(even_partition({0, 100}, 0).empty());
}

TEST_CASE("each chunk runs on the graph pair chosen by the hash of its name") {
  // A float32 tensor of 7 * 262144 - 5 elements = 7,340,012 bytes: k = ceil(S / 1 MiB) = 7
  // chunks; 1,835,003 = 7 * 262143 + 2, so chunks 0 and 1 hold 262144 elements, the rest 262143.
  const std::size_t count = 7 * 262144 - 5;
  const std::size_t k = 7;
  const std::size_t quo = count / k;
  const std::size_t rem = count % k;
  REQUIRE(quo == 262143);
  REQUIRE(rem == 2);
  std::vector<std::string> names;
  for (std::size_t i = 0, b = 0; i < k; ++i) {
    const std::size_t e = b + quo + (i < rem ? 1 : 0);
    names.push_back("part::grad[" + std::to_string(b) + ":" + std::to_string(e) + "]");
    b = e;
  }
  CHECK(names[1] == "part::grad[262144:524288]");
  CHECK(names[6] == "part::grad[1572860:1835003]");

  // 4 servers x 2 GPUs: MULTI_BINARY_TREE_STAR has m = 4 pairs (one per host master), RING has
  // m = 8 (one per rank).
  for (StrategyKind kind : {StrategyKind::kMultiBinaryTreeStar, StrategyKind::kRing}) {
    INFO(strategy_name(kind));
    SimCluster c(switched(4, 2));
    const int n = c.topology.rank_count();
    const std::vector<GraphPair> pairs = make_graph_pairs(kind, c.hosts());
    const std::size_t m = pairs.size();
    CHECK(m == (kind == StrategyKind::kRing ? 8u : 4u));

    // Expected: chunk i runs on pair (sum of its name's squared character codes) mod m, whose
    // root is the broadcast graph's only node without a parent.
    std::map<std::string, int> expected_root;
    std::set<int> distinct_roots;
    bool differs_from_index_hash = false;
    for (std::size_t i = 0; i < k; ++i) {
      std::uint64_t h = 0;
      for (unsigned char ch : names[i])
        h += static_cast<std::uint64_t>(ch) * ch;
      expected_root[names[i]] = bcast_root(pairs[h % m]);
      distinct_roots.insert(expected_root[names[i]]);
      differs_from_index_hash |= h % m != i % m;
    }
    // The chunks spread over several roots, and the name hash picks other pairs than the chunk
    // index would, so the observation below can tell the two hashes apart.
    REQUIRE(distinct_roots.size() >= 3);
    REQUIRE(differs_from_index_hash);

    std::vector<std::vector<Call>> logs(n);
    std::vector<std::unique_ptr<RecordingTransport>> transports;
    for (int r = 0; r < n; ++r) {
      transports.push_back(std::make_unique<RecordingTransport>(c.fabric.transport(r), logs[r]));
    }
    auto algo = make_allreduce(kind, c.hosts());  // default: 1 MiB chunks, hash by name
    int finished = 0;
    for (int r = 0; r < n; ++r) {
      Workspace w;  // size only: null buffers
      w.name = "grad";
      w.send = {nullptr, count * 4};
      w.recv = {nullptr, count * 4};
      w.count = count;
      algo->run(*transports[r], w, [&] { ++finished; });
    }
    c.engine.run();
    REQUIRE(finished == n);
    for (const std::string& name : names) {
      INFO(name);
      CHECK(observed_roots(logs, name) == std::set<int>{expected_root[name]});
    }
  }
}
