#include "calibrate/collective_model.h"

#include <algorithm>
#include <deque>
#include <string>

#include "sim/coll/strategy.h"

namespace adaptsim::calibrate {
namespace {

// Longest root-to-leaf path of a broadcast graph, in edges.
int depth(const coll::CommGraph& g) {
  const int root = g.root();
  if (root < 0) return g.size() > 1 ? g.size() - 1 : 0;  // not a tree: bound by a chain
  std::vector<int> level(static_cast<std::size_t>(g.size()), -1);
  std::deque<int> queue{root};
  level[static_cast<std::size_t>(root)] = 0;
  int deepest = 0;
  while (!queue.empty()) {
    const int v = queue.front();
    queue.pop_front();
    for (int next : g.nexts(v)) {
      if (level[static_cast<std::size_t>(next)] >= 0) continue;
      level[static_cast<std::size_t>(next)] = level[static_cast<std::size_t>(v)] + 1;
      deepest = std::max(deepest, level[static_cast<std::size_t>(next)]);
      queue.push_back(next);
    }
  }
  return deepest;
}

int floor_log2(int n) {
  int k = 0;
  while ((2 << k) <= n)
    ++k;
  return k;
}

}  // namespace

int algorithm_steps(std::string_view algorithm, coll::Collective collective, int n,
                    const std::vector<int>& host_of_rank) {
  if (n <= 1) return 1;
  if (algorithm == "p2p") return 1;
  if (algorithm == "nccl") {
    if (collective == coll::Collective::kAllReduce) return 2 * (n - 1);
    if (collective == coll::Collective::kSendRecv) return 1;
    return n - 1;
  }
  const auto kind = coll::parse_strategy(algorithm);
  if (!kind) return 1;
  if (*kind == coll::StrategyKind::kClassicRing) return 2 * (n - 1);
  if (*kind == coll::StrategyKind::kHalvingDoubling) {
    const int k = floor_log2(n);
    return 2 * k + ((1 << k) == n ? 0 : 2);
  }
  std::vector<int> hosts = host_of_rank;
  if (static_cast<int>(hosts.size()) != n) {
    hosts.resize(static_cast<std::size_t>(n));
    for (int r = 0; r < n; ++r)
      hosts[static_cast<std::size_t>(r)] = r;
  }
  int deepest = 0;
  for (const coll::GraphPair& pair : coll::make_graph_pairs(*kind, hosts)) {
    deepest = std::max(deepest, depth(pair.bcast));
  }
  return std::max(1, 2 * deepest);
}

}  // namespace adaptsim::calibrate
