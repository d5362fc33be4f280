#pragma once
// How a live program finds its peers, in one place for every tool (adaptsim-tcp, calibrate):
//
//   launched worker  this process was started by the local launcher (environment, launcher.h);
//   launcher         --procs N: start N workers of this same program on 127.0.0.1 and wait;
//   host list        --hosts a:p,b:q,... --rank R: every rank is given the full list;
//   mpirun           started by mpirun: MPI exchanges the listen addresses (mpi_rendezvous.h).
//
// The first that applies wins, in this order, so a worker started by the launcher (whose argv
// still says --procs N) does not launch again.
//
// Every mode gives the ranks one job secret (auth.h) without putting it on a command line.

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "hw/tcp/runtime.h"

namespace adaptsim::tcp {

struct RendezvousOptions {
  int procs = 0;      // > 0: local launcher with this many workers
  std::string hosts;  // host list "host:port,..." (rank order)
  int rank = -1;      // this process's rank in the host list
  // The job's secret (auth.h): this file if given; else the environment's ADAPTSIM_JOB_SECRET;
  // else, for the launcher and mpirun, a random one made by the launcher or rank 0. A host list
  // needs one of the first two.
  std::string secret_file;
  // Address to listen on: host-list mode default = this rank's entry, mpirun default = the
  // first non-loopback IPv4 address (the one advertised); 0.0.0.0 listens on every address.
  std::string bind_host;
  // > 0: rank r is on host r / ranks_per_host (lets loopback ranks pose as separate machines);
  // 0: ranks with the same address host share a host.
  int ranks_per_host = 0;
  // Under mpirun: keep MPI initialised after the rendezvous (MPI_THREAD_SERIALIZED), for the
  // job's own use of the MPI library (hw/live/mpi_library.h); the process then calls
  // mpi_finalize() (mpi_rendezvous.h) at its end.
  bool keep_mpi = false;
};

enum class RendezvousMode { kLaunchedWorker, kLauncher, kHostList, kMpi };

// Which mode applies; throws InputError with a one-line hint when none does or the options are
// inconsistent (--rank without --hosts, ...).
RendezvousMode choose_rendezvous(const RendezvousOptions& options);

// This process's rank, known before connecting (for per-rank settings such as fault injection);
// -1 for the launcher.
int rank_before_connect(const RendezvousOptions& options, RendezvousMode mode);

// For the worker modes: the rendezvous, then a Runtime connected to every peer. `runtime` is
// used as given (its transport.connect_timeout_ns bounds the whole connection phase).
// The secret the options name (--secret-file, else ADAPTSIM_JOB_SECRET), or nullopt.
std::optional<JobSecret> configured_secret(const RendezvousOptions& options);

std::unique_ptr<Runtime> connect_runtime(const RendezvousOptions& options, RendezvousMode mode,
                                         const RuntimeOptions& runtime);

}  // namespace adaptsim::tcp
