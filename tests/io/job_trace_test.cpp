// The job trace reader (sim/io/job_trace.h): Helios' columns with timestamps or seconds, and every
// defect a hand-edited trace can have, each one line naming the file, the line and the column.

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "sim/core/error.h"
#include "sim/io/job_trace.h"

using namespace adaptsim;
namespace fs = std::filesystem;

namespace {

fs::path write(const std::string& name, const std::string& text) {
  const fs::path p = fs::temp_directory_path() / ("adaptsim_job_trace_" + name + ".csv");
  std::ofstream(p) << text;
  return p;
}

std::string error_of(const std::string& name, const std::string& text, int max_gpus = 64) {
  try {
    io::read_job_trace(write(name, text), max_gpus);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a Helios cluster_log row is read, its clock starts at the first submission") {
  const fs::path p = write("helios",
                           "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,"
                           "end_time,duration,queue,model,samples\n"
                           "7,uA,vcX,4,16,1,COMPLETED,2020-06-09 18:41:27,2020-06-09 18:41:27,"
                           "2020-06-09 18:45:36,249,0,resnet50,128000\n"
                           "5,uB,vcY,1,1,1,FAILED,2020-06-09 18:41:01,2020-06-09 18:41:01,"
                           "2020-06-10 04:55:09,36848,0,resnet56,5e4\n");
  const io::JobTrace t = io::read_job_trace(p, 64);
  REQUIRE(t.jobs.size() == 2);
  // Sorted by submission: job 5 came 26 s before job 7.
  CHECK(t.jobs[0].id == "5");
  CHECK(t.jobs[0].submit == 0);
  CHECK(t.jobs[0].samples == 50000);
  CHECK(t.jobs[0].line == 3);
  CHECK(t.jobs[1].id == "7");
  CHECK(t.jobs[1].submit == 26 * kNsPerSecond);
  CHECK(t.jobs[1].gpus == 4);
  CHECK(t.jobs[1].model == "resnet50");
}

TEST_CASE("submit_time in seconds, CRLF line ends") {
  const io::JobTrace t = io::read_job_trace(
      write("seconds",
            "job_id,gpu_num,submit_time,model,samples\r\na,2,10.5,m,100\r\nb,1,12,m,1\r\n"),
      8);
  REQUIRE(t.jobs.size() == 2);
  CHECK(t.jobs[0].submit == 0);
  CHECK(t.jobs[1].submit == 1'500'000'000);
}

TEST_CASE("every defect of a trace is one error at its file, line and column") {
  const std::string h = "job_id,gpu_num,submit_time,model,samples\n";
  struct Row {
    std::string name, text, expected;
  };
  for (const Row& r : std::vector<Row>{
           {"empty", "", ":1: the file is empty"},
           {"no_samples", "job_id,gpu_num,submit_time,model\n", ":1: column 'samples': is missing"},
           {"twice", "job_id,gpu_num,gpu_num,submit_time,model,samples\n",
            ":1: column 'gpu_num': is named twice"},
           {"no_jobs", h, ":2: the trace has no jobs"},
           {"width", h + "a,1,0,m\n", ":2: has 4 cells; expected 5"},
           {"gpus_zero", h + "a,0,0,m,10\n", ":2: column 'gpu_num': '0': expected a whole number"},
           {"gpus_many", h + "a,65,0,m,10\n",
            ":2: column 'gpu_num': '65': expected a whole number of GPUs from 1 to 64 (the "
            "cluster's)"},
           {"gpus_frac", h + "a,1.5,0,m,10\n", ":2: column 'gpu_num'"},
           {"dup", h + "a,1,0,m,10\na,1,1,m,10\n", ":3: column 'job_id': 'a' is given twice"},
           {"no_id", h + ",1,0,m,10\n", ":2: column 'job_id': is empty"},
           {"time", h + "a,1,yesterday,m,10\n", ":2: column 'submit_time': 'yesterday'"},
           {"negative", h + "a,1,-3,m,10\n", ":2: column 'submit_time'"},
           {"no_model", h + "a,1,0,,10\n", ":2: column 'model': is empty"},
           {"samples", h + "a,1,0,m,0\n", ":2: column 'samples': '0'"},
           {"samples_nan", h + "a,1,0,m,nan\n", ":2: column 'samples'"},
           {"far", h + "a,1,0,m,10\nb,1,2e6,m,10\n", ":3: column 'submit_time': lies more than"},
       }) {
    INFO(r.name);
    const std::string e = error_of(r.name, r.text);
    CHECK(e.find("adaptsim_job_trace_" + r.name + ".csv" + r.expected) != std::string::npos);
    CHECK(e.find('\n') == std::string::npos);
  }
}
