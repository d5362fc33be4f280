// Importing nccl-tests output: the text table (with and without the root column, #wrong or the
// old error column, in-place and out-of-place, mpirun-tagged lines) and the -J JSON, into the
// right rows, rank counts, collectives and fits.
//
// The samples are made from known lines, printed with nccl-tests' formats (time %.2f below
// 10 ms, bandwidths %.2f), so the fits must give the lines back:
//   kNewText: all_reduce on 8 GPUs of one host, t = 25 us + m / (400 GB/s / 1.75)
//   kOldText: all_reduce on 4 GPUs, t = 40 us + m / (120 GB/s / 1.5)
//   kJson:    all_reduce on 2 ranks of two hosts, t = 50 us + m / 12 GB/s

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "calibrate/nccl_tests_import.h"
#include "calibrate/profile_builder.h"
#include "sim/core/error.h"

using namespace adaptsim;
using namespace adaptsim::calibrate;

namespace {

const char* kNewText = R"nccl(# nccl-tests version 2.13.11 nccl-headers=22107 nccl-library=22107
# Collective test starting: all_reduce_perf
# nThread 1 nGpus 8 minBytes 8 maxBytes 134217728 step: 4(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid  41234 on     node01 device  0 [0000:18:00] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid  41234 on     node01 device  1 [0000:2a:00] NVIDIA H100 80GB HBM3
#  Rank  2 Group  0 Pid  41234 on     node01 device  2 [0000:3a:00] NVIDIA H100 80GB HBM3
#  Rank  3 Group  0 Pid  41234 on     node01 device  3 [0000:5d:00] NVIDIA H100 80GB HBM3
#  Rank  4 Group  0 Pid  41234 on     node01 device  4 [0000:9a:00] NVIDIA H100 80GB HBM3
#  Rank  5 Group  0 Pid  41234 on     node01 device  5 [0000:ab:00] NVIDIA H100 80GB HBM3
#  Rank  6 Group  0 Pid  41234 on     node01 device  6 [0000:ba:00] NVIDIA H100 80GB HBM3
#  Rank  7 Group  0 Pid  41234 on     node01 device  7 [0000:db:00] NVIDIA H100 80GB HBM3
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)
           8             2     float     sum      -1    25.00    0.00    0.00       0    25.25    0.00    0.00       0
          32             8     float     sum      -1    25.00    0.00    0.00       0    25.25    0.00    0.00       0
         128            32     float     sum      -1    25.00    0.01    0.01       0    25.25    0.01    0.01       0
         512           128     float     sum      -1    25.00    0.02    0.04       0    25.25    0.02    0.04       0
        2048           512     float     sum      -1    25.01    0.08    0.14       0    25.26    0.08    0.14       0
        8192          2048     float     sum      -1    25.04    0.33    0.57       0    25.29    0.32    0.57       0
       32768          8192     float     sum      -1    25.14    1.30    2.28       0    25.39    1.29    2.26       0
      131072         32768     float     sum      -1    25.57    5.13    8.97       0    25.83    5.07    8.88       0
      524288        131072     float     sum      -1    27.29   19.21   33.62       0    27.57   19.02   33.28       0
     2097152        524288     float     sum      -1    34.18   61.37  107.39       0    34.52   60.76  106.33       0
     8388608       2097152     float     sum      -1    61.70  135.96  237.93       0    62.32  134.61  235.57       0
    33554432       8388608     float     sum      -1   171.80  195.31  341.79       0   173.52  193.38  338.41       0
   134217728      33554432     float     sum      -1   612.20  219.24  383.67       0   618.32  217.07  379.87       0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 100.987
#
# Collective test concluded: all_reduce_perf
)nccl";

// nccl-tests before 2.10: no root column, "error" (max abs error) instead of #wrong, no
// "Collective test starting" line, rank lines without "Group"; run under mpirun --tag-output.
const char* kOldText =
    R"nccl([1,0]<stdout>:# nThread 1 nGpus 4 minBytes 8 maxBytes 33554432 step: 8(factor) warmup iters: 5 iters: 20 validation: 1
[1,0]<stdout>:#
[1,0]<stdout>:# Using devices
[1,0]<stdout>:#   Rank  0 Pid  31470 on       dgx1 device  0 [0x06] Tesla V100-SXM2-16GB
[1,0]<stdout>:#   Rank  1 Pid  31470 on       dgx1 device  1 [0x07] Tesla V100-SXM2-16GB
[1,0]<stdout>:#   Rank  2 Pid  31470 on       dgx1 device  2 [0x0a] Tesla V100-SXM2-16GB
[1,0]<stdout>:#   Rank  3 Pid  31470 on       dgx1 device  3 [0x0b] Tesla V100-SXM2-16GB
dgx1:31470:31470 [0] NCCL INFO Bootstrap : Using ib0:192.168.1.10<0>
[1,0]<stdout>:#
[1,0]<stdout>:#                                                     out-of-place                       in-place
[1,0]<stdout>:#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error
[1,0]<stdout>:#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
[1,0]<stdout>:           8             2   float     sum    40.00    0.00    0.00  1e-07    40.80    0.00    0.00  1e-07
[1,0]<stdout>:          64            16   float     sum    40.00    0.00    0.00  1e-07    40.80    0.00    0.00  1e-07
[1,0]<stdout>:         512           128   float     sum    40.01    0.01    0.02  1e-07    40.81    0.01    0.02  1e-07
[1,0]<stdout>:        4096          1024   float     sum    40.05    0.10    0.15  1e-07    40.85    0.10    0.15  1e-07
[1,0]<stdout>:       32768          8192   float     sum    40.41    0.81    1.22  1e-07    41.22    0.79    1.19  1e-07
[1,0]<stdout>:      262144         65536   float     sum    43.28    6.06    9.09  1e-07    44.14    5.94    8.91  1e-07
[1,0]<stdout>:     2097152        524288   float     sum    66.21   31.67   47.51  1e-07    67.54   31.05   46.58  1e-07
[1,0]<stdout>:    16777216       4194304   float     sum   249.72   67.19  100.78  1e-07   254.71   65.87   98.80  1e-07
[1,0]<stdout>:# Out of bounds values : 0 OK
)nccl";

// all_gather_perf on 4 GPUs, no program line: size = count x 4 B x 4 ranks.
const char* kAllGatherText =
    R"nccl(# nThread 1 nGpus 4 minBytes 1024 maxBytes 1048576 step: 32(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
        1024            64     float    none      -1    12.00    0.09    0.06       0    11.90    0.09    0.06       0
       32768          2048     float    none      -1    13.00    2.52    1.89       0    12.90    2.54    1.91       0
     1048576         65536     float    none      -1    40.00   26.21   19.66       0    39.00   26.89   20.16       0
)nccl";

// nccl-tests -J (util.cu, JSON_FILE_VERSION 2): two processes of one GPU on two hosts.
const char* kJson = R"nccl({"version":2,"start_time":"2026-11-20 10:00:00",
"args":["./build/all_reduce_perf","-b","1K","-e","64M","-f","8","-J","out.json"],
"env":["PATH=/usr/bin"],"nccl_version":22809,
"config":{"nthreads":1,"ngpus":1,"minimum_bytes":1024,"maximum_bytes":67108864,"step_factor":8,
 "warmup_iters":5,"iterations":20,"aggregated_iterations":1,"validation":1,"graph":0,
 "blocking_collectives":"false","per_iter_timing":"false","parallel_init":"false",
 "devices":[{"rank":0,"group":0,"pid":100,"hostname":"node01","device":0,"device_hex":"0000:18:00","device_info":"NVIDIA H100 80GB HBM3"},
            {"rank":1,"group":0,"pid":200,"hostname":"node02","device":0,"device_hex":"0000:18:00","device_info":"NVIDIA H100 80GB HBM3"}]},
"results":[
 {"size":1024,"count":256,"type":"float","redop":"sum","root":"    -1","out_of_place":{"time":50.085,"alg_bw":0.020445,"bus_bw":0.020445,"nwrong":0},"in_place":{"time":50.586,"alg_bw":0.020243,"bus_bw":0.020243,"nwrong":0},"actual_iterations":20,"experiment_name":""},
 {"size":8192,"count":2048,"type":"float","redop":"sum","root":"    -1","out_of_place":{"time":50.683,"alg_bw":0.161633,"bus_bw":0.161633,"nwrong":0},"in_place":{"time":51.189,"alg_bw":0.160033,"bus_bw":0.160033,"nwrong":0},"actual_iterations":20,"experiment_name":""},
 {"size":65536,"count":16384,"type":"float","redop":"sum","root":"    -1","out_of_place":{"time":55.461,"alg_bw":1.181652,"bus_bw":1.181652,"nwrong":0},"in_place":{"time":56.016,"alg_bw":1.169953,"bus_bw":1.169953,"nwrong":0},"actual_iterations":20,"experiment_name":""},
 {"size":524288,"count":131072,"type":"float","redop":"sum","root":"    -1","out_of_place":{"time":93.691,"alg_bw":5.595947,"bus_bw":5.595947,"nwrong":0},"in_place":{"time":94.628,"alg_bw":5.540542,"bus_bw":5.540542,"nwrong":0},"actual_iterations":20,"experiment_name":""},
 {"size":4194304,"count":1048576,"type":"float","redop":"sum","root":"    -1","out_of_place":{"time":399.525,"alg_bw":10.498218,"bus_bw":10.498218,"nwrong":0},"in_place":{"time":403.521,"alg_bw":10.394275,"bus_bw":10.394275,"nwrong":0},"actual_iterations":20,"experiment_name":""},
 {"size":33554432,"count":8388608,"type":"float","redop":"sum","root":"    -1","out_of_place":{"time":2846.203,"alg_bw":11.789193,"bus_bw":11.789193,"nwrong":0},"in_place":{"time":2874.665,"alg_bw":11.672468,"bus_bw":11.672468,"nwrong":null},"actual_iterations":20,"experiment_name":""}],
"out_of_bounds":{"count":0,"okay":"true"},"average_bus_bandwidth":{"bandwidth":4.9,"okay":"unchecked"},
"errors":[],"end_time":"2026-11-20 10:00:09"})nccl";

// A differently shaped JSON (another tool's export): flat rows, other spellings.
const char* kFlatJson = R"nccl({"collective":"all_reduce_perf","nranks":4,"rows":[
 {"Size (B)":4096,"Count":1024,"Type":"float","Op":"sum","Time (us)":30.5,"AlgBW (GB/s)":0.134,"BusBW (GB/s)":0.201,"#wrong":0,"in_place":false},
 {"Size (B)":4096,"Count":1024,"Type":"float","Op":"sum","Time (us)":31.0,"AlgBW (GB/s)":0.132,"BusBW (GB/s)":0.198,"#wrong":0,"in_place":true},
 {"Size (B)":4194304,"Count":1048576,"Type":"float","Op":"sum","Time (us)":530.5,"AlgBW (GB/s)":7.906,"BusBW (GB/s)":11.86,"#wrong":0,"in_place":false}]})nccl";

double rel(double got, double want) {
  return std::fabs(got - want) / want;
}

}  // namespace

TEST_CASE("import: nccl-tests text with root and #wrong, in-place and out-of-place") {
  const NcclTestsImport imp = parse_nccl_tests_text(kNewText, "h100.txt");
  CHECK(imp.collective == "all_reduce");
  CHECK(imp.n_ranks == 8);
  CHECK(imp.hosts == 1);
  CHECK(imp.first_hostname == "node01");
  CHECK(imp.nccl_version == "2.21.7");
  CHECK(imp.step_factor == 4);
  CHECK(imp.iters == 20);
  CHECK(imp.warmup_iters == 5);
  REQUIRE(imp.rows.size() == 26);  // 13 sizes x (out-of-place, in-place)
  const coll::SweepRow& last_oop = imp.rows[24];
  CHECK(last_oop.size_bytes == 134217728);
  CHECK(last_oop.count == 33554432);
  CHECK(last_oop.type == "float");
  CHECK(last_oop.redop == "sum");
  CHECK_FALSE(last_oop.in_place);
  CHECK(last_oop.time_us == doctest::Approx(612.20));
  CHECK(last_oop.busbw_GBps == doctest::Approx(383.67));
  CHECK(imp.rows[25].in_place);
  CHECK(imp.rows[25].time_us == doctest::Approx(618.32));
  for (const coll::SweepRow& r : imp.rows) {
    CHECK(r.link_class == "nccl_intra");
    CHECK(r.algorithm == "nccl");
    CHECK(r.n_ranks == 8);
  }

  // The fit of the out-of-place rows gives the line back: 25 us, and busbw_inf = 400 GB/s =
  // 1.75 x algbw_inf; alpha per ring step = 25 / 14.
  std::vector<std::string> notes;
  const auto fits = fit_link_groups(imp.rows, {}, notes);
  REQUIRE(fits.size() == 1);
  const io::LinkFit& f = fits[0];
  CHECK(f.link_class == "nccl_intra");
  CHECK(f.collective == "all_reduce");
  CHECK(f.points == 13);
  CHECK(rel(f.latency_us, 25) < 0.01);
  CHECK(rel(f.busbw_inf_Bps, 400e9) < 0.01);
  CHECK(rel(f.bandwidth_Bps, 400e9 / 1.75) < 0.01);
  CHECK(f.steps == 14);
  CHECK(f.alpha_per_step_us == doctest::Approx(f.latency_us / 14));
  CHECK(f.bus_factor == doctest::Approx(1.75));
  CHECK(f.r2 > 0.999);
  CHECK(f.min_bytes == 8);
  CHECK(f.max_bytes == 134217728);
}

TEST_CASE("import: old nccl-tests text without root, with the error column, mpirun-tagged") {
  const NcclTestsImport imp = parse_nccl_tests_text(kOldText, "v100.txt");
  CHECK(imp.n_ranks == 4);  // the Rank lines
  CHECK(imp.first_hostname == "dgx1");
  CHECK(imp.collective == "all_reduce");  // inferred: an operator, size = count x 4 B, no root
  REQUIRE(imp.rows.size() == 16);
  for (const coll::SweepRow& r : imp.rows)
    CHECK(r.wrong == 0);  // "1e-07" is an error, not a count
  CHECK(imp.rows[14].size_bytes == 16777216);
  CHECK(imp.rows[14].time_us == doctest::Approx(249.72));
  std::vector<std::string> notes;
  const auto fits = fit_link_groups(imp.rows, {}, notes);
  REQUIRE(fits.size() == 1);
  CHECK(rel(fits[0].latency_us, 40) < 0.01);
  CHECK(rel(fits[0].busbw_inf_Bps, 120e9) < 0.01);
  CHECK(fits[0].steps == 6);
}

TEST_CASE("import: the collective is inferred from the rows' shape, or given") {
  const NcclTestsImport ag = parse_nccl_tests_text(kAllGatherText, "ag.txt");
  CHECK(ag.collective == "all_gather");  // no operator, size = count x 4 B x 4 ranks
  CHECK(ag.n_ranks == 4);                // nThread 1 x nGpus 4
  CHECK_FALSE(ag.notes.empty());
  NcclTestsImportOptions given;
  given.collective = "reduce_scatter";
  CHECK(parse_nccl_tests_text(kAllGatherText, "ag.txt", given).collective == "reduce_scatter");
}

TEST_CASE("import: nccl-tests -J JSON") {
  const NcclTestsImport imp = parse_nccl_tests_json(kJson, "out.json");
  CHECK(imp.collective == "all_reduce");  // from args[0]
  CHECK(imp.n_ranks == 2);                // 1 thread x 1 GPU x 2 processes
  CHECK(imp.hosts == 2);
  CHECK(imp.nccl_version == "2.28.9");
  CHECK(imp.step_factor == 8);
  CHECK(imp.iters == 20);
  REQUIRE(imp.rows.size() == 12);
  CHECK(imp.rows[0].link_class == "nccl_inter");
  CHECK(imp.rows[10].size_bytes == 33554432);
  CHECK(imp.rows[10].time_us == doctest::Approx(2846.203));
  CHECK(imp.rows[11].in_place);
  CHECK(imp.rows[11].wrong == 0);  // null: unchecked
  std::vector<std::string> notes;
  const auto fits = fit_link_groups(imp.rows, {}, notes);
  REQUIRE(fits.size() == 1);
  // 2 ranks: busbw = algbw (2 (n-1) / n = 1), 12 GB/s; latency 50 us over 2 ring steps.
  CHECK(fits[0].link_class == "nccl_inter");
  CHECK(rel(fits[0].latency_us, 50) < 0.01);
  CHECK(rel(fits[0].bandwidth_Bps, 12e9) < 0.01);
  CHECK(fits[0].steps == 2);
}

TEST_CASE("import: JSON fields are found by name, whatever the shape") {
  const NcclTestsImport imp = parse_nccl_tests_json(kFlatJson, "flat.json");
  CHECK(imp.collective == "all_reduce");
  CHECK(imp.n_ranks == 4);
  REQUIRE(imp.rows.size() == 3);
  CHECK_FALSE(imp.rows[0].in_place);
  CHECK(imp.rows[1].in_place);
  CHECK(imp.rows[2].time_us == doctest::Approx(530.5));
  CHECK(imp.rows[2].busbw_GBps == doctest::Approx(11.86));
}

TEST_CASE("import: what is not nccl-tests output is an error naming the file") {
  CHECK_THROWS_WITH_AS(parse_nccl_tests_text("hello\nworld\n", "x.txt"),
                       doctest::Contains("x.txt: no result rows"), InputError);
  CHECK_THROWS_WITH_AS(
      parse_nccl_tests_text("# nThread 1 nGpus 2\n  8 2 float sum -1 abc 0 0 0\n", "y.txt"),
      doctest::Contains("y.txt:2:"), InputError);
  CHECK_THROWS_WITH_AS(parse_nccl_tests_json("{\"results\": [", "z.json"),
                       doctest::Contains("z.json: invalid JSON"), InputError);
  CHECK(nccl_version_from_code(2708) == "2.7.8");
  CHECK(nccl_version_from_code(21903) == "2.19.3");
}

// The inputs fuzz_nccl_tests found (fuzz/regressions/nccl_tests/): each was read into a profile
// that simctl could not read back, or converted a number out of its type's range (undefined
// behaviour); each is now one clear error, or a value left unknown.
TEST_CASE("import: numbers beyond what a profile holds are errors, not casts (fuzz_nccl_tests)") {
  // Sizes above 1 PiB (a size_t cast of 1.8e23 was undefined).
  CHECK_THROWS_WITH_AS(
      parse_nccl_tests_json("{\"nranks\": 2, \"results\": [{\"size\": 1.8e23, \"time\": 5}]}",
                            "s.json"),
      "s.json: results[0]: size 1.8e+23 B is beyond 1 PiB", InputError);
  CHECK_THROWS_WITH_AS(
      parse_nccl_tests_text("# nThread 1 nGpus 2\n 2251799813685248 8 float sum -1 5.0 0 0 0\n",
                            "s.txt"),
      "s.txt:2: size 2.2518e+15 B is beyond 1 PiB", InputError);
  // A number JSON cannot hold (nlohmann throws out_of_range, not parse_error).
  CHECK_THROWS_WITH_AS(parse_nccl_tests_json("{\"results\": [{\"size\": 1e400}]}", "o.json"),
                       doctest::Contains("o.json: invalid JSON: "), InputError);
  CHECK_THROWS_WITH_AS(parse_nccl_tests_json("{\"results\": [{\"size\": 1e400}]}", "o.json"),
                       doctest::Contains("number overflow parsing '1e400'"), InputError);
  // Rank counts: nThread x nGpus overflowed an int; 1e300 ranks were cast to int.
  CHECK_THROWS_WITH_AS(
      parse_nccl_tests_text("# nThread 65536 nGpus 65536\n 8 2 float sum -1 5.0 0 0 0\n", "r.txt"),
      "r.txt: more than 1048576 ranks; expected at most that", InputError);
  CHECK_THROWS_WITH_AS(
      parse_nccl_tests_json("{\"nranks\": 1e300, \"results\": [{\"size\": 8, \"time\": 5}]}",
                            "r.json"),
      "r.json: more than 1048576 ranks; expected at most that", InputError);
  CHECK_THROWS_WITH_AS(parse_nccl_tests_json("{\"config\": {\"nthreads\": 1e10, \"ngpus\": 1e10},"
                                             " \"results\": [{\"size\": 8, \"time\": 5}]}",
                                             "p.json"),
                       "p.json: more than 1048576 ranks; expected at most that", InputError);
  // Header counts outside a profile's ranges are unknown (0), as when absent.
  const NcclTestsImport imp = parse_nccl_tests_json(
      "{\"nranks\": 2, \"nccl_version\": 1e300, \"config\": {\"stepfactor\": 1e300, "
      "\"iters\": -5, \"warmupiters\": 1e20}, \"results\": [{\"size\": 8, \"count\": -3, "
      "\"root\": 1e300, \"time\": 5}]}",
      "h.json");
  CHECK(imp.step_factor == 0);
  CHECK(imp.iters == 0);
  CHECK(imp.warmup_iters == 0);
  CHECK(imp.nccl_version.empty());
  REQUIRE(imp.rows.size() == 1);
  CHECK(imp.rows[0].count == 0);
}

TEST_CASE("import: text that is not UTF-8 is an error at its line (fuzz_nccl_tests)") {
  // A host name with a byte that is not UTF-8 went into the profile's YAML, which simctl then
  // refused (fuzz/regressions/nccl_tests/text-hostname-not-utf8).
  CHECK_THROWS_WITH_AS(parse_nccl_tests_text("# nThread 1 nGpus 1\n"
                                             "#  Rank  0 Group  0 Pid 1 on node\x9b device 0\n"
                                             " 8 2 float sum -1 5.0 0 0 0\n",
                                             "u.txt"),
                       "u.txt:2: expected UTF-8 text, found a byte that is not (offset 53)",
                       InputError);
}

TEST_CASE("import: a fit beyond what a profile holds is left out with a note (fuzz_nccl_tests)") {
  // t = 25 us + m / 1.07e17 B/s: 0.01 us more for 1 GiB. Written, "1.07e+02TB/s" was an
  // unreadable profile; now the group is not fitted, and `calibrate import` says why.
  const NcclTestsImport imp = parse_nccl_tests_text(
      "# nThread 1 nGpus 2\n"
      "#       size         count      type   redop    root     time   algbw   busbw  #wrong\n"
      "        1024           256     float     sum      -1    25.00    0.04    0.04       0\n"
      "  1073741824     268435456     float     sum      -1    25.01  42932.0  42932.0     0\n",
      "flat.txt");
  std::vector<std::string> notes;
  CHECK(fit_link_groups(imp.rows, {}, notes).empty());
  REQUIRE_FALSE(notes.empty());
  CHECK(notes.back().find("nccl_intra nccl all_reduce on 2 ranks: fitted bandwidth ") == 0);
  CHECK(notes.back().find(" is outside 1 Kbit/s to 1 PB/s, not fitted") != std::string::npos);
}
