#pragma once
// Horovod's MPI communicator: the four calls Horovod 0.16.1's background thread makes
// (horovod/common/operations.cc at v0.16.1, RunLoopOnce: MPI_Gather of every request list's
// length and MPI_Gatherv of the lists to rank 0, MPI_Bcast of the response's length and of the
// response; PerformOperation: MPI_Allreduce of each fused buffer), one implementation per kind of
// MPI, the Horovod system (systems.cpp) written once over it:
//   modelled  make_modelled_mpi (here): Open MPI's algorithms (sim/coll/ompi_allreduce.h) and
//             ob1's eager/rendezvous protocol over the environment's transport, the negotiation as
//             messages to and from rank 0; the simulation's, and live runs' by default (over
//             hw/tcp);
//   library   hw/live/mpi_library.h: the MPI library the live process runs under (mpirun), its
//             own MPI_Gather, MPI_Gatherv, MPI_Bcast and MPI_Allreduce (`mpi: {live: library}`).
//
// Every worker makes the same sequence of calls; one worker's calls complete in call order, and
// each `done` runs on the environment's thread (the modelled gather and a bcast's root may call
// it inside the call: their part is the sends).

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sim/coll/allreduce.h"
#include "sim/coll/ompi_allreduce.h"

namespace adaptsim::runtime {

class TrainingEnv;

class MpiCollectives {
 public:
  // A negotiation list: 32-bit words whose first `bytes` bytes are its wire form (Horovod's
  // FlatBuffers size; the words are the list's content, see systems.cpp).
  using Words = std::vector<std::uint32_t>;
  using Callback = std::function<void()>;

  virtual ~MpiCollectives() = default;
  // The words a list of `bytes` bytes needs (its size rounded up to whole words, zeroed).
  static Words words_for(std::size_t bytes) { return Words((bytes + 3) / 4, 0); }
  // A received list's length (`what`: "request" or "response", from rank `from`) outside
  // [8, max_bytes] fails the run with RuntimeFailure naming both.
  static void check_length(long long bytes, std::size_t max_bytes, const char* what, int from);
  // Every worker's list of cycle `cycle` to rank 0: its length, then `bytes` bytes of `list`.
  // `done` gets, on rank 0, every worker's list in rank order (rank 0's own first), each as many
  // words as its length needs; elsewhere nothing. A length outside [8, max_bytes] fails the run
  // naming the rank.
  virtual void gather(int worker, std::uint64_t cycle, Words list, std::size_t bytes,
                      std::size_t max_bytes, std::function<void(std::vector<Words>)> done) = 0;
  // Rank 0's `list` (`bytes` bytes; ignored elsewhere) to every worker: its length, then the
  // list. `done` gets the list on every worker (rank 0's own on rank 0).
  virtual void bcast(int worker, std::uint64_t cycle, Words list, std::size_t bytes,
                     std::size_t max_bytes, std::function<void(Words)> done) = 0;
  // MPI_Allreduce (w.op, w.dtype) of `w` over every worker, named w.name.
  virtual void allreduce(int worker, const coll::Workspace& w, Callback done) = 0;
};

// Open MPI modelled over `env`'s transports (see the top); `env` outlives the result.
std::unique_ptr<MpiCollectives> make_modelled_mpi(TrainingEnv& env,
                                                  const coll::OmpiOptions& options);

}  // namespace adaptsim::runtime
