// The live link sampler (hw/runner/link_sampler.h) over counter files this test writes: what it
// bins adds up to each counter's growth, and a counter it cannot read fails the run by name.
#include "hw/runner/link_sampler.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <thread>

#include "sim/core/error.h"

namespace fs = std::filesystem;
using namespace adaptsim;

namespace {

fs::path scratch(const std::string& name) {
  const fs::path d = fs::temp_directory_path() /
                     ("adaptsim-link-sampler-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// As the kernel's counters read: one whole number, replaced at once.
void set_counter(const fs::path& file, std::uint64_t value) {
  std::ofstream(file.string() + ".tmp") << value << "\n";
  fs::rename(file.string() + ".tmp", file);
}

double sum(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0);
}

}  // namespace

TEST_CASE("link sampler: the bins add up to each counter's growth since the start") {
  const fs::path d = scratch("sum");
  set_counter(d / "a", 100);
  set_counter(d / "b", 0);
  constexpr TimeNs kBin = 5 * kNsPerMs;
  const auto start = std::chrono::steady_clock::now();
  runner::LinkSampler sampler(
      {{"s0.nic0->switch", 1.25e8, d / "a", "", ""}, {"switch->s0.nic0", 2.5e8, d / "b", "", ""}},
      kBin);
  set_counter(d / "a", 150);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  set_counter(d / "a", 400);
  set_counter(d / "b", 1000);
  std::this_thread::sleep_for(std::chrono::milliseconds(12));
  const std::vector<runtime::MeasuredLink> links = sampler.stop();
  const double elapsed_ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
  REQUIRE(links.size() == 2);
  CHECK(links[0].name == "s0.nic0->switch");
  CHECK(links[0].capacity_Bps == 1.25e8);
  CHECK(links[1].name == "switch->s0.nic0");
  CHECK(sum(links[0].bin_bytes) == doctest::Approx(300));
  CHECK(sum(links[1].bin_bytes) == doctest::Approx(1000));
  // One bin per 5 ms from the start to the last read, the last one partial.
  CHECK(links[0].bin_bytes.size() == links[1].bin_bytes.size());
  CHECK(links[0].bin_bytes.size() >= 42 * kNsPerMs / kBin);
  CHECK(static_cast<double>(links[0].bin_bytes.size()) <= elapsed_ns / kBin + 1);
  fs::remove_all(d);
}

TEST_CASE("link sampler: a counter that cannot be read is named") {
  const fs::path d = scratch("missing");
  CHECK_THROWS_WITH_AS(runner::LinkSampler({{"x->y", 1, d / "none", "", ""}}, kNsPerMs),
                       doctest::Contains((d / "none").string().c_str()), RuntimeFailure);
  set_counter(d / "a", 7);
  runner::LinkSampler sampler({{"x->y", 1, d / "a", "", ""}}, kNsPerMs);
  fs::remove(d / "a");
  CHECK_THROWS_WITH_AS(sampler.stop(),
                       doctest::Contains(("cannot read " + (d / "a").string()).c_str()),
                       RuntimeFailure);
  fs::remove_all(d);
}
