#include "sim/io/loss_rates.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "sim/core/error.h"
#include "sim/core/strings.h"
#include "sim/io/csv.h"
#include "sim/io/input_file.h"

namespace adaptsim::io {

LossRateTable read_loss_rates(const std::filesystem::path& path) {
  return parse_loss_rates(read_input_file(path), path.string());
}

LossRateTable parse_loss_rates(const std::string& text, const std::string& file) {
  LossRateTable table;
  table.file = file;
  auto fail = [&](int line, const std::string& what) {
    throw InputError(file + ":" + std::to_string(line) + ": " + what);
  };
  std::istringstream in(text);
  std::string line;
  std::vector<std::string> header;
  std::size_t p_col = 0, rate_col = 0;
  std::map<double, std::vector<double>> runs;  // by drop probability: the runs' bytes/s
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::string_view t = trim(line);
    if (t.empty() || t.front() == '#') continue;
    const std::vector<std::string> cells = split_csv_row(line);
    if (header.empty()) {
      header = cells;
      const auto p = std::find(header.begin(), header.end(), "drop_probability");
      const auto r = std::find(header.begin(), header.end(), "MBps");
      if (p == header.end() || r == header.end()) {
        fail(n, "expected a CSV header with drop_probability and MBps (scripts/testbed-loss.sh)");
      }
      p_col = static_cast<std::size_t>(p - header.begin());
      rate_col = static_cast<std::size_t>(r - header.begin());
      continue;
    }
    if (cells.size() != header.size()) {
      fail(n, "has " + std::to_string(cells.size()) + " cells; expected " +
                  std::to_string(header.size()) + " (the header's)");
    }
    double p = 0, mbps = 0;
    if (!parse_number(cells[p_col], p) || !(p >= 0 && p < 1)) {
      fail(n, "drop_probability '" + cells[p_col] + "': expected a probability from 0 to below 1");
    }
    if (!parse_number(cells[rate_col], mbps) || !(mbps > 0 && mbps <= 1e9)) {
      fail(n, "MBps '" + cells[rate_col] + "': expected a rate above 0 MB/s (at most 1e9)");
    }
    runs[p].push_back(mbps * 1e6);
  }
  n = std::max(n, 1);  // the last line (an empty file's first)
  if (header.empty()) fail(n, "the file holds no CSV header; expected drop_probability and MBps");
  if (runs.count(0.0) == 0) fail(n, "no row at drop_probability 0; expected the clean rate too");
  if (runs.size() < 2) fail(n, "one drop probability only; expected the rate at two or more");
  for (auto& [p, rates] : runs) {
    std::sort(rates.begin(), rates.end());
    const std::size_t k = rates.size();
    table.points.emplace_back(p, k % 2 == 1 ? rates[k / 2] : (rates[k / 2 - 1] + rates[k / 2]) / 2);
  }
  return table;
}

}  // namespace adaptsim::io
