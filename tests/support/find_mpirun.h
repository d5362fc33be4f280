#pragma once
// Where the tests that launch ranks with mpirun find it: CMake's MPIEXEC_EXECUTABLE when it found
// one (passed as `from_cmake`), else the usual places, else the PATH; "" if none is executable.

#include <unistd.h>

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

}  // namespace adaptsim::testing
