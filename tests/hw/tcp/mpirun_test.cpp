// adaptsim-tcp under mpirun: ranks learn rank, size and each other's addresses through MPI and
// then run over TCP. A CTest entry of its own, because it needs something the machine may lack:
// without an mpirun, or in a build without MPI, it prints why and exits with 77 (mpirun_test_main),
// which tests/hw/tcp/CMakeLists.txt registers as the test's SKIP_RETURN_CODE (CTest reports it as
// skipped, not passed). doctest cannot skip at run time, hence the hand-written main.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "hw/tcp/mpi_rendezvous.h"
#include "tests/hw/tcp/tcp_test_support.h"
#include "tests/support/find_mpirun.h"
#include "tests/support/time_scale.h"

using namespace adaptsim;
using namespace adaptsim::tcp;
using namespace adaptsim::tcp::testing;

namespace {

const double kDeadlineS = 30 * adaptsim::testing::time_scale();

std::string g_mpirun;  // set by main before any test runs

}  // namespace

TEST_CASE("mpirun rendezvous: 3 ranks exchange addresses through MPI and run exact over TCP") {
  const std::string dir = make_temp_dir();
  const auto r = run_process({g_mpirun,
                              "--allow-run-as-root",
                              "--oversubscribe",
                              "-np",
                              "3",
                              "--mca",
                              "btl",
                              "self,tcp",
                              tool_path(),
                              "--bind",
                              "127.0.0.1",
                              "--strategy",
                              "CLASSIC_RING,HALVING_DOUBLING",
                              "--maxbytes",
                              "64KiB",
                              "--stepfactor",
                              "8",
                              "--iters",
                              "2",
                              "--warmup-iters",
                              "1",
                              "--timeout",
                              "20s",
                              "-q",
                              "-o",
                              dir},
                             kDeadlineS);
  INFO(diagnostics(r));
  REQUIRE(r.exit_code == 0);
  auto csv = read_csv(dir + "/allreduce_tcp.csv");
  REQUIRE(!csv.empty());
  CHECK(csv[0].size() == 10);
  csv.erase(csv.begin());
  // Sizes 8 B x 8^k up to 64 KiB: 8 B, 64 B, 512 B, 4 KiB, 32 KiB; two strategies.
  CHECK(csv.size() == 2 * 5);
  for (const auto& row : csv) {
    CHECK(row[5] == "3");  // n_ranks: the size MPI gave
    CHECK(row[9] == "0");  // wrong
  }
  std::filesystem::remove_all(dir);
}

int main(int argc, char** argv) {
  return adaptsim::testing::mpirun_test_main(argc, argv, mpi_rendezvous_available(),
                                             "no mpirun rendezvous", ADAPTSIM_MPIEXEC, g_mpirun);
}
