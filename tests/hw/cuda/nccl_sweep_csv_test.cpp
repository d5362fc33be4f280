#include "hw/nccl/sweep_csv.h"

#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "sim/core/error.h"

using namespace adaptsim;
using namespace adaptsim::hw;
using coll::Collective;

namespace {

std::filesystem::path temp_dir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() /
             ("adaptsim_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

coll::SweepRow sample_row() {
  coll::SweepRow r;
  r.size_bytes = 1 << 20;
  r.count = 262144;
  r.type = "float32";
  r.redop = "sum";
  r.collective = Collective::kAllReduce;
  r.n_ranks = 8;
  r.time_us = 40.125;
  r.algbw_GBps = 26.133;
  r.busbw_GBps = 45.733;
  r.wrong = 0;
  return r;
}

}  // namespace

TEST_CASE("a CSV row has the ten nccl-tests-style columns") {
  CHECK(coll::sweep_csv_header(kNcclSweepCsv) ==
        "size_bytes,count,type,redop,collective,n_ranks,time_us,algbw_GBps,busbw_GBps,wrong");
  CHECK(coll::sweep_csv_row(sample_row(), kNcclSweepCsv) ==
        "1048576,262144,float32,sum,all_reduce,8,40.125,26.133,45.733,0");
  coll::SweepRow gather = sample_row();
  gather.collective = Collective::kAllGather;
  gather.redop = "none";
  CHECK(coll::sweep_csv_row(gather, kNcclSweepCsv).find(",none,all_gather,") != std::string::npos);
}

TEST_CASE("written CSV files read back the same rows and leave no temporary file") {
  const auto dir = temp_dir("sweep_csv");
  coll::SweepRow b = sample_row();
  b.collective = Collective::kBroadcast;
  b.redop = "none";
  b.type = "bfloat16";
  b.wrong = 3;
  const std::vector<coll::SweepRow> rows = {sample_row(), b};
  const auto file = dir / "out.csv";
  coll::write_sweep_csv(file, rows, kNcclSweepCsv);
  const auto back = coll::read_sweep_csv(file, kNcclSweepCsv);
  REQUIRE(back.size() == 2);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    CHECK(back[i].size_bytes == rows[i].size_bytes);
    CHECK(back[i].count == rows[i].count);
    CHECK(back[i].type == rows[i].type);
    CHECK(back[i].redop == rows[i].redop);
    CHECK(back[i].collective == rows[i].collective);
    CHECK(back[i].n_ranks == rows[i].n_ranks);
    CHECK(back[i].time_us == doctest::Approx(rows[i].time_us));
    CHECK(back[i].busbw_GBps == doctest::Approx(rows[i].busbw_GBps));
    CHECK(back[i].wrong == rows[i].wrong);
  }
  int files = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir))
    ++files;
  CHECK(files == 1);
  std::filesystem::remove_all(dir);
}

TEST_CASE("a malformed CSV is an input error naming file and line") {
  const auto dir = temp_dir("sweep_csv_bad");
  const auto file = dir / "bad.csv";
  std::ofstream(file) << coll::sweep_csv_header(kNcclSweepCsv)
                      << "\n1048576,262144,float32,sum,all_reduce,8,x,1,1,0\n";
  try {
    coll::read_sweep_csv(file, kNcclSweepCsv);
    FAIL("expected an InputError");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("bad.csv:2") != std::string::npos);
    CHECK(std::string(e.what()).find("time_us") != std::string::npos);
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("CSV file names identify collective, type, operator and ranks") {
  CHECK(sweep_csv_filename(Collective::kAllReduce, coll::DType::kF32, coll::ReduceOp::kSum, 8) ==
        "nccl_all_reduce_float32_sum_8r.csv");
  CHECK(sweep_csv_filename(Collective::kAllGather, coll::DType::kBF16, coll::ReduceOp::kMax, 16) ==
        "nccl_all_gather_bfloat16_none_16r.csv");
}
