#include "sim/runtime/env.h"

#include "sim/core/error.h"

namespace adaptsim::runtime {
namespace {
[[noreturn]] void no_elastic(const char* what) {
  throw InputError(std::string("this environment cannot change its worker set (") + what +
                   "): elastic runs need a simulation or live local processes");
}
}  // namespace

std::unique_ptr<MpiCollectives> TrainingEnv::mpi_collectives(const coll::OmpiOptions& options,
                                                             bool) {
  return make_modelled_mpi(*this, options);
}

void TrainingEnv::store_get(int, std::function<void(const ClusterConfig&)>) {
  no_elastic("config store");
}
void TrainingEnv::store_put(int, const ClusterConfig&, Callback) {
  no_elastic("config store");
}
void TrainingEnv::notify_runners(int, const RunnerNotice&, Callback) {
  no_elastic("runners");
}
void TrainingEnv::on_worker_started(std::function<void(int, const RunnerNotice&)>) {
  no_elastic("runners");
}
void TrainingEnv::store_notice(int, int, std::function<void(const std::optional<RunnerNotice>&)>) {
  no_elastic("config store");
}
void TrainingEnv::stop_worker(int) {
  no_elastic("runners");
}
void TrainingEnv::store_leases(int, std::function<void(const std::vector<int>&)>) {
  no_elastic("config store");
}
void TrainingEnv::store_swap(int, int, const ClusterConfig&, std::function<void(bool)>) {
  no_elastic("config store");
}
void TrainingEnv::reset_connections(int, const ClusterConfig&, Callback) {
  no_elastic("connections");
}
void TrainingEnv::write_checkpoint(int, std::uint64_t, Callback) {
  no_elastic("checkpoint");
}
void TrainingEnv::read_checkpoint(int, std::uint64_t, Callback) {
  no_elastic("checkpoint");
}
coll::Workspace TrainingEnv::model_state(int, std::size_t, std::uint64_t elements,
                                         const std::string& name) {
  coll::Workspace ws;
  ws.name = name;
  ws.count = elements;
  ws.dtype = coll::DType::kF32;
  ws.send = {nullptr, ws.bytes()};
  ws.recv = {nullptr, ws.bytes()};
  return ws;
}

}  // namespace adaptsim::runtime
