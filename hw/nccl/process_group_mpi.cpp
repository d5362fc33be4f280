// MPI_COMM_WORLD as a ProcessGroup; compiled with ADAPTSIM_HAVE_MPI when MPI was found, else
// a stub that says the binary lacks MPI.
#include "hw/nccl/process_group.h"

#include <string>

#include "sim/core/error.h"

#ifdef ADAPTSIM_HAVE_MPI
#include <mpi.h>
#endif

namespace adaptsim::hw {

#ifdef ADAPTSIM_HAVE_MPI
namespace {

void check_mpi(int status, const char* call) {
  if (status == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(status, text, &length);
  throw RuntimeFailure(std::string(call) + " failed: " + std::string(text, length));
}

class MpiProcessGroup final : public ProcessGroup {
 public:
  MpiProcessGroup() {
    int initialized = 0;
    check_mpi(MPI_Initialized(&initialized), "MPI_Initialized");
    if (!initialized) {
      int provided = 0;
      // Only the main thread calls MPI: FUNNELED is enough.
      check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided),
                "MPI_Init_thread");
      owns_mpi_ = true;
    }
    check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
    check_mpi(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
    MPI_Comm node_comm;
    check_mpi(
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node_comm),
        "MPI_Comm_split_type");
    check_mpi(MPI_Comm_rank(node_comm, &local_rank_), "MPI_Comm_rank(node)");
    MPI_Comm_free(&node_comm);
  }

  ~MpiProcessGroup() override {
    if (owns_mpi_) MPI_Finalize();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }

  void broadcast(std::span<std::byte> data, int root) override {
    check_mpi(MPI_Bcast(data.data(), static_cast<int>(data.size()), MPI_BYTE, root, MPI_COMM_WORLD),
              "MPI_Bcast");
  }
  void barrier() override { check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }
  double sum(double value) override {
    double out = 0;
    check_mpi(MPI_Allreduce(&value, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
    return out;
  }
  std::uint64_t sum(std::uint64_t value) override {
    std::uint64_t out = 0;
    check_mpi(MPI_Allreduce(&value, &out, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD),
              "MPI_Allreduce");
    return out;
  }
  std::uint64_t min(std::uint64_t value) override {
    std::uint64_t out = 0;
    check_mpi(MPI_Allreduce(&value, &out, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD),
              "MPI_Allreduce");
    return out;
  }
  void abort(int exit_code) override { MPI_Abort(MPI_COMM_WORLD, exit_code); }

 private:
  bool owns_mpi_ = false;
  int rank_ = 0;
  int size_ = 1;
  int local_rank_ = 0;
};

}  // namespace

bool mpi_available() {
  return true;
}

std::unique_ptr<ProcessGroup> make_mpi_process_group() {
  return std::make_unique<MpiProcessGroup>();
}

#else

bool mpi_available() {
  return false;
}

std::unique_ptr<ProcessGroup> make_mpi_process_group() {
  throw RuntimeFailure(
      "this adaptsim-nccl was built without MPI; rebuild with an MPI installation (mpicxx) to run "
      "one process per GPU");
}

#endif

}  // namespace adaptsim::hw
