#pragma once
// The calibration tool's measurements: coll::SweepRow (sim/coll/sweep_row.h), one per point of
// any sweep it runs or imports (TCP all-reduce, TCP ping-pong, NCCL collectives, nccl-tests
// output), written to <name>.csv in nccl-tests' vocabulary with calibration's own columns:
//
//   size_bytes,count,type,redop,collective,algorithm,link_class,n_ranks,in_place,time_us,
//   algbw_GBps,busbw_GBps,wrong
//
// GB = 1e9 B; algbw = size_bytes / time; busbw = algbw x the collective's bus factor.
// coll::write_sweep_csv and coll::read_sweep_csv write and read it with this format.

#include "sim/coll/sweep_row.h"

namespace adaptsim::calibrate {

inline const coll::SweepCsvFormat kMeasurementCsv = {
    {coll::SweepColumn::kSizeBytes, coll::SweepColumn::kCount, coll::SweepColumn::kType,
     coll::SweepColumn::kRedop, coll::SweepColumn::kCollective, coll::SweepColumn::kAlgorithm,
     coll::SweepColumn::kLinkClass, coll::SweepColumn::kNRanks, coll::SweepColumn::kInPlace,
     coll::SweepColumn::kTimeUs, coll::SweepColumn::kAlgbwGBps, coll::SweepColumn::kBusbwGBps,
     coll::SweepColumn::kWrong},
    6};

}  // namespace adaptsim::calibrate
