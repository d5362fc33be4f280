#pragma once
// simctl run --link-stats: one task's link statistics as three CSV files beside each other,
// `<base>.links.csv` (per resource: link direction or virtual resource), `<base>.link-bins.csv`
// (bytes per resource and time bin, bins with bytes only) and `<base>.matrix.csv` (bytes per
// rank pair: the traffic matrix of the host messages). Columns in docs/user-guide (README,
// "Traffic per link"). Simulated, from the flow model's record; live on a testbed, from the
// links' counters sampled per bin and the ranks' own count of their messages.

#include <filesystem>
#include <vector>

#include "sim/fabric/sim_fabric.h"
#include "sim/io/output.h"
#include "sim/net/link_stats.h"
#include "sim/runtime/training_result.h"

namespace adaptsim::run {

std::vector<io::OutputFile> link_stats_files(const std::filesystem::path& base,
                                             const std::vector<net::LinkUse>& links, TimeNs bin_ns,
                                             const std::vector<runtime::PairTraffic>& pairs);
// The same with the matrix summed from every message.
std::vector<io::OutputFile> link_stats_files(const std::filesystem::path& base,
                                             const std::vector<net::LinkUse>& links, TimeNs bin_ns,
                                             const std::vector<fabric::Transmission>& messages);

// A live link's use from its bins (runtime::MeasuredLink, bins of bin_ns from the start): busy
// is the bins with traffic (to the bin), the peak the fullest bin's mean rate, the mean over all
// bins.
net::LinkUse link_use(const runtime::MeasuredLink& link, TimeNs bin_ns);

}  // namespace adaptsim::run
