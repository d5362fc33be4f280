#include "hw/live/live_config.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>

#include "hw/live/live_system.h"
#include "sim/coll/strategy.h"
#include "sim/core/error.h"
#include "sim/core/units.h"
#include "sim/train/device_profile.h"

namespace adaptsim::live {
namespace {

using Json = nlohmann::json;

// Reads one JSON object, naming the file and the dotted key in every error, and rejecting keys
// it was never asked about (typos).
class ObjectReader {
 public:
  ObjectReader(const Json& j, std::string label, std::string prefix)
      : j_(j), label_(std::move(label)), prefix_(std::move(prefix)) {
    if (!j_.is_object()) fail_at(prefix_.empty() ? "(top level)" : prefix_, "expected an object");
  }

  [[noreturn]] void fail_at(const std::string& key, const std::string& what) const {
    throw InputError(label_ + ": key '" + key + "': " + what);
  }
  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    fail_at(path(key), what);
  }
  std::string path(const std::string& key) const {
    return prefix_.empty() ? key : prefix_ + "." + key;
  }
  const std::string& label() const { return label_; }

  bool has(const std::string& key) {
    seen_.insert(key);
    return j_.contains(key);
  }
  const Json& get(const std::string& key) {
    if (!has(key)) fail(key, "missing");
    return j_.at(key);
  }

  std::string string(const std::string& key) {
    const Json& v = get(key);
    if (!v.is_string()) fail(key, "expected a string");
    return v.get<std::string>();
  }
  std::string string_or(const std::string& key, const std::string& fallback) {
    return has(key) ? string(key) : fallback;
  }
  std::int64_t integer_or(const std::string& key, std::int64_t fallback, std::int64_t lo,
                          std::int64_t hi) {
    if (!has(key)) return fallback;
    const Json& v = j_.at(key);
    if (!v.is_number_integer()) fail(key, "expected an integer");
    const auto x = v.get<std::int64_t>();
    if (x < lo || x > hi) {
      fail(key, "expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                    "], got " + std::to_string(x));
    }
    return x;
  }
  std::uint64_t unsigned_or(const std::string& key, std::uint64_t fallback) {
    if (!has(key)) return fallback;
    const Json& v = j_.at(key);
    if (!v.is_number_unsigned()) fail(key, "expected a non-negative integer");
    return v.get<std::uint64_t>();
  }
  double number_or(const std::string& key, double fallback) {
    if (!has(key)) return fallback;
    const Json& v = j_.at(key);
    if (!v.is_number()) fail(key, "expected a number");
    return v.get<double>();
  }
  bool boolean_or(const std::string& key, bool fallback) {
    if (!has(key)) return fallback;
    const Json& v = j_.at(key);
    if (!v.is_boolean()) fail(key, "expected true or false");
    return v.get<bool>();
  }
  // A quantity with its unit ("5ms", "1MiB"): parsed by `parse`, whose InputError gets the key.
  template <typename Parse>
  auto quantity(const std::string& key, Parse parse) {
    const std::string text = string(key);
    try {
      return parse(text);
    } catch (const InputError& e) {
      fail(key, e.what());
    }
  }
  double seconds(const std::string& key) {
    return to_seconds(quantity(key, [](const std::string& s) { return parse_duration_ns(s); }));
  }

  void finish() const {
    for (auto it = j_.begin(); it != j_.end(); ++it) {
      if (!seen_.count(it.key())) fail(it.key(), "unknown key");
    }
  }

 private:
  const Json& j_;
  std::string label_, prefix_;
  std::set<std::string> seen_;
};

train::Model inline_model(const Json& j, const std::string& label) {
  ObjectReader m(j, label, "model");
  train::Model model;
  model.name = m.string("name");
  model.sample_unit = m.string_or("sample_unit", "sample");
  model.description = "inline model of " + label;
  const Json& layers = m.get("layers");
  if (!layers.is_array() || layers.empty()) m.fail("layers", "expected a non-empty list");
  std::set<std::string> names;
  for (std::size_t l = 0; l < layers.size(); ++l) {
    ObjectReader lr(layers[l], label, "model.layers[" + std::to_string(l) + "]");
    train::Layer layer;
    layer.name = lr.string("name");
    layer.forward_flops = lr.number_or("forward_flops", 0);
    layer.backward_flops = lr.number_or("backward_flops", 0);
    if (!(layer.forward_flops >= 0) || !(layer.backward_flops >= 0)) {
      lr.fail("backward_flops", "FLOPs must be >= 0");
    }
    layer.first_tensor = model.backward_order.size();
    if (lr.has("tensors")) {
      const Json& tensors = lr.get("tensors");
      if (!tensors.is_array()) lr.fail("tensors", "expected a list");
      for (std::size_t i = 0; i < tensors.size(); ++i) {
        ObjectReader tr(tensors[i], label, lr.path("tensors[" + std::to_string(i) + "]"));
        train::Tensor t;
        t.name = tr.string("name");
        if (!names.insert(t.name).second)
          tr.fail("name", "duplicate tensor name \"" + t.name + "\"");
        t.elements = tr.unsigned_or("elements", 0);
        if (t.elements == 0) tr.fail("elements", "expected a positive integer");
        t.layer = l;
        tr.finish();
        model.backward_order.push_back(std::move(t));
      }
    }
    layer.tensor_count = model.backward_order.size() - layer.first_tensor;
    lr.finish();
    model.layers.push_back(std::move(layer));
  }
  m.finish();
  if (model.backward_order.empty()) m.fail("layers", "the model has no tensors");
  return model;
}

train::SystemConfig read_system(ObjectReader& s) {
  train::SystemConfig c;
  const std::string kind = s.string("kind");
  const auto k = train::parse_system_kind(kind);
  if (!k) s.fail("kind", "unknown system kind \"" + kind + "\" (live: ideal, kungfu, horovod)");
  if (!live_system_supported(*k)) {
    s.fail("kind",
           "'" + kind +
               "' needs GPUs and NCCL; live training over TCP runs ideal, kungfu and horovod");
  }
  c.kind = *k;
  c.label = s.string_or("label", kind);
  if (s.has("strategy")) {
    const std::string name = s.string("strategy");
    const auto strategy = coll::parse_strategy(name);
    if (!strategy) s.fail("strategy", "unknown strategy \"" + name + "\"");
    c.strategy = *strategy;
  }
  if (s.has("chunk_size")) {
    c.chunk_bytes =
        s.quantity("chunk_size", [](const std::string& t) { return parse_size_bytes(t); });
    if (c.chunk_bytes == 0) s.fail("chunk_size", "must be > 0");
  }
  if (s.has("cycle_time")) {
    c.cycle_time_ns =
        s.quantity("cycle_time", [](const std::string& t) { return parse_duration_ns(t); });
  }
  if (s.has("fusion_threshold")) {
    c.fusion_bytes =
        s.quantity("fusion_threshold", [](const std::string& t) { return parse_size_bytes(t); });
  }
  s.finish();
  return c;
}

double read_cv(ObjectReader& r, const std::string& key) {
  const Json& v = r.get(key);
  double cv = 0;
  if (v.is_number()) {
    cv = v.get<double>();
  } else if (v.is_string()) {
    const std::string text = v.get<std::string>();
    std::size_t used = 0;
    try {
      cv = std::stod(text, &used);
    } catch (const std::exception&) {
      r.fail(key, "expected a fraction (0.02) or a percentage (\"2%\"), got \"" + text + "\"");
    }
    if (text.substr(used) != "%") {
      r.fail(key, "expected a fraction (0.02) or a percentage (\"2%\"), got \"" + text + "\"");
    }
    cv /= 100;
  } else {
    r.fail(key, "expected a number or a percentage string");
  }
  if (!std::isfinite(cv) || cv < 0) r.fail(key, "must be >= 0");
  return cv;
}

}  // namespace

LiveRunSpec parse_live_run_spec(const std::string& text, const std::string& label,
                                const std::filesystem::path& base_dir) {
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::parse_error& e) {
    throw InputError(label + ": invalid JSON: " + e.what());
  }
  ObjectReader r(j, label, "");
  LiveRunSpec spec;
  spec.config_path = label;

  const Json& model = r.get("model");
  if (model.is_string()) {
    const train::Model* zoo = train::find_model(model.get<std::string>());
    if (!zoo) {
      std::string names;
      for (const std::string& n : train::model_names())
        names += (names.empty() ? "" : ", ") + n;
      r.fail("model", "unknown model \"" + model.get<std::string>() + "\" (zoo: " + names +
                          ", or an inline model object)");
    }
    spec.model = *zoo;
  } else {
    spec.model = inline_model(model, label);
  }

  LiveConfig& c = spec.live;
  c.batch_per_gpu = static_cast<int>(r.integer_or("batch_per_gpu", c.batch_per_gpu, 1, 1 << 20));
  spec.compute_scale = r.number_or("compute_scale", 1);
  if (!std::isfinite(spec.compute_scale) || spec.compute_scale <= 0) {
    r.fail("compute_scale", "must be > 0");
  }

  const bool has_compute = r.has("compute"), has_device = r.has("device");
  if (has_compute == has_device) {
    r.fail(has_compute ? "device" : "compute",
           "give exactly one of 'compute' (explicit times) and 'device' (a device profile)");
  }
  std::optional<double> device_cv;
  if (has_device) {
    std::filesystem::path device_path = r.string("device");
    if (device_path.is_relative()) device_path = base_dir / device_path;
    spec.device_path = device_path.string();
    train::DeviceProfile device;
    try {
      device = train::load_device_profile(device_path);
    } catch (const InputError& e) {
      r.fail("device", e.what());
    }
    train::TrainingOptions options;
    options.batch_per_gpu = c.batch_per_gpu;
    options.precision = device.default_precision();
    if (r.has("precision")) {
      const std::string p = r.string("precision");
      const auto parsed = train::parse_precision(p);
      if (!parsed) r.fail("precision", "expected fp32, tf32 or amp, got \"" + p + "\"");
      options.precision = *parsed;
    }
    spec.precision = std::string(train::precision_name(options.precision));
    try {
      c.compute = train::compute_profile(spec.model, device, options);
    } catch (const InputError& e) {
      r.fail("device", e.what());
    }
    device_cv = device.step_time_cv().value;
  } else {
    if (r.has("precision")) r.fail("precision", "only with 'device' (a device profile)");
    ObjectReader cr(r.get("compute"), label, "compute");
    c.compute.forward_s = cr.seconds("forward");
    c.compute.optimizer_s = cr.has("optimizer") ? cr.seconds("optimizer") : 0.0;
    const bool total = cr.has("backward"), layers = cr.has("backward_layers");
    if (total == layers) {
      cr.fail(total ? "backward_layers" : "backward",
              "give exactly one of 'backward' (a total) and 'backward_layers' (one per layer)");
    }
    const std::size_t n = spec.model.layers.size();
    if (total) {
      const double backward_s = cr.seconds("backward");
      double flops = 0;
      for (const train::Layer& l : spec.model.layers)
        flops += l.backward_flops;
      for (const train::Layer& l : spec.model.layers) {
        c.compute.backward_layer_s.push_back(flops > 0 ? backward_s * l.backward_flops / flops
                                                       : backward_s / static_cast<double>(n));
      }
    } else {
      const Json& list = cr.get("backward_layers");
      if (!list.is_array() || list.size() != n) {
        cr.fail("backward_layers", "expected a list of " + std::to_string(n) +
                                       " durations (one per layer of '" + spec.model.name + "')");
      }
      for (std::size_t l = 0; l < n; ++l) {
        if (!list[l].is_string()) cr.fail("backward_layers", "expected durations such as \"1ms\"");
        try {
          c.compute.backward_layer_s.push_back(
              to_seconds(parse_duration_ns(list[l].get<std::string>())));
        } catch (const InputError& e) {
          cr.fail("backward_layers", "[" + std::to_string(l) + "]: " + e.what());
        }
      }
    }
    cr.finish();
  }
  c.compute.forward_s *= spec.compute_scale;
  c.compute.optimizer_s *= spec.compute_scale;
  for (double& s : c.compute.backward_layer_s)
    s *= spec.compute_scale;

  c.step_time_cv = r.has("step_time_cv") ? read_cv(r, "step_time_cv") : device_cv.value_or(0.0);
  ObjectReader sr(r.get("system"), label, "system");
  c.system = read_system(sr);
  c.warmup_steps = static_cast<int>(r.integer_or("warmup_steps", c.warmup_steps, 0, 1 << 20));
  c.measured_steps = static_cast<int>(r.integer_or("steps", c.measured_steps, 1, 1 << 20));
  c.seed = r.unsigned_or("seed", c.seed);
  if (r.has("timeout")) {
    c.timeout_ns = r.quantity("timeout", [](const std::string& t) { return parse_duration_ns(t); });
    if (c.timeout_ns <= 0) r.fail("timeout", "must be > 0");
  }
  c.congestion_control = r.string_or("congestion_control", c.congestion_control);
  c.verify = r.boolean_or("verify", c.verify);
  // sleep and spin wait on the CPU; gpu runs the CUDA emulation kernel; auto is gpu where this
  // build has CUDA and a device is visible, else sleep (decided by each rank at run time).
  const std::string mode = r.string_or("compute_mode", "sleep");
  c.compute_device = ComputeDevice::kCpu;
  c.compute_mode = hw::CpuComputeMode::kSleep;
  if (mode == "spin") {
    c.compute_mode = hw::CpuComputeMode::kSpin;
  } else if (mode == "gpu") {
    if (!gpu_compute_available_in_build()) {
      r.fail("compute_mode",
             "gpu needs an adaptsim-live built with CUDA (CMake's ADAPTSIM_HAVE_CUDA is off); use "
             "sleep, spin or auto");
    }
    c.compute_device = ComputeDevice::kGpu;
  } else if (mode == "auto") {
    c.compute_device = ComputeDevice::kAuto;
  } else if (mode != "sleep") {
    r.fail("compute_mode", "expected sleep, spin, gpu or auto, got \"" + mode + "\"");
  }
  r.finish();
  try {
    validate_live_config(spec.model, c);
  } catch (const InputError& e) {
    throw InputError(label + ": " + e.what());
  }
  return spec;
}

LiveRunSpec load_live_run_spec(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path.string() + ": cannot read the configuration file");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_live_run_spec(ss.str(), path.string(), path.parent_path());
}

std::string result_json(const LiveRunSpec& spec, const LiveResult& result, double wall_s) {
  const train::TrainingResult& r = result.training;
  const train::ComputeProfile& p = spec.live.compute;
  const double backward =
      std::accumulate(p.backward_layer_s.begin(), p.backward_layer_s.end(), 0.0);
  Json j;
  j["mode"] = "live";
  j["config"] = spec.config_path;
  j["model"] = spec.model.name;
  j["sample_unit"] = spec.model.sample_unit;
  j["system"] = std::string(train::system_kind_name(spec.live.system.kind));
  j["label"] = spec.live.system.label;
  if (spec.live.system.kind == train::SystemKind::kKungFu) {
    j["strategy"] = std::string(coll::strategy_name(spec.live.system.strategy));
  } else if (spec.live.system.kind == train::SystemKind::kHorovod) {
    j["strategy"] = std::string(coll::strategy_name(coll::StrategyKind::kClassicRing));
  }
  j["n_ranks"] = result.n_ranks;
  j["batch_per_gpu"] = spec.live.batch_per_gpu;
  j["warmup_steps"] = spec.live.warmup_steps;
  j["measured_steps"] = spec.live.measured_steps;
  j["seed"] = spec.live.seed;
  j["step_time_cv"] = spec.live.step_time_cv;
  j["step_s"] = r.step_s;
  j["step_mean_s"] = r.step_mean_s;
  j["step_std_s"] = r.step_std_s;
  j["compute_s"] = r.compute_s;
  j["exposed_link_s"] = r.exposed_link_s;
  j["exposed_wait_s"] = r.exposed_wait_s;
  j["samples_per_s_per_gpu"] = r.samples_per_s_per_gpu;
  j["samples_per_s_per_gpu_std"] = r.samples_per_s_per_gpu_std;
  j["samples_per_s_total"] = r.samples_per_s_total;
  j["rank_step_mean_s"] = result.rank_step_mean_s;
  j["compute_profile_s"] = {{"forward", p.forward_s},
                            {"backward", backward},
                            {"optimizer", p.optimizer_s},
                            {"total", p.total_s()}};
  j["compute_scale"] = spec.compute_scale;
  j["compute_mode"] = result.compute_device;
  if (!spec.device_path.empty()) {
    j["device"] = spec.device_path;
    j["precision"] = spec.precision;
  }
  j["gradient_bytes"] = result.gradient_bytes;
  j["tensors"] = spec.model.backward_order.size();
  j["verified_steps"] = result.verified_steps;
  j["training_wall_s"] = result.wall_s;
  j["wall_s"] = wall_s;
  return j.dump(2) + "\n";
}

}  // namespace adaptsim::live
