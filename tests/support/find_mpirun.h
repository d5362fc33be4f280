#pragma once
// Where the tests that launch ranks with mpirun find it: CMake's MPIEXEC_EXECUTABLE when it found
// one (passed as `from_cmake`), else the usual places, else the PATH; "" if none is executable.

#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

namespace adaptsim::testing {

inline std::string find_mpirun(const std::string& from_cmake) {
  std::vector<std::string> candidates = {from_cmake, "/usr/bin/mpirun", "/usr/local/bin/mpirun"};
  if (const char* path = std::getenv("PATH")) {
    std::istringstream dirs(path);
    std::string dir;
    while (std::getline(dirs, dir, ':')) {
      if (!dir.empty()) candidates.push_back(dir + "/mpirun");
    }
  }
  for (const std::string& c : candidates) {
    if (!c.empty() && ::access(c.c_str(), X_OK) == 0) return c;
  }
  return "";
}

// The main() of a test program that launches mpirun: runs the doctest cases with `mpirun` set,
// or skips (exit 77, saying why) where the build has no MPI or no mpirun is installed.
inline int mpirun_test_main(int argc, char** argv, bool have_mpi, const char* no_mpi,
                            const std::string& from_cmake, std::string& mpirun) {
  constexpr int kSkipExitCode = 77;  // the automake convention for "skipped"
  if (!have_mpi) {
    std::printf("SKIPPED: this build has no MPI (CMake did not find it), so %s\n", no_mpi);
    return kSkipExitCode;
  }
  mpirun = find_mpirun(from_cmake);
  if (mpirun.empty()) {
    std::printf("SKIPPED: no mpirun executable (looked at %s, /usr/bin, /usr/local/bin, $PATH)\n",
                from_cmake.empty() ? "<none from CMake>" : from_cmake.c_str());
    return kSkipExitCode;
  }
  std::printf("mpirun: %s\n", mpirun.c_str());
  doctest::Context context(argc, argv);
  return context.run();
}

}  // namespace adaptsim::testing
