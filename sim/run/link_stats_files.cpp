#include "sim/run/link_stats_files.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

namespace adaptsim::run {

std::vector<io::OutputFile> link_stats_files(const std::filesystem::path& base,
                                             const std::vector<net::LinkUse>& links, TimeNs bin_ns,
                                             const std::vector<runtime::PairTraffic>& pairs) {
  io::CsvTable summary(
      {"resource", "capacity_Bps", "bytes", "busy_s", "mean_utilization", "peak_utilization"});
  io::CsvTable bins({"resource", "bin_start_s", "bin_end_s", "bytes"});
  for (const net::LinkUse& u : links) {
    summary.add_row({u.name, io::fmt_general(u.capacity_Bps, 9), io::fmt_general(u.bytes, 12),
                     io::fmt_fixed(u.busy_s, 9), io::fmt_general(u.mean_utilization, 6),
                     io::fmt_general(u.peak_utilization, 6)});
    for (std::size_t k = 0; k < u.bin_bytes.size(); ++k) {
      if (!(u.bin_bytes[k] > 0)) continue;
      bins.add_row({u.name, io::fmt_fixed(to_seconds(static_cast<TimeNs>(k) * bin_ns), 9),
                    io::fmt_fixed(to_seconds(static_cast<TimeNs>(k + 1) * bin_ns), 9),
                    io::fmt_general(u.bin_bytes[k], 12)});
    }
  }
  io::CsvTable matrix({"src_rank", "dst_rank", "messages", "bytes"});
  for (const runtime::PairTraffic& p : pairs) {
    matrix.add_row({std::to_string(p.src), std::to_string(p.dst), std::to_string(p.messages),
                    io::fmt_general(p.bytes, 15)});
  }
  const std::string b = base.string();
  return {{b + ".links.csv", summary.render()},
          {b + ".link-bins.csv", bins.render()},
          {b + ".matrix.csv", matrix.render()}};
}

std::vector<io::OutputFile> link_stats_files(const std::filesystem::path& base,
                                             const std::vector<net::LinkUse>& links, TimeNs bin_ns,
                                             const std::vector<fabric::Transmission>& messages) {
  std::map<std::pair<int, int>, runtime::PairTraffic> pairs;  // in (src, dst) order
  for (const fabric::Transmission& t : messages) {
    runtime::PairTraffic& p = pairs[{t.src, t.dst}];
    p.src = t.src;
    p.dst = t.dst;
    ++p.messages;
    p.bytes += static_cast<double>(t.bytes);
  }
  std::vector<runtime::PairTraffic> sorted;
  for (auto& [key, p] : pairs)
    sorted.push_back(p);
  return link_stats_files(base, links, bin_ns, sorted);
}

net::LinkUse link_use(const runtime::MeasuredLink& link, TimeNs bin_ns) {
  net::LinkUse u;
  u.name = link.name;
  u.capacity_Bps = link.capacity_Bps;
  u.bin_bytes = link.bin_bytes;
  const double bin_s = to_seconds(bin_ns);
  double fullest = 0;
  for (double b : link.bin_bytes) {
    u.bytes += b;
    if (b > 0) u.busy_s += bin_s;
    fullest = std::max(fullest, b);
  }
  const double span_s = bin_s * static_cast<double>(link.bin_bytes.size());
  if (link.capacity_Bps > 0 && span_s > 0) {
    u.mean_utilization = u.bytes / (link.capacity_Bps * span_s);
    u.peak_utilization = fullest / (link.capacity_Bps * bin_s);
  }
  return u;
}

}  // namespace adaptsim::run
