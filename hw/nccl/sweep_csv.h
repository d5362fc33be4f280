#pragma once
// The NCCL sweep's CSV, in nccl-tests' vocabulary, one row per (collective, size), written and
// read by coll::write_sweep_csv / coll::read_sweep_csv (sim/coll/sweep_row.h) in this format:
//   size_bytes,count,type,redop,collective,n_ranks,time_us,algbw_GBps,busbw_GBps,wrong
// type is adaptsim's dtype name (float32, bfloat16, ...), redop "none" for all-gather and
// broadcast, GB = 1e9 B; bandwidths with MB/s resolution, beyond what the timer resolves. Pure
// C++ (no CUDA): calibration reads these files on any machine.

#include <string>

#include "sim/coll/collective.h"
#include "sim/coll/dtype.h"
#include "sim/coll/sweep_row.h"

namespace adaptsim::hw {

inline const coll::SweepCsvFormat kNcclSweepCsv = {
    {coll::SweepColumn::kSizeBytes, coll::SweepColumn::kCount, coll::SweepColumn::kType,
     coll::SweepColumn::kRedop, coll::SweepColumn::kCollective, coll::SweepColumn::kNRanks,
     coll::SweepColumn::kTimeUs, coll::SweepColumn::kAlgbwGBps, coll::SweepColumn::kBusbwGBps,
     coll::SweepColumn::kWrong},
    3};

// "nccl_all_reduce_float32_sum_8r.csv" ("none" in place of the operator for all-gather and
// broadcast): one file per collective and configuration, so runs do not overwrite each other.
std::string sweep_csv_filename(coll::Collective collective, coll::DType dtype, coll::ReduceOp op,
                               int n_ranks);

}  // namespace adaptsim::hw
