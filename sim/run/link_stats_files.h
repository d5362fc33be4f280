#pragma once
// simctl run --link-stats: one task's link statistics as three CSV files beside each other,
// `<base>.links.csv` (per resource: link direction or virtual resource), `<base>.link-bins.csv`
// (bytes per resource and time bin, bins with bytes only) and `<base>.matrix.csv` (bytes per
// rank pair: the traffic matrix of the host messages). Columns in docs/user-guide (README,
// "Traffic per link").

#include <filesystem>
#include <vector>

#include "sim/fabric/sim_fabric.h"
#include "sim/io/output.h"
#include "sim/net/link_stats.h"

namespace adaptsim::run {

std::vector<io::OutputFile> link_stats_files(const std::filesystem::path& base,
                                             const std::vector<net::LinkUse>& links, TimeNs bin_ns,
                                             const std::vector<fabric::Transmission>& messages);

}  // namespace adaptsim::run
