#include "hw/mpi/ompi_tuned.h"

#define OMPI_SKIP_MPICXX 1  // the C API only: Open MPI's deprecated C++ bindings warn
#include <mpi.h>

namespace adaptsim::mpi {
namespace {

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

}  // namespace

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
