#pragma once
// Output files: tables rendered as CSV, written whole through write_file_atomic and
// write_files_atomic (sim/core/atomic_file.h: temporary files + rename), so a run that fails or is
// interrupted never leaves a half-written CSV behind; a run's files are written all or none.

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "sim/core/atomic_file.h"

namespace adaptsim::io {

// The one atomic writer, under the names sim/ and hw/ callers of this header use.
using adaptsim::OutputFile;
using adaptsim::write_file_atomic;
using adaptsim::write_files_atomic;

// A tidy table: one header row, then rows of the same width. Values are written as given,
// quoted only when they contain a comma, quote or newline (RFC 4180).
class CsvTable {
 public:
  explicit CsvTable(std::vector<std::string> columns) : columns_(std::move(columns)) {}
  const std::vector<std::string>& columns() const { return columns_; }
  void add_row(std::vector<std::string> row);  // throws std::logic_error on a width mismatch
  std::size_t size() const { return rows_.size(); }
  const std::vector<std::vector<std::string>>& rows() const { return rows_; }
  // Index of a column, or npos.
  std::size_t column(std::string_view name) const;
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);
  std::string render() const;

 private:
  std::vector<std::string> columns_;
  std::vector<std::vector<std::string>> rows_;
};

// Fixed-point and general number formatting for CSV cells: locale-independent and identical on
// every run, so CSVs compare byte for byte.
std::string fmt_fixed(double value, int decimals);
std::string fmt_general(double value, int significant = 6);

// 64-bit FNV-1a of a byte string, as 16 hex digits (manifest fingerprint of inputs).
std::string fnv1a_hex(std::string_view bytes);

}  // namespace adaptsim::io
