#include "sim/runtime/training_result.h"

#include <nlohmann/json.hpp>

#include "sim/core/error.h"

namespace adaptsim::runtime {

// One definition of the JSON form, both ways (nlohmann's intrusive-free macros).
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(StepRow, step, measured, time_s, batch_per_gpu, workers,
                                   strategy, decision)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(TrainingResult, step_s, step_mean_s, step_std_s, compute_s,
                                   exposed_link_s, exposed_wait_s, samples_per_s_per_gpu,
                                   samples_per_s_per_gpu_std, samples_per_s_total,
                                   worker_step_mean_s, steps)

std::string to_json(const TrainingResult& result) {
  return nlohmann::json(result).dump();
}

TrainingResult training_result_from_json(const std::string& text, const std::string& label) {
  try {
    return nlohmann::json::parse(text).get<TrainingResult>();
  } catch (const nlohmann::json::exception& e) {
    throw RuntimeFailure(label + ": unreadable training result: " + e.what());
  }
}

}  // namespace adaptsim::runtime
