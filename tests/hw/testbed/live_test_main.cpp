// Entry point of the root-only testbed tests. doctest cannot skip at run time, so the whole
// executable reports "skipped" to CTest: without root, iproute2 or kernel support it prints why
// and exits with kSkipExitCode, registered as the test's SKIP_RETURN_CODE.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <string>

#include "hw/testbed/testbed.h"

namespace {
constexpr int kSkipExitCode = 77;  // the automake convention for "skipped"
}

int main(int argc, char** argv) {
  std::string why;
  if (!adaptsim::testbed::testbed_supported(&why)) {
    std::printf("SKIPPED: %s\n", why.c_str());
    return kSkipExitCode;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
