// Fuzz target: a topology file (topologies/*.yaml) read with io::load_topology and then checked
// as a scenario checks it: io::check_connected (build the cluster, every rank reaches every
// other), the slowest link and the loopback check. The input is the file's text.
//
// InputError is the documented outcome of bad input; any other exception, a crash, a sanitizer
// report or a hang is a finding.

#include <cstddef>
#include <cstdint>
#include <string>

#include "sim/core/error.h"
#include "sim/io/topology_loader.h"
#include "sim/io/yaml_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const adaptsim::io::Document doc = adaptsim::io::Document::parse_string(text, "fuzz.yaml");
    const adaptsim::io::LoadedTopology topology = adaptsim::io::load_topology(doc);
    (void)adaptsim::io::check_connected(topology);
    (void)adaptsim::io::slowest_bandwidth_Bps(topology.spec);
    (void)adaptsim::io::shared_host_without_loopback(topology.spec);
  } catch (const adaptsim::InputError&) {
    // Bad input, reported as one line: what the loader promises.
  }
  return 0;
}
