#pragma once
// One TCP connection's throughput against the packet loss on its path, as measured
// (scripts/testbed-loss.sh: one connection sends for a few seconds over a testbed whose hosts
// drop arriving packets at random): a CSV with the columns nic_loss, drop_probability (per
// packet, on the path) and MBps (the receiver's 1e6 bytes per second), one row per run; lines
// starting with '#' are comments (where and how it was measured). A workload's `loss_rates`
// caps each connection at the rate the table gives at its path's loss
// (fabric::SimTransportOptions::loss_rates).

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace adaptsim::io {

struct LossRateTable {
  std::string file;
  // (drop probability, bytes per second): the median of each probability's runs, by increasing
  // probability, the first at 0 (the clean connection).
  std::vector<std::pair<double, double>> points;
};

// Throws InputError "FILE:LINE: what was expected": a header without the three columns, a row
// of another width, a probability outside [0, 1) or a rate that is not a positive number of
// MB/s, no row at probability 0, fewer than two probabilities.
LossRateTable read_loss_rates(const std::filesystem::path& path);
LossRateTable parse_loss_rates(const std::string& text, const std::string& file);

}  // namespace adaptsim::io
