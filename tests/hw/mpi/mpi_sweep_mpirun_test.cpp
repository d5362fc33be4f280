// adaptsim-mpi under mpirun -np 2 and -np 3 on loopback (btl self,tcp; no root): one row per
// size, exact results, nccl-tests' bandwidths, every row named by the algorithm coll/tuned ran,
// and a forced algorithm recorded. A CTest entry of its own: without an mpirun, or in a build
// without MPI, it prints why and exits with 77 (mpirun_test_main), the test's SKIP_RETURN_CODE.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/support/csv_rows.h"
#include "tests/support/find_mpirun.h"
#include "tests/support/run_command.h"

namespace fs = std::filesystem;

namespace {

std::string g_mpirun;  // set by main before any test runs

struct Scratch {
  fs::path dir;
  explicit Scratch(const std::string& name)
      : dir(fs::temp_directory_path() / ("adaptsim_mpi_sweep_test_" + name)) {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~Scratch() { fs::remove_all(dir); }
};

// `mpirun -np ranks [mca] adaptsim-mpi args -o dir`, loopback only (self, tcp: the shared-memory
// transport may be unavailable in containers).
adaptsim::testing::CommandResult run_mpi(int ranks, const std::string& mca, const std::string& args,
                                         const fs::path& dir) {
  return adaptsim::testing::run_command(
      g_mpirun + " --allow-run-as-root --oversubscribe --bind-to none --mca btl self,tcp " + mca +
      " -np " + std::to_string(ranks) + " " + ADAPTSIM_MPI_TOOL + " " + args + " -q -o " +
      dir.string());
}

const std::vector<std::string> kHeader = {"size_bytes", "count",   "type",    "redop",
                                          "algorithm",  "n_ranks", "time_us", "algbw_GBps",
                                          "busbw_GBps", "wrong"};

// The algorithm Open MPI 4.1.4's fixed decision runs for a float32 sum of `bytes` on 2 or 3
// ranks (the communicator_size < 4 row of coll_tuned_decision_fixed.c): <4096 recursive
// doubling, <8192 ring, <16384 recursive doubling, <65536 ring, <262144 segmented ring with
// segment size 0 (which runs ring), else rabenseifner. From 8 B on there are at least 2 floats,
// so ring never falls back to recursive doubling (count < ranks) here.
std::string expected_fixed(std::uint64_t bytes) {
  if (bytes < 4096) return "fixed:recursive_doubling";
  if (bytes < 8192) return "fixed:ring";
  if (bytes < 16384) return "fixed:recursive_doubling";
  if (bytes < 262144) return "fixed:ring";
  return "fixed:rabenseifner";
}

}  // namespace

TEST_CASE(
    "mpirun -np 2 and -np 3: a row per size 8 B..1 MiB, exact, nccl-tests' busbw, "
    "each row named by 4.1's fixed decision") {
  for (int n : {2, 3}) {
    const Scratch s("fixed" + std::to_string(n));
    const auto r = run_mpi(n, "", "--maxbytes 1MiB --iters 3 --warmup-iters 1", s.dir);
    INFO("ranks ", n, ": ", r.output);
    REQUIRE(r.code == 0);
    const auto rows = adaptsim::testing::csv_rows(
        (s.dir / ("allreduce_mpi_fixed_" + std::to_string(n) + "r.csv")).string());
    REQUIRE(!rows.empty());
    CHECK(rows[0] == kHeader);
    // Sizes 8 B x 2^k up to 1 MiB = 2^20: k = 0..17, 18 rows.
    REQUIRE(rows.size() == 1 + 18);
    std::uint64_t size = 8;
    for (std::size_t i = 1; i < rows.size(); ++i, size *= 2) {
      const auto& row = rows[i];
      REQUIRE(row.size() == kHeader.size());
      CHECK(std::stoull(row[0]) == size);
      CHECK(std::stoull(row[1]) == size / 4);  // float32 elements
      CHECK(row[2] == "float32");
      CHECK(row[3] == "sum");
      CHECK(row[4] == expected_fixed(size));
      CHECK(std::stoi(row[5]) == n);
      const double time_us = std::stod(row[6]);
      CHECK(time_us > 0);
      // algbw = size / time in GB/s (1e9 B/s); busbw = algbw x 2 (n - 1) / n. 6 decimals.
      const double algbw = static_cast<double>(size) / (time_us * 1e-6) / 1e9;
      // Rounding: time to 1 ns (relative 5e-4 / time_us), bandwidths to 5e-7 GB/s.
      CHECK(std::fabs(std::stod(row[7]) - algbw) <= 1e-6 + algbw * 1e-3 / time_us);
      const double factor = 2.0 * (n - 1) / n;
      CHECK(std::fabs(std::stod(row[8]) - std::stod(row[7]) * factor) <= 2e-6);
      CHECK(row[9] == "0");  // wrong elements, summed over ranks
    }
  }
}

TEST_CASE("a forced algorithm (dynamic rules, allreduce_algorithm 4) names every row and file") {
  const Scratch s("ring");
  const auto r = run_mpi(3,
                         "--mca coll_tuned_use_dynamic_rules 1 "
                         "--mca coll_tuned_allreduce_algorithm 4",
                         "--maxbytes 64KiB --stepfactor 8 --iters 2 --warmup-iters 1", s.dir);
  INFO(r.output);
  REQUIRE(r.code == 0);
  const auto rows = adaptsim::testing::csv_rows((s.dir / "allreduce_mpi_ring_3r.csv").string());
  // 8 B x 8^k up to 64 KiB: 8, 64, 512, 4096, 32768.
  REQUIRE(rows.size() == 1 + 5);
  for (std::size_t i = 1; i < rows.size(); ++i) {
    CHECK(rows[i][4] == "ring");
    CHECK(rows[i][9] == "0");
  }
  CHECK(!fs::exists(s.dir / "allreduce_mpi_fixed_3r.csv"));
}

TEST_CASE("large sizes take their own iteration counts and stay exact, and the table names them") {
  const Scratch s("large");
  const auto r = adaptsim::testing::run_command(
      g_mpirun + " --allow-run-as-root --oversubscribe --bind-to none --mca btl self,tcp -np 2 " +
      ADAPTSIM_MPI_TOOL +
      " --minbytes 1KiB --maxbytes 4MiB --stepfactor 4 --iters 2 --large-bytes 1MiB "
      "--large-iters 1 --large-warmup-iters 0 -o " +
      s.dir.string());
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK(r.output.find("# Open MPI") != std::string::npos);
  CHECK(r.output.find("coll_tuned_use_dynamic_rules=0") != std::string::npos);
  CHECK(r.output.find("fixed:rabenseifner") != std::string::npos);
  const auto rows = adaptsim::testing::csv_rows((s.dir / "allreduce_mpi_fixed_2r.csv").string());
  // 1 KiB x 4^k up to 4 MiB: 1 KiB, 4 KiB, 16 KiB, 64 KiB, 256 KiB, 1 MiB, 4 MiB.
  REQUIRE(rows.size() == 1 + 7);
  for (std::size_t i = 1; i < rows.size(); ++i)
    CHECK(rows[i][9] == "0");
}

TEST_CASE("bad input under mpirun -np 2: one line from rank 0, and the job fails") {
  const Scratch s("bad");
  const auto r = run_mpi(2, "", "--iters 0", s.dir);
  INFO(r.output);
  CHECK(r.code != 0);
  std::size_t lines = 0;
  for (std::size_t at = r.output.find("adaptsim-mpi: "); at != std::string::npos;
       at = r.output.find("adaptsim-mpi: ", at + 1))
    ++lines;
  CHECK(lines == 1);
  CHECK(r.output.find("--iters must be at least 1") != std::string::npos);
}

int main(int argc, char** argv) {
  return adaptsim::testing::mpirun_test_main(
      argc, argv, ADAPTSIM_HAVE_MPI != 0, "adaptsim-mpi is not built", ADAPTSIM_MPIEXEC, g_mpirun);
}
