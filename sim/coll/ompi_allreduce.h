#pragma once
// Open MPI's MPI_Allreduce as Horovod 0.16 ran it (horovod/common/ops/mpi_operations.cc at
// v0.16.1 hands the fused buffer to MPI_Allreduce): which algorithm coll/tuned picks, by release,
// and the algorithms themselves, written once over Transport so that a simulated run and a live
// one exchange the same messages in the same order.
//
// Sources (github.com/open-mpi/ompi, read at the tags named):
//   ompi/mca/coll/tuned/coll_tuned_decision_fixed.c, ompi_coll_tuned_allreduce_intra_dec_fixed:
//     before 4.1 (identical in v2.1.1, v3.1.0 and v4.0.0): recursive doubling below 10 000 B;
//     for a commutative operator with more elements than ranks, the ring while the message is
//     at most ranks x 1 MiB, else the segmented ring with 1 MiB segments; else nonoverlapping.
//     4.1 (v4.1.4; commit 5a13c5352f, first in v4.1.0): a table by ranks and bytes
//     (ompi41_fixed_allreduce below), called with segment size 0.
//   ompi/mca/coll/base/coll_base_allreduce.c (v4.0.0): the algorithms and their fall-backs: the
//     segmented ring with fewer elements than ranks x segment runs the ring; the ring with fewer
//     elements than ranks runs recursive doubling; Rabenseifner's with fewer elements than the
//     largest power of two <= ranks runs basic linear. Rabenseifner's is Open MPI's own
//     ompi_coll_base_allreduce_intra_redscat_allgather (v4.1.4), not MPICH's: the ranks that fold
//     exchange halves and the even ones go on, distances double (found when live Open MPI 4.1.4
//     on 3 testbed hosts loaded rank 0's link 2.5x, the MPICH fold rank 1's 2x).
//   ompi/mca/coll/tuned/coll_tuned_allreduce_decision.c: the algorithm ids of
//     coll_tuned_allreduce_algorithm (0 ignore, 1 basic_linear, 2 nonoverlapping,
//     3 recursive_doubling, 4 ring, 5 segmented_ring, 6 rabenseifner).
//
// Which release Horovod 0.16.1 ran in the KungFu paper's comparison: Open MPI 4.0.0 (KungFu's
// README, "Benchmark": "Horovod (0.16.1). Horovod uses OpenMPI 4.0.0"; Horovod's own v0.16.1
// Dockerfile also builds openmpi-4.0.0).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "sim/coll/allreduce.h"

namespace adaptsim::coll {

// coll_tuned_allreduce_algorithm's values (4.x numbering).
enum class OmpiAllreduce {
  kIgnore = 0,
  kBasicLinear = 1,
  kNonoverlapping = 2,
  kRecursiveDoubling = 3,
  kRing = 4,
  kSegmentedRing = 5,
  kRabenseifner = 6,
};
inline constexpr int kOmpiAllreduceCount = 7;

// "ignore", "basic_linear", ..., "rabenseifner"; "unknown" outside 0..6.
std::string_view ompi_allreduce_name(int id);
std::optional<OmpiAllreduce> parse_ompi_allreduce(std::string_view name);

// The fixed decisions this file knows: releases 2.0 to 4.0 share one, 4.1 brought another.
enum class OmpiRules { kBefore41, k41 };
// "4.0.0", "4.1" or "3.1.6" -> its rules; nullopt for a malformed string or a release outside
// 2.0-4.1 (1.x's and 5.x's coll components are not transcribed here).
std::optional<OmpiRules> ompi_rules_for_version(std::string_view version);

// Open MPI 4.1's ompi_coll_tuned_allreduce_intra_dec_fixed for a commutative operator (MPI_SUM):
// the algorithm it picks for `comm_size` ranks and a message of `total_bytes`.
OmpiAllreduce ompi41_fixed_allreduce(int comm_size, std::uint64_t total_bytes);
// The same before 4.1, for a commutative operator, `count` elements of `total_bytes`.
OmpiAllreduce ompi_pre41_fixed_allreduce(int comm_size, std::uint64_t total_bytes,
                                         std::uint64_t count);
// The segment size the pre-4.1 decision passes to the segmented ring (1 MiB); 4.1 passes 0.
inline constexpr std::uint64_t kOmpiPre41SegmentBytes = 1 << 20;
// What then runs, after the algorithm's own fall-backs for `count` elements of `element_bytes`
// and a segmented ring's `segment_bytes` (0: one segment of the whole count).
OmpiAllreduce ompi_effective_allreduce(OmpiAllreduce chosen, int comm_size, std::uint64_t count,
                                       std::uint64_t element_bytes, std::uint64_t segment_bytes);
// Kept for adaptsim-mpi's labels: 4.1's fall-backs with segment size 0 for float32.
OmpiAllreduce ompi41_effective_allreduce(OmpiAllreduce chosen, int comm_size, std::uint64_t count);

// How a Horovod worker's MPI reduces its fused buffers (a system's `mpi:` map).
struct OmpiOptions {
  std::string version = "4.0.0";  // see above: Horovod 0.16.1's in KungFu's comparison
  OmpiRules rules = OmpiRules::kBefore41;
  // coll_tuned_use_dynamic_rules + coll_tuned_allreduce_algorithm: a forced algorithm (and its
  // coll_tuned_allreduce_algorithm_segmentsize, default 0), or the release's fixed decision.
  std::optional<OmpiAllreduce> forced;
  std::uint64_t forced_segment_bytes = 0;
  // ob1's protocol over the TCP BTL: a message above btl_tcp_eager_limit (64 KiB, header
  // included, in every release 2.0-4.1: opal/mca/btl/tcp/btl_tcp_component.c) goes by
  // rendezvous (RendezvousTransport); false sends every message eagerly (an ablation).
  bool rendezvous = true;
  std::uint64_t eager_limit_bytes = 64 * 1024;
  // A rendezvous header already there when the receive is posted is answered inside the receive
  // call, before what the rank sends next (ob1's MPI_Irecv; RendezvousTransport); false answers it
  // only when the receive's completion runs, after the rank's next send (an ablation).
  bool match_in_receive = true;
  // Horovod's negotiation (MPI_Gather of the request lengths, MPI_Bcast of the response length
  // and of the response) by the release's tuned decision (2.0-4.0: the gather by an in-order
  // binomial tree above 10 ranks for blocks under 1 KiB, the broadcasts by a binomial tree below
  // 2 KiB or for one element; ompi_coll_tuned_{gather,bcast}_intra_dec_fixed), where those trees
  // are modelled (runtime/mpi_collectives.cpp); false: every message straight to or from rank 0
  // (an ablation).
  bool negotiation_trees = true;
};

// The algorithm one call of `count` elements of `element_bytes` on `comm_size` ranks runs.
OmpiAllreduce ompi_allreduce_for(const OmpiOptions& options, int comm_size, std::uint64_t count,
                                 std::uint64_t element_bytes);

// MPI_Allreduce (MPI_SUM) as Open MPI runs it: the algorithm for each call's size, then that
// algorithm's messages over the transport (wrap it in a RendezvousTransport for ob1's protocol).
// Runs ring, segmented ring, recursive doubling and Rabenseifner; basic linear and
// nonoverlapping (tiny messages at >= 128 ranks in 4.1) fail the run with RuntimeFailure.
class OmpiAllReduce {
 public:
  explicit OmpiAllReduce(OmpiOptions options);
  void run(Transport& t, const Workspace& w, Callback done) const;
  // How the ranks of the algorithm its decision picks relate (AllReduce::rank_symmetry): the
  // ring and segmented ring by rotation when n divides the count (equal blocks, equal phase
  // parts), recursive doubling and Rabenseifner by xor on a power of two ranks (nobody folds out;
  // Rabenseifner's halves equal when n divides the count).
  RankSymmetry rank_symmetry(int n, std::uint64_t count, DType dtype) const;
  const OmpiOptions& options() const { return options_; }

 private:
  OmpiOptions options_;
};

}  // namespace adaptsim::coll
