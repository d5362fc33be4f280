#pragma once
// `calibrate --backend tcp`: what one worker process does, whichever rendezvous started it
// (local launcher, host list, mpirun; hw/tcp/rendezvous.h).
//
//   1. connect to every peer (hw/tcp Runtime);
//   2. ping-pong between ranks 0 and 1 over the sweep's sizes: the link itself (pingpong.h),
//      class `loopback` when both run on one machine, `tcp` otherwise;
//   3. the nccl-tests-style all-reduce sweep of every requested strategy (hw/tcp
//      allreduce_sweep.h), class `loopback` when all ranks run on one machine, else `tcp`;
//   4. graceful shutdown; then on rank 0 alone, with the network quiet:
//   5. when ranks 0 and 1 are on different machines (or there is one rank), a ping-pong between
//      two runtimes inside the process over 127.0.0.1: this host's loopback link;
//   6. the CPU kernels (hw/cuda cpu_kernel_timing.h): reduction bandwidth and cost lines, on one
//      thread and, where several ranks ran on rank 0's machine, on that many threads at once.
//
// "One machine" is decided from the addresses, not from --ranks-per-host (which only makes
// loopback ranks pose as separate hosts for the strategies): launcher workers are all local; in a
// host list, equal host names or two loopback addresses are one machine; under mpirun, the
// advertised addresses decide (tcp::hosts_from_addresses).

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "calibrate/measurement.h"
#include "hw/cuda/kernel_cost.h"
#include "hw/tcp/allreduce_sweep.h"
#include "hw/tcp/rendezvous.h"

namespace adaptsim::calibrate {

struct TcpCalibrationOptions {
  tcp::RendezvousOptions rendezvous;
  tcp::SweepOptions sweep;  // strategies, sizes, iterations, check, dtype, timeout, chunk size
  std::string congestion_control;  // TCP_CONGESTION of every connection; empty: the system's
  bool pingpong = true;
  bool time_kernels = true;
  hw::KernelTimingOptions kernels;  // CPU kernel sizes and iterations
  // Progress lines for the terminal (tables, notes); rank 0 only. Null: silent.
  std::function<void(const std::string&)> print;
};

struct TcpCalibrationResult {
  bool leader = false;  // rank 0: holds the measurements and writes the outputs
  int n_ranks = 0;
  int hosts = 0;                     // physical machines
  std::vector<int> host_of_rank;     // as the strategies saw it (--ranks-per-host applies)
  std::vector<coll::SweepRow> rows;  // ping-pongs first, then all-reduces in sweep order
  std::optional<hw::KernelTimingReport> cpu_kernels;  // one thread
  // One thread per rank that ran on rank 0's machine, all at once; when there were several.
  std::optional<hw::KernelTimingReport> cpu_kernels_concurrent;
};

// Steps 1-6 on this worker. Throws RuntimeFailure (a peer died, a timeout) and InputError; wrong
// results are not an exception here: they are counted in the rows' `wrong`.
TcpCalibrationResult run_tcp_calibration(const TcpCalibrationOptions& options,
                                         tcp::RendezvousMode mode);

// Whether two address hosts are one machine: equal, or both loopback (127.0.0.0/8, ::1,
// localhost).
bool same_machine(const std::string& host_a, const std::string& host_b);

}  // namespace adaptsim::calibrate
