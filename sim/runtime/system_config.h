#pragma once
// A system's options as scenarios write them (`systems:` entries), read by the one reader that
// both the scenario loader and a live run's processes use:
//   {label: kungfu, kind: kungfu, strategy: MULTI_BINARY_TREE_STAR, chunk_size: 1MiB}
//   {label: horovod, kind: horovod, cycle_time: 5ms, fusion_threshold: 64MiB}
//   {label: kungfu-nccl, kind: nccl, poll_interval: 100us, nccl_net: {transport: socket}}

#include <string>

#include "sim/io/yaml_reader.h"
#include "sim/runtime/system.h"

namespace adaptsim::runtime {

// Throws InputError naming the file, line and key.
SystemConfig read_system(io::MapReader& r);
// Open MPI's all-reduce as a horovod system's `mpi:` map or an allreduce workload's `mpi:` entry
// sets it (sim/coll/ompi_allreduce.h): version, algorithm, segment_size, rendezvous, eager_limit.
coll::OmpiOptions read_mpi(io::MapReader& r);
// How NCCL crosses servers, as a system's `nccl_net:` map or an all-reduce workload's sets it
// (train::NcclNet): {transport: ib} or {transport: socket, interfaces: N}.
train::NcclNet read_nccl_net(io::MapReader& r);
// The YAML (one line, flow style) that read_system reads back to `config`.
std::string system_yaml(const SystemConfig& config);

}  // namespace adaptsim::runtime
