#pragma once
// A KungFu communication graph on ranks 0..n-1 (srcs/go/plan/graph/graph.go): directed edges and a
// per-node self-loop flag. In a reduce graph, a self-loop means "combine what you receive with
// your own data"; a node without one (broadcast graphs) takes its parent's data as is.
//
// Held as a Boost.Graph bidirectional adjacency list (edge order = insertion order, as in KungFu,
// which makes prevs/nexts deterministic), so graph checks use Boost's algorithms.

#include <boost/graph/adjacency_list.hpp>
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
  const std::vector<int>& prevs(int rank) const { return prevs_.at(rank); }
  const std::vector<int>& nexts(int rank) const { return nexts_.at(rank); }
  std::size_t edge_count() const { return boost::num_edges(graph_); }

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
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS>;
  Graph graph_;
  std::vector<bool> self_loop_;
  // Cached adjacency in insertion order, read on the hot path of every chunk.
  std::vector<std::vector<int>> prevs_;
  std::vector<std::vector<int>> nexts_;
};

}  // namespace adaptsim::coll
