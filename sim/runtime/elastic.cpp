#include "sim/runtime/elastic.h"

#include <algorithm>
#include <map>
#include <string>

#include "sim/io/yaml_reader.h"

namespace adaptsim::runtime {

ElasticSpec read_elastic(io::MapReader& r, int capacity) {
  ElasticSpec e;
  e.mechanism = r.choice_or("mechanism", {"kungfu", "restart"}, "kungfu") == "restart"
                    ? ResizeMechanism::kRestart
                    : ResizeMechanism::kKungFu;
  if (r.has("initial_workers")) {
    const double n = r.number("initial_workers");
    if (!(n >= 1 && n <= capacity) || n != static_cast<double>(static_cast<int>(n))) {
      r.fail("initial_workers", "expected a whole number of workers from 1 to the topology's " +
                                    std::to_string(capacity));
    }
    e.initial_workers = static_cast<int>(n);
  } else {
    r.accept("initial_workers");
  }
  e.retry_ns = r.duration_ns_or("retry", e.retry_ns);
  if (e.retry_ns <= 0) r.fail("retry", "expected a positive duration");
  e.failure_timeout_ns = r.duration_ns_or("failure_timeout", e.failure_timeout_ns);
  if (e.failure_timeout_ns <= 0) r.fail("failure_timeout", "expected a positive duration");
  const double slots = r.number_or("optimizer_slots", e.optimizer_slots);
  if (!(slots >= 0 && slots <= 8) || slots != static_cast<double>(static_cast<int>(slots)))
    r.fail("optimizer_slots", "expected a whole number from 0 to 8");
  e.optimizer_slots = static_cast<int>(slots);
  const double cores = r.number_or("server_cores", e.server_cores);
  if (!(cores >= 0 && cores <= 4096) || cores != static_cast<double>(static_cast<int>(cores)))
    r.fail("server_cores", "expected a whole number from 0 (a core per start-up) to 4096");
  e.server_cores = static_cast<int>(cores);
  e.framework_init_ns = r.duration_ns_or("framework_init", e.framework_init_ns);
  e.process_start_ns = r.duration_ns_or("process_start", e.process_start_ns);
  e.process_exit_ns = r.duration_ns_or("process_exit", e.process_exit_ns);
  e.store_read_ns = r.duration_ns_or("store_read", e.store_read_ns);
  e.store_write_ns = r.duration_ns_or("store_write", e.store_write_ns);
  e.disk_write_Bps = r.bandwidth_Bps_or("disk_write", e.disk_write_Bps);
  e.disk_read_Bps = r.bandwidth_Bps_or("disk_read", e.disk_read_Bps);
  e.cache_write_Bps = r.bandwidth_Bps_or("cache_write", e.cache_write_Bps);
  e.cache_read_Bps = r.bandwidth_Bps_or("cache_read", e.cache_read_Bps);
  for (auto [key, t] :
       {std::pair{"framework_init", e.framework_init_ns},
        std::pair{"process_start", e.process_start_ns},
        std::pair{"process_exit", e.process_exit_ns}, std::pair{"store_read", e.store_read_ns},
        std::pair{"store_write", e.store_write_ns}}) {
    if (t < 0) r.fail(key, "expected a duration >= 0");
  }
  if (!(e.disk_write_Bps > 0)) r.fail("disk_write", "expected a bandwidth > 0");
  if (!(e.disk_read_Bps > 0)) r.fail("disk_read", "expected a bandwidth > 0");
  if ((e.cache_write_Bps > 0) != (e.cache_read_Bps > 0))
    r.fail(e.cache_write_Bps > 0 ? "cache_read" : "cache_write",
           "expected with the other: the page cache's write and read rates are set together");
  r.finish();
  return e;
}

std::vector<int> growth_order(const std::vector<int>& host_of_worker) {
  // Each host's workers in id order, taken one at a time from the host with the fewest taken.
  std::map<int, std::vector<int>> by_host;
  for (std::size_t w = 0; w < host_of_worker.size(); ++w)
    by_host[host_of_worker[w]].push_back(static_cast<int>(w));
  std::map<int, std::size_t> taken;
  std::vector<int> order;
  while (order.size() < host_of_worker.size()) {
    int best = -1;
    for (const auto& [host, workers] : by_host) {
      if (taken[host] == workers.size()) continue;
      if (best < 0 || taken[host] < taken[best]) best = host;
    }
    order.push_back(by_host[best][taken[best]++]);
  }
  return order;
}

std::vector<int> join_order(const ElasticSpec& spec, const std::vector<int>& host_of_worker) {
  std::vector<int> order = growth_order(host_of_worker);
  if (spec.initial_cluster.empty()) return order;
  std::vector<int> out = spec.initial_cluster;
  for (int w : order)
    if (std::find(out.begin(), out.end(), w) == out.end()) out.push_back(w);
  return out;
}

int initial_size(const ElasticSpec& spec, int workers) {
  if (!spec.initial_cluster.empty()) return static_cast<int>(spec.initial_cluster.size());
  return spec.initial_workers > 0 ? spec.initial_workers : workers;
}

ClusterConfig cluster_of(const std::vector<int>& order, int size, int version) {
  ClusterConfig c;
  c.version = version;
  c.workers.assign(order.begin(), order.begin() + std::min<std::size_t>(order.size(), size));
  return c;
}

ClusterConfig resize_cluster(const ClusterConfig& current, const std::vector<int>& order,
                             int size) {
  ClusterConfig c;
  c.version = current.version + 1;
  for (int w : current.workers) {
    if (static_cast<int>(c.workers.size()) == size) break;
    c.workers.push_back(w);
  }
  for (int w : order) {
    if (static_cast<int>(c.workers.size()) >= size) break;
    if (std::find(c.workers.begin(), c.workers.end(), w) == c.workers.end()) c.workers.push_back(w);
  }
  return c;
}

std::vector<int> workers_to_start(const RunnerNotice& notice,
                                  const std::function<bool(int)>& on_host,
                                  const std::function<bool(int)>& has_process) {
  std::vector<int> out;
  for (int w : notice.cluster.workers) {
    if (on_host(w) && (notice.restart || !has_process(w))) out.push_back(w);
  }
  return out;
}

}  // namespace adaptsim::runtime
