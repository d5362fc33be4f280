#pragma once
// NCCL status codes turned into adaptsim::RuntimeFailure, naming the failed call and adding NCCL's
// own last-error text (ncclGetLastError), which says why ("NCCL WARN ..."):
//   ADAPTSIM_NCCL_CHECK(ncclCommInitAll(comms, n, devices));

#include <nccl.h>

namespace adaptsim::hw {

void check_nccl(ncclResult_t status, const char* call, const char* file, int line);

}  // namespace adaptsim::hw

#define ADAPTSIM_NCCL_CHECK(call) ::adaptsim::hw::check_nccl((call), #call, __FILE__, __LINE__)
