#pragma once
// Which algorithm Open MPI's coll/tuned component runs for MPI_Allreduce: its parameters as the
// running job sees them (read through MPI_T, so --mca flags, OMPI_MCA_* variables and parameter
// files all count), and Open MPI 4.1's fixed decision, so that every measured row can name the
// algorithm that produced it.
//
// Sources: sim/coll/ompi_allreduce.h (the decisions, transcribed from Open MPI's source); the
// forced algorithm is honoured only with coll_tuned_use_dynamic_rules = 1.

#include <cstdint>
#include <string>
#include <string_view>

#include "sim/coll/ompi_allreduce.h"

namespace adaptsim::mpi {

// The algorithm ids and Open MPI 4.1's fixed decision live in sim/coll (the simulator's MPI
// model runs them too); adaptsim-mpi labels its rows with the same code.
using TunedAllreduce = coll::OmpiAllreduce;
inline constexpr int kTunedAllreduceCount = coll::kOmpiAllreduceCount;
inline std::string_view tuned_allreduce_name(int id) {
  return coll::ompi_allreduce_name(id);
}
using coll::ompi41_effective_allreduce;
using coll::ompi41_fixed_allreduce;

// coll/tuned's allreduce parameters as this process sees them after MPI_Init; `found` is false
// where MPI_T does not know them (another MPI, or coll/tuned not built).
struct TunedAllreduceSetting {
  bool found = false;
  int use_dynamic_rules = 0;   // coll_tuned_use_dynamic_rules
  int forced_algorithm = 0;    // coll_tuned_allreduce_algorithm (0: none forced)
  int segment_size_bytes = 0;  // coll_tuned_allreduce_algorithm_segmentsize
};
// Reads them through the MPI tool information interface; call between MPI_Init and MPI_Finalize.
TunedAllreduceSetting read_tuned_allreduce_setting();

// The label of a row measured under `setting`, for `comm_size` ranks and `count` float32
// elements: with a forced algorithm, its name ("ring"); else, where the library is Open MPI 4.1
// (`ompi41`), "fixed:" and the algorithm the fixed decision runs after fall-backs
// ("fixed:rabenseifner"); else "fixed" (a decision this file does not know); "default" where
// coll/tuned's parameters were not found (another MPI library).
std::string allreduce_label(const TunedAllreduceSetting& setting, bool ompi41, int comm_size,
                            std::uint64_t count, std::uint64_t total_bytes);

}  // namespace adaptsim::mpi
