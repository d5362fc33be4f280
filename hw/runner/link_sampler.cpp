#include "hw/runner/link_sampler.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <optional>
#include <utility>

#include "sim/core/error.h"
#include "sim/topo/topology.h"

namespace adaptsim::runner {
namespace {

std::optional<std::uint64_t> read_counter(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::uint64_t value = 0;
  if (!(in >> value)) return std::nullopt;
  return value;
}

}  // namespace

std::vector<CounterSource> host_link_counters(const testbed::Testbed& bed,
                                              const topo::ClusterSpec& spec) {
  const topo::Topology topology = topo::build_cluster(spec);
  std::vector<CounterSource> out;
  const auto& hosts = bed.plan().hosts;
  for (std::size_t h = 0; h < hosts.size(); ++h) {
    const std::filesystem::path stats =
        std::filesystem::path("/sys/class/net") / hosts[h].bridge_port / "statistics";
    // The server's first channel out to the fabric, and its reverse.
    for (std::size_t c = 0; c < topology.channel_count(); ++c) {
      const topo::Channel& ch = topology.channel(c);
      const topo::Node& from = topology.node(ch.from);
      const topo::Node& to = topology.node(ch.to);
      if (from.server != static_cast<int>(h) || to.server >= 0) continue;
      const topo::Channel& back = topology.channel(ch.reverse);
      out.push_back({from.name + "->" + to.name, ch.params.bandwidth_Bps, stats / "rx_bytes"});
      out.push_back({to.name + "->" + from.name, back.params.bandwidth_Bps, stats / "tx_bytes"});
      break;
    }
  }
  return out;
}

LinkSampler::LinkSampler(std::vector<CounterSource> sources, TimeNs bin_ns)
    : sources_(std::move(sources)), bin_ns_(bin_ns), start_(std::chrono::steady_clock::now()) {
  for (const CounterSource& s : sources_) {
    const std::optional<std::uint64_t> v = read_counter(s.file);
    if (!v) throw RuntimeFailure("link statistics: cannot read " + s.file.string());
    last_.push_back(*v);
    links_.push_back({.name = s.name, .capacity_Bps = s.capacity_Bps, .bin_bytes = {}});
  }
  thread_ = std::thread([this] { run(); });
}

LinkSampler::~LinkSampler() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void LinkSampler::sample() {
  const TimeNs t0 = last_ns_;
  const TimeNs t1 = std::max<TimeNs>(t0 + 1, std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                 std::chrono::steady_clock::now() - start_)
                                                 .count());
  last_ns_ = t1;
  const auto bins = static_cast<std::size_t>((t1 + bin_ns_ - 1) / bin_ns_);
  for (std::size_t i = 0; i < sources_.size(); ++i) {
    std::vector<double>& out = links_[i].bin_bytes;
    out.resize(bins, 0.0);
    const std::optional<std::uint64_t> v = read_counter(sources_[i].file);
    if (!v || *v < last_[i]) {
      if (error_.empty()) error_ = "cannot read " + sources_[i].file.string();
      continue;
    }
    const auto grew = static_cast<double>(*v - last_[i]);
    last_[i] = *v;
    // [t0, t1) at one rate, split at the bins' edges.
    for (TimeNs a = t0; a < t1;) {
      const TimeNs k = a / bin_ns_, b = std::min(t1, (k + 1) * bin_ns_);
      out[static_cast<std::size_t>(k)] +=
          grew * static_cast<double>(b - a) / static_cast<double>(t1 - t0);
      a = b;
    }
  }
}

void LinkSampler::run() {
  std::unique_lock lock(mutex_);
  for (std::int64_t k = 1;; ++k) {
    const auto due = start_ + std::chrono::nanoseconds(k * bin_ns_);
    if (wake_.wait_until(lock, due, [this] { return stopping_; })) return;
    sample();
  }
}

std::vector<runtime::MeasuredLink> LinkSampler::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  sample();
  if (!error_.empty()) throw RuntimeFailure("link statistics: " + error_);
  return links_;
}

}  // namespace adaptsim::runner
