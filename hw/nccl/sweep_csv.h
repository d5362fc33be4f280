#pragma once
// The sweep's CSV, in nccl-tests' vocabulary, one row per (collective, size):
//   size_bytes,count,type,redop,collective,n_ranks,time_us,algbw_GBps,busbw_GBps,wrong
// type is adaptsim's dtype name (float32, bfloat16, ...), redop "none" for all-gather and
// broadcast, GB = 1e9 B. Files are written to a temporary name in the target folder and renamed,
// so a reader never sees a half-written file. Pure C++ (no CUDA): calibration reads these files
// on any machine.

#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "hw/nccl/sweep.h"

namespace adaptsim::hw {

inline constexpr const char* kSweepCsvHeader =
    "size_bytes,count,type,redop,collective,n_ranks,time_us,algbw_GBps,busbw_GBps,wrong";

std::string format_sweep_csv_row(const SweepRow& row);  // no trailing newline

// Header + rows to `file`, through `file`.tmp.<pid> and a rename. RuntimeFailure on I/O errors.
void write_sweep_csv(const std::filesystem::path& file, std::span<const SweepRow> rows);

// Reads a file written by write_sweep_csv. InputError ("file:line: ...") on malformed content.
std::vector<SweepRow> read_sweep_csv(const std::filesystem::path& file);

// "nccl_all_reduce_float32_sum_8r.csv" ("none" in place of the operator for all-gather and
// broadcast): one file per collective and configuration, so runs do not overwrite each other.
std::string sweep_csv_filename(Collective collective, coll::DType dtype, coll::ReduceOp op,
                               int n_ranks);

}  // namespace adaptsim::hw
