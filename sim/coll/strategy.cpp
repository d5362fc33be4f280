#include "sim/coll/strategy.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "sim/core/error.h"

namespace adaptsim::coll {
namespace {

struct Info {
  StrategyKind kind;
  std::string_view name;
  std::string_view summary;
};

constexpr Info kInfo[] = {
    {StrategyKind::kStar, "STAR", "star rooted at rank 0: reduce to it, broadcast from it"},
    {StrategyKind::kMultiStar, "MULTI_STAR",
     "intra-host stars + an inter-host star per host master (one graph pair per host)"},
    {StrategyKind::kTree, "TREE", "intra-host stars + a star of host masters rooted at the first"},
    {StrategyKind::kBinaryTree, "BINARY_TREE",
     "heap-shaped binary tree over ranks (i -> 2i+1, 2i+2)"},
    {StrategyKind::kBinaryTreeStar, "BINARY_TREE_STAR",
     "intra-host stars + a binary tree over host masters (KungFu's default)"},
    {StrategyKind::kMultiBinaryTreeStar, "MULTI_BINARY_TREE_STAR",
     "BINARY_TREE_STAR with the master order rotated per graph, one graph pair per host"},
    {StrategyKind::kClique, "CLIQUE",
     "one star per rank as root (every peer a parameter-server shard)"},
    {StrategyKind::kRing, "RING",
     "KungFu ring: chain reduce to root r + chain broadcast, per root r"},
    {StrategyKind::kAuto, "AUTO", "STAR on one host, BINARY_TREE_STAR otherwise"},
    {StrategyKind::kClassicRing, "CLASSIC_RING",
     "reduce-scatter + all-gather ring, 2(n-1) steps (NCCL/MPI/Horovod)"},
    {StrategyKind::kHalvingDoubling, "HALVING_DOUBLING",
     "recursive halving reduce-scatter + recursive doubling all-gather (Rabenseifner)"},
};

CommGraph star(int n, int root) {
  CommGraph g(n);
  for (int i = 0; i < n; ++i) {
    if (i != root) g.add_edge(root, i);
  }
  return g;
}

// Adds master -> local peer edges for every host.
void add_local_stars(CommGraph& g, const std::vector<int>& host_of_rank,
                     const std::unordered_map<int, int>& master_of_host) {
  for (int r = 0; r < static_cast<int>(host_of_rank.size()); ++r) {
    const int m = master_of_host.at(host_of_rank[r]);
    if (m != r) g.add_edge(m, r);
  }
}

std::unordered_map<int, int> master_map(const std::vector<int>& host_of_rank) {
  std::unordered_map<int, int> m;
  for (int r = 0; r < static_cast<int>(host_of_rank.size()); ++r)
    m.emplace(host_of_rank[r], r);
  return m;
}

CommGraph tree(const std::vector<int>& hosts) {
  const int n = static_cast<int>(hosts.size());
  CommGraph g(n);
  add_local_stars(g, hosts, master_map(hosts));
  const std::vector<int> masters = host_masters(hosts);
  for (std::size_t i = 1; i < masters.size(); ++i)
    g.add_edge(masters[0], masters[i]);
  return g;
}

CommGraph binary_tree(int n) {
  CommGraph g(n);
  for (int i = 0; i < n; ++i) {
    if (2 * i + 1 < n) g.add_edge(i, 2 * i + 1);
    if (2 * i + 2 < n) g.add_edge(i, 2 * i + 2);
  }
  return g;
}

CommGraph multi_star(const std::vector<int>& hosts, int root) {
  CommGraph g(static_cast<int>(hosts.size()));
  add_local_stars(g, hosts, master_map(hosts));
  const std::vector<int> masters = host_masters(hosts);
  const int k = static_cast<int>(masters.size());
  if (k > 1) {
    for (int i = 0; i < k; ++i) {
      if (i != root) g.add_edge(masters[root], masters[i]);
    }
  }
  return g;
}

CommGraph binary_tree_star(const std::vector<int>& hosts, int offset) {
  CommGraph g(static_cast<int>(hosts.size()));
  add_local_stars(g, hosts, master_map(hosts));
  const std::vector<int> masters = host_masters(hosts);
  const int k = static_cast<int>(masters.size());
  if (k > 1) {
    auto idx = [&](int i) { return masters[(i + offset) % k]; };
    for (int i = 0; i < k; ++i) {
      if (2 * i + 1 < k) g.add_edge(idx(i), idx(2 * i + 1));
      if (2 * i + 2 < k) g.add_edge(idx(i), idx(2 * i + 2));
    }
  }
  return g;
}

GraphPair simple(CommGraph bcast) {
  CommGraph reduce = bcast.reversed();
  for (int i = 0; i < reduce.size(); ++i)
    reduce.add_edge(i, i);
  return {std::move(reduce), std::move(bcast)};
}

GraphPair circular_pair(int k, int r) {
  CommGraph reduce(k), bcast(k);
  for (int i = 0; i < k; ++i)
    reduce.add_edge(i, i);
  for (int i = 1; i < k; ++i) {
    reduce.add_edge((r + i) % k, (r + i + 1) % k);
    bcast.add_edge((r + i - 1) % k, (r + i) % k);
  }
  return {std::move(reduce), std::move(bcast)};
}

}  // namespace

std::string_view strategy_name(StrategyKind kind) {
  for (const Info& i : kInfo) {
    if (i.kind == kind) return i.name;
  }
  return "?";
}

std::string_view strategy_summary(StrategyKind kind) {
  for (const Info& i : kInfo) {
    if (i.kind == kind) return i.summary;
  }
  return "";
}

std::optional<StrategyKind> parse_strategy(std::string_view name) {
  for (const Info& i : kInfo) {
    if (i.name == name) return i.kind;
  }
  return std::nullopt;
}

const std::vector<StrategyKind>& all_strategies() {
  static const std::vector<StrategyKind> kAll = [] {
    std::vector<StrategyKind> v;
    for (const Info& i : kInfo)
      v.push_back(i.kind);
    return v;
  }();
  return kAll;
}

std::vector<StrategyKind> parse_strategy_list(std::string_view text, std::string_view option) {
  std::string upper;
  for (char c : text)
    upper += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (upper == "ALL") return all_strategies();
  std::vector<StrategyKind> out;
  std::size_t begin = 0;
  while (begin <= upper.size()) {
    std::size_t end = upper.find(',', begin);
    if (end == std::string::npos) end = upper.size();
    const std::string name = upper.substr(begin, end - begin);
    const auto kind = parse_strategy(name);
    if (!kind) {
      std::string known;
      for (StrategyKind k : all_strategies())
        known += std::string(known.empty() ? "" : ", ") + std::string(strategy_name(k));
      throw InputError(std::string(option) + ": unknown strategy \"" + name +
                       "\" (known: " + known + ", or all)");
    }
    out.push_back(*kind);
    begin = end + 1;
  }
  return out;
}

bool is_graph_strategy(StrategyKind kind) {
  return kind != StrategyKind::kClassicRing && kind != StrategyKind::kHalvingDoubling;
}

std::vector<int> host_masters(const std::vector<int>& host_of_rank) {
  std::vector<int> masters;
  std::unordered_map<int, bool> seen;
  for (int r = 0; r < static_cast<int>(host_of_rank.size()); ++r) {
    if (seen.emplace(host_of_rank[r], true).second) masters.push_back(r);
  }
  return masters;
}

StrategyKind resolve_auto(StrategyKind kind, const std::vector<int>& host_of_rank) {
  if (kind != StrategyKind::kAuto) return kind;
  return host_masters(host_of_rank).size() <= 1 ? StrategyKind::kStar
                                                : StrategyKind::kBinaryTreeStar;
}

std::vector<GraphPair> make_graph_pairs(StrategyKind kind, const std::vector<int>& hosts,
                                        int star_root) {
  const int n = static_cast<int>(hosts.size());
  if (n == 0) throw std::invalid_argument("a strategy needs at least one rank");
  if (star_root < 0 || star_root >= n) {
    throw std::invalid_argument("star root " + std::to_string(star_root) + " is not a rank of " +
                                std::to_string(n));
  }
  std::vector<GraphPair> pairs;
  const int m = static_cast<int>(host_masters(hosts).size());
  pairs.reserve(static_cast<std::size_t>(std::max(n, m)));
  switch (resolve_auto(kind, hosts)) {
    case StrategyKind::kStar:
      pairs.push_back(simple(star(n, star_root)));
      break;
    case StrategyKind::kMultiStar:
      for (int i = 0; i < m; ++i)
        pairs.push_back(simple(multi_star(hosts, i)));
      break;
    case StrategyKind::kTree:
      pairs.push_back(simple(tree(hosts)));
      break;
    case StrategyKind::kBinaryTree:
      pairs.push_back(simple(binary_tree(n)));
      break;
    case StrategyKind::kBinaryTreeStar:
      pairs.push_back(simple(binary_tree_star(hosts, 0)));
      break;
    case StrategyKind::kMultiBinaryTreeStar:
      for (int i = 0; i < m; ++i)
        pairs.push_back(simple(binary_tree_star(hosts, i)));
      break;
    case StrategyKind::kClique:
      for (int r = 0; r < n; ++r)
        pairs.push_back(simple(star(n, r)));
      break;
    case StrategyKind::kRing:
      for (int r = 0; r < n; ++r)
        pairs.push_back(circular_pair(n, r));
      break;
    case StrategyKind::kAuto:
    case StrategyKind::kClassicRing:
    case StrategyKind::kHalvingDoubling:
      throw std::invalid_argument(std::string(strategy_name(kind)) + " is not a graph strategy");
  }
  return pairs;
}

std::uint64_t kungfu_name_hash(std::string_view name) {
  std::uint64_t h = 0;
  for (unsigned char c : name)
    h += static_cast<std::uint64_t>(c) * c;
  return h;
}

}  // namespace adaptsim::coll
