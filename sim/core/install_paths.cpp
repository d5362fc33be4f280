#include "sim/core/install_paths.h"

#include <unistd.h>

#include <cstdlib>

// Set by sim/core/CMakeLists.txt for this file only.
#ifndef ADAPTSIM_CORE_SOURCE_DIR
#error "ADAPTSIM_CORE_SOURCE_DIR must be defined"
#endif
#ifndef ADAPTSIM_CORE_BINARY_DIR
#error "ADAPTSIM_CORE_BINARY_DIR must be defined"
#endif
#ifndef ADAPTSIM_CORE_BIN_TO_DATA
#define ADAPTSIM_CORE_BIN_TO_DATA "../share/adaptsim"
#endif

namespace adaptsim {
namespace fs = std::filesystem;

namespace {

bool is_dir(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}

bool is_executable_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

}  // namespace

fs::path self_executable_path() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : p;
}

std::vector<fs::path> data_dirs() {
  std::vector<fs::path> dirs;
  if (const char* env = std::getenv("ADAPTSIM_DATA"); env != nullptr && *env != '\0') {
    dirs.emplace_back(env);
  }
  const fs::path self = self_executable_path();
  if (!self.empty()) {
    const fs::path installed = (self.parent_path() / ADAPTSIM_CORE_BIN_TO_DATA).lexically_normal();
    if (is_dir(installed)) dirs.push_back(installed);
  }
  if (is_dir(ADAPTSIM_CORE_SOURCE_DIR)) dirs.emplace_back(ADAPTSIM_CORE_SOURCE_DIR);
  // One entry per folder ($ADAPTSIM_DATA may name the source tree).
  std::vector<fs::path> unique;
  for (const fs::path& d : dirs) {
    bool seen = false;
    for (const fs::path& u : unique) {
      std::error_code ec;
      seen = seen || fs::equivalent(d, u, ec);
    }
    if (!seen) unique.push_back(d);
  }
  return unique;
}

std::optional<fs::path> find_data_file(const fs::path& relative) {
  for (const fs::path& dir : data_dirs()) {
    std::error_code ec;
    if (fs::exists(dir / relative, ec)) return dir / relative;
  }
  return std::nullopt;
}

fs::path primary_data_dir() {
  const std::vector<fs::path> dirs = data_dirs();
  return dirs.empty() ? fs::path(ADAPTSIM_CORE_SOURCE_DIR) : dirs.front();
}

std::optional<fs::path> find_sibling_tool(const std::string& name,
                                          const std::string& build_folder) {
  const fs::path self = self_executable_path();
  if (!self.empty() && is_executable_file(self.parent_path() / name)) {
    return self.parent_path() / name;
  }
  const fs::path built = fs::path(ADAPTSIM_CORE_BINARY_DIR) / build_folder / name;
  if (is_executable_file(built)) return built;
  return std::nullopt;
}

}  // namespace adaptsim
