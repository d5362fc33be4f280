#include "hw/mpi/ompi_tuned.h"

#define OMPI_SKIP_MPICXX 1  // the C API only: Open MPI's deprecated C++ bindings warn
#include <mpi.h>

#include <array>

namespace adaptsim::mpi {
namespace {

constexpr std::array<std::string_view, kTunedAllreduceCount> kNames = {
    "ignore", "basic_linear",   "nonoverlapping", "recursive_doubling",
    "ring",   "segmented_ring", "rabenseifner"};

// An integer control variable by its full name; false where MPI_T does not have it.
bool read_int_cvar(const char* name, int& value) {
  int index = 0;
  if (MPI_T_cvar_get_index(name, &index) != MPI_SUCCESS) return false;
  MPI_T_cvar_handle handle;
  int count = 0;
  if (MPI_T_cvar_handle_alloc(index, nullptr, &handle, &count) != MPI_SUCCESS) return false;
  const bool ok = count == 1 && MPI_T_cvar_read(handle, &value) == MPI_SUCCESS;
  MPI_T_cvar_handle_free(&handle);
  return ok;
}

// The largest power of two not above n (n >= 1): Rabenseifner's nprocs_pof2.
std::uint64_t floor_pow2(int n) {
  std::uint64_t p = 1;
  while (p * 2 <= static_cast<std::uint64_t>(n))
    p *= 2;
  return p;
}

}  // namespace

std::string_view tuned_allreduce_name(int id) {
  if (id < 0 || id >= kTunedAllreduceCount) return "unknown";
  return kNames[static_cast<std::size_t>(id)];
}

// The commutative branch of ompi_coll_tuned_allreduce_intra_dec_fixed (v4.1.4), transcribed
// row by row; thresholds are "total_dsize < X" in bytes.
TunedAllreduce ompi41_fixed_allreduce(int p, std::uint64_t b) {
  using A = TunedAllreduce;
  if (p < 4) {
    if (b < 8) return A::kRing;
    if (b < 4096) return A::kRecursiveDoubling;
    if (b < 8192) return A::kRing;
    if (b < 16384) return A::kRecursiveDoubling;
    if (b < 65536) return A::kRing;
    if (b < 262144) return A::kSegmentedRing;
    return A::kRabenseifner;
  }
  if (p < 8) {
    if (b < 16) return A::kRing;
    if (b < 8192) return A::kRecursiveDoubling;
    return A::kRabenseifner;
  }
  if (p < 16) return b < 8192 ? A::kRecursiveDoubling : A::kRabenseifner;
  if (p < 32) {
    if (b < 64) return A::kSegmentedRing;
    if (b < 4096) return A::kRecursiveDoubling;
    return A::kRabenseifner;
  }
  if (p < 64) return b < 128 ? A::kSegmentedRing : A::kRabenseifner;
  if (p < 128) return b < 262144 ? A::kRecursiveDoubling : A::kRabenseifner;
  if (p < 256) {
    if (b < 131072) return A::kNonoverlapping;
    if (b < 262144) return A::kRecursiveDoubling;
    return A::kRabenseifner;
  }
  if (p < 512) return b < 4096 ? A::kNonoverlapping : A::kRabenseifner;
  if (p < 2048) {
    if (b < 2048) return A::kNonoverlapping;
    if (b < 16384) return A::kRecursiveDoubling;
    return A::kRabenseifner;
  }
  if (p < 4096) {
    if (b < 2048) return A::kNonoverlapping;
    if (b < 4096) return A::kSegmentedRing;
    if (b < 16384) return A::kRecursiveDoubling;
    return A::kRabenseifner;
  }
  if (b < 2048) return A::kNonoverlapping;
  if (b < 16384) return A::kSegmentedRing;
  if (b < 32768) return A::kRecursiveDoubling;
  return A::kRabenseifner;
}

TunedAllreduce ompi41_effective_allreduce(TunedAllreduce a, int p, std::uint64_t count) {
  using A = TunedAllreduce;
  // Segment size 0 leaves one segment of `count`, and count < p x count sends it to the ring.
  if (a == A::kSegmentedRing && p > 1) a = A::kRing;
  if (a == A::kRing && count < static_cast<std::uint64_t>(p)) a = A::kRecursiveDoubling;
  if (a == A::kRabenseifner && count < floor_pow2(p)) a = A::kBasicLinear;
  return a;
}

TunedAllreduceSetting read_tuned_allreduce_setting() {
  TunedAllreduceSetting s;
  int provided = 0;
  if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) return s;
  s.found = read_int_cvar("coll_tuned_use_dynamic_rules", s.use_dynamic_rules) &&
            read_int_cvar("coll_tuned_allreduce_algorithm", s.forced_algorithm);
  if (s.found) read_int_cvar("coll_tuned_allreduce_algorithm_segmentsize", s.segment_size_bytes);
  MPI_T_finalize();
  return s;
}

std::string allreduce_label(const TunedAllreduceSetting& s, bool ompi41, int comm_size,
                            std::uint64_t count, std::uint64_t total_bytes) {
  if (!s.found) return "default";  // not Open MPI's coll/tuned: its choice is unknown here
  if (s.use_dynamic_rules != 0 && s.forced_algorithm != 0) {
    return std::string(tuned_allreduce_name(s.forced_algorithm));
  }
  if (!ompi41) return "fixed";
  const TunedAllreduce a =
      ompi41_effective_allreduce(ompi41_fixed_allreduce(comm_size, total_bytes), comm_size, count);
  return "fixed:" + std::string(tuned_allreduce_name(static_cast<int>(a)));
}

}  // namespace adaptsim::mpi
