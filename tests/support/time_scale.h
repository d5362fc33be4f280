#pragma once
// How much longer than usual a test may wait for the processes it runs: ADAPTSIM_TEST_TIME_SCALE
// (a number >= 1; default 1). scripts/test-sanitizers.sh sets it (ASan and TSan slow every
// process down several times, Open MPI's MPI_Init most: its mallocs are unwound in full there),
// so that a bound meant to catch a hang does not fail a run that is only slower.

#include <cstdlib>
#include <string>

namespace adaptsim::testing {

inline double time_scale() {
  const char* v = std::getenv("ADAPTSIM_TEST_TIME_SCALE");
  if (v == nullptr) return 1.0;
  try {
    const double s = std::stod(v);
    return s >= 1.0 ? s : 1.0;
  } catch (const std::exception&) {
    return 1.0;
  }
}

}  // namespace adaptsim::testing
