// Entry point of the tests that need Fashion-MNIST (tests/learn's, tests/hw/live's live learning).
// Without the data (Debian package dataset-fashion-mnist) the executable prints why and exits with
// kSkipExitCode, which their CMakeLists register as the test's SKIP_RETURN_CODE: CTest reports it
// skipped, never passed.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>

#include "sim/learn/dataset.h"

namespace {
constexpr int kSkipExitCode = 77;  // the automake convention for "skipped"
}

int main(int argc, char** argv) {
  if (!std::filesystem::is_directory(adaptsim::learn::kDefaultFashionMnistDir)) {
    std::printf("SKIPPED: dataset-fashion-mnist not installed (no %s)\n",
                adaptsim::learn::kDefaultFashionMnistDir.data());
    return kSkipExitCode;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
