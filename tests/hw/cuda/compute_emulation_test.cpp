#include "hw/cuda/compute_emulation.h"

#include <doctest/doctest.h>

#include <stdexcept>

using namespace adaptsim::hw;

TEST_CASE("emulated compute lasts at least the requested time in both modes") {
  // Lower bound exact (deadline on the steady clock); upper bound loose, for a loaded CI host.
  for (CpuComputeMode mode : {CpuComputeMode::kSpin, CpuComputeMode::kSleep}) {
    const double measured = emulate_compute_cpu(0.005, {mode});
    CHECK(measured >= 0.005);
    CHECK(measured < 0.005 + 0.1);
  }
  CHECK(emulate_compute_cpu(0) >= 0);
}

TEST_CASE("a negative or infinite duration is rejected") {
  CHECK_THROWS_AS(emulate_compute_cpu(-1), std::invalid_argument);
  CHECK_THROWS_AS(emulate_compute_cpu(1.0 / 0.0), std::invalid_argument);
}
