#pragma once
// All-reduce strategies: KungFu's graph strategies (srcs/go/plan/topology.go,
// srcs/go/kungfu/session/strategy.go, branch osdi20-artifact) and the two classic algorithms.
//
// A KungFu strategy is a list of (reduce graph, broadcast graph) pairs; each chunk of a tensor
// runs on one pair, chosen by a hash of the chunk's name, so multi-graph strategies spread load
// over different roots and links.
//
//   STAR                    1 pair: star rooted at rank 0.
//   MULTI_STAR              one pair per host: intra-host star + inter-host star at master i.
//   TREE                    1 pair: intra-host star + star of host masters rooted at masters[0].
//   BINARY_TREE             1 pair: heap-shaped binary tree i -> 2i+1, 2i+2 (topology-unaware).
//   BINARY_TREE_STAR        1 pair: intra-host star + binary tree over host masters.
//   MULTI_BINARY_TREE_STAR  one pair per host: BINARY_TREE_STAR with master order rotated by i.
//   CLIQUE                  one pair per rank: star rooted at r.
//   RING                    one pair per rank: chain reduce ending at r, chain broadcast from r.
//   AUTO                    STAR if all ranks share a host, else BINARY_TREE_STAR.
//   CLASSIC_RING            reduce-scatter + all-gather ring (NCCL, MPI, Horovod), 2(n-1) steps.
//   HALVING_DOUBLING        recursive-halving reduce-scatter + recursive-doubling all-gather
//                           (Rabenseifner; Thakur et al., IJHPCA 2005), non-powers of two folded.
// Default reduce graph = broadcast graph reversed + a self-loop on every node.

#include <optional>
#include <string_view>
#include <vector>

#include "sim/coll/comm_graph.h"

namespace adaptsim::coll {

enum class StrategyKind {
  kStar,
  kMultiStar,
  kTree,
  kBinaryTree,
  kBinaryTreeStar,
  kMultiBinaryTreeStar,
  kClique,
  kRing,
  kAuto,
  kClassicRing,
  kHalvingDoubling,
};

std::string_view strategy_name(StrategyKind kind);  // "MULTI_BINARY_TREE_STAR"
std::optional<StrategyKind> parse_strategy(std::string_view name);
const std::vector<StrategyKind>& all_strategies();
// A command line's strategy list: "all", or names separated by commas, case-insensitive, '-' for
// '_' ("multi-binary-tree-star,classic_ring"). Throws InputError naming `option` and the known
// names.
std::vector<StrategyKind> parse_strategy_list(std::string_view text, std::string_view option);
bool is_graph_strategy(StrategyKind kind);  // KungFu's graph-pair strategies (incl. AUTO)
std::string_view strategy_summary(StrategyKind kind);  // one line, for `simctl list strategies`

struct GraphPair {
  CommGraph reduce;
  CommGraph bcast;
};

// host_of_rank[r] = host id of rank r; a host's master is its lowest rank.
std::vector<int> host_masters(const std::vector<int>& host_of_rank);
// AUTO resolved to STAR or BINARY_TREE_STAR; other kinds unchanged.
StrategyKind resolve_auto(StrategyKind kind, const std::vector<int>& host_of_rank);
// The graph pairs of a graph strategy; STAR is rooted at `star_root` (KungFu's adaptive strategy
// moves the root off a congested host). Throws std::invalid_argument for the classic ones and for
// a root that is not a rank.
std::vector<GraphPair> make_graph_pairs(StrategyKind kind, const std::vector<int>& host_of_rank,
                                        int star_root = 0);

// KungFu's NAME strategy hash (srcs/go/kungfu/session/shard.go): sum of squared character codes.
std::uint64_t kungfu_name_hash(std::string_view name);

}  // namespace adaptsim::coll
