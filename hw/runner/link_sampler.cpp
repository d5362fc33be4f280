#include "hw/runner/link_sampler.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <optional>
#include <sstream>
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

// /proc/net/dev as seen in network namespace `netns`: opened by a thread that entered it (the
// file stays bound to the namespace it was opened in). -1 when it cannot be.
int open_net_dev(const std::string& netns) {
  int fd = -1;
  std::thread([&] {
    const int ns = ::open(("/run/netns/" + netns).c_str(), O_RDONLY | O_CLOEXEC);
    if (ns < 0) return;
    if (::setns(ns, CLONE_NEWNET) == 0)
      fd = ::open("/proc/thread-self/net/dev", O_RDONLY | O_CLOEXEC);
    ::close(ns);
  }).join();
  return fd;
}

// The transmitted bytes of `device` in a /proc/net/dev text ("eth0: rx_bytes ... 8 receive
// fields, then tx_bytes ...").
std::optional<std::uint64_t> tx_bytes(const std::string& text, const std::string& device) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const auto first = line.find_first_not_of(' ');
    if (line.compare(first, colon - first, device) != 0 || colon - first != device.size()) continue;
    std::istringstream fields(line.substr(colon + 1));
    std::uint64_t v = 0;
    for (int i = 0; i < 9; ++i)
      if (!(fields >> v)) return std::nullopt;
    return v;
  }
  return std::nullopt;
}

std::string describe(const CounterSource& s) {
  return s.netns.empty() ? s.file.string()
                         : s.device + "'s transmitted bytes in network namespace " + s.netns;
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
      out.push_back({.name = from.name + "->" + to.name,
                     .capacity_Bps = ch.params.bandwidth_Bps,
                     .file = {},
                     .netns = hosts[h].ns,
                     .device = "eth0"});
      out.push_back({.name = to.name + "->" + from.name,
                     .capacity_Bps = back.params.bandwidth_Bps,
                     .file = stats / "tx_bytes",
                     .netns = {},
                     .device = {}});
      break;
    }
  }
  return out;
}

LinkSampler::LinkSampler(std::vector<CounterSource> sources, TimeNs bin_ns)
    : sources_(std::move(sources)), bin_ns_(bin_ns), start_(std::chrono::steady_clock::now()) {
  for (std::size_t i = 0; i < sources_.size(); ++i) {
    const CounterSource& s = sources_[i];
    fds_.push_back(s.netns.empty() ? -1 : open_net_dev(s.netns));
    const std::optional<std::uint64_t> v = read(i);
    if (!v) {
      for (int fd : fds_)
        if (fd >= 0) ::close(fd);
      throw RuntimeFailure("link statistics: cannot read " + describe(s));
    }
    last_.push_back(*v);
    last_ns_.push_back(0);
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
  for (int fd : fds_)
    if (fd >= 0) ::close(fd);
}

std::optional<std::uint64_t> LinkSampler::read(std::size_t i) const {
  if (fds_[i] < 0) return sources_[i].netns.empty() ? read_counter(sources_[i].file) : std::nullopt;
  std::string text(64 << 10, '\0');
  const ssize_t n = ::pread(fds_[i], text.data(), text.size(), 0);
  if (n <= 0) return std::nullopt;
  text.resize(static_cast<std::size_t>(n));
  return tx_bytes(text, sources_[i].device);
}

void LinkSampler::sample() {
  auto now = [this] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                                start_)
        .count();
  };
  // Each source's read is timed on its own: on a busy machine the thread may stop between two.
  for (std::size_t i = 0; i < sources_.size(); ++i) {
    const std::optional<std::uint64_t> v = read(i);
    const TimeNs t0 = last_ns_[i], t1 = std::max<TimeNs>(t0 + 1, now());
    last_ns_[i] = t1;
    std::vector<double>& out = links_[i].bin_bytes;
    out.resize(static_cast<std::size_t>((t1 + bin_ns_ - 1) / bin_ns_), 0.0);
    if (!v || *v < last_[i]) {
      if (error_.empty()) error_ = "cannot read " + describe(sources_[i]);
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
  std::size_t bins = 0;  // every link over the same bins
  for (const runtime::MeasuredLink& l : links_)
    bins = std::max(bins, l.bin_bytes.size());
  for (runtime::MeasuredLink& l : links_)
    l.bin_bytes.resize(bins, 0.0);
  return links_;
}

}  // namespace adaptsim::runner
