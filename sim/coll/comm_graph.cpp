#include "sim/coll/comm_graph.h"

#include <boost/graph/breadth_first_search.hpp>
#include <stdexcept>

namespace adaptsim::coll {

CommGraph::CommGraph(int n) : graph_(n), self_loop_(n, false), prevs_(n), nexts_(n) {}

void CommGraph::add_edge(int from, int to) {
  if (from < 0 || to < 0 || from >= size() || to >= size()) {
    throw std::out_of_range("graph edge outside 0.." + std::to_string(size() - 1));
  }
  if (from == to) {
    self_loop_[from] = true;
    return;
  }
  boost::add_edge(from, to, graph_);
  nexts_[from].push_back(to);
  prevs_[to].push_back(from);
}

CommGraph CommGraph::reversed() const {
  CommGraph r(size());
  for (int u = 0; u < size(); ++u) {
    for (int v : nexts_[u])
      r.add_edge(v, u);
  }
  return r;
}

bool CommGraph::is_spanning_tree_from(int root) const {
  if (root < 0 || root >= size()) return false;
  for (int v = 0; v < size(); ++v) {
    if (v != root && boost::in_degree(v, graph_) != 1) return false;
    if (v == root && boost::in_degree(v, graph_) != 0) return false;
  }
  std::vector<boost::default_color_type> color(size());
  boost::breadth_first_search(graph_, root,
                              boost::color_map(boost::make_iterator_property_map(
                                  color.begin(), boost::get(boost::vertex_index, graph_))));
  for (auto c : color) {
    if (c == boost::white_color) return false;
  }
  return true;
}

int CommGraph::root() const {
  int found = -1;
  for (int v = 0; v < size(); ++v) {
    if (boost::in_degree(v, graph_) == 0) {
      if (found >= 0) return -1;
      found = v;
    }
  }
  return found;
}

std::string CommGraph::digest() const {
  std::string s;
  for (int u = 0; u < size(); ++u) {
    for (int v : nexts_[u]) {
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
