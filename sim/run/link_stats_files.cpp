#include "sim/run/link_stats_files.h"

#include <map>
#include <string>
#include <utility>

namespace adaptsim::run {

std::vector<io::OutputFile> link_stats_files(const std::filesystem::path& base,
                                             const std::vector<net::LinkUse>& links, TimeNs bin_ns,
                                             const std::vector<fabric::Transmission>& messages) {
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
  std::map<std::pair<int, int>, std::pair<std::uint64_t, double>> pairs;
  for (const fabric::Transmission& t : messages) {
    auto& [count, bytes] = pairs[{t.src, t.dst}];
    ++count;
    bytes += static_cast<double>(t.bytes);
  }
  io::CsvTable matrix({"src_rank", "dst_rank", "messages", "bytes"});
  for (const auto& [pair, v] : pairs) {
    matrix.add_row({std::to_string(pair.first), std::to_string(pair.second),
                    std::to_string(v.first), io::fmt_general(v.second, 15)});
  }
  const std::string b = base.string();
  return {{b + ".links.csv", summary.render()},
          {b + ".link-bins.csv", bins.render()},
          {b + ".matrix.csv", matrix.render()}};
}

}  // namespace adaptsim::run
