// Open MPI 4.1's fixed all-reduce decision as hw/mpi transcribes it, checked against rows of
// ompi_coll_tuned_allreduce_intra_dec_fixed (v4.1.4, commutative branch) and the algorithms'
// fall-backs in coll_base_allreduce.c; and adaptsim-mpi's bad input, which needs no mpirun.
#include <doctest/doctest.h>

#include <string>

#include "hw/mpi/ompi_tuned.h"
#include "tests/support/run_command.h"

using namespace adaptsim::mpi;
using A = TunedAllreduce;

TEST_CASE("4.1's fixed decision: the rows of the commutative branch at 2 to 16 ranks") {
  // communicator_size < 4: <8 ring, <4096 recursive doubling, <8192 ring, <16384 recursive
  // doubling, <65536 ring, <262144 segmented ring, else rabenseifner.
  CHECK(ompi41_fixed_allreduce(2, 4) == A::kRing);
  CHECK(ompi41_fixed_allreduce(2, 8) == A::kRecursiveDoubling);
  CHECK(ompi41_fixed_allreduce(3, 4095) == A::kRecursiveDoubling);
  CHECK(ompi41_fixed_allreduce(2, 4096) == A::kRing);
  CHECK(ompi41_fixed_allreduce(2, 8192) == A::kRecursiveDoubling);
  CHECK(ompi41_fixed_allreduce(2, 16384) == A::kRing);
  CHECK(ompi41_fixed_allreduce(2, 65536) == A::kSegmentedRing);
  CHECK(ompi41_fixed_allreduce(2, 262143) == A::kSegmentedRing);
  CHECK(ompi41_fixed_allreduce(2, 262144) == A::kRabenseifner);
  // < 8: <16 ring, <8192 recursive doubling, else rabenseifner.
  CHECK(ompi41_fixed_allreduce(4, 8) == A::kRing);
  CHECK(ompi41_fixed_allreduce(7, 16) == A::kRecursiveDoubling);
  CHECK(ompi41_fixed_allreduce(4, 8192) == A::kRabenseifner);
  // < 16: <8192 recursive doubling, else rabenseifner.
  CHECK(ompi41_fixed_allreduce(8, 8191) == A::kRecursiveDoubling);
  CHECK(ompi41_fixed_allreduce(15, 8192) == A::kRabenseifner);
  // < 32: <64 segmented ring, <4096 recursive doubling, else rabenseifner.
  CHECK(ompi41_fixed_allreduce(16, 32) == A::kSegmentedRing);
  CHECK(ompi41_fixed_allreduce(16, 64) == A::kRecursiveDoubling);
  CHECK(ompi41_fixed_allreduce(16, 4096) == A::kRabenseifner);
  // Far rows: < 128 (<262144 recursive doubling), >= 4096 ranks (<2048 nonoverlapping).
  CHECK(ompi41_fixed_allreduce(64, 262143) == A::kRecursiveDoubling);
  CHECK(ompi41_fixed_allreduce(8192, 1024) == A::kNonoverlapping);
}

TEST_CASE(
    "fall-backs: segmented ring of segment 0 is ring, ring below one element per rank is "
    "recursive doubling, rabenseifner below the power of two is basic linear") {
  CHECK(ompi41_effective_allreduce(A::kSegmentedRing, 16, 1000) == A::kRing);
  // 16 ranks, 8 B = 2 floats: segmented ring -> ring -> 2 < 16 -> recursive doubling.
  CHECK(ompi41_effective_allreduce(A::kSegmentedRing, 16, 2) == A::kRecursiveDoubling);
  CHECK(ompi41_effective_allreduce(A::kRing, 4, 3) == A::kRecursiveDoubling);
  CHECK(ompi41_effective_allreduce(A::kRing, 4, 4) == A::kRing);
  // 12 ranks: nprocs_pof2 = 8, so 7 elements go to basic linear and 8 stay.
  CHECK(ompi41_effective_allreduce(A::kRabenseifner, 12, 7) == A::kBasicLinear);
  CHECK(ompi41_effective_allreduce(A::kRabenseifner, 12, 8) == A::kRabenseifner);
  CHECK(ompi41_effective_allreduce(A::kRecursiveDoubling, 16, 1) == A::kRecursiveDoubling);
}

TEST_CASE("row labels: a forced algorithm by its name, the fixed decision as fixed:<run>") {
  TunedAllreduceSetting fixed;
  fixed.found = true;
  CHECK(allreduce_label(fixed, true, 4, 2, 8) == "fixed:recursive_doubling");  // ring, 2 < 4
  CHECK(allreduce_label(fixed, true, 2, 16384, 65536) == "fixed:ring");
  CHECK(allreduce_label(fixed, true, 16, 1024, 4096) == "fixed:rabenseifner");
  CHECK(allreduce_label(fixed, false, 16, 1024, 4096) == "fixed");  // not 4.1: unknown rules
  TunedAllreduceSetting forced = fixed;
  forced.use_dynamic_rules = 1;
  forced.forced_algorithm = 4;
  CHECK(allreduce_label(forced, true, 16, 2, 8) == "ring");
  // A forced algorithm without dynamic rules is ignored by coll/tuned.
  forced.use_dynamic_rules = 0;
  CHECK(allreduce_label(forced, true, 16, 1024, 4096) == "fixed:rabenseifner");
  // Another MPI library: no coll/tuned parameters, no known decision.
  CHECK(allreduce_label(TunedAllreduceSetting{}, false, 4, 2, 8) == "default");
  CHECK(tuned_allreduce_name(6) == "rabenseifner");
  CHECK(tuned_allreduce_name(7) == "unknown");
}

namespace {

// The tool run directly (bad input is refused before MPI_Init, so no mpirun is needed).
adaptsim::testing::CommandResult run_tool(const std::string& args) {
  return adaptsim::testing::run_command(std::string(ADAPTSIM_MPI_TOOL) + " " + args);
}

int line_count(const std::string& text) {
  int n = 0;
  for (char c : text)
    n += c == '\n';
  return n;
}

}  // namespace

TEST_CASE("adaptsim-mpi: bad input is one line and exit code 2") {
  struct Case {
    std::string args, says;
  };
  for (const Case& c :
       {Case{"--minbytes 1MiB --maxbytes 1KiB", "is below --minbytes"},
        Case{"--iters 0", "--iters must be at least 1"},
        Case{"--large-bytes 1MiB --large-iters 0", "--large-iters"},
        Case{"--warmup-iters -1", "--warmup-iters"}, Case{"--maxbytes 16GiB", "int count"},
        Case{"--stepfactor 1", "--stepfactor"}, Case{"--maxbytes 64", "unit"},
        Case{"--no-such-option", "no-such-option"}}) {
    const auto r = run_tool(c.args);
    INFO(c.args, ": ", r.output);
    CHECK(r.code == 2);
    CHECK(line_count(r.output) == 1);
    CHECK(r.output.rfind("adaptsim-mpi: ", 0) == 0);
    CHECK(r.output.find(c.says) != std::string::npos);
  }
}
