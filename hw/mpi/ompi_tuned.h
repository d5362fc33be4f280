#pragma once
// Which algorithm Open MPI's coll/tuned component runs for MPI_Allreduce: its parameters as the
// running job sees them (read through MPI_T, so --mca flags, OMPI_MCA_* variables and parameter
// files all count), and Open MPI 4.1's fixed decision, so that every measured row can name the
// algorithm that produced it.
//
// Sources (Open MPI v4.1.4, github.com/open-mpi/ompi):
//   ompi/mca/coll/tuned/coll_tuned_allreduce_decision.c: the algorithm ids of the
//     coll_tuned_allreduce_algorithm parameter (0 ignore, 1 basic_linear, 2 nonoverlapping,
//     3 recursive_doubling, 4 ring, 5 segmented_ring, 6 rabenseifner), honoured only with
//     coll_tuned_use_dynamic_rules = 1.
//   ompi/mca/coll/tuned/coll_tuned_decision_fixed.c, ompi_coll_tuned_allreduce_intra_dec_fixed:
//     the fixed decision by communicator size and total_dsize = type size x count (below), always
//     called with segment size 0.
//   ompi/mca/coll/base/coll_base_allreduce.c: the algorithms' own fall-backs: ring with
//     count < comm size runs recursive doubling; segmented ring with segment size 0 (one segment
//     of the whole count) runs ring; rabenseifner (redscat_allgather) with count below the
//     largest power of two <= comm size, or a non-commutative op, runs basic linear.

#include <cstdint>
#include <string>
#include <string_view>

namespace adaptsim::mpi {

// coll_tuned_allreduce_algorithm's values, 4.1's numbering.
enum class TunedAllreduce {
  kIgnore = 0,
  kBasicLinear = 1,
  kNonoverlapping = 2,
  kRecursiveDoubling = 3,
  kRing = 4,
  kSegmentedRing = 5,
  kRabenseifner = 6,
};
inline constexpr int kTunedAllreduceCount = 7;

// "ignore", "basic_linear", ..., "rabenseifner"; "unknown" outside 0..6.
std::string_view tuned_allreduce_name(int id);

// Open MPI 4.1's ompi_coll_tuned_allreduce_intra_dec_fixed for a commutative operator (MPI_SUM):
// the algorithm it picks for `comm_size` ranks and a message of `total_bytes`.
TunedAllreduce ompi41_fixed_allreduce(int comm_size, std::uint64_t total_bytes);
// What then runs, after the algorithm's own fall-backs for `count` elements (segment size 0).
TunedAllreduce ompi41_effective_allreduce(TunedAllreduce chosen, int comm_size,
                                          std::uint64_t count);

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
