#pragma once
// One version of a changing cluster as the step loop and a system see it: a TrainingEnv whose
// workers are the cluster's ranks 0..n-1, each forwarded to the underlying environment's worker
// cluster.workers[rank]. Its transports carry the version in every message's name (KungFu's
// connection token), so messages of two versions never match. Immutable: a resize makes a new view
// (trainer.h, "Worker-set changes").

#include <memory>
#include <vector>

#include "sim/coll/subset_transport.h"
#include "sim/runtime/env.h"

namespace adaptsim::runtime {

class ClusterView final : public TrainingEnv {
 public:
  ClusterView(TrainingEnv& base, ClusterConfig cluster);

  const ClusterConfig& cluster() const { return cluster_; }
  int base_worker(int rank) const { return cluster_.workers.at(static_cast<std::size_t>(rank)); }
  // The rank of the underlying environment's worker `worker` (-1: not in this cluster).
  int rank_of(int worker) const;
  // Rank `rank` has left this version (it moved to another, left, or was dropped): its
  // connections of this version close, as the version's token does in KungFu, so no message of
  // it passes from or to that rank any more (a send never completes). Live, every process holds
  // its own views and the transports' real connections close too; simulated, one environment
  // holds every worker's views, and this is what keeps an abandoned collective of the old version
  // (another worker's, still posted) from completing with a worker that comes back to it.
  void close(int rank);

  TimeNs now() const override { return base_.now(); }
  void at(TimeNs when, Callback task) override { base_.at(when, std::move(task)); }
  int workers() const override { return static_cast<int>(cluster_.workers.size()); }
  const std::vector<int>& host_of_worker() const override { return host_of_; }
  const std::vector<int>& local_workers() const override { return local_; }
  void compute(int worker, const ComputeSchedule& schedule,
               std::function<void(std::size_t phase)> phase_done) override {
    base_.compute(base_worker(worker), schedule, std::move(phase_done));
  }
  void compute_until(int worker, TimeNs end_ns, Callback done) override {
    base_.compute_until(base_worker(worker), end_ns, std::move(done));
  }
  void copy_to_host(int worker, std::uint64_t bytes, Callback done) override {
    base_.copy_to_host(base_worker(worker), bytes, std::move(done));
  }
  void copy_to_device(int worker, std::uint64_t bytes, Callback done) override {
    base_.copy_to_device(base_worker(worker), bytes, std::move(done));
  }
  coll::Transport& transport(int worker) override;
  coll::Workspace gradient(int worker, std::size_t tensor) override {
    return base_.gradient(base_worker(worker), tensor);
  }
  coll::Workspace fuse(int worker, const std::vector<std::size_t>& tensors,
                       const std::string& name) override {
    return base_.fuse(base_worker(worker), tensors, name);
  }
  void unfuse(int worker, const std::vector<std::size_t>& tensors) override {
    base_.unfuse(base_worker(worker), tensors);
  }
  std::unique_ptr<GpuCollectives> gpu_collectives(const std::vector<int>& members,
                                                  const train::NcclNet& net) override;
  void gradient_norms(int worker,
                      std::function<void(double local_sq, double reduced_sq)> done) override {
    base_.gradient_norms(base_worker(worker), std::move(done));
  }
  void square_gradients(int worker, Callback done) override {
    base_.square_gradients(base_worker(worker), std::move(done));
  }
  coll::Workspace squared_gradient(int worker, std::size_t tensor) override {
    return base_.squared_gradient(base_worker(worker), tensor);
  }
  void gradient_variance(int worker, std::function<void(double norm_sum)> done) override {
    base_.gradient_variance(base_worker(worker), std::move(done));
  }
  void between_steps(int worker, int step, Callback done) override {
    base_.between_steps(base_worker(worker), step, std::move(done));
  }
  coll::Workspace model_state(int worker, std::size_t tensor, std::uint64_t elements,
                              const std::string& name) override {
    return base_.model_state(base_worker(worker), tensor, elements, name);
  }
  void state_received(int worker, int version) override {
    base_.state_received(base_worker(worker), version);
  }
  void step_started(int worker, int step) override {
    base_.step_started(base_worker(worker), step);
  }

 private:
  TrainingEnv& base_;
  ClusterConfig cluster_;
  std::vector<int> host_of_, local_;
  std::vector<int> rank_of_;  // by the underlying worker id; -1: not in this cluster
  // Per rank, built on first use (only local ranks have one).
  std::vector<std::unique_ptr<coll::SubsetTransport>> transports_;
  std::vector<char> closed_;  // by rank (close)
};

}  // namespace adaptsim::runtime
