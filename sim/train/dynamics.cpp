#include "sim/train/dynamics.h"

#include <algorithm>
#include <cmath>

#include "sim/core/error.h"
#include "sim/io/input_file.h"
#include "sim/io/yaml_reader.h"

namespace adaptsim::train {

double TrainingDynamics::b_simple(double progress) const {
  const auto& pts = noise_scale;
  if (progress <= pts.front().first) return pts.front().second;
  if (progress >= pts.back().first) return pts.back().second;
  const auto hi = std::upper_bound(pts.begin(), pts.end(), progress,
                                   [](double p, const auto& pt) { return p < pt.first; });
  const auto lo = hi - 1;
  const double f = (progress - lo->first) / (hi->first - lo->first);
  return lo->second + f * (hi->second - lo->second);
}

double TrainingDynamics::efficiency(double batch, double progress) const {
  const double noise = noise_factor * std::max(0.0, b_simple(progress));
  return (noise + base_batch) / (noise + batch);
}

double TrainingDynamics::advance(double progress, double batch) const {
  return progress + batch * efficiency(batch, progress);
}

double TrainingDynamics::accuracy(double progress) const {
  return final_accuracy -
         (final_accuracy - chance) * std::pow(1 + std::max(0.0, progress) / tau_samples, -alpha);
}

namespace {

double positive(io::MapReader& r, std::string_view key) {
  const double v = r.number(key);
  if (!std::isfinite(v) || !(v > 0)) r.fail(key, "expected a finite number > 0");
  return v;
}

}  // namespace

TrainingDynamics parse_training_dynamics(const std::string& yaml_text, const std::string& label) {
  const io::Document doc = io::Document::parse_string(yaml_text, label);
  io::MapReader r(doc, doc.root(), "");
  TrainingDynamics d;
  d.file = label;
  if (r.string("dynamics") != "adaptsim-dynamics/1") {
    r.fail("dynamics", "expected 'adaptsim-dynamics/1'");
  }
  d.model = r.string("model");
  d.source = r.string("source");
  if (d.source.empty()) r.fail("source", "expected what the parameters were fitted on");
  io::MapReader f = r.map("fitted_on");
  d.fitted_lr = positive(f, "lr");
  d.fitted_base_batch = f.integer("base_batch", 0, 1 << 30);
  d.fitted_momentum = f.number("momentum");
  if (!(d.fitted_momentum >= 0 && d.fitted_momentum < 1)) f.fail("momentum", "expected [0, 1)");
  f.finish();
  d.base_batch = positive(r, "base_batch");
  d.noise_factor = positive(r, "noise_factor");
  io::MapReader a = r.map("accuracy");
  d.chance = a.number("chance");
  d.final_accuracy = a.number("final");
  if (!(d.chance >= 0 && d.chance < 1)) a.fail("chance", "expected a number in [0, 1)");
  if (!(d.final_accuracy > d.chance && d.final_accuracy <= 1)) {
    a.fail("final", "expected a number in (chance, 1]");
  }
  d.tau_samples = positive(a, "tau_samples");
  d.alpha = positive(a, "alpha");
  a.finish();
  const std::vector<YAML::Node> list = r.list("noise_scale");
  if (list.empty()) r.fail("noise_scale", "expected a non-empty list of [progress, b_simple]");
  for (std::size_t i = 0; i < list.size(); ++i) {
    const YAML::Node& n = list[i];
    const std::string at = r.key_path("noise_scale") + "[" + std::to_string(i) + "]";
    const auto bad = [&](const std::string& what) -> void {
      throw InputError(doc.where(n) + ": key '" + at + "': " + what);
    };
    if (!n.IsSequence() || n.size() != 2) bad("expected [progress, b_simple]");
    double p = 0, b = 0;
    try {
      p = n[0].as<double>();
      b = n[1].as<double>();
    } catch (const YAML::Exception&) {
      bad("expected two numbers [progress, b_simple]");
    }
    if (!std::isfinite(p) || p < 0 || !std::isfinite(b) || b < 0) {
      bad("expected progress >= 0 and b_simple >= 0, finite");
    }
    if (!d.noise_scale.empty() && !(p > d.noise_scale.back().first)) {
      bad("progress must increase down the list");
    }
    d.noise_scale.emplace_back(p, b);
  }
  r.finish();
  return d;
}

TrainingDynamics load_training_dynamics(const std::filesystem::path& path) {
  return parse_training_dynamics(io::read_input_file(path), path.string());
}

}  // namespace adaptsim::train
