#include "sim/runtime/system_config.h"

#include <yaml-cpp/yaml.h>

#include "sim/core/units.h"

namespace adaptsim::runtime {

namespace {
// Horovod's cycle: a zero cycle is a busy loop (the background thread negotiates again at once,
// without sleeping), which a discrete-event model cannot advance past, and each cycle is a round
// of negotiation events, so a run's events grow as step time / cycle time. The minimum is a tenth
// of the shortest cycle Horovod's autotuner tries: 1 ms (horovod/common/parameter_manager.cc
// searches HOROVOD_CYCLE_TIME over {1, 2.5, 5, 7.5, 10, 20, 30, 50} ms; 0.16 defaults to 5 ms).
constexpr TimeNs kMinCycleNs = 100 * kNsPerUs;
}  // namespace

// A horovod system's `mpi:` map, or an entry of an all-reduce workload's `mpi:` list:
//   {version: 4.0.0, algorithm: auto, segment_size: 0B, rendezvous: true, eager_limit: 64KiB}
coll::OmpiOptions read_mpi(io::MapReader& m) {
  coll::OmpiOptions o;
  o.version = m.string_or("version", o.version);
  const auto rules = coll::ompi_rules_for_version(o.version);
  if (!rules) {
    m.fail("version", "expected an Open MPI release from 2.0 to 4.1 (\"4.0.0\", \"4.1\"), got \"" +
                          o.version + "\"");
  }
  o.rules = *rules;
  std::vector<std::string> algorithms = {"auto"};
  for (int i = 1; i < coll::kOmpiAllreduceCount; ++i)
    algorithms.emplace_back(coll::ompi_allreduce_name(i));
  const std::string a = m.choice_or("algorithm", algorithms, "auto");
  if (a != "auto") o.forced = coll::parse_ompi_allreduce(a);
  o.forced_segment_bytes = m.size_bytes_or("segment_size", o.forced_segment_bytes);
  if (o.forced_segment_bytes > 0 && o.forced != coll::OmpiAllreduce::kSegmentedRing) {
    m.fail("segment_size", "applies to algorithm: segmented_ring only");
  }
  o.rendezvous = m.boolean_or("rendezvous", o.rendezvous);
  o.eager_limit_bytes = m.size_bytes_or("eager_limit", o.eager_limit_bytes);
  if (o.eager_limit_bytes == 0) m.fail("eager_limit", "must be > 0");
  o.match_in_receive = m.boolean_or("match_in_receive", o.match_in_receive);
  o.negotiation_trees = m.boolean_or("negotiation_trees", o.negotiation_trees);
  m.finish();
  return o;
}

train::NcclNet read_nccl_net(io::MapReader& m) {
  train::NcclNet net;
  const std::string t = m.choice_or("transport", {"ib", "socket"}, "ib");
  net.transport = t == "socket" ? train::NcclNetTransport::kSocket : train::NcclNetTransport::kIb;
  net.socket_interfaces =
      static_cast<int>(m.integer_or("interfaces", net.socket_interfaces, 1, 64));
  if (m.has("interfaces") && net.transport != train::NcclNetTransport::kSocket) {
    m.fail("interfaces", "applies to transport: socket only");
  }
  m.finish();
  return net;
}

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
    s.fail("cycle_time",
           "expected at least 100 us (a tenth of the shortest cycle Horovod's autotuner tries; "
           "a zero cycle is a busy loop), got " +
               format_duration(c.cycle_time_ns));
  }
  c.fusion_bytes = s.size_bytes_or("fusion_threshold", c.fusion_bytes);
  c.nccl_poll_ns = s.duration_ns_or("poll_interval", c.nccl_poll_ns);
  if (c.nccl_poll_ns < 0) s.fail("poll_interval", "must be >= 0");
  if (auto m = s.optional_map("nccl_net")) {
    if (!has_flat_nccl(c.kind)) {
      s.fail("nccl_net",
             "applies to kinds nccl and horovod-nccl only (hierarchical's NCCL stays inside a "
             "server)");
    }
    c.nccl_net = read_nccl_net(*m);
  }
  if (auto m = s.optional_map("mpi")) {
    if (c.kind != SystemKind::kHorovod) s.fail("mpi", "applies to kind: horovod only");
    c.mpi_library = m->choice_or("live", {"model", "library"}, "model") == "library";
    c.mpi = read_mpi(*m);
    if (c.mpi_library && !c.mpi.rendezvous) {
      m->fail("rendezvous",
              "false is a model's ablation: the MPI library (live: library) always uses ob1's "
              "rendezvous above its eager limit");
    }
    if (c.mpi_library && !c.mpi.match_in_receive) {
      m->fail("match_in_receive",
              "false is a model's ablation: the MPI library (live: library) matches inside its "
              "receive call");
    }
    if (c.mpi_library && !c.mpi.negotiation_trees) {
      m->fail("negotiation_trees",
              "false is a model's ablation: the MPI library (live: library) runs its own "
              "gather and broadcast");
    }
  }
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
  if (has_flat_nccl(c.kind)) {
    out << YAML::Key << "nccl_net" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "transport" << YAML::Value
        << std::string(train::nccl_net_name(c.nccl_net.transport));
    if (c.nccl_net.transport == train::NcclNetTransport::kSocket) {
      out << YAML::Key << "interfaces" << YAML::Value << c.nccl_net.socket_interfaces;
    }
    out << YAML::EndMap;
  }
  if (c.kind == SystemKind::kHorovod) {
    const coll::OmpiOptions& m = c.mpi;
    out << YAML::Key << "mpi" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "version" << YAML::Value << YAML::DoubleQuoted << m.version;
    out << YAML::Key << "algorithm" << YAML::Value
        << (m.forced ? std::string(coll::ompi_allreduce_name(static_cast<int>(*m.forced)))
                     : std::string("auto"));
    if (m.forced_segment_bytes > 0) {
      out << YAML::Key << "segment_size" << YAML::Value
          << std::to_string(m.forced_segment_bytes) + "B";
    }
    out << YAML::Key << "rendezvous" << YAML::Value << m.rendezvous;
    out << YAML::Key << "eager_limit" << YAML::Value << std::to_string(m.eager_limit_bytes) + "B";
    out << YAML::Key << "match_in_receive" << YAML::Value << m.match_in_receive;
    out << YAML::Key << "negotiation_trees" << YAML::Value << m.negotiation_trees;
    if (c.mpi_library) out << YAML::Key << "live" << YAML::Value << "library";
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
  return out.c_str();
}

}  // namespace adaptsim::runtime
