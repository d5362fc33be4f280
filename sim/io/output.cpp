#include "sim/io/output.h"

#include <cstdio>
#include <stdexcept>

namespace adaptsim::io {

void CsvTable::add_row(std::vector<std::string> row) {
  if (row.size() != columns_.size()) {
    throw std::logic_error("CSV row of " + std::to_string(row.size()) + " cells for " +
                           std::to_string(columns_.size()) + " columns");
  }
  rows_.push_back(std::move(row));
}

namespace {
void append_cell(std::string& out, const std::string& cell) {
  if (cell.find_first_of(",\"\n\r") == std::string::npos) {
    out += cell;
    return;
  }
  out += '"';
  for (char c : cell) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
}
}  // namespace

std::size_t CsvTable::column(std::string_view name) const {
  for (std::size_t i = 0; i < columns_.size(); ++i) {
    if (columns_[i] == name) return i;
  }
  return npos;
}

std::string CsvTable::render() const {
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    for (std::size_t i = 0; i < cells.size(); ++i) {
      if (i) out += ',';
      append_cell(out, cells[i]);
    }
    out += '\n';
  };
  line(columns_);
  for (const auto& r : rows_)
    line(r);
  return out;
}

std::string fmt_fixed(double value, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

std::string fmt_general(double value, int significant) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", significant, value);
  return buf;
}

std::string fnv1a_hex(std::string_view bytes) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace adaptsim::io
