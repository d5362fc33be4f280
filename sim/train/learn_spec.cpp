#include "sim/train/learn_spec.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <limits>

#include "sim/core/error.h"

namespace adaptsim::train {

LearnSpec read_learn_spec(io::MapReader& r, const std::filesystem::path& base_dir,
                          std::shared_ptr<const learn::FashionMnist>* data) {
  LearnSpec s;
  auto path_of = [&](std::string_view key) {
    std::filesystem::path p = r.string(key);
    if (p.is_relative()) p = base_dir / p;
    return p;
  };
  if (r.has("data")) s.data = path_of("data");
  s.lr = r.number_or("lr", s.lr);
  if (!std::isfinite(s.lr) || !(s.lr > 0)) r.fail("lr", "must be a finite value > 0");
  s.base_batch = r.integer_or("base_batch", s.base_batch, 0, 1 << 30);
  s.warmup_steps = r.integer_or("warmup_steps", s.warmup_steps, 0, 1 << 30);
  s.momentum = r.number_or("momentum", s.momentum);
  if (!(s.momentum >= 0 && s.momentum < 1)) r.fail("momentum", "must be in [0, 1)");
  s.weight_decay = r.number_or("weight_decay", s.weight_decay);
  if (!std::isfinite(s.weight_decay) || !(s.weight_decay >= 0)) {
    r.fail("weight_decay", "must be a finite value >= 0");
  }
  s.eval_every = static_cast<int>(r.integer_or("eval_every", s.eval_every, 0, 1 << 30));
  if (r.has("params_dir")) s.params_dir = path_of("params_dir");
  if (r.has("dynamics")) s.dynamics = path_of("dynamics");
  r.finish();
  if (data != nullptr) {
    try {
      *data = load_learn_data(s);
    } catch (const InputError& e) {
      r.fail("data", e.what());
    }
  }
  return s;
}

std::shared_ptr<const learn::FashionMnist> load_learn_data(const LearnSpec& spec) {
  return std::make_shared<const learn::FashionMnist>(learn::load_fashion_mnist(spec.data));
}

std::string learn_spec_yaml(const LearnSpec& s) {
  YAML::Emitter out;
  out.SetDoublePrecision(std::numeric_limits<double>::max_digits10);
  out << YAML::Flow << YAML::BeginMap;
  out << YAML::Key << "data" << YAML::Value << std::filesystem::absolute(s.data).string();
  out << YAML::Key << "lr" << YAML::Value << s.lr;
  out << YAML::Key << "base_batch" << YAML::Value << s.base_batch;
  out << YAML::Key << "warmup_steps" << YAML::Value << s.warmup_steps;
  out << YAML::Key << "momentum" << YAML::Value << s.momentum;
  out << YAML::Key << "weight_decay" << YAML::Value << s.weight_decay;
  out << YAML::Key << "eval_every" << YAML::Value << s.eval_every;
  if (!s.params_dir.empty()) {
    out << YAML::Key << "params_dir" << YAML::Value
        << std::filesystem::absolute(s.params_dir).string();
  }
  if (!s.dynamics.empty()) {
    out << YAML::Key << "dynamics" << YAML::Value << std::filesystem::absolute(s.dynamics).string();
  }
  out << YAML::EndMap;
  return out.c_str();
}

}  // namespace adaptsim::train
