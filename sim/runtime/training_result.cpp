#include "sim/runtime/training_result.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>

#include "sim/core/error.h"

namespace adaptsim::runtime {

// One definition of the JSON form, both ways. JSON has no NaN: a reading the mode cannot know
// (simulated gradient norms) is written as null and read back as NaN.
void to_json(nlohmann::json& j, const StepRow& r) {
  nlohmann::json readings = nlohmann::json::object();
  for (const auto& [name, value] : r.readings)
    readings[name] = std::isfinite(value) ? nlohmann::json(value) : nlohmann::json();
  j = {{"step", r.step},         {"measured", r.measured},
       {"time_s", r.time_s},     {"batch_per_gpu", r.batch_per_gpu},
       {"workers", r.workers},   {"allreduce_bytes", r.allreduce_bytes},
       {"strategy", r.strategy}, {"decision", r.decision},
       {"readings", readings}};
}

void from_json(const nlohmann::json& j, StepRow& r) {
  j.at("step").get_to(r.step);
  j.at("measured").get_to(r.measured);
  j.at("time_s").get_to(r.time_s);
  j.at("batch_per_gpu").get_to(r.batch_per_gpu);
  j.at("workers").get_to(r.workers);
  j.at("allreduce_bytes").get_to(r.allreduce_bytes);
  j.at("strategy").get_to(r.strategy);
  j.at("decision").get_to(r.decision);
  r.readings.clear();
  for (const auto& [name, value] : j.at("readings").items())
    r.readings[name] =
        value.is_null() ? std::numeric_limits<double>::quiet_NaN() : value.get<double>();
}
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
