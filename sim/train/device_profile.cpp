#include "sim/train/device_profile.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <functional>
#include <initializer_list>
#include <tuple>
#include <utility>

#include "sim/core/error.h"
#include "sim/core/units.h"
#include "sim/io/input_file.h"
#include "sim/io/yaml_reader.h"

namespace adaptsim::train {
namespace {

constexpr std::pair<Precision, std::string_view> kPrecisionNames[] = {
    {Precision::kFp32, "fp32"}, {Precision::kTf32, "tf32"}, {Precision::kAmp, "amp"}};

std::string join(std::initializer_list<std::string_view> words) {
  std::string s;
  for (std::string_view w : words)
    s += (s.empty() ? "" : ", ") + std::string(w);
  return s;
}

std::string trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  return std::string(s);
}

// "2%" -> 0.02. A unit is required, as for every other number in a profile.
double parse_percent(std::string_view text) {
  const std::string t = trim(text);
  if (t.empty() || t.back() != '%') {
    throw InputError("expected a percentage such as 2%, got \"" + t + "\"");
  }
  const std::string number = trim(std::string_view(t).substr(0, t.size() - 1));
  double v = 0;
  auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), v);
  // !(v >= 0 && v < 100) also rejects NaN, which from_chars reads from "nan".
  if (number.empty() || ec != std::errc() || ptr != number.data() + number.size() ||
      !(v >= 0 && v < 100)) {
    throw InputError("expected a percentage in [0%, 100%) such as 2%, got \"" + t + "\"");
  }
  return v / 100.0;
}

// Seconds in a message: "3.2e-299 s".
std::string format_seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g s", s);
  return buf;
}

// Validating access to one profile document: every error names the file, the 1-based line
// (yaml-cpp marks are 0-based) and the dotted key.
class Reader {
 public:
  explicit Reader(std::string label) : label_(std::move(label)) {}

  [[noreturn]] void fail(const YAML::Node& at, const std::string& key,
                         const std::string& message) const {
    const int line = at.IsDefined() ? at.Mark().line : -1;
    throw InputError(label_ + ":" + (line >= 0 ? std::to_string(line + 1) : std::string("?")) +
                     ": key '" + key + "': " + message);
  }

  static std::string path(const std::string& parent, std::string_view key) {
    return parent.empty() ? std::string(key) : parent + "." + std::string(key);
  }

  // Rejects keys outside `allowed`, at the key's own line.
  void check_keys(const YAML::Node& map, const std::string& parent,
                  std::initializer_list<std::string_view> allowed) const {
    for (const auto& kv : map) {
      const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : std::string("?");
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
        fail(kv.first, path(parent, key), "unknown key (known: " + join(allowed) + ")");
      }
    }
  }

  YAML::Node required(const YAML::Node& map, const std::string& parent,
                      std::string_view key) const {
    const YAML::Node v = map[std::string(key)];
    if (!v.IsDefined() || v.IsNull()) fail(map, path(parent, key), "missing required key");
    return v;
  }

  std::string scalar(const YAML::Node& map, const std::string& parent, std::string_view key) const {
    const YAML::Node v = required(map, parent, key);
    if (!v.IsScalar()) fail(v, path(parent, key), "expected a single value, got a list or map");
    return v.Scalar();
  }

  YAML::Node mapping(const YAML::Node& map, const std::string& parent, std::string_view key) const {
    const YAML::Node v = required(map, parent, key);
    if (!v.IsMap()) fail(v, path(parent, key), "expected a mapping of keys");
    return v;
  }

  // {value: "<number><unit>", source: "..."}; `parse` converts the text (and throws InputError
  // for a missing or wrong unit).
  SourcedValue quantity(const YAML::Node& map, const std::string& parent, std::string_view key,
                        const std::function<double(std::string_view)>& parse) const {
    const std::string k = path(parent, key);
    const YAML::Node q = required(map, parent, key);
    if (!q.IsMap()) {
      fail(q, k,
           "expected {value: <number with unit>, source: \"...\"}: every number needs its "
           "unit and its source");
    }
    check_keys(q, k, {"value", "source"});
    SourcedValue out;
    const std::string text = scalar(q, k, "value");
    try {
      out.value = parse(text);
    } catch (const InputError& e) {
      fail(q["value"], path(k, "value"), e.what());
    }
    out.source = source(q, k);
    return out;
  }

  std::string source(const YAML::Node& map, const std::string& parent) const {
    const YAML::Node v = map["source"];
    if (!v.IsDefined() || v.IsNull()) {
      fail(map, path(parent, "source"), "missing required key (every number needs its source)");
    }
    if (!v.IsScalar() || trim(v.Scalar()).empty()) {
      fail(v, path(parent, "source"), "expected a non-empty source string");
    }
    return v.Scalar();
  }

 private:
  std::string label_;
};

ThroughputPoint read_point(const Reader& r, const YAML::Node& item, const std::string& k) {
  if (!item.IsMap()) r.fail(item, k, "expected a mapping with model, precision, batch, rate");
  r.check_keys(item, k, {"model", "precision", "batch", "rate", "step_time", "source"});
  ThroughputPoint p;
  p.line = item.Mark().line + 1;

  p.model = r.scalar(item, k, "model");
  const Model* m = find_model(p.model);
  if (m == nullptr) {
    std::string known;
    for (const std::string& n : model_names())
      known += (known.empty() ? "" : ", ") + n;
    r.fail(item["model"], Reader::path(k, "model"),
           "unknown model '" + p.model + "' (known: " + known + ")");
  }

  const std::string precision = r.scalar(item, k, "precision");
  const std::optional<Precision> parsed = parse_precision(precision);
  if (!parsed) {
    r.fail(item["precision"], Reader::path(k, "precision"),
           "unknown precision '" + precision + "' (known: fp32, tf32, amp)");
  }
  p.precision = *parsed;

  const std::string batch = trim(r.scalar(item, k, "batch"));
  auto [ptr, ec] = std::from_chars(batch.data(), batch.data() + batch.size(), p.batch);
  if (batch.empty() || ec != std::errc() || ptr != batch.data() + batch.size() || p.batch < 1) {
    r.fail(item["batch"], Reader::path(k, "batch"),
           "expected a whole number of samples >= 1, got \"" + batch + "\"");
  }

  const bool has_rate = item["rate"].IsDefined();
  const bool has_step_time = item["step_time"].IsDefined();
  if (has_rate == has_step_time) {
    r.fail(item, Reader::path(k, "rate"),
           "give exactly one of rate (" + m->sample_unit + "/s) and step_time");
  }
  if (has_rate) {
    const std::string text = r.scalar(item, k, "rate");
    try {
      p.step_time_s = p.batch / parse_rate_per_s(text, m->sample_unit);
    } catch (const InputError& e) {
      r.fail(item["rate"], Reader::path(k, "rate"), e.what());
    }
  } else {
    const std::string text = r.scalar(item, k, "step_time");
    try {
      p.step_time_s = static_cast<double>(parse_duration_ns(text)) * 1e-9;
    } catch (const InputError& e) {
      r.fail(item["step_time"], Reader::path(k, "step_time"), e.what());
    }
    if (p.step_time_s <= 0) {
      r.fail(item["step_time"], Reader::path(k, "step_time"), "expected a positive duration");
    }
  }
  // A step from 1 us to 1 h: a device faster than that would make throughput a division by
  // (almost) zero, a slower one overflows the run's integer time within its steps (100,000 steps
  // of 1 h are 3.6e17 ns, below 2^62).
  if (!(p.step_time_s >= kMinStepTimeS && p.step_time_s <= kMaxStepTimeS)) {
    const std::string key = has_rate ? "rate" : "step_time";
    r.fail(item[key], Reader::path(k, key),
           "gives a step of " + format_seconds(p.step_time_s) + " at batch " +
               std::to_string(p.batch) + "; expected a step time from 1 us to 1 h");
  }
  p.source = r.source(item, k);
  return p;
}

// Step time at `batch` from the sorted points of one model and precision (rule in the header).
double interpolate_step_time(const std::vector<const ThroughputPoint*>& pts, int batch) {
  const double b = batch;
  if (pts.size() == 1) return pts[0]->step_time_s * b / pts[0]->batch;
  std::size_t hi = 1;
  while (hi + 1 < pts.size() && pts[hi]->batch < batch)
    ++hi;
  const ThroughputPoint& p0 = *pts[hi - 1];
  const ThroughputPoint& p1 = *pts[hi];
  const double slope = (p1.step_time_s - p0.step_time_s) / (p1.batch - p0.batch);
  const double overhead = p0.step_time_s - slope * p0.batch;
  if (batch >= p0.batch && batch <= p1.batch) return overhead + slope * b;
  if (slope > 0 && overhead >= 0) return overhead + slope * b;
  const ThroughputPoint& nearest = batch < p0.batch ? p0 : p1;
  return nearest.step_time_s * b / nearest.batch;
}

}  // namespace

std::string_view precision_name(Precision p) {
  for (auto [value, name] : kPrecisionNames) {
    if (value == p) return name;
  }
  return "?";
}

std::optional<Precision> parse_precision(std::string_view name) {
  for (auto [value, n] : kPrecisionNames) {
    if (n == name) return value;
  }
  return std::nullopt;
}

DeviceProfile parse_device_profile(const std::string& yaml_text, const std::string& label) {
  const YAML::Node root = io::parse_yaml(yaml_text, label);
  if (!root.IsMap()) {
    throw InputError(label + ":1: expected a mapping of keys (a device profile), got " +
                     (root.IsNull() ? std::string("an empty document") : "a list or value"));
  }
  const Reader r(label);
  r.check_keys(root, "",
               {"name", "description", "default_precision", "memory", "memory_bandwidth",
                "step_time_cv", "throughput"});

  DeviceProfile d;
  d.file_ = label;
  d.name_ = r.scalar(root, "", "name");
  d.description_ = r.scalar(root, "", "description");
  const std::string precision = r.scalar(root, "", "default_precision");
  const std::optional<Precision> parsed = parse_precision(precision);
  if (!parsed) {
    r.fail(root["default_precision"], "default_precision",
           "unknown precision '" + precision + "' (known: fp32, tf32, amp)");
  }
  d.default_precision_ = *parsed;

  const auto size = [](std::string_view t) { return static_cast<double>(parse_size_bytes(t)); };
  const auto bandwidth = [](std::string_view t) { return parse_bandwidth_Bps(t); };
  d.memory_bytes_ = r.quantity(root, "", "memory", size);
  d.memory_bandwidth_Bps_ = r.quantity(root, "", "memory_bandwidth", bandwidth);
  d.step_time_cv_ = r.quantity(root, "", "step_time_cv", parse_percent);
  if (d.memory_bytes_.value <= 0) r.fail(root["memory"], "memory.value", "expected a size > 0");

  const YAML::Node list = r.required(root, "", "throughput");
  if (!list.IsSequence() || list.size() == 0) {
    r.fail(list, "throughput", "expected a non-empty list of measured throughputs");
  }
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string k = "throughput[" + std::to_string(i) + "]";
    ThroughputPoint p = read_point(r, list[i], k);
    for (const ThroughputPoint& q : d.throughput_) {
      if (q.model == p.model && q.precision == p.precision && q.batch == p.batch) {
        r.fail(list[i], k,
               "duplicate point for " + p.model + " " + std::string(precision_name(p.precision)) +
                   " batch " + std::to_string(p.batch) + " (first at line " +
                   std::to_string(q.line) + ")");
      }
    }
    d.throughput_.push_back(std::move(p));
  }
  std::stable_sort(d.throughput_.begin(), d.throughput_.end(),
                   [](const ThroughputPoint& a, const ThroughputPoint& b) {
                     return std::tie(a.model, a.precision, a.batch) <
                            std::tie(b.model, b.precision, b.batch);
                   });
  return d;
}

DeviceProfile load_device_profile(const std::filesystem::path& path) {
  return parse_device_profile(io::read_input_file(path), path.string());
}

bool DeviceProfile::has_throughput(std::string_view model, Precision precision) const {
  return std::any_of(throughput_.begin(), throughput_.end(), [&](const ThroughputPoint& p) {
    return p.model == model && p.precision == precision;
  });
}

double DeviceProfile::step_compute_time_s(std::string_view model_name, int batch,
                                          Precision precision) const {
  if (batch < 1) {
    throw InputError("device '" + name_ + "': batch size must be >= 1, got " +
                     std::to_string(batch));
  }
  std::vector<const ThroughputPoint*> pts;
  for (const ThroughputPoint& p : throughput_) {
    if (p.model == model_name && p.precision == precision) pts.push_back(&p);
  }
  if (pts.empty()) {
    std::string listed;
    for (const ThroughputPoint& p : throughput_) {
      const std::string entry = p.model + " " + std::string(precision_name(p.precision));
      if (listed.find(entry) == std::string::npos) listed += (listed.empty() ? "" : ", ") + entry;
    }
    throw InputError(file_ + ": device '" + name_ + "' lists no throughput for model '" +
                     std::string(model_name) + "' at " + std::string(precision_name(precision)) +
                     " (listed: " + listed + ")");
  }
  return interpolate_step_time(pts, batch);
}

double DeviceProfile::step_compute_time_s(const Model& model, int batch,
                                          Precision precision) const {
  const double t = step_compute_time_s(model.name, batch, precision);
  const Model* reference = find_model(model.name);
  if (reference == nullptr) return t;
  const ModelTotals mine = model.totals();
  const ModelTotals ref = reference->totals();
  const double ref_flops = ref.forward_flops + ref.backward_flops;
  if (ref_flops <= 0) return t;
  return t * (mine.forward_flops + mine.backward_flops) / ref_flops;
}

std::vector<SourcedNumber> DeviceProfile::sourced_numbers() const {
  std::vector<SourcedNumber> out{
      {"memory", memory_bytes_.value, memory_bytes_.source},
      {"memory_bandwidth", memory_bandwidth_Bps_.value, memory_bandwidth_Bps_.source},
      {"step_time_cv", step_time_cv_.value, step_time_cv_.source},
  };
  for (const ThroughputPoint& p : throughput_) {
    out.push_back({"throughput " + p.model + " " + std::string(precision_name(p.precision)) +
                       " batch " + std::to_string(p.batch) + " (samples/s)",
                   p.samples_per_s(), p.source});
  }
  return out;
}

}  // namespace adaptsim::train
