// The sweep row's CSV: a format's columns in its order, numbers at fixed decimals, and a reader
// that gives the rows back and names the file, line and column of a bad cell.
#include "sim/coll/sweep_row.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "sim/core/error.h"

using namespace adaptsim;
using coll::SweepColumn;
using coll::SweepRow;

namespace {

const coll::SweepCsvFormat kAll = {
    {SweepColumn::kSizeBytes, SweepColumn::kCount, SweepColumn::kType, SweepColumn::kRedop,
     SweepColumn::kCollective, SweepColumn::kAlgorithm, SweepColumn::kLinkClass,
     SweepColumn::kNRanks, SweepColumn::kInPlace, SweepColumn::kTimeUs, SweepColumn::kAlgbwGBps,
     SweepColumn::kBusbwGBps, SweepColumn::kWrong},
    6};

SweepRow gather_row() {
  SweepRow r;
  r.size_bytes = 4096;
  r.count = 128;
  r.type = "half";
  r.redop = "none";
  r.collective = coll::Collective::kAllGather;
  r.algorithm = "nccl";
  r.link_class = "nccl_inter";
  r.n_ranks = 16;
  r.in_place = true;
  r.time_us = 31.0004;
  r.algbw_GBps = 0.1321234567;
  r.busbw_GBps = 0.12386574;
  r.wrong = 2;
  return r;
}

}  // namespace

TEST_CASE("a row is written in the format's columns, time to the ns, bandwidths as asked") {
  CHECK(coll::sweep_csv_header(kAll) ==
        "size_bytes,count,type,redop,collective,algorithm,link_class,n_ranks,in_place,time_us,"
        "algbw_GBps,busbw_GBps,wrong");
  // 31.0004 us -> 31.000 (3 decimals); 0.1321234567 GB/s -> 0.132123 (6).
  CHECK(coll::sweep_csv_row(gather_row(), kAll) ==
        "4096,128,half,none,all_gather,nccl,nccl_inter,16,1,31.000,0.132123,0.123866,2");
  // The same row in another order and with 3 decimals; "strategy" names the algorithm field.
  const coll::SweepCsvFormat tcp_like = {
      {SweepColumn::kStrategy, SweepColumn::kNRanks, SweepColumn::kBusbwGBps}, 3};
  CHECK(coll::sweep_csv_header(tcp_like) == "strategy,n_ranks,busbw_GBps");
  CHECK(coll::sweep_csv_row(gather_row(), tcp_like) == "nccl,16,0.124");
  CHECK(coll::sweep_csv_text({gather_row(), gather_row()}, tcp_like) ==
        "strategy,n_ranks,busbw_GBps\nnccl,16,0.124\nnccl,16,0.124\n");
}

TEST_CASE("the reader gives the rows back: fields without a column keep their defaults") {
  const std::string text = coll::sweep_csv_text({gather_row(), SweepRow{}}, kAll) + "\n";
  const std::vector<SweepRow> back = coll::parse_sweep_csv(text, "t.csv", kAll);
  REQUIRE(back.size() == 2);
  CHECK(back[0].type == "half");
  CHECK(back[0].collective == coll::Collective::kAllGather);
  CHECK(back[0].link_class == "nccl_inter");
  CHECK(back[0].in_place);
  CHECK(back[0].time_us == doctest::Approx(31.0));
  CHECK(back[0].wrong == 2);
  CHECK_FALSE(back[1].in_place);
  const coll::SweepCsvFormat two = {{SweepColumn::kSizeBytes, SweepColumn::kStrategy}, 6};
  const std::vector<SweepRow> short_rows =
      coll::parse_sweep_csv("size_bytes,strategy\n8,STAR\n", "s.csv", two);
  REQUIRE(short_rows.size() == 1);
  CHECK(short_rows[0].algorithm == "STAR");
  CHECK(short_rows[0].collective == coll::Collective::kAllReduce);
  CHECK(short_rows[0].type == "float32");
}

TEST_CASE("a malformed CSV is an input error naming the file, the line and the column") {
  const std::string header = coll::sweep_csv_header(kAll) + "\n";
  CHECK_THROWS_WITH_AS(coll::parse_sweep_csv("", "e.csv", kAll),
                       doctest::Contains("e.csv: empty file (expected the header"), InputError);
  CHECK_THROWS_WITH_AS(coll::parse_sweep_csv("size,count\n", "h.csv", kAll),
                       doctest::Contains("h.csv:1: expected the header \"size_bytes,count,"),
                       InputError);
  CHECK_THROWS_WITH_AS(coll::parse_sweep_csv(header + "1,2,3\n", "c.csv", kAll),
                       "c.csv:2: expected 13 columns, got 3", InputError);
  CHECK_THROWS_WITH_AS(
      coll::parse_sweep_csv(header + "\n8,2,float,sum,all_reduce,nccl,x,2,0,1.5us,1,1,0\n", "n.csv",
                            kAll),
      "n.csv:3: column time_us: expected a number, got \"1.5us\"", InputError);
  CHECK_THROWS_WITH_AS(
      coll::parse_sweep_csv(header + "8,2,float,sum,allreduce,nccl,x,2,0,1,1,1,0\n", "k.csv", kAll),
      doctest::Contains("k.csv:2: column collective: unknown collective \"allreduce\" (known: "
                        "all_reduce, "),
      InputError);
  CHECK_THROWS_WITH_AS(
      coll::parse_sweep_csv(header + "8,2,float,sum,all_reduce,nccl,x,2,yes,1,1,1,0\n", "p.csv",
                            kAll),
      "p.csv:2: column in_place: expected 0 or 1, got \"yes\"", InputError);
  CHECK_THROWS_WITH_AS(coll::read_sweep_csv("/nonexistent/sweep.csv", kAll),
                       "/nonexistent/sweep.csv: cannot open", InputError);
}
