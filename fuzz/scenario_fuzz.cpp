// Fuzz target: a scenario file with --set overrides, loaded and validated as `simctl validate`
// does (run::parse_scenario with keep_points = false), every sweep point included.
//
// Input: the scenario's YAML, then optionally the overrides, each on a line of its own that
// starts with "--set " (the rest of the line is the key=value argument); a line after the first
// override that does not start with "--set " continues the previous override (an argument with a
// line break in it, as a shell can pass). The scenario is read as if it were
// scenarios/fuzz.yaml in the source tree, so that its relative paths (../topologies/...,
// ../traces/...) reach the shipped topologies, calibration and device profiles. Example:
//
//   name: ar
//   topology: {file: ../topologies/cloud-vms.yaml}
//   workload: {kind: allreduce, strategies: [STAR]}
//   --set topology.params.servers=4
//   --set sweep.workload.max_bytes=[1KiB,1MiB]
//
// InputError (TimeOverflow included) is the documented outcome of bad input; any other
// exception, a crash, a sanitizer report or a hang is a finding.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "sim/core/error.h"
#include "sim/run/scenario.h"

namespace {

constexpr std::string_view kSetPrefix = "--set ";

struct FuzzInput {
  std::string yaml;
  std::vector<std::string> overrides;
};

FuzzInput split_input(std::string_view data) {
  FuzzInput in;
  std::size_t pos = 0;
  bool in_overrides = false;
  while (pos < data.size()) {
    std::size_t end = data.find('\n', pos);
    const bool last = end == std::string_view::npos;
    if (last) end = data.size();
    const std::string_view line = data.substr(pos, end - pos);
    if (line.substr(0, kSetPrefix.size()) == kSetPrefix) {
      in_overrides = true;
      in.overrides.emplace_back(line.substr(kSetPrefix.size()));
    } else if (in_overrides) {
      in.overrides.back().append("\n").append(line);
    } else {
      in.yaml.append(line);
      if (!last) in.yaml.push_back('\n');
    }
    pos = end + 1;
  }
  return in;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::filesystem::path kPath =
      std::filesystem::path(ADAPTSIM_SOURCE_DIR) / "scenarios" / "fuzz.yaml";
  FuzzInput in = split_input(std::string_view(reinterpret_cast<const char*>(data), size));
  adaptsim::run::LoadOptions options;
  options.overrides = std::move(in.overrides);
  options.keep_points = false;
  try {
    (void)adaptsim::run::parse_scenario(in.yaml, kPath, options);
  } catch (const adaptsim::InputError&) {
    // Bad input, reported as one line: what the loader promises.
  }
  return 0;
}
