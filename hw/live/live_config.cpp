#include "hw/live/live_config.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <numeric>
#include <optional>
#include <set>

#include "sim/coll/strategy.h"
#include "sim/core/error.h"
#include "sim/core/units.h"
#include "sim/io/yaml_reader.h"
#include "sim/runtime/failure.h"
#include "sim/runtime/system_config.h"
#include "sim/train/device_profile.h"
#include "sim/train/learn_spec.h"

namespace adaptsim::live {
namespace {

train::Model inline_model(io::MapReader& m, const std::string& label) {
  train::Model model;
  model.name = m.string("name");
  model.sample_unit = m.string_or("sample_unit", "sample");
  model.description = "inline model of " + label;
  const auto layers = m.list("layers");
  if (layers.empty()) m.fail("layers", "expected a non-empty list");
  std::set<std::string> names;
  for (std::size_t l = 0; l < layers.size(); ++l) {
    io::MapReader lr = io::MapReader::item_map(m, "layers", l, layers[l]);
    train::Layer layer;
    layer.name = lr.string("name");
    layer.forward_flops = lr.number_or("forward_flops", 0);
    layer.backward_flops = lr.number_or("backward_flops", 0);
    if (!(layer.forward_flops >= 0) || !std::isfinite(layer.forward_flops)) {
      lr.fail("forward_flops", "FLOPs must be finite and >= 0");
    }
    if (!(layer.backward_flops >= 0) || !std::isfinite(layer.backward_flops)) {
      lr.fail("backward_flops", "FLOPs must be finite and >= 0");
    }
    layer.first_tensor = model.backward_order.size();
    if (lr.has("tensors")) {
      const auto tensors = lr.list("tensors");
      for (std::size_t i = 0; i < tensors.size(); ++i) {
        io::MapReader tr = io::MapReader::item_map(lr, "tensors", i, tensors[i]);
        train::Tensor t;
        t.name = tr.string("name");
        if (!names.insert(t.name).second) {
          tr.fail("name", "duplicate tensor name \"" + t.name + "\"");
        }
        t.elements = static_cast<std::uint64_t>(tr.integer("elements", 1, std::int64_t{1} << 40));
        t.layer = l;
        tr.finish();
        model.backward_order.push_back(std::move(t));
      }
    } else {
      lr.accept("tensors");
    }
    layer.tensor_count = model.backward_order.size() - layer.first_tensor;
    lr.finish();
    model.layers.push_back(std::move(layer));
  }
  m.finish();
  if (model.backward_order.empty()) m.fail("layers", "the model has no tensors");
  return model;
}

// A coefficient of variation: a fraction (0.02) or a percentage (2%).
double read_cv(io::MapReader& r, std::string_view key) {
  const std::string text = r.string(key);
  const bool percent = !text.empty() && text.back() == '%';
  double cv = 0;
  try {
    std::size_t used = 0;
    const std::string number = percent ? text.substr(0, text.size() - 1) : text;
    cv = std::stod(number, &used);
    if (used != number.size()) throw std::invalid_argument(text);
  } catch (const std::exception&) {
    r.fail(key, "expected a fraction (0.02) or a percentage (2%), got \"" + text + "\"");
  }
  if (percent) cv /= 100;
  if (!std::isfinite(cv) || cv < 0) r.fail(key, "must be finite and >= 0");
  return cv;
}

// An explicit compute split at the configured batch.
train::ComputeProfile read_compute(io::MapReader& cr, const train::Model& model) {
  train::ComputeProfile p;
  p.forward_s = to_seconds(cr.duration_ns("forward"));
  p.optimizer_s = to_seconds(cr.duration_ns_or("optimizer", 0));
  const bool total = cr.has("backward"), layers = cr.has("backward_layers");
  if (total == layers) {
    cr.fail(total ? "backward_layers" : "backward",
            "give exactly one of 'backward' (a total) and 'backward_layers' (one per layer)");
  }
  const std::size_t n = model.layers.size();
  if (total) {
    cr.accept("backward_layers");
    const double backward_s = to_seconds(cr.duration_ns("backward"));
    double flops = 0;
    for (const train::Layer& l : model.layers)
      flops += l.backward_flops;
    for (const train::Layer& l : model.layers) {
      p.backward_layer_s.push_back(flops > 0 ? backward_s * l.backward_flops / flops
                                             : backward_s / static_cast<double>(n));
    }
  } else {
    cr.accept("backward");
    const std::vector<std::string> list = cr.string_list("backward_layers");
    if (list.size() != n) {
      cr.fail("backward_layers", "expected a list of " + std::to_string(n) +
                                     " durations (one per layer of '" + model.name + "')");
    }
    for (std::size_t l = 0; l < n; ++l) {
      try {
        p.backward_layer_s.push_back(to_seconds(parse_duration_ns(list[l])));
      } catch (const InputError& e) {
        cr.fail("backward_layers", "[" + std::to_string(l) + "]: " + e.what());
      }
    }
  }
  cr.finish();
  return p;
}

train::ComputeProfile scaled(train::ComputeProfile p, double scale) {
  p.forward_s *= scale;
  p.optimizer_s *= scale;
  for (double& s : p.backward_layer_s)
    s *= scale;
  return p;
}

}  // namespace

namespace {

LiveRunSpec parse(const io::Document& doc, const std::filesystem::path& base_dir) {
  const std::string& label = doc.label();
  io::MapReader r(doc, doc.root(), "");
  LiveRunSpec spec;
  spec.config_path = label;

  if (r.has("model") && r.node()["model"].IsMap()) {
    io::MapReader m = r.map("model");
    spec.model = inline_model(m, label);
  } else {
    const std::string name = r.string("model");
    const train::Model* zoo = train::find_model(name);
    if (!zoo) {
      std::string names;
      for (const std::string& n : train::model_names())
        names += (names.empty() ? "" : ", ") + n;
      r.fail("model", "unknown model \"" + name + "\" (zoo: " + names + ", or an inline model)");
    }
    spec.model = *zoo;
  }

  LiveConfig& c = spec.live;
  c.batch_per_gpu = static_cast<int>(r.integer_or("batch_per_gpu", c.batch_per_gpu, 1, 1 << 20));
  spec.compute_scale = r.number_or("compute_scale", 1);
  if (!std::isfinite(spec.compute_scale) || spec.compute_scale <= 0) {
    r.fail("compute_scale", "must be > 0");
  }

  // learn: real training (learner.h); read first, as it makes the compute split optional.
  if (auto lr = r.optional_map("learn")) {
    if (spec.model.name != train::kLearnModel) {
      r.fail("learn", "trains the " + std::string(train::kLearnModel) +
                          " model for real; the model is \"" + spec.model.name + "\"");
    }
    std::shared_ptr<const learn::FashionMnist> data;
    c.learn = train::read_learn_spec(*lr, base_dir, &data);
    c.learn_data = std::move(data);
  }
  const bool has_compute = r.has("compute"), has_device = r.has("device");
  if (c.learn && !has_compute && !has_device) {
    // The compute is real: the trainer's deadlines (this split) are not used.
    r.accept("compute");
    r.accept("device");
    r.accept("precision");
    const std::size_t layers = spec.model.layers.size();
    c.compute = [layers](int) {
      train::ComputeProfile p;
      p.backward_layer_s.assign(layers, 0.0);
      return p;
    };
  } else if (has_compute == has_device) {
    r.fail(has_compute ? "device" : "compute",
           "give exactly one of 'compute' (explicit times) and 'device' (a device profile)");
  }
  std::optional<double> device_cv;
  if (has_device) {
    r.accept("compute");
    std::filesystem::path device_path = r.string("device");
    if (device_path.is_relative()) device_path = base_dir / device_path;
    spec.device_path = device_path.string();
    auto device = std::make_shared<train::DeviceProfile>();
    try {
      *device = train::load_device_profile(device_path);
    } catch (const InputError& e) {
      r.fail("device", e.what());
    }
    train::ComputeOptions options;
    options.precision = device->default_precision();
    options.compute_scale = spec.compute_scale;
    if (r.has("precision")) {
      options.precision = *train::parse_precision(r.choice("precision", {"fp32", "tf32", "amp"}));
    } else {
      r.accept("precision");
    }
    spec.precision = std::string(train::precision_name(options.precision));
    if (!device->has_throughput(spec.model.name, options.precision)) {
      r.fail("device", "the device profile has no " + spec.precision + " throughput for model \"" +
                           spec.model.name + "\"");
    }
    auto model = std::make_shared<train::Model>(spec.model);
    c.compute = [device, model, options](int batch) {
      train::ComputeOptions o = options;
      o.batch_per_gpu = batch;
      return train::compute_profile(*model, *device, o);
    };
    device_cv = device->step_time_cv().value;
  } else if (has_compute) {
    r.accept("device");
    if (r.has("precision")) r.fail("precision", "only with 'device' (a device profile)");
    r.accept("precision");
    io::MapReader cr = r.map("compute");
    const train::ComputeProfile at_batch = scaled(read_compute(cr, spec.model), spec.compute_scale);
    const int batch = c.batch_per_gpu;
    c.compute = [at_batch, batch](int b) { return train::scale_compute(at_batch, batch, b); };
  }

  c.step_time_cv = r.has("step_time_cv") ? read_cv(r, "step_time_cv") : device_cv.value_or(0.0);
  if (!r.has("step_time_cv")) r.accept("step_time_cv");
  io::MapReader sr = r.map("system");
  c.system = runtime::read_system(sr);
  if (!runtime::runs_on_host_transport(c.system.kind)) {
    sr.fail("kind", "'" + std::string(runtime::system_kind_name(c.system.kind)) +
                        "' needs GPUs and NCCL; live training over TCP runs ideal, kungfu and "
                        "horovod");
  }
  c.seam = runtime::read_seam(r);
  runtime::check_seam(r, c.seam, {c.system}, c.batch_per_gpu);
  // Worker ids are checked against the topology by the scenario; here any rank may be named.
  c.stragglers = runtime::read_stragglers(r, 1 << 20);
  if (auto er = r.optional_map("elastic")) {
    // An elastic run: the workers the topology holds, its GPUs per host, then the scenario's
    // `elastic:` keys.
    c.elastic_capacity = static_cast<int>(er->integer("capacity", 1, 1 << 16));
    c.elastic_ranks_per_host =
        static_cast<int>(er->integer_or("ranks_per_host", 1, 1, c.elastic_capacity));
    c.elastic = runtime::read_elastic(*er, c.elastic_capacity);
    c.failures = runtime::read_failures(r, c.elastic_capacity);
  }
  c.warmup_steps = static_cast<int>(r.integer_or("warmup_steps", c.warmup_steps, 0, 1 << 20));
  c.measured_steps = static_cast<int>(r.integer_or("steps", c.measured_steps, 1, 1 << 20));
  c.seed = static_cast<std::uint64_t>(
      r.integer_or("seed", static_cast<std::int64_t>(c.seed), 0, INT64_MAX));
  c.timeout_ns = r.duration_ns_or("timeout", c.timeout_ns);
  if (c.timeout_ns <= 0) r.fail("timeout", "must be > 0");
  c.congestion_control = r.string_or("congestion_control", c.congestion_control);
  c.verify = r.boolean_or("verify", c.verify);
  c.progress_file = r.string_or("progress_file", "");
  c.timeline_dir = r.string_or("timeline_dir", "");
  c.messages_dir = r.string_or("messages_dir", "");
  // sleep and spin wait on the CPU; gpu runs the CUDA emulation kernel; auto is gpu where this
  // build has CUDA and a device is visible, else sleep (decided by each rank at run time).
  const std::string mode = r.choice_or("compute_mode", {"sleep", "spin", "gpu", "auto"}, "sleep");
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
  }
  r.finish();
  try {
    validate_live_config(spec.model, c);
  } catch (const InputError& e) {
    throw InputError(label + ": " + e.what());
  }
  return spec;
}

}  // namespace

LiveRunSpec parse_live_run_spec(const std::string& text, const std::string& label,
                                const std::filesystem::path& base_dir) {
  return parse(io::Document::parse_string(text, label), base_dir);
}

LiveRunSpec load_live_run_spec(const std::filesystem::path& path) {
  return parse(io::Document::load_file(path), path.parent_path());
}

std::string result_json(const LiveRunSpec& spec, const LiveResult& result, double wall_s) {
  const train::ComputeProfile p = spec.live.compute(spec.live.batch_per_gpu);
  const double backward =
      std::accumulate(p.backward_layer_s.begin(), p.backward_layer_s.end(), 0.0);
  nlohmann::ordered_json j;
  j["mode"] = "live";
  j["config"] = spec.config_path;
  j["model"] = spec.model.name;
  j["sample_unit"] = spec.model.sample_unit;
  j["system"] = std::string(runtime::system_kind_name(spec.live.system.kind));
  j["label"] = spec.live.system.label;
  if (spec.live.system.kind == runtime::SystemKind::kKungFu) {
    j["strategy"] = std::string(coll::strategy_name(spec.live.system.strategy));
  } else if (spec.live.system.kind == runtime::SystemKind::kHorovod) {
    j["strategy"] = std::string(coll::strategy_name(coll::StrategyKind::kClassicRing));
  }
  j["n_ranks"] = result.n_ranks;
  j["batch_per_gpu"] = spec.live.batch_per_gpu;
  j["warmup_steps"] = spec.live.warmup_steps;
  j["measured_steps"] = spec.live.measured_steps;
  j["seed"] = spec.live.seed;
  j["step_time_cv"] = spec.live.step_time_cv;
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
  if (const auto& l = spec.live.learn) {
    nlohmann::ordered_json lj;
    lj["data"] = l->data.string();
    lj["lr"] = l->lr;
    lj["base_batch"] = l->base_batch;
    lj["warmup_steps"] = l->warmup_steps;
    lj["momentum"] = l->momentum;
    lj["weight_decay"] = l->weight_decay;
    lj["eval_every"] = l->eval_every;
    lj["samples"] = result.samples;
    if (result.evaluation) {
      lj["test_loss"] = result.evaluation->mean_loss;
      lj["test_accuracy"] = result.evaluation->accuracy;
    }
    j["learn"] = lj;
  }
  j["result"] = nlohmann::ordered_json::parse(runtime::to_json(result.training));
  return j.dump(2) + "\n";
}

}  // namespace adaptsim::live
