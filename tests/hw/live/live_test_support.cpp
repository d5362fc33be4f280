#include "tests/hw/live/live_test_support.h"

#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>
#include <stdexcept>

#include "tests/hw/tcp/tcp_test_support.h"

namespace adaptsim::live::testing {

train::Model synthetic_model() {
  train::Model m;
  m.name = "synthetic";
  m.sample_unit = "sample";
  struct LayerSpec {
    const char* name;
    double backward_flops;
    std::vector<std::pair<const char*, std::uint64_t>> tensors;
  };
  const std::vector<LayerSpec> layers = {
      {"fc", 2e6, {{"fc.bias", 10}, {"fc.weight", 100'000}}},
      {"block.conv2", 6e6, {{"block.conv2.weight", 300'000}}},  // 1.2 MB: two chunks
      {"block.act", 0, {}},
      {"block.bn1", 0.5e6, {{"block.bn1.bias", 256}, {"block.bn1.weight", 256}}},
      {"block.conv1", 4e6, {{"block.conv1.bias", 64}, {"block.conv1.weight", 150'000}}},
  };
  for (std::size_t l = 0; l < layers.size(); ++l) {
    train::Layer layer;
    layer.name = layers[l].name;
    layer.backward_flops = layers[l].backward_flops;
    layer.forward_flops = layers[l].backward_flops / 2;
    layer.first_tensor = m.backward_order.size();
    for (const auto& [name, elements] : layers[l].tensors) {
      m.backward_order.push_back({name, elements, l});
    }
    layer.tensor_count = m.backward_order.size() - layer.first_tensor;
    m.layers.push_back(layer);
  }
  return m;
}

train::ComputeProfile split_compute(const train::Model& model, double forward_s, double backward_s,
                                    double optimizer_s) {
  train::ComputeProfile p;
  p.forward_s = forward_s;
  p.optimizer_s = optimizer_s;
  double flops = 0;
  for (const train::Layer& l : model.layers)
    flops += l.backward_flops;
  for (const train::Layer& l : model.layers) {
    p.backward_layer_s.push_back(backward_s * l.backward_flops / flops);
  }
  return p;
}

std::function<train::ComputeProfile(int)> fixed_compute(const train::ComputeProfile& p, int batch) {
  return [p, batch](int b) { return train::scale_compute(p, batch, b); };
}

LiveConfig small_config(runtime::SystemKind kind) {
  LiveConfig c;
  c.batch_per_gpu = 16;
  c.compute = fixed_compute(split_compute(synthetic_model(), 0.004, 0.008, 0.001), 16);
  c.warmup_steps = 1;
  c.measured_steps = 4;
  c.system.kind = kind;
  c.system.label = std::string(runtime::system_kind_name(kind));
  c.system.cycle_time_ns = 2 * kNsPerMs;
  c.system.fusion_bytes = 1 << 20;  // several fused groups per step
  c.timeout_ns = 10 * kNsPerSecond;
  return c;
}

ClusterRun run_cluster(int n, const std::vector<int>& host_of_rank, const train::Model& model,
                       const LiveConfig& config, int faulty_rank, std::uint64_t fault_after_sends) {
  auto options = [&](int rank) {
    tcp::RuntimeOptions o = tcp::testing::test_options();
    if (rank == faulty_rank) {
      o.transport.fault = {tcp::FaultAction::kDropConnections, fault_after_sends};
    }
    return o;
  };
  tcp::testing::ThreadCluster cluster(n, host_of_rank, options);
  ClusterRun run;
  run.results.resize(static_cast<std::size_t>(n));
  run.errors = cluster.run_all([&](int r, tcp::Runtime& rt) {
    run.results[static_cast<std::size_t>(r)] = run_live_training(rt, model, config);
  });
  return run;
}

std::string live_tool_path() {
  return ADAPTSIM_LIVE_TOOL;
}

TempDir::TempDir() : path(tcp::testing::make_temp_dir()) {}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path);
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace adaptsim::live::testing
