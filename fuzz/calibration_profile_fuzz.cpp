// Fuzz target: a calibration profile (traces/calibration/*.yaml) read with
// io::parse_calibration_profile, applied to the shipped topologies as a scenario applies it, and
// written back: what the reader accepted, write_calibration_profile_yaml must write so that the
// reader accepts it again (a profile that simctl can read once stays readable). The input is
// the file's text.
//
// InputError is the documented outcome of bad input to the first read; any other exception, an
// InputError from the round trip, a crash, a sanitizer report or a hang is a finding.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "sim/core/error.h"
#include "sim/io/calibration_profile.h"
#include "sim/io/topology_loader.h"

namespace {

// The topologies a profile is applied to: one with NIC egress caps (cloud VMs) and one with an
// NVSwitch (HGX H100), the two cases of apply_calibration with extra rules.
const std::vector<adaptsim::topo::ClusterSpec>& topologies() {
  static const std::vector<adaptsim::topo::ClusterSpec> specs = [] {
    const std::filesystem::path dir = std::filesystem::path(ADAPTSIM_SOURCE_DIR) / "topologies";
    std::vector<adaptsim::topo::ClusterSpec> out;
    for (const char* name : {"cloud-vms.yaml", "hgx-h100.yaml"})
      out.push_back(adaptsim::io::load_topology(dir / name).spec);
    return out;
  }();
  return specs;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace io = adaptsim::io;
  const std::string text(reinterpret_cast<const char*>(data), size);
  io::CalibrationProfile profile;
  try {
    profile = io::parse_calibration_profile(text, "fuzz.yaml");
  } catch (const adaptsim::InputError&) {
    return 0;  // bad input, reported as one line: what the reader promises
  }
  for (adaptsim::topo::ClusterSpec spec : topologies())
    (void)io::apply_calibration_with_report(spec, profile);
  (void)io::parse_calibration_profile(io::write_calibration_profile_yaml(profile), "written.yaml");
  return 0;
}
