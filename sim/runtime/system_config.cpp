#include "sim/runtime/system_config.h"

#include <yaml-cpp/yaml.h>

namespace adaptsim::runtime {

namespace {
// Horovod's cycle must leave time to pass: a zero cycle is a busy loop that a discrete-event
// model cannot advance, and a cycle far below one message's round trip (tens of us on the
// fastest networks modelled) only multiplies events. Horovod's own knob (HOROVOD_CYCLE_TIME) is
// given in ms; 10 us is well below any setting it documents (5 ms default in 0.16).
constexpr TimeNs kMinCycleNs = 10 * kNsPerUs;
}  // namespace

SystemConfig read_system(io::MapReader& s) {
  SystemConfig c;
  std::vector<std::string> kinds;
  for (SystemKind k : all_system_kinds())
    kinds.emplace_back(system_kind_name(k));
  c.kind = *parse_system_kind(s.choice("kind", kinds));
  c.label = s.string_or("label", std::string(system_kind_name(c.kind)));
  if (c.label.empty()) s.fail("label", "expected a non-empty label");
  if (s.has("strategy")) {
    const std::string name = s.string("strategy");
    auto k = coll::parse_strategy(name);
    if (!k) {
      s.fail("strategy", "unknown strategy \"" + name + "\"; `simctl list strategies` shows all");
    }
    c.strategy = *k;
  } else {
    s.accept("strategy");
  }
  c.chunk_bytes = s.size_bytes_or("chunk_size", c.chunk_bytes);
  if (c.chunk_bytes == 0) s.fail("chunk_size", "must be > 0");
  c.cycle_time_ns = s.duration_ns_or("cycle_time", c.cycle_time_ns);
  if (c.cycle_time_ns < kMinCycleNs) {
    s.fail("cycle_time", "must be at least 10us (a shorter cycle is a busy loop, not Horovod's "
                         "timer; Horovod's default is 5ms)");
  }
  c.fusion_bytes = s.size_bytes_or("fusion_threshold", c.fusion_bytes);
  c.nccl_poll_ns = s.duration_ns_or("poll_interval", c.nccl_poll_ns);
  if (c.nccl_poll_ns < 0) s.fail("poll_interval", "must be >= 0");
  s.finish();
  return c;
}

std::string system_yaml(const SystemConfig& c) {
  YAML::Emitter out;
  out.SetMapFormat(YAML::Flow);
  out << YAML::BeginMap;
  out << YAML::Key << "kind" << YAML::Value << std::string(system_kind_name(c.kind));
  out << YAML::Key << "label" << YAML::Value << YAML::DoubleQuoted << c.label;
  out << YAML::Key << "strategy" << YAML::Value << std::string(coll::strategy_name(c.strategy));
  out << YAML::Key << "chunk_size" << YAML::Value << std::to_string(c.chunk_bytes) + "B";
  out << YAML::Key << "cycle_time" << YAML::Value << std::to_string(c.cycle_time_ns) + "ns";
  out << YAML::Key << "fusion_threshold" << YAML::Value << std::to_string(c.fusion_bytes) + "B";
  out << YAML::Key << "poll_interval" << YAML::Value << std::to_string(c.nccl_poll_ns) + "ns";
  out << YAML::EndMap;
  return out.c_str();
}

}  // namespace adaptsim::runtime
