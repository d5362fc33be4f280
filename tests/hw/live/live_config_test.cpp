// The adaptsim-live configuration and result files, and the per-rank prefixes of its launcher.

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <numeric>

#include "hw/live/live_config.h"
#include "hw/live/rank_launcher.h"
#include "sim/core/error.h"
#include "sim/runtime/system_config.h"
#include "sim/train/device_profile.h"
#include "tests/hw/live/live_test_support.h"
#include "tests/hw/tcp/tcp_test_support.h"

using namespace adaptsim;
using namespace adaptsim::live;

namespace {

const std::filesystem::path kRoot = ADAPTSIM_SOURCE_DIR;

LiveRunSpec parse(const std::string& text) {
  return parse_live_run_spec(text, "cfg.json", kRoot / "scenarios");
}

}  // namespace

TEST_CASE("config: an inline model with explicit compute, every option") {
  const LiveRunSpec s = parse(R"({
    "model": {"name": "toy", "sample_unit": "img", "layers": [
      {"name": "fc", "backward_flops": 3, "tensors": [{"name": "fc.bias", "elements": 10},
                                                       {"name": "fc.weight", "elements": 1000}]},
      {"name": "relu"},
      {"name": "conv", "backward_flops": 1, "tensors": [{"name": "conv.weight", "elements": 500}]}]},
    "batch_per_gpu": 8,
    "compute": {"forward": "2ms", "backward": "8ms", "optimizer": "1ms"},
    "compute_scale": 0.5,
    "step_time_cv": "10%",
    "system": {"kind": "kungfu", "label": "kf", "strategy": "STAR", "chunk_size": "256KiB"},
    "warmup_steps": 2, "steps": 3, "seed": 7, "timeout": "5s", "verify": false,
    "compute_mode": "spin"})");
  CHECK(s.model.name == "toy");
  CHECK(s.model.layers.size() == 3);
  CHECK(s.model.backward_order.size() == 3);
  CHECK(s.model.layers[2].first_tensor == 2);
  CHECK(s.model.layers[1].tensor_count == 0);
  const LiveConfig& c = s.live;
  CHECK(c.batch_per_gpu == 8);
  // Scaled by 0.5; backward 4 ms split 3:0:1 by backward FLOPs.
  const train::ComputeProfile p = c.compute(8);
  CHECK(p.forward_s == doctest::Approx(0.001));
  CHECK(p.optimizer_s == doctest::Approx(0.0005));
  REQUIRE(p.backward_layer_s.size() == 3);
  CHECK(p.backward_layer_s[0] == doctest::Approx(0.003));
  CHECK(p.backward_layer_s[1] == 0);
  CHECK(p.backward_layer_s[2] == doctest::Approx(0.001));
  // A policy's batch 16 doubles forward and backward; the update is per parameter.
  const train::ComputeProfile q = c.compute(16);
  CHECK(q.forward_s == doctest::Approx(0.002));
  CHECK(q.backward_layer_s[0] == doctest::Approx(0.006));
  CHECK(q.optimizer_s == doctest::Approx(0.0005));
  CHECK(c.step_time_cv == doctest::Approx(0.1));
  CHECK(c.system.kind == runtime::SystemKind::kKungFu);
  CHECK(c.system.label == "kf");
  CHECK(c.system.strategy == coll::StrategyKind::kStar);
  CHECK(c.system.chunk_bytes == 256 << 10);
  CHECK(c.warmup_steps == 2);
  CHECK(c.measured_steps == 3);
  CHECK(c.seed == 7);
  CHECK(c.timeout_ns == 5 * kNsPerSecond);
  CHECK(!c.verify);
  CHECK(c.compute_mode == hw::CpuComputeMode::kSpin);
}

TEST_CASE("config: a zoo model with a device profile uses train::compute_profile, scaled") {
  const LiveRunSpec s = parse(R"({"model": "resnet50", "batch_per_gpu": 32,
    "device": "../traces/devices/k80-half.yaml", "compute_scale": 0.1,
    "system": {"kind": "horovod", "cycle_time": "5ms", "fusion_threshold": "64MiB"}})");
  const train::DeviceProfile device =
      train::load_device_profile(kRoot / "traces/devices/k80-half.yaml");
  train::ComputeOptions o;
  o.batch_per_gpu = 32;
  o.precision = device.default_precision();
  const train::ComputeProfile expected = train::compute_profile(s.model, device, o);
  CHECK(s.live.compute(32).total_s() == doctest::Approx(0.1 * expected.total_s()));
  CHECK(s.live.compute(32).backward_layer_s.size() == s.model.layers.size());
  // Another batch: the device profile's own step time at that batch.
  o.batch_per_gpu = 64;
  CHECK(s.live.compute(64).total_s() ==
        doctest::Approx(0.1 * train::compute_profile(s.model, device, o).total_s()));
  CHECK(s.live.step_time_cv == doctest::Approx(device.step_time_cv().value));
  CHECK(s.live.system.kind == runtime::SystemKind::kHorovod);
  CHECK(s.live.system.cycle_time_ns == 5 * kNsPerMs);
  CHECK(s.model.backward_order.size() == 161);  // ResNet-50's parameter tensors
}

TEST_CASE("config: a Horovod system's MPI model reaches the live ranks as the scenario wrote it") {
  runtime::SystemConfig c;
  c.kind = runtime::SystemKind::kHorovod;
  c.label = "hvd";
  c.mpi.version = "4.1.4";
  c.mpi.rules = coll::OmpiRules::k41;
  c.mpi.forced = coll::OmpiAllreduce::kSegmentedRing;
  c.mpi.forced_segment_bytes = 1 << 20;
  c.mpi.rendezvous = false;
  c.mpi.eager_limit_bytes = 4096;
  const LiveRunSpec s = parse(R"({"model": "resnet50", "batch_per_gpu": 32,
    "device": "../traces/devices/k80-half.yaml", "system": )" +
                              runtime::system_yaml(c) + "}");
  const coll::OmpiOptions& m = s.live.system.mpi;
  CHECK(m.version == "4.1.4");
  CHECK(m.rules == coll::OmpiRules::k41);
  CHECK(m.forced == coll::OmpiAllreduce::kSegmentedRing);
  CHECK(m.forced_segment_bytes == 1 << 20);
  CHECK(!m.rendezvous);
  CHECK(m.eager_limit_bytes == 4096);
  // The defaults: Open MPI 4.0.0's fixed decision, rendezvous above 64 KiB.
  c.mpi = {};
  const LiveRunSpec d = parse(R"({"model": "resnet50", "batch_per_gpu": 32,
    "device": "../traces/devices/k80-half.yaml", "system": )" +
                              runtime::system_yaml(c) + "}");
  CHECK(d.live.system.mpi.version == "4.0.0");
  CHECK(!d.live.system.mpi.forced);
  CHECK(d.live.system.mpi.rendezvous);
  CHECK(d.live.system.mpi.eager_limit_bytes == 65536);
  CHECK(!d.live.system.mpi_library);
  // live: library travels too (the ranks then reduce through the MPI library they run under).
  c.mpi_library = true;
  const LiveRunSpec l = parse(R"({"model": "resnet50", "batch_per_gpu": 32,
    "device": "../traces/devices/k80-half.yaml", "system": )" +
                              runtime::system_yaml(c) + "}");
  CHECK(l.live.system.mpi_library);
  CHECK(l.live.system.mpi.version == "4.0.0");
}

TEST_CASE("config: bad input names the file and the key") {
  struct Case {
    std::string text;
    std::string expect;
  };
  const std::string tail = R"("compute": {"forward": "1ms", "backward": "1ms"})";
  const std::vector<Case> cases = {
      {"{", "cfg.json:"},
      {R"({"model": "resnet51", )" + tail + R"(, "system": {"kind": "ideal"}})",
       "key 'model': unknown model \"resnet51\""},
      {R"({"model": "resnet50", )" + tail + R"(, "system": {"kind": "nccl"}})",
       "cfg.json:1: key 'system.kind': 'nccl' needs GPUs and NCCL"},
      {R"({"model": "resnet50", )" + tail +
           R"(, "system": {"kind": "kungfu", "strategy": "FAST"}})",
       "key 'system.strategy': unknown strategy \"FAST\""},
      {R"({"model": "resnet50", )" + tail + R"(, "system": {"kind": "ideal"}, "stpes": 3})",
       "key 'stpes'"},
      {R"({"model": "resnet50", )" + tail +
           R"(, "system": {"kind": "kungfu"}, "policy": {"name": "switch-strategy", "step": 1,
              "strategy": "STARR"}})",
       "key 'policy.strategy': unknown strategy \"STARR\""},
      {R"({"model": "resnet50", )" + tail +
           R"(, "system": {"kind": "horovod"}, "policy": {"name": "switch-strategy", "step": 1,
              "strategy": "STAR"}})",
       "key 'policy': the policy changes the all-reduce strategy, which system 'horovod' "
       "(horovod) does not have"},
      {R"({"model": "resnet50", )" + tail +
           R"(, "system": {"kind": "horovod"}, "monitors": [{"name": "gradient-variance"}]})",
       "key 'monitors': the gradient-variance monitor all-reduces the squared gradients, which "
       "system 'horovod' (horovod) does not run"},
      {R"({"model": "resnet50", "system": {"kind": "ideal"}})",
       "give exactly one of 'compute' (explicit times) and 'device'"},
      {R"({"model": "resnet50", "compute": {"forward": "1", "backward": "1ms"},
           "system": {"kind": "ideal"}})",
       "key 'compute.forward'"},
      {R"({"model": "resnet50", "compute": {"forward": "1ms", "backward_layers": ["1ms"]},
           "system": {"kind": "ideal"}})",
       "key 'compute.backward_layers': expected a list of"},
      {R"({"model": "resnet50", )" + tail + R"(, "system": {"kind": "ideal"}, "steps": 0})",
       "cfg.json:1: key 'steps': expected an integer between 1 and"},
      {R"({"model": "resnet50", )" + tail + R"(, "system": {"kind": "ideal"}, "timeout": "0s"})",
       "key 'timeout': must be > 0"},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    CHECK_THROWS_WITH_AS(parse(c.text), doctest::Contains(c.expect.c_str()), InputError);
  }
}

TEST_CASE("result JSON: the simulator's quantities, per-rank means and the compute profile") {
  const LiveRunSpec s = parse(R"({"model": "resnet56", "batch_per_gpu": 128,
    "compute": {"forward": "1ms", "backward": "2ms", "optimizer": "1ms"},
    "system": {"kind": "kungfu", "strategy": "MULTI_BINARY_TREE_STAR"}, "steps": 2})");
  LiveResult r;
  r.n_ranks = 2;
  r.training.step_s = {0.01, 0.012};
  r.training.step_mean_s = 0.011;
  r.training.samples_per_s_per_gpu = 128 / 0.011;
  r.training.worker_step_mean_s = {0.0105, 0.0115};
  r.training.steps = {{0, false, 0.02, 128, 2, 4096, "MULTI_BINARY_TREE_STAR", "", {}},
                      {1, true, 0.01, 128, 2, 8192, "MULTI_BINARY_TREE_STAR", "batch 256", {}}};
  r.verified_steps = 3;
  const std::string text = result_json(s, r, 1.5);
  const auto j = nlohmann::json::parse(text);
  CHECK(j.at("mode") == "live");
  CHECK(j.at("model") == "resnet56");
  CHECK(j.at("system") == "kungfu");
  CHECK(j.at("strategy") == "MULTI_BINARY_TREE_STAR");
  CHECK(j.at("n_ranks") == 2);
  for (const char* key : {"wall_s", "training_wall_s", "verified_steps", "gradient_bytes"})
    CHECK_MESSAGE(j.contains(key), key);
  CHECK(j.at("compute_profile_s").at("total").get<double>() == doctest::Approx(0.004));
  CHECK(j.at("wall_s").get<double>() == doctest::Approx(1.5));
  // The training result is the runtime's one JSON form: it reads back to the same value.
  CHECK(runtime::training_result_from_json(j.at("result").dump(), "result") == r.training);
}

TEST_CASE("rank prefixes: a template per rank, or a JSON file of prefixes, addresses and binds") {
  CHECK(expand_prefix_template("ip netns exec ns{rank}", 3) ==
        std::vector<std::string>{"ip", "netns", "exec", "ns3"});
  CHECK(expand_prefix_template("  env R={rank}-{rank} ", 12) ==
        std::vector<std::string>{"env", "R=12-12"});
  CHECK(expand_prefix_template("", 0).empty());

  const testing::TempDir tmp;
  const std::string& dir = tmp.path;
  testing::write_text(dir + "/list.json", R"([["ip", "netns", "exec", "a"], []])");
  auto ranks = load_rank_placements(dir + "/list.json");
  REQUIRE(ranks.size() == 2);
  CHECK(ranks[0].prefix == std::vector<std::string>{"ip", "netns", "exec", "a"});
  CHECK(ranks[1].prefix.empty());
  assign_addresses(ranks, "10.0.0.1:7000,10.0.0.2:7000");
  CHECK(host_list_of(ranks) == "10.0.0.1:7000,10.0.0.2:7000");

  testing::write_text(dir + "/objects.json", R"({"ranks": [
      {"prefix": ["ip", "netns", "exec", "a"], "address": "10.1.0.1:7100", "bind": "0.0.0.0"},
      {"prefix": ["ip", "netns", "exec", "b"]}]})");
  ranks = load_rank_placements(dir + "/objects.json");
  REQUIRE(ranks.size() == 2);
  CHECK(ranks[0].address == "10.1.0.1:7100");
  CHECK(ranks[0].bind == "0.0.0.0");
  assign_addresses(ranks, "");  // rank 1 gets a free port on 127.0.0.1
  CHECK(ranks[1].address.rfind("127.0.0.1:", 0) == 0);

  testing::write_text(dir + "/bad.json", R"({"ranks": [{"prefx": ["x"]}]})");
  CHECK_THROWS_WITH_AS(load_rank_placements(dir + "/bad.json"),
                       doctest::Contains("rank 0: unknown key 'prefx'"), InputError);
  ranks = load_rank_placements(dir + "/list.json");
  CHECK_THROWS_WITH_AS(assign_addresses(ranks, "10.0.0.1:1"),
                       doctest::Contains("--hosts lists 1 addresses for 2 ranks"), InputError);
}

TEST_CASE("the shipped example configurations are valid") {
  for (const char* name : {"resnet50-kungfu-mbts.json", "resnet50-horovod.json"}) {
    INFO(name);
    const LiveRunSpec s = load_live_run_spec(kRoot / "hw/live/examples" / name);
    CHECK(s.model.name == "resnet50");
    CHECK(s.live.compute(s.live.batch_per_gpu).total_s() > 0);
  }
}
