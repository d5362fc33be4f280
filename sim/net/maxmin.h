#pragma once
// Max-min fair rate allocation by progressive filling: a pure numeric component.
//
// Every flow crosses a set of resources (directed link channels, or virtual resources such as a
// reducing CPU); each resource has a capacity. The allocation raises all rates together; when a
// resource saturates, the flows crossing it are frozen at its fair share (remaining capacity
// divided by its unfrozen flows) and the rest keep rising. The result is the unique max-min fair
// allocation: no flow can get more without taking from a flow that has no more than it.
//
// Implementation: a min-heap of resource fair shares with lazy invalidation, so one solve costs
// O((F*P + R) log R) for F flows of path length P over R resources. A per-flow rate cap is handled
// as a private resource of that capacity.

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

namespace adaptsim::net {

class MaxMinSolver {
 public:
  static constexpr double kUncapped = std::numeric_limits<double>::infinity();

  // Inputs, in compact local indices:
  //   capacity[r]          bytes/s of resource r (>= 0);
  //   flow_resources[f]    the resources flow f crosses (may be empty: then only its cap binds);
  //   flow_cap[f]          an upper bound on flow f's rate (kUncapped for none).
  // Output: rates[f] in bytes/s. A flow with no resources and no cap gets +infinity.
  // The solver keeps its scratch buffers between calls, so reuse one solver per network.
  void solve(std::span<const double> capacity,
             std::span<const std::span<const std::uint32_t>> flow_resources,
             std::span<const double> flow_cap, std::span<double> rates);

 private:
  struct HeapItem {
    double share;
    std::uint32_t resource;
    std::uint32_t version;
  };
  std::vector<double> remaining_;
  std::vector<std::uint32_t> unfrozen_;
  std::vector<std::uint32_t> version_;
  std::vector<std::uint32_t> offsets_;  // CSR: flows crossing each resource
  std::vector<std::uint32_t> members_;
  std::vector<std::uint32_t> fill_;
  std::vector<std::uint32_t> private_of_;  // private cap resource of each flow, or UINT32_MAX
  std::vector<char> frozen_;
  std::vector<HeapItem> heap_;
};

}  // namespace adaptsim::net
