#pragma once
// A KungFu communication graph on ranks 0..n-1 (srcs/go/plan/graph/graph.go): directed edges and a
// per-node self-loop flag. In a reduce graph, a self-loop means "combine what you receive with
// your own data"; a node without one (broadcast graphs) takes its parent's data as is.
//
// Held as each node's previous and next nodes in insertion order (as in KungFu, which makes
// prevs/nexts deterministic): what every chunk of a collective reads. A strategy at N ranks holds
// up to N graphs of N nodes (MULTI_BINARY_TREE_STAR, CLIQUE, RING), so a graph keeps nothing else;
// the checks build a Boost.Graph adjacency list when asked and use Boost's algorithms.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace adaptsim::coll {

class CommGraph {
 public:
  explicit CommGraph(int n = 0);

  int size() const { return static_cast<int>(self_loop_.size()); }
  // from == to sets the self-loop.
  void add_edge(int from, int to);
  bool self_loop(int rank) const { return self_loop_.at(rank); }
  std::span<const int> prevs(int rank) const { return prevs_.at(rank); }
  std::span<const int> nexts(int rank) const { return nexts_.at(rank); }
  std::size_t edge_count() const { return edges_; }

  // Edges reversed, self-loops dropped.
  CommGraph reversed() const;
  // True if every node is reachable from `root` and every other node has exactly one parent
  // (a spanning arborescence: a valid broadcast graph).
  bool is_spanning_tree_from(int root) const;
  // The node without parents, if exactly one exists; -1 otherwise.
  int root() const;
  // A printable, comparable description ("0->1 0->2 | self: 0 1 2").
  std::string digest() const;

 private:
  // Every node's neighbours on one side, in insertion order, each node's a contiguous run of one
  // pool: 8 bytes a node and 4 an edge (a vector per node took 24 and an allocation). A node's
  // run grows at the pool's end; one that is not there moves there first (strategies add a
  // node's edges together, so moves are few), and the pool is compacted when moved-out runs
  // outweigh the live ones.
  class Adjacency {
   public:
    explicit Adjacency(int n) : runs_(static_cast<std::size_t>(n)) {}
    void add(int node, int neighbour);
    std::span<const int> at(int node) const {
      const Run& r = runs_.at(static_cast<std::size_t>(node));
      return {pool_.data() + r.begin, r.count};
    }

   private:
    struct Run {
      std::uint32_t begin = 0, count = 0;
    };
    void compact();
    std::vector<Run> runs_;
    std::vector<int> pool_;
    std::size_t garbage_ = 0;  // pool entries of runs that moved
  };
  std::size_t edges_ = 0;
  std::vector<bool> self_loop_;
  Adjacency prevs_, nexts_;  // read on the hot path of every chunk
};

}  // namespace adaptsim::coll
