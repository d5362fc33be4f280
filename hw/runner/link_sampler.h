#pragma once
// What the testbed's links carried during a live run (simctl run --live --link-stats): a thread
// reads each link direction's byte counter (host_link_counters: where the testbed shapes it)
// every bin from the moment it starts, and stop() returns the bytes per bin under the
// simulator's name for that channel. Wire bytes: the counters see frames with their Ethernet, IP
// and TCP headers, the ACKs of the opposite direction included.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "hw/testbed/testbed.h"
#include "sim/core/time.h"
#include "sim/runtime/training_result.h"
#include "sim/topo/cluster_spec.h"

namespace adaptsim::runner {

// A link direction and the counter of the bytes that crossed it: a file holding one decimal
// count (a sysfs statistics file of this namespace), or with `netns`, the transmitted bytes of
// `device` in that network namespace (its /proc/net/dev, opened there once).
struct CounterSource {
  std::string name;  // the simulator's channel name, "s0.nic0->switch"
  double capacity_Bps = 0;
  std::filesystem::path file;
  std::string netns;   // "" or a namespace of `ip netns add` (/run/netns/NAME)
  std::string device;  // with netns
};

// Each testbed host's link to its switch, both directions, counted where the testbed shapes them
// (testbed_plan.h), so the counts follow the caps: what the host sends as its eth0 transmits it
// (inside its namespace), what it receives as the bridge's end of its veth transmits it. (The
// receiving ends count whole batches of packets at once, milliseconds apart on a busy machine.)
// Named and sized as `spec`'s topology names its server's NIC channel to the fabric (host h is
// server h, then the extra hosts, as the testbed builds them); the fat tree's uplinks are not
// sampled (one bridge stands in for all spines, testbed_plan.h).
std::vector<CounterSource> host_link_counters(const testbed::Testbed& bed,
                                              const topo::ClusterSpec& spec);

class LinkSampler {
 public:
  // Reads every source once now (throws RuntimeFailure naming an unreadable one), then every
  // bin_ns (> 0) on its own thread.
  LinkSampler(std::vector<CounterSource> sources, TimeNs bin_ns);
  ~LinkSampler();  // stops the thread if stop() was not called
  LinkSampler(const LinkSampler&) = delete;
  LinkSampler& operator=(const LinkSampler&) = delete;

  // Reads every source a last time (the last bin may be partial) and returns per source the
  // bytes of each bin since the start; their sum is the counter's growth. A read that comes late
  // (a busy machine) spreads its bytes evenly over the time since the read before, bin by bin.
  // Throws RuntimeFailure naming a source that could not be read on the way.
  std::vector<runtime::MeasuredLink> stop();

 private:
  void run();
  void sample();  // reads every source and adds what grew since the last read to its bins
  std::optional<std::uint64_t> read(std::size_t source) const;

  std::vector<CounterSource> sources_;
  TimeNs bin_ns_;
  std::chrono::steady_clock::time_point start_;
  std::vector<TimeNs> last_ns_;  // per source, when its last read was, since start_
  std::vector<std::uint64_t> last_;
  std::vector<int> fds_;  // per source with a netns: its /proc/net/dev, else -1
  std::vector<runtime::MeasuredLink> links_;
  std::string error_;  // the first failed read
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace adaptsim::runner
