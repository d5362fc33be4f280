#pragma once
// Where a tool finds its sibling executables and the shipped data (scenarios/, topologies/,
// traces/, plots/), both from the build tree and from an installed prefix (`cmake --install`):
//
//   installed: <prefix>/bin/<tool>, data in <prefix>/share/adaptsim/ (the repository's layout)
//   build:     <build>/<folder>/<tool>, data in the source tree
//
// The installed layout is found from the running executable (/proc/self/exe), so an installed
// tree may be moved; the build-tree paths are compiled in and used when they exist.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace adaptsim {

// The running executable, /proc/self/exe resolved; empty when it cannot be read.
std::filesystem::path self_executable_path();

// The folders that may hold the shipped data, in the order they are searched:
// $ADAPTSIM_DATA (when set), <exe's folder>/../share/adaptsim (when the running executable is
// installed), the source tree this was built from (when it still exists).
std::vector<std::filesystem::path> data_dirs();

// The first of data_dirs() holding `relative` (e.g. "plots/compare.py"), as dir / relative;
// nullopt when none does.
std::optional<std::filesystem::path> find_data_file(const std::filesystem::path& relative);

// The first of data_dirs() (where data is looked for first): the folder a caller names in a
// message, or lists from, when it must pick one. Never empty: the source tree when no other.
std::filesystem::path primary_data_dir();

// A sibling tool of this build or installation: `name` beside the running executable (the
// installed bin/), else <build>/<build_folder>/<name> in the build tree this was built from;
// nullopt when neither is an executable file.
std::optional<std::filesystem::path> find_sibling_tool(const std::string& name,
                                                       const std::string& build_folder);

}  // namespace adaptsim
