// calibrate's measurement CSV keeps its thirteen columns and its number formats.
#include "calibrate/measurement.h"

#include <doctest/doctest.h>

using namespace adaptsim;

TEST_CASE("calibrate's CSV: nccl-tests' columns plus algorithm, link class and in-place") {
  coll::SweepRow r;
  r.size_bytes = 1024;
  r.count = 256;
  r.redop = "none";
  r.collective = coll::Collective::kSendRecv;
  r.algorithm = "p2p";
  r.link_class = "loopback";
  r.n_ranks = 2;
  r.time_us = 12.3456;
  r.algbw_GBps = 0.0829439;  // 1024 B / 12.3456 us
  r.busbw_GBps = 0.0829439;  // sendrecv: bus factor 1
  CHECK(coll::sweep_csv_header(calibrate::kMeasurementCsv) ==
        "size_bytes,count,type,redop,collective,algorithm,link_class,n_ranks,in_place,time_us,"
        "algbw_GBps,busbw_GBps,wrong");
  CHECK(coll::sweep_csv_row(r, calibrate::kMeasurementCsv) ==
        "1024,256,float32,none,sendrecv,p2p,loopback,2,0,12.346,0.082944,0.082944,0");
}
