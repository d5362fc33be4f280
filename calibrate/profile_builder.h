#pragma once
// From measurements to the profile's numbers: alpha-beta fits per (link class, algorithm,
// collective, n_ranks), and kernel cost lines per kernel.

#include <string>
#include <vector>

#include "calibrate/measurement.h"
#include "hw/cuda/kernel_cost.h"
#include "sim/io/calibration_profile.h"

namespace adaptsim::calibrate {

// One fit per group of rows with the same (link_class, algorithm, collective, n_ranks), in the
// order the groups first appear. A group's out-of-place rows are fitted (its in-place rows only
// when it has no out-of-place ones, as nccl-tests' trace replay); rows with wrong results, size
// 0 or no time are left out. A group is skipped, with a line in `notes`, when fewer than two
// sizes remain, when the fitted bandwidth is unbounded (every size in the latency regime) or the
// collective has no bus bandwidth on its rank count (an all-reduce of one rank).
// host_of_rank: host ids of the ranks, for the step count of topology-aware strategies (used for
// groups whose n_ranks equals its size).
std::vector<io::LinkFit> fit_link_groups(const std::vector<coll::SweepRow>& rows,
                                         const std::vector<int>& host_of_rank,
                                         std::vector<std::string>& notes);

// The kernel lines of a timing report (CPU or GPU), one per kernel timed: the two-regime fit of
// alpha_beta_fit.h over its sizes (elements for bytes): the overhead from the small sizes' line,
// the per-element cost from the large sizes' line (a single line with fewer than 6 sizes; a
// single size gives no overhead and time/n); bandwidth = bytes the kernel moves per element /
// per-element cost.
std::vector<io::KernelCostEntry> kernel_cost_entries(const hw::KernelTimingReport& report);

// Bytes of float32 output per second of the sum kernel (out = a + b) at the largest size timed:
// a reduction of large tensors streams from memory, which is what the simulator's reduction
// bandwidth stands for. 0 when the report has no sum rows.
double sum_reduce_bandwidth_Bps(const hw::KernelTimingReport& report);

// One line per fit for the terminal: "loopback p2p sendrecv 2 ranks: latency 38.2 us, 1.18 GB/s,
// alpha/step 38.2 us, busbw_inf 1.18 GB/s, residual 2.1%, R^2 0.9991, 11 points".
std::string describe_fit(const io::LinkFit& fit);

}  // namespace adaptsim::calibrate
