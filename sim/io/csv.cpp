#include "sim/io/csv.h"

#include <charconv>
#include <cmath>
#include <sstream>

#include "sim/core/strings.h"

namespace adaptsim::io {

std::vector<std::string> split_csv_row(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  std::istringstream in(line);
  while (std::getline(in, cell, ','))
    out.push_back(std::string(trim(cell)));
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

bool parse_number(const std::string& s, double& out) {
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, out);
  return ec == std::errc() && p == end && std::isfinite(out);
}

}  // namespace adaptsim::io
