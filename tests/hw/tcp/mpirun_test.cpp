// adaptsim-tcp under mpirun: ranks learn rank, size and each other's addresses through MPI and
// then run over TCP. A CTest entry of its own, because it needs something the machine may lack:
// without an mpirun, or in a build without MPI, it prints why and exits with kSkipExitCode, which
// tests/hw/tcp/CMakeLists.txt registers as the test's SKIP_RETURN_CODE (CTest reports it as
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

constexpr int kSkipExitCode = 77;  // the automake convention for "skipped"
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
  if (!mpi_rendezvous_available()) {
    std::printf(
        "SKIPPED: this build has no MPI (CMake did not find it), so no mpirun rendezvous\n");
    return kSkipExitCode;
  }
  g_mpirun = adaptsim::testing::find_mpirun(ADAPTSIM_MPIEXEC);
  if (g_mpirun.empty()) {
    std::printf("SKIPPED: no mpirun executable (looked at %s, /usr/bin, /usr/local/bin, $PATH)\n",
                std::string(ADAPTSIM_MPIEXEC).empty() ? "<none from CMake>" : ADAPTSIM_MPIEXEC);
    return kSkipExitCode;
  }
  std::printf("mpirun: %s\n", g_mpirun.c_str());
  doctest::Context context(argc, argv);
  return context.run();
}
