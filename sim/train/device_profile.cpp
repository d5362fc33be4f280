#include "sim/train/device_profile.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "sim/core/error.h"
#include "sim/core/strings.h"
#include "sim/core/units.h"
#include "sim/io/input_file.h"
#include "sim/io/yaml_reader.h"

namespace adaptsim::train {
namespace {

constexpr std::pair<Precision, std::string_view> kPrecisionNames[] = {
    {Precision::kFp32, "fp32"}, {Precision::kTf32, "tf32"}, {Precision::kAmp, "amp"}};

std::string known_precisions() {
  std::string s;
  for (auto [value, name] : kPrecisionNames)
    s += (s.empty() ? "" : ", ") + std::string(name);
  return s;
}

Precision read_precision(io::MapReader& r, std::string_view key) {
  const std::string name = r.string(key);
  const std::optional<Precision> parsed = parse_precision(name);
  if (!parsed) {
    r.fail(key, "unknown precision '" + name + "' (known: " + known_precisions() + ")");
  }
  return *parsed;
}

// "2%" -> 0.02; a coefficient of variation of 100% or more is not a jitter a step can have.
double step_time_cv(std::string_view text) {
  const double cv = parse_percent(text);
  if (cv >= 1) {
    throw InputError("expected a percentage in [0%, 100%) such as 2%, got \"" +
                     std::string(trim(text)) + "\"");
  }
  return cv;
}

SourcedValue sourced(const io::WithSource<double>& q) {
  return {q.value, q.source};
}

ThroughputPoint read_point(io::MapReader& r) {
  ThroughputPoint p;
  p.line = r.node().Mark().line + 1;

  p.model = r.string("model");
  const Model* m = find_model(p.model);
  if (m == nullptr) {
    const std::vector<std::string> names = model_names();
    std::string known;
    for (const std::string& n : names)
      known += (known.empty() ? "" : ", ") + n;
    const std::string guess = io::closest(p.model, names);
    r.fail("model", "unknown model '" + p.model + "' (known: " + known + ")" +
                        (guess.empty() ? "" : " (did you mean '" + guess + "'?)"));
  }
  p.precision = read_precision(r, "precision");
  const std::int64_t batch = r.integer("batch", 1);
  if (batch > std::numeric_limits<int>::max()) {
    r.fail("batch", "expected at most " + std::to_string(std::numeric_limits<int>::max()) +
                        " samples, got " + std::to_string(batch));
  }
  p.batch = static_cast<int>(batch);

  if (r.has("rate") == r.has("step_time")) {
    r.fail("rate", "give exactly one of rate (" + m->sample_unit + "/s) and step_time");
  }
  if (r.has("rate")) {
    const double per_s = r.quantity(
        "rate", [m](const std::string& t) { return parse_rate_per_s(t, m->sample_unit); });
    p.step_time_s = p.batch / per_s;
    r.accept("step_time");
  } else {
    p.step_time_s = static_cast<double>(r.duration_ns("step_time")) * 1e-9;
    if (p.step_time_s <= 0) r.fail("step_time", "expected a positive duration");
    r.accept("rate");
  }
  // A step from 1 us to 1 h: a device faster than that would make throughput a division by
  // (almost) zero, a slower one overflows the run's integer time within its steps (100,000 steps
  // of 1 h are 3.6e17 ns, below 2^62).
  if (!(p.step_time_s >= kMinStepTimeS && p.step_time_s <= kMaxStepTimeS)) {
    const std::string key = r.has("rate") ? "rate" : "step_time";
    r.fail(key, "gives a step of " + format_seconds(p.step_time_s) + " at batch " +
                    std::to_string(p.batch) + "; expected a step time from 1 us to 1 h");
  }
  p.source = r.string("source");
  if (trim(p.source).empty()) r.fail("source", "expected a non-empty source string");
  r.finish();
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
  const io::Document doc = io::Document::parse_string(yaml_text, label);
  io::MapReader r(doc, doc.root(), "");

  DeviceProfile d;
  d.file_ = label;
  d.name_ = r.string("name");
  d.description_ = r.string("description");
  d.default_precision_ = read_precision(r, "default_precision");

  d.memory_bytes_ = sourced(r.sourced_quantity(
      "memory", [](const std::string& t) { return static_cast<double>(parse_size_bytes(t)); }));
  if (d.memory_bytes_.value <= 0) {
    r.map("memory").fail("value", "expected a size > 0");
  }
  d.memory_bandwidth_Bps_ = sourced(r.sourced_quantity("memory_bandwidth", parse_bandwidth_Bps));
  d.step_time_cv_ = sourced(r.sourced_quantity("step_time_cv", step_time_cv));

  const std::vector<YAML::Node> list = r.list("throughput");
  if (list.empty()) r.fail("throughput", "expected a non-empty list of measured throughputs");
  for (std::size_t i = 0; i < list.size(); ++i) {
    io::MapReader item = io::MapReader::item_map(r, "throughput", i, list[i]);
    ThroughputPoint p = read_point(item);
    for (const ThroughputPoint& q : d.throughput_) {
      if (q.model == p.model && q.precision == p.precision && q.batch == p.batch) {
        item.fail_here("duplicate point for " + p.model + " " +
                       std::string(precision_name(p.precision)) + " batch " +
                       std::to_string(p.batch) + " (first at line " + std::to_string(q.line) + ")");
      }
    }
    d.throughput_.push_back(std::move(p));
  }
  r.finish();
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
