#include "sim/runtime/cluster_view.h"

#include <algorithm>
#include <string>

namespace adaptsim::runtime {

ClusterView::ClusterView(TrainingEnv& base, ClusterConfig cluster)
    : base_(base), cluster_(std::move(cluster)) {
  const std::vector<int>& local = base.local_workers();
  rank_of_.assign(base.host_of_worker().size(), -1);
  for (std::size_t r = 0; r < cluster_.workers.size(); ++r) {
    const int w = cluster_.workers[r];
    rank_of_.at(static_cast<std::size_t>(w)) = static_cast<int>(r);
    host_of_.push_back(base.host_of_worker().at(static_cast<std::size_t>(w)));
    if (std::find(local.begin(), local.end(), w) != local.end())
      local_.push_back(static_cast<int>(r));
  }
  transports_.resize(cluster_.workers.size());
  closed_.assign(cluster_.workers.size(), 0);
}

void ClusterView::close(int rank) {
  closed_.at(static_cast<std::size_t>(rank)) = 1;
}

int ClusterView::rank_of(int worker) const {
  return worker >= 0 && static_cast<std::size_t>(worker) < rank_of_.size()
             ? rank_of_[static_cast<std::size_t>(worker)]
             : -1;
}

coll::Transport& ClusterView::transport(int worker) {
  auto& t = transports_.at(static_cast<std::size_t>(worker));
  if (!t) {
    t = std::make_unique<coll::SubsetTransport>(base_.transport(base_worker(worker)),
                                                cluster_.workers,
                                                "v" + std::to_string(cluster_.version) + ":");
    t->set_closed(&closed_);
  }
  return *t;
}

std::unique_ptr<GpuCollectives> ClusterView::gpu_collectives(const std::vector<int>& members,
                                                             const train::NcclNet& net) {
  std::vector<int> base_members;
  for (int m : members)
    base_members.push_back(base_worker(m));
  return base_.gpu_collectives(base_members, net);
}

}  // namespace adaptsim::runtime
