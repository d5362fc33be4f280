#include "sim/simctl/mpi_sweep_group.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "sim/core/error.h"

#if ADAPTSIM_SIMCTL_HAVE_MPI
#define OMPI_SKIP_MPICXX 1  // the C API only: Open MPI's deprecated C++ bindings warn
#include <mpi.h>
#endif

namespace adaptsim::simctl {

bool launched_by_mpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMIX_RANK") != nullptr;
}

#if ADAPTSIM_SIMCTL_HAVE_MPI
namespace {

// MPI counts are ints: longer messages (a rank's timelines can be large) go in pieces of 1 GiB.
constexpr std::uint64_t kPieceBytes = std::uint64_t{1} << 30;

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw RuntimeFailure(std::string("mpirun: ") + what + ": " + std::string(text, len));
}

// The communication errors of a started job are MPI's default, fatal: the job is aborted with
// MPI's report, rather than one rank throwing while the others wait in a collective.
class MpiSweepGroup final : public run::SweepGroup {
 public:
  MpiSweepGroup() {
    int provided = 0;
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  ~MpiSweepGroup() override { MPI_Finalize(); }
  MpiSweepGroup(const MpiSweepGroup&) = delete;
  MpiSweepGroup& operator=(const MpiSweepGroup&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  std::vector<std::string> gather(const std::string& bytes) override {
    std::uint64_t length = bytes.size();
    std::vector<std::uint64_t> lengths(rank_ == 0 ? static_cast<std::size_t>(size_) : 0);
    MPI_Gather(&length, 1, MPI_UINT64_T, lengths.data(), 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    if (rank_ != 0) {
      send(bytes);
      return {};
    }
    std::vector<std::string> all(static_cast<std::size_t>(size_));
    all[0] = bytes;
    for (int r = 1; r < size_; ++r) {
      std::string& in = all[static_cast<std::size_t>(r)];
      in.resize(lengths[static_cast<std::size_t>(r)]);
      for (std::uint64_t at = 0; at < in.size(); at += kPieceBytes) {
        const auto n = static_cast<int>(std::min<std::uint64_t>(kPieceBytes, in.size() - at));
        MPI_Recv(in.data() + at, n, MPI_BYTE, r, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      }
    }
    return all;
  }

  std::string broadcast(const std::string& bytes) override {
    std::uint64_t length = bytes.size();
    MPI_Bcast(&length, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    std::string out = rank_ == 0 ? bytes : std::string(length, '\0');
    for (std::uint64_t at = 0; at < length; at += kPieceBytes) {
      const auto n = static_cast<int>(std::min<std::uint64_t>(kPieceBytes, length - at));
      MPI_Bcast(out.data() + at, n, MPI_BYTE, 0, MPI_COMM_WORLD);
    }
    return out;
  }

 private:
  void send(const std::string& bytes) {
    for (std::uint64_t at = 0; at < bytes.size(); at += kPieceBytes) {
      const auto n = static_cast<int>(std::min<std::uint64_t>(kPieceBytes, bytes.size() - at));
      MPI_Send(bytes.data() + at, n, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
    }
  }

  int rank_ = 0;
  int size_ = 1;
};

}  // namespace

std::unique_ptr<run::SweepGroup> join_mpirun_group() {
  return std::make_unique<MpiSweepGroup>();
}

#else

std::unique_ptr<run::SweepGroup> join_mpirun_group() {
  throw RuntimeFailure(
      "started by mpirun, but this simctl was built without MPI; rebuild with an MPI development "
      "package (e.g. libopenmpi-dev), or run simctl without mpirun");
}

#endif

}  // namespace adaptsim::simctl
