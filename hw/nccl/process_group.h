#pragma once
// The processes taking part in one NCCL sweep, and the little they must agree on outside NCCL:
// the unique id that bootstraps the communicator (rank 0 creates it, everyone receives it), a
// barrier before each timed burst, and sums for averaging times and counting wrong elements.
// Kept apart from the sweep (as gloo keeps rendezvous apart from algorithms) so that the same
// sweep runs in one process driving every GPU, or one process per GPU across nodes under mpirun.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

namespace adaptsim::hw {

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;

  virtual int rank() const = 0;  // this process, 0..size-1
  virtual int size() const = 0;  // processes
  // This process's index among the processes on its host: which GPUs it drives.
  virtual int local_rank() const = 0;

  // Every process gets root's bytes (same length everywhere).
  virtual void broadcast(std::span<std::byte> data, int root) = 0;
  virtual void barrier() = 0;
  virtual double sum(double value) = 0;
  virtual std::uint64_t sum(std::uint64_t value) = 0;
  virtual std::uint64_t min(std::uint64_t value) = 0;

  // Ends every process of the group with `exit_code` after a failure in one of them, which the
  // others would otherwise wait for forever in their next collective call. Returns only where
  // there is nothing to end (a single process).
  virtual void abort(int exit_code) = 0;
};

// One process: no communication at all.
class SingleProcessGroup final : public ProcessGroup {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int local_rank() const override { return 0; }
  void broadcast(std::span<std::byte>, int) override {}
  void barrier() override {}
  double sum(double value) override { return value; }
  std::uint64_t sum(std::uint64_t value) override { return value; }
  std::uint64_t min(std::uint64_t value) override { return value; }
  void abort(int) override {}
};

// True when this binary was built with MPI (MPI::MPI_CXX found at configure time).
bool mpi_available();

// True when the environment says an MPI launcher started this process (Open MPI's
// OMPI_COMM_WORLD_SIZE, PMIx's PMIX_RANK, MPICH/Hydra's PMI_SIZE).
bool launched_by_mpi();

// MPI_COMM_WORLD as a process group; initialises MPI (MPI_Init_thread, FUNNELED) unless already
// initialised, and finalises it on destruction if it initialised it. local_rank comes from
// MPI_Comm_split_type(MPI_COMM_TYPE_SHARED). Throws RuntimeFailure when built without MPI.
std::unique_ptr<ProcessGroup> make_mpi_process_group();

}  // namespace adaptsim::hw
