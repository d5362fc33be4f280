#pragma once
// Rendezvous inside an `mpirun` job: MPI is used only to learn rank and size and to exchange
// every rank's listen address (and rank 0's job secret); the collectives then run over
// TcpTransport. Compiled with MPI only where CMake found it (ADAPTSIM_TCP_HAVE_MPI); otherwise
// mpi_rendezvous() throws.
//
// Open MPI refuses to run as root without --allow-run-as-root, and needs --oversubscribe for more
// ranks than cores (e.g. many ranks on loopback).

#include <optional>
#include <string>

#include "hw/tcp/cluster_spec.h"

namespace adaptsim::tcp {

// True when an MPI launcher started this process: Open MPI (OMPI_COMM_WORLD_RANK), PMIx
// (PMIX_RANK) or MPICH/Hydra (PMI_RANK).
bool launched_by_mpirun();
// This process's rank as the MPI launcher's environment gives it, before MPI is initialised.
std::optional<int> mpirun_rank_from_env();
// Whether this build can do the MPI rendezvous.
bool mpi_rendezvous_available();
// The first part of the linked MPI library's version text ("Open MPI v4.1.4"), without
// initialising MPI; empty when built without MPI.
std::string mpi_library_version();

// Initialises MPI, gathers every rank's `advertised` address (where the others can reach this
// rank's listening socket), takes rank 0's job secret (`secret` where rank 0 has one configured,
// else random from its OS; the broadcast crosses MPI's own transport, so the secret is as private
// as that), and finalises MPI, unless `keep`: then MPI stays initialised (asked for
// MPI_THREAD_SERIALIZED: one thread at a time, any thread) until mpi_finalize(). Throws
// RuntimeFailure when built without MPI or when MPI fails (or gives a lower thread level).
ClusterSpec mpi_rendezvous(const SocketAddress& advertised, std::optional<JobSecret> secret,
                           bool keep = false);
// Finalises MPI kept by mpi_rendezvous; every rank must call it. Does nothing when MPI is not
// kept. Throws RuntimeFailure when MPI_Finalize fails.
void mpi_finalize();

}  // namespace adaptsim::tcp
