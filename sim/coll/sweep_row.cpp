#include "sim/coll/sweep_row.h"

#include <charconv>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "sim/core/atomic_file.h"
#include "sim/core/error.h"

namespace adaptsim::coll {
namespace {

// Time with ns resolution: beyond what any of the sweeps' timers resolves.
constexpr int kTimeDecimals = 3;

std::string fixed(double value, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

std::vector<std::string> split_cells(const std::string& line) {
  std::vector<std::string> cells;
  std::string cell;
  std::istringstream in(line);
  while (std::getline(in, cell, ','))
    cells.push_back(cell);
  if (!line.empty() && line.back() == ',') cells.emplace_back();
  return cells;
}

template <class T>
T number(const std::string& text, const std::string& where, SweepColumn column) {
  T value{};
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) {
    throw InputError(where + ": column " + std::string(sweep_column_name(column)) +
                     ": expected a number, got \"" + text + "\"");
  }
  return value;
}

std::string cell(const SweepRow& r, SweepColumn column, int bandwidth_decimals) {
  switch (column) {
    case SweepColumn::kSizeBytes:
      return std::to_string(r.size_bytes);
    case SweepColumn::kCount:
      return std::to_string(r.count);
    case SweepColumn::kType:
      return r.type;
    case SweepColumn::kRedop:
      return r.redop;
    case SweepColumn::kCollective:
      return std::string(collective_name(r.collective));
    case SweepColumn::kAlgorithm:
    case SweepColumn::kStrategy:
      return r.algorithm;
    case SweepColumn::kLinkClass:
      return r.link_class;
    case SweepColumn::kNRanks:
      return std::to_string(r.n_ranks);
    case SweepColumn::kInPlace:
      return r.in_place ? "1" : "0";
    case SweepColumn::kTimeUs:
      return fixed(r.time_us, kTimeDecimals);
    case SweepColumn::kAlgbwGBps:
      return fixed(r.algbw_GBps, bandwidth_decimals);
    case SweepColumn::kBusbwGBps:
      return fixed(r.busbw_GBps, bandwidth_decimals);
    case SweepColumn::kWrong:
      return std::to_string(r.wrong);
  }
  return "";
}

void read_cell(SweepRow& r, SweepColumn column, const std::string& text, const std::string& where) {
  switch (column) {
    case SweepColumn::kSizeBytes:
      r.size_bytes = number<std::uint64_t>(text, where, column);
      return;
    case SweepColumn::kCount:
      r.count = number<std::uint64_t>(text, where, column);
      return;
    case SweepColumn::kType:
      r.type = text;
      return;
    case SweepColumn::kRedop:
      r.redop = text;
      return;
    case SweepColumn::kCollective: {
      const auto c = parse_collective(text);
      if (!c) {
        throw InputError(where + ": column collective: unknown collective \"" + text +
                         "\" (known: " + known_collectives() + ")");
      }
      r.collective = *c;
      return;
    }
    case SweepColumn::kAlgorithm:
    case SweepColumn::kStrategy:
      r.algorithm = text;
      return;
    case SweepColumn::kLinkClass:
      r.link_class = text;
      return;
    case SweepColumn::kNRanks:
      r.n_ranks = number<int>(text, where, column);
      return;
    case SweepColumn::kInPlace:
      if (text != "0" && text != "1") {
        throw InputError(where + ": column in_place: expected 0 or 1, got \"" + text + "\"");
      }
      r.in_place = text == "1";
      return;
    case SweepColumn::kTimeUs:
      r.time_us = number<double>(text, where, column);
      return;
    case SweepColumn::kAlgbwGBps:
      r.algbw_GBps = number<double>(text, where, column);
      return;
    case SweepColumn::kBusbwGBps:
      r.busbw_GBps = number<double>(text, where, column);
      return;
    case SweepColumn::kWrong:
      r.wrong = number<std::uint64_t>(text, where, column);
      return;
  }
}

}  // namespace

std::string_view sweep_column_name(SweepColumn column) {
  switch (column) {
    case SweepColumn::kSizeBytes:
      return "size_bytes";
    case SweepColumn::kCount:
      return "count";
    case SweepColumn::kType:
      return "type";
    case SweepColumn::kRedop:
      return "redop";
    case SweepColumn::kCollective:
      return "collective";
    case SweepColumn::kAlgorithm:
      return "algorithm";
    case SweepColumn::kStrategy:
      return "strategy";
    case SweepColumn::kLinkClass:
      return "link_class";
    case SweepColumn::kNRanks:
      return "n_ranks";
    case SweepColumn::kInPlace:
      return "in_place";
    case SweepColumn::kTimeUs:
      return "time_us";
    case SweepColumn::kAlgbwGBps:
      return "algbw_GBps";
    case SweepColumn::kBusbwGBps:
      return "busbw_GBps";
    case SweepColumn::kWrong:
      return "wrong";
  }
  return "?";
}

std::string sweep_csv_header(const SweepCsvFormat& format) {
  std::string line;
  for (SweepColumn c : format.columns)
    line.append(line.empty() ? "" : ",").append(sweep_column_name(c));
  return line;
}

std::string sweep_csv_row(const SweepRow& row, const SweepCsvFormat& format) {
  std::string line;
  for (std::size_t i = 0; i < format.columns.size(); ++i) {
    if (i > 0) line += ',';
    line += cell(row, format.columns[i], format.bandwidth_decimals);
  }
  return line;
}

std::string sweep_csv_text(const std::vector<SweepRow>& rows, const SweepCsvFormat& format) {
  std::string text = sweep_csv_header(format) + "\n";
  for (const SweepRow& r : rows)
    text += sweep_csv_row(r, format) + "\n";
  return text;
}

void write_sweep_csv(const std::filesystem::path& path, const std::vector<SweepRow>& rows,
                     const SweepCsvFormat& format) {
  write_file_atomic(path, sweep_csv_text(rows, format));
}

std::vector<SweepRow> parse_sweep_csv(const std::string& text, const std::string& label,
                                      const SweepCsvFormat& format) {
  const std::string header = sweep_csv_header(format);
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line)) {
    throw InputError(label + ": empty file (expected the header \"" + header + "\")");
  }
  if (line != header) {
    throw InputError(label + ":1: expected the header \"" + header + "\", got \"" + line + "\"");
  }
  std::vector<SweepRow> rows;
  for (int line_no = 2; std::getline(in, line); ++line_no) {
    if (line.empty()) continue;
    const std::string where = label + ":" + std::to_string(line_no);
    const std::vector<std::string> cells = split_cells(line);
    if (cells.size() != format.columns.size()) {
      throw InputError(where + ": expected " + std::to_string(format.columns.size()) +
                       " columns, got " + std::to_string(cells.size()));
    }
    SweepRow row;
    for (std::size_t i = 0; i < cells.size(); ++i)
      read_cell(row, format.columns[i], cells[i], where);
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<SweepRow> read_sweep_csv(const std::filesystem::path& path,
                                     const SweepCsvFormat& format) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path.string() + ": cannot open");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_sweep_csv(text.str(), path.string(), format);
}

}  // namespace adaptsim::coll
