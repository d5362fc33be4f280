// Entry point of the live learning tests (live_learn_test.cpp): without Fashion-MNIST (Debian's
// dataset-fashion-mnist) the executable prints why and exits with 77, which
// tests/hw/live/CMakeLists.txt registers as the test's SKIP_RETURN_CODE (tests/learn's pattern).
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
