#pragma once
// simctl run under mpirun: the processes Open MPI started share the sweep (run::SweepGroup) over
// MPI. MPI is initialised only when a launcher started this process, so a plain `simctl run` never
// touches it; compiled with MPI only where CMake found it (ADAPTSIM_SIMCTL_HAVE_MPI), otherwise a
// run under mpirun is refused with one line rather than run K times over.

#include <memory>

#include "sim/run/sweep_group.h"

namespace adaptsim::simctl {

// True when an MPI launcher started this process: Open MPI's mpirun (OMPI_COMM_WORLD_SIZE) or a
// PMIx launcher (PMIX_RANK).
bool launched_by_mpirun();

// The group of every process of this mpirun job, MPI initialised (one thread calls MPI: the
// caller's); MPI is finalised when it is destroyed, which every rank must reach. Throws
// RuntimeFailure when this build has no MPI or MPI cannot start.
std::unique_ptr<run::SweepGroup> join_mpirun_group();

}  // namespace adaptsim::simctl
