#include "hw/nccl/sweep_csv.h"

#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <system_error>

#include "sim/core/error.h"

namespace adaptsim::hw {
namespace {

std::vector<std::string> split_fields(const std::string& line) {
  std::vector<std::string> fields;
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, ','))
    fields.push_back(field);
  if (!line.empty() && line.back() == ',') fields.emplace_back();
  return fields;
}

template <class T>
T parse_number(const std::string& text, const std::string& where, const char* column) {
  T value{};
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size()) {
    throw InputError(where + ": column " + column + ": expected a number, got \"" + text + "\"");
  }
  return value;
}

}  // namespace

std::string format_sweep_csv_row(const SweepRow& row) {
  // time with ns resolution, bandwidths with MB/s resolution: beyond what the timer resolves.
  char buf[256];
  std::snprintf(buf, sizeof buf, "%llu,%llu,%s,%s,%s,%d,%.3f,%.3f,%.3f,%llu",
                static_cast<unsigned long long>(row.size_bytes),
                static_cast<unsigned long long>(row.count),
                std::string(coll::dtype_name(row.dtype)).c_str(),
                row.op ? std::string(coll::reduce_op_name(*row.op)).c_str() : "none",
                std::string(collective_name(row.collective)).c_str(), row.n_ranks, row.time_us,
                row.algbw_GBps, row.busbw_GBps, static_cast<unsigned long long>(row.wrong));
  return buf;
}

void write_sweep_csv(const std::filesystem::path& file, std::span<const SweepRow> rows) {
  std::filesystem::path tmp = file;
  tmp += ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) throw RuntimeFailure("cannot create " + tmp.string());
    out << kSweepCsvHeader << '\n';
    for (const auto& row : rows)
      out << format_sweep_csv_row(row) << '\n';
    out.flush();
    if (!out) throw RuntimeFailure("cannot write " + tmp.string());
  }
  std::error_code ec;
  std::filesystem::rename(tmp, file, ec);
  if (ec) {
    std::filesystem::remove(tmp);
    throw RuntimeFailure("cannot rename " + tmp.string() + " to " + file.string() + ": " +
                         ec.message());
  }
}

std::vector<SweepRow> read_sweep_csv(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw InputError("cannot open " + file.string());
  std::string line;
  if (!std::getline(in, line) || line != kSweepCsvHeader) {
    throw InputError(file.string() + ":1: expected the header \"" + kSweepCsvHeader + "\"");
  }
  std::vector<SweepRow> rows;
  for (int line_no = 2; std::getline(in, line); ++line_no) {
    if (line.empty()) continue;
    const std::string where = file.string() + ":" + std::to_string(line_no);
    const auto f = split_fields(line);
    if (f.size() != 10) {
      throw InputError(where + ": expected 10 columns, got " + std::to_string(f.size()));
    }
    SweepRow row;
    row.size_bytes = parse_number<std::uint64_t>(f[0], where, "size_bytes");
    row.count = parse_number<std::uint64_t>(f[1], where, "count");
    const auto dtype = coll::parse_dtype(f[2]);
    if (!dtype) throw InputError(where + ": unknown type \"" + f[2] + "\"");
    row.dtype = *dtype;
    if (f[3] != "none") {
      row.op = coll::parse_reduce_op(f[3]);
      if (!row.op) throw InputError(where + ": unknown redop \"" + f[3] + "\"");
    }
    const auto collective = parse_collective(f[4]);
    if (!collective) throw InputError(where + ": unknown collective \"" + f[4] + "\"");
    row.collective = *collective;
    row.n_ranks = parse_number<int>(f[5], where, "n_ranks");
    row.time_us = parse_number<double>(f[6], where, "time_us");
    row.algbw_GBps = parse_number<double>(f[7], where, "algbw_GBps");
    row.busbw_GBps = parse_number<double>(f[8], where, "busbw_GBps");
    row.wrong = parse_number<std::uint64_t>(f[9], where, "wrong");
    rows.push_back(row);
  }
  return rows;
}

std::string sweep_csv_filename(Collective collective, coll::DType dtype, coll::ReduceOp op,
                               int n_ranks) {
  const std::string op_name =
      collective_reduces(collective) ? std::string(coll::reduce_op_name(op)) : "none";
  return "nccl_" + std::string(collective_name(collective)) + "_" +
         std::string(coll::dtype_name(dtype)) + "_" + op_name + "_" + std::to_string(n_ranks) +
         "r.csv";
}

}  // namespace adaptsim::hw
