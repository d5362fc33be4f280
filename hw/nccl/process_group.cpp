#include "hw/nccl/process_group.h"

#include <cstdlib>

namespace adaptsim::hw {

bool launched_by_mpi() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"}) {
    if (std::getenv(var) != nullptr) return true;
  }
  return false;
}

}  // namespace adaptsim::hw
