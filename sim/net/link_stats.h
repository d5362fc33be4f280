#pragma once
// What each resource of a FlowNetwork carried, and when (simctl run --link-stats): per link
// direction (and per virtual resource: loopback, memory, transport threads) its bytes, the time
// it was busy, its peak and mean utilization, and its bytes in fixed time bins.
//
// The flow model's rates are piecewise constant: FlowNetwork::settle accounts each flow's bytes
// over an interval at one rate, and hands the same interval to the recorder, which keeps per
// resource the changes of its aggregate rate. The report integrates that step function, so its
// bytes equal FlowNetwork::bytes_carried and its bins sum to them (up to float rounding).

#include <map>
#include <string>
#include <vector>

#include "sim/core/time.h"

namespace adaptsim::net {

class FlowNetwork;

struct LinkUse {
  std::string name;  // FlowNetwork::resource_name: "a->b" for a channel
  double capacity_Bps = 0;
  double bytes = 0;
  double busy_s = 0;              // time with any byte in flight on it
  double mean_utilization = 0;    // bytes / (capacity x the report's span)
  double peak_utilization = 0;    // highest aggregate rate / capacity
  std::vector<double> bin_bytes;  // bytes in [k bin, (k + 1) bin) from time 0
};

class LinkRecorder {
 public:
  explicit LinkRecorder(TimeNs bin_ns);  // bin_ns > 0

  TimeNs bin_ns() const { return bin_ns_; }
  // `bytes` crossed `resource` at a constant rate during [t0, t1) (t0 < t1), or at the instant
  // t0 when t0 == t1 (rounding remainders).
  void carried(std::uint32_t resource, TimeNs t0, TimeNs t1, double bytes);

  // Every resource of `network` over [0, end) (end >= the last recorded time).
  std::vector<LinkUse> report(const FlowNetwork& network, TimeNs end) const;

 private:
  struct Resource {
    std::map<TimeNs, double> rate_changes;  // aggregate rate steps (bytes/s)
    std::map<TimeNs, double> instants;      // bytes at an instant
  };
  TimeNs bin_ns_;
  std::vector<Resource> resources_;
};

}  // namespace adaptsim::net
