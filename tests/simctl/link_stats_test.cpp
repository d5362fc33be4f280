// simctl run --link-stats: per link and direction, the volumes each strategy puts on a 4-server
// cluster (one rank per server, one switch) against hand-computed ones, and the traffic matrix.

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/csv_rows.h"
#include "tests/support/run_command.h"

namespace fs = std::filesystem;

namespace {

const fs::path kRoot = ADAPTSIM_SOURCE_DIR;
constexpr double kM = 4 << 20;  // the all-reduce's size: 4 MiB, four 1 MiB chunks

// The rows after the header; the file must exist.
std::vector<std::vector<std::string>> read_csv(const fs::path& p) {
  REQUIRE(fs::exists(p));
  auto rows = adaptsim::testing::csv_rows(p.string());
  REQUIRE(!rows.empty());
  rows.erase(rows.begin());
  return rows;
}

struct Stats {
  std::map<std::string, double> link_bytes;          // resource -> bytes
  std::map<std::string, double> bin_sum;             // resource -> sum of its bins
  std::map<std::pair<int, int>, double> pair_bytes;  // (src, dst) -> bytes
};

Stats run_strategy(const fs::path& dir, const std::string& strategy) {
  const std::string cmd =
      std::string(SIMCTL_PATH) + " run " + (kRoot / "scenarios/allreduce.yaml").string() +
      " --no-progress -o " + (dir / "out").string() + " --link-stats " + (dir / "links").string() +
      " --link-stats-bin 250us --set topology.params.servers=4 --set workload.strategies=[" +
      strategy + "] --set workload.min_bytes=4MiB --set workload.max_bytes=4MiB";
  const auto r = adaptsim::testing::run_command(cmd);
  INFO(cmd << "\n" << r.output);
  REQUIRE(r.code == 0);
  const std::string base = (dir / "links" / ("p0-" + strategy + "-4194304")).string();
  Stats s;
  for (const auto& row : read_csv(base + ".links.csv")) {
    REQUIRE(row.size() == 6);
    s.link_bytes[row[0]] = std::stod(row[2]);
    // mean utilization = bytes / (capacity x span) <= peak utilization <= 1
    CHECK(std::stod(row[4]) <= std::stod(row[5]) + 1e-9);
    CHECK(std::stod(row[5]) <= 1 + 1e-9);
  }
  for (const auto& row : read_csv(base + ".link-bins.csv"))
    s.bin_sum[row[0]] += std::stod(row[3]);
  for (const auto& row : read_csv(base + ".matrix.csv"))
    s.pair_bytes[{std::stoi(row[0]), std::stoi(row[1])}] = std::stod(row[3]);
  return s;
}

// Appended, not "s" + ...: GCC 12's -Wrestrict false positive (bug 105651).
std::string up(int server) {
  std::string s = "s";
  s.append(std::to_string(server)).append(".nic0->switch");
  return s;
}
std::string down(int server) {
  std::string s = "switch->s";
  s.append(std::to_string(server)).append(".nic0");
  return s;
}

}  // namespace

TEST_CASE("--link-stats: STAR, CLASSIC_RING and CLIQUE put the hand-computed bytes on each link") {
  const fs::path dir = fs::temp_directory_path() / "simctl_test_link_stats";
  fs::remove_all(dir);
  const int n = 4;

  SUBCASE("STAR: every rank sends M to rank 0, which sends M back to each") {
    const Stats s = run_strategy(dir, "STAR");
    CHECK(s.link_bytes.at(up(0)) == doctest::Approx((n - 1) * kM));
    CHECK(s.link_bytes.at(down(0)) == doctest::Approx((n - 1) * kM));
    for (int i = 1; i < n; ++i) {
      CHECK(s.link_bytes.at(up(i)) == doctest::Approx(kM));
      CHECK(s.link_bytes.at(down(i)) == doctest::Approx(kM));
      CHECK(s.pair_bytes.at({i, 0}) == kM);
      CHECK(s.pair_bytes.at({0, i}) == kM);
    }
    CHECK(s.pair_bytes.size() == 2 * (n - 1));
  }
  SUBCASE("CLASSIC_RING: 2(n-1) segments of M/n from each rank to the next") {
    const Stats s = run_strategy(dir, "CLASSIC_RING");
    for (int i = 0; i < n; ++i) {
      CHECK(s.link_bytes.at(up(i)) == doctest::Approx(2.0 * (n - 1) / n * kM));
      CHECK(s.link_bytes.at(down(i)) == doctest::Approx(2.0 * (n - 1) / n * kM));
      CHECK(s.pair_bytes.at({i, (i + 1) % n}) == 2.0 * (n - 1) / n * kM);
    }
    CHECK(s.pair_bytes.size() == static_cast<std::size_t>(n));
  }
  SUBCASE("CLIQUE: each chunk through its own root's star; links carry what the matrix says") {
    // Which root a chunk gets is a hash of its name, so the check is the volumes' sums: every
    // chunk crosses n - 1 uplinks to its root and n - 1 back, 2 (n - 1) M in all; each uplink
    // carries its rank's row of the traffic matrix and each downlink its column.
    const Stats s = run_strategy(dir, "CLIQUE");
    double total = 0;
    for (int i = 0; i < n; ++i) {
      double row = 0, col = 0;
      for (int j = 0; j < n; ++j) {
        if (s.pair_bytes.count({i, j})) row += s.pair_bytes.at({i, j});
        if (s.pair_bytes.count({j, i})) col += s.pair_bytes.at({j, i});
      }
      CHECK(s.link_bytes.at(up(i)) == doctest::Approx(row));
      CHECK(s.link_bytes.at(down(i)) == doctest::Approx(col));
      total += row;
    }
    CHECK(total == doctest::Approx(2.0 * (n - 1) * kM));
  }
  SUBCASE("every link's bins add up to its bytes") {
    const Stats s = run_strategy(dir, "CLASSIC_RING");
    for (const auto& [name, bytes] : s.link_bytes) {
      INFO(name);
      const double bins = s.bin_sum.count(name) ? s.bin_sum.at(name) : 0.0;
      CHECK(bins == doctest::Approx(bytes).epsilon(1e-6));
    }
  }
  fs::remove_all(dir);
}

TEST_CASE("--link-stats: bad bins and workloads without simulated links are refused") {
  const std::string scenario = (kRoot / "scenarios/allreduce.yaml").string();
  auto r = adaptsim::testing::run_command(std::string(SIMCTL_PATH) + " run " + scenario +
                                          " -o /tmp/simctl_test_ls_bad --link-stats "
                                          "/tmp/simctl_test_ls_bad/l --link-stats-bin 0s");
  CHECK(r.code == 2);
  CHECK(r.output.find("--link-stats-bin: expected a duration above 0") != std::string::npos);
  r = adaptsim::testing::run_command(std::string(SIMCTL_PATH) + " run " + scenario +
                                     " -o /tmp/simctl_test_ls_bad --link-stats "
                                     "/tmp/simctl_test_ls_bad/l --link-stats-bin soon");
  CHECK(r.code == 2);
  CHECK(r.output.find("--link-stats-bin: ") != std::string::npos);
  CHECK_FALSE(fs::exists("/tmp/simctl_test_ls_bad/l"));
}
