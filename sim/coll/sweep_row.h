#pragma once
// One measured point of a collective sweep, and its CSV: the one row type of every tool that
// measures or imports one — the TCP all-reduce sweep (hw/tcp/allreduce_sweep.h, adaptsim-tcp),
// the NCCL sweep (hw/nccl/sweep.h, adaptsim-nccl), and calibration's measurements and nccl-tests
// import (calibrate/measurement.h, nccl_tests_import.h). In nccl-tests' vocabulary
// (doc/PERFORMANCE.md): size_bytes is the whole array, GB = 1e9 B, algbw = size_bytes / time,
// busbw = algbw x bus_bandwidth_factor (collective.h).
//
// Each tool writes the columns it has, in its own order (a SweepCsvFormat); one writer and one
// reader serve all of them, so the files each tool has always written keep their bytes:
//   adaptsim-tcp:
//     size_bytes,count,type,redop,strategy,n_ranks,time_us,algbw_GBps,busbw_GBps,wrong
//   adaptsim-nccl:
//     size_bytes,count,type,redop,collective,n_ranks,time_us,algbw_GBps,busbw_GBps,wrong
//   calibrate:
//     size_bytes,count,type,redop,collective,algorithm,link_class,n_ranks,in_place,time_us,
//     algbw_GBps,busbw_GBps,wrong
// Cells are never quoted: no field holds a comma. time_us has 3 decimals (ns resolution),
// bandwidths the format's (6, or 3 for adaptsim-nccl: MB/s, beyond what its timer resolves).

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "sim/coll/collective.h"

namespace adaptsim::coll {

struct SweepRow {
  std::uint64_t size_bytes = 0;
  std::uint64_t count = 0;  // elements: the collective call's count argument
  // The element type as the source names it: adaptsim's dtype name (float32, bfloat16, ...) for
  // measured rows, nccl-tests' (float, half, ...) for imported ones.
  std::string type = "float32";
  std::string redop = "sum";  // the reduction operator; "none" for collectives without one
  Collective collective = Collective::kAllReduce;
  std::string algorithm;   // a strategy name (TCP sweep), "p2p" (ping-pong), "nccl"
  std::string link_class;  // calibration's: loopback, tcp, nccl_intra, nccl_inter; else empty
  int n_ranks = 0;
  bool in_place = false;  // send buffer = receive buffer (nccl-tests' second column block)
  double time_us = 0;     // per operation (the slowest rank's, or the mean over processes)
  double algbw_GBps = 0;
  double busbw_GBps = 0;
  std::uint64_t wrong = 0;  // wrong result elements summed over ranks; 0 when unchecked
};

enum class SweepColumn {
  kSizeBytes,
  kCount,
  kType,
  kRedop,
  kCollective,
  kAlgorithm,
  kStrategy,  // the algorithm field under the TCP sweep's column name
  kLinkClass,
  kNRanks,
  kInPlace,  // 0 or 1
  kTimeUs,
  kAlgbwGBps,
  kBusbwGBps,
  kWrong,
};
std::string_view sweep_column_name(SweepColumn column);  // "size_bytes", ..., "busbw_GBps"

// A CSV layout: the columns in order and the decimals of the two bandwidth columns. A field
// without a column is not written, and keeps its default when read.
struct SweepCsvFormat {
  std::vector<SweepColumn> columns;
  int bandwidth_decimals = 6;
};

std::string sweep_csv_header(const SweepCsvFormat& format);                    // no newline
std::string sweep_csv_row(const SweepRow& row, const SweepCsvFormat& format);  // no newline
// Header and rows, each line ending in a newline.
std::string sweep_csv_text(const std::vector<SweepRow>& rows, const SweepCsvFormat& format);
// sweep_csv_text to `path`, whole or not at all (write_file_atomic). RuntimeFailure on I/O errors.
void write_sweep_csv(const std::filesystem::path& path, const std::vector<SweepRow>& rows,
                     const SweepCsvFormat& format);

// Reads what write_sweep_csv wrote in `format` (the header must be the format's; blank lines are
// skipped). InputError "file:line: ..." naming the column for a malformed cell.
std::vector<SweepRow> parse_sweep_csv(const std::string& text, const std::string& label,
                                      const SweepCsvFormat& format);
std::vector<SweepRow> read_sweep_csv(const std::filesystem::path& path,
                                     const SweepCsvFormat& format);

}  // namespace adaptsim::coll
