#pragma once
// One measured point of any sweep the calibration tool runs or imports (TCP all-reduce, TCP
// ping-pong, NCCL collectives, nccl-tests output), and its CSV, in nccl-tests' vocabulary:
//
//   size_bytes,count,type,redop,collective,algorithm,link_class,n_ranks,in_place,time_us,
//   algbw_GBps,busbw_GBps,wrong
//
// GB = 1e9 B; algbw = size_bytes / time; busbw = algbw x the collective's bus factor.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace adaptsim::calibrate {

struct MeasuredRow {
  std::uint64_t size_bytes = 0;
  std::uint64_t count = 0;
  std::string type = "float32";  // as the source names it (adaptsim dtype or nccl-tests type)
  std::string redop = "sum";     // "none" for collectives without a reduction
  std::string collective;        // all_reduce, sendrecv, ...
  std::string algorithm;         // strategy name, p2p, nccl
  std::string link_class;        // loopback, tcp, nccl_intra, nccl_inter
  int n_ranks = 0;
  bool in_place = false;
  double time_us = 0;
  double algbw_GBps = 0;
  double busbw_GBps = 0;
  std::uint64_t wrong = 0;
};

std::string measurement_csv_header();
std::string measurement_csv_row(const MeasuredRow& row);
// Header + rows, written atomically (io::write_file_atomic). RuntimeFailure on I/O errors.
void write_measurement_csv(const std::filesystem::path& path, const std::vector<MeasuredRow>& rows);
// Reads a file written by write_measurement_csv; InputError "file:line: ..." when malformed.
std::vector<MeasuredRow> read_measurement_csv(const std::filesystem::path& path);

}  // namespace adaptsim::calibrate
