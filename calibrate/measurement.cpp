#include "calibrate/measurement.h"

#include <charconv>
#include <cstdio>
#include <sstream>

#include "sim/core/error.h"
#include "sim/io/input_file.h"
#include "sim/io/output.h"

namespace adaptsim::calibrate {
namespace {

constexpr int kColumns = 13;

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  std::istringstream in(line);
  while (std::getline(in, cell, ','))
    out.push_back(cell);
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

template <class T>
T number(const std::string& text, const std::string& where, const char* column) {
  T v{};
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) {
    throw InputError(where + ": column " + column + ": expected a number, got \"" + text + "\"");
  }
  return v;
}

}  // namespace

std::string measurement_csv_header() {
  return "size_bytes,count,type,redop,collective,algorithm,link_class,n_ranks,in_place,time_us,"
         "algbw_GBps,busbw_GBps,wrong";
}

std::string measurement_csv_row(const MeasuredRow& r) {
  return std::to_string(r.size_bytes) + "," + std::to_string(r.count) + "," + r.type + "," +
         r.redop + "," + r.collective + "," + r.algorithm + "," + r.link_class + "," +
         std::to_string(r.n_ranks) + "," + (r.in_place ? "1" : "0") + "," + fixed(r.time_us, 3) +
         "," + fixed(r.algbw_GBps, 6) + "," + fixed(r.busbw_GBps, 6) + "," +
         std::to_string(r.wrong);
}

void write_measurement_csv(const std::filesystem::path& path,
                           const std::vector<MeasuredRow>& rows) {
  std::string text = measurement_csv_header() + "\n";
  for (const MeasuredRow& r : rows)
    text += measurement_csv_row(r) + "\n";
  io::write_file_atomic(path, text);
}

std::vector<MeasuredRow> read_measurement_csv(const std::filesystem::path& path) {
  std::istringstream in(io::read_input_file(path));
  std::string line;
  int line_no = 0;
  std::vector<MeasuredRow> rows;
  while (std::getline(in, line)) {
    ++line_no;
    const std::string where = path.string() + ":" + std::to_string(line_no);
    if (line_no == 1) {
      if (line != measurement_csv_header()) {
        throw InputError(where + ": expected the header " + measurement_csv_header());
      }
      continue;
    }
    if (line.empty()) continue;
    const auto c = split(line);
    if (static_cast<int>(c.size()) != kColumns) {
      throw InputError(where + ": expected " + std::to_string(kColumns) + " columns, got " +
                       std::to_string(c.size()));
    }
    MeasuredRow r;
    r.size_bytes = number<std::uint64_t>(c[0], where, "size_bytes");
    r.count = number<std::uint64_t>(c[1], where, "count");
    r.type = c[2];
    r.redop = c[3];
    r.collective = c[4];
    r.algorithm = c[5];
    r.link_class = c[6];
    r.n_ranks = number<int>(c[7], where, "n_ranks");
    r.in_place = number<int>(c[8], where, "in_place") != 0;
    r.time_us = number<double>(c[9], where, "time_us");
    r.algbw_GBps = number<double>(c[10], where, "algbw_GBps");
    r.busbw_GBps = number<double>(c[11], where, "busbw_GBps");
    r.wrong = number<std::uint64_t>(c[12], where, "wrong");
    rows.push_back(std::move(r));
  }
  if (line_no == 0) throw InputError(path.string() + ": empty file");
  return rows;
}

}  // namespace adaptsim::calibrate
