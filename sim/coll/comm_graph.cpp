#include "sim/coll/comm_graph.h"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/breadth_first_search.hpp>
#include <stdexcept>

namespace adaptsim::coll {

void CommGraph::Adjacency::add(int node, int neighbour) {
  Run& r = runs_.at(static_cast<std::size_t>(node));
  if (r.count == 0) {
    r.begin = static_cast<std::uint32_t>(pool_.size());
  } else if (r.begin + r.count != pool_.size()) {
    // Not at the pool's end: move the run there (copied out first: the pool may reallocate).
    const std::vector<int> run(pool_.begin() + r.begin, pool_.begin() + r.begin + r.count);
    r.begin = static_cast<std::uint32_t>(pool_.size());
    pool_.insert(pool_.end(), run.begin(), run.end());
    garbage_ += run.size();
  }
  pool_.push_back(neighbour);
  ++r.count;
  if (garbage_ > pool_.size() / 2) compact();
}

void CommGraph::Adjacency::compact() {
  std::vector<int> pool;
  pool.reserve(pool_.size() - garbage_);
  for (Run& r : runs_) {
    const std::uint32_t begin = static_cast<std::uint32_t>(pool.size());
    pool.insert(pool.end(), pool_.begin() + r.begin, pool_.begin() + r.begin + r.count);
    r.begin = begin;
  }
  pool_ = std::move(pool);
  garbage_ = 0;
}

CommGraph::CommGraph(int n) : self_loop_(n, false), prevs_(n), nexts_(n) {}

void CommGraph::add_edge(int from, int to) {
  if (from < 0 || to < 0 || from >= size() || to >= size()) {
    throw std::out_of_range("graph edge outside 0.." + std::to_string(size() - 1));
  }
  if (from == to) {
    self_loop_[from] = true;
    return;
  }
  ++edges_;
  nexts_.add(from, to);
  prevs_.add(to, from);
}

CommGraph CommGraph::reversed() const {
  CommGraph r(size());
  for (int u = 0; u < size(); ++u) {
    for (int v : nexts(u))
      r.add_edge(v, u);
  }
  return r;
}

bool CommGraph::is_spanning_tree_from(int root) const {
  if (root < 0 || root >= size()) return false;
  for (int v = 0; v < size(); ++v) {
    if (prevs(v).size() != (v == root ? 0u : 1u)) return false;
  }
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;
  Graph graph(size());
  for (int u = 0; u < size(); ++u)
    for (int v : nexts(u))
      boost::add_edge(u, v, graph);
  std::vector<boost::default_color_type> color(size());
  boost::breadth_first_search(graph, root,
                              boost::color_map(boost::make_iterator_property_map(
                                  color.begin(), boost::get(boost::vertex_index, graph))));
  for (auto c : color) {
    if (c == boost::white_color) return false;
  }
  return true;
}

int CommGraph::root() const {
  int found = -1;
  for (int v = 0; v < size(); ++v) {
    if (prevs(v).empty()) {
      if (found >= 0) return -1;
      found = v;
    }
  }
  return found;
}

std::string CommGraph::digest() const {
  std::string s;
  for (int u = 0; u < size(); ++u) {
    for (int v : nexts(u)) {
      if (!s.empty()) s += ' ';
      s += std::to_string(u) + "->" + std::to_string(v);
    }
  }
  s += " | self:";
  for (int u = 0; u < size(); ++u) {
    if (self_loop_[u]) s += ' ' + std::to_string(u);
  }
  return s;
}

}  // namespace adaptsim::coll
