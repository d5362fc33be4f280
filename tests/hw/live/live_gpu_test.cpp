// compute_mode gpu on a real GPU: two ranks (threads of this process, each with its own runtime
// over loopback) emulate their compute with hw/cuda's kernel, one launch per layer, and the
// measured compute per step is the configured one. Run by tests/hw/cuda/gpu_test_main.cpp, which
// skips (exit code 77) without a CUDA device.

#include <doctest/doctest.h>

#include <string>

#include "hw/cuda/cuda_device.h"
#include "hw/live/compute_emulator.h"
#include "hw/live/live_training.h"
#include "tests/hw/live/live_test_support.h"

using namespace adaptsim;
using namespace adaptsim::live;
using namespace adaptsim::live::testing;

namespace {

// 20 ms forward, 40 ms backward over the synthetic model's five layers, 5 ms update: long enough
// that a launch and an event's wake-up (tens of microseconds) are small against it.
constexpr double kForwardS = 0.020, kBackwardS = 0.040, kOptimizerS = 0.005;
constexpr double kTotalS = kForwardS + kBackwardS + kOptimizerS;

// The kernel spins for seconds x the peak SM clock (hw/cuda/cuda_kernels.h): at most a few percent
// short where the SMs boost above the reported rate; longer by peak/actual where they run below it
// (H100 SXM at its 1755 MHz base clock against 1980 MHz peak: +13%), plus per step one launch and
// two event wake-ups.
constexpr double kLow = 0.95, kHigh = 1.20;
constexpr double kSlackS = 0.001;

LiveConfig gpu_config(runtime::SystemKind kind) {
  LiveConfig c = small_config(kind);
  c.compute = fixed_compute(split_compute(synthetic_model(), kForwardS, kBackwardS, kOptimizerS),
                            c.batch_per_gpu);
  c.compute_device = ComputeDevice::kGpu;
  c.warmup_steps = 1;
  c.measured_steps = 3;
  return c;
}

std::string errors_of(const ClusterRun& run) {
  std::string s;
  for (std::size_t r = 0; r < run.errors.size(); ++r) {
    if (!run.errors[r].empty()) s += "rank " + std::to_string(r) + ": " + run.errors[r] + "\n";
  }
  return s;
}

}  // namespace

TEST_CASE("compute_mode gpu, ideal system on 2 ranks: every step lasts the configured compute") {
  // Without communication a step is its compute: forward + backward + update = 65 ms.
  const LiveConfig c = gpu_config(runtime::SystemKind::kIdeal);
  const ClusterRun run = run_cluster(2, {0, 1}, synthetic_model(), c);
  INFO(errors_of(run));
  for (const std::string& e : run.errors)
    REQUIRE(e.empty());
  const LiveResult& r = run.results[0];
  MESSAGE("compute on " << r.compute_device << ": " << r.training.compute_s * 1e3 << " ms per step"
                        << " (configured " << kTotalS * 1e3 << " ms)");
  CHECK(r.compute_device.rfind("gpu ", 0) == 0);
  REQUIRE(r.training.step_s.size() == static_cast<std::size_t>(c.measured_steps));
  for (double step_s : r.training.step_s) {
    CHECK(step_s >= kLow * kTotalS);
    CHECK(step_s <= kHigh * kTotalS + kSlackS);
  }
  CHECK(r.training.compute_s >= kLow * kTotalS);
  CHECK(r.training.compute_s <= kHigh * kTotalS + kSlackS);
}

TEST_CASE("compute_mode gpu, kungfu on 2 ranks: gradients after each layer's kernel, exact") {
  // Gradients go to the system when their layer's kernel has completed; the step's compute
  // (its duration less the exposed communication after backward) is the configured 65 ms.
  const LiveConfig c = gpu_config(runtime::SystemKind::kKungFu);
  const ClusterRun run = run_cluster(2, {0, 0}, synthetic_model(), c);
  INFO(errors_of(run));
  for (const std::string& e : run.errors)
    REQUIRE(e.empty());
  const LiveResult& r = run.results[0];
  MESSAGE("compute on " << r.compute_device << ": " << r.training.compute_s * 1e3
                        << " ms per step, exposed link " << r.training.exposed_link_s * 1e3
                        << " ms");
  CHECK(r.compute_device.rfind("gpu ", 0) == 0);
  CHECK(r.verified_steps == c.warmup_steps + c.measured_steps);
  CHECK(r.training.compute_s >= kLow * kTotalS);
  CHECK(r.training.compute_s <= kHigh * kTotalS + kSlackS);
  CHECK(r.training.compute_s + r.training.exposed_link_s + r.training.exposed_wait_s ==
        doctest::Approx(r.training.step_mean_s));
}

TEST_CASE(
    "compute_mode auto: the GPUs while each rank has its own, the CPU (said) once they share") {
  const int gpus = hw::probe_cuda().device_count;
  REQUIRE(gpus > 0);
  std::string note;
  auto own = make_compute_emulator({.device = ComputeDevice::kAuto, .host_ranks = gpus}, &note);
  CHECK(note.empty());
  CHECK(own->description() != "sleep");
  auto shared =
      make_compute_emulator({.device = ComputeDevice::kAuto, .host_ranks = gpus + 1}, &note);
  CHECK(shared->description() == "sleep");
  CHECK_MESSAGE(
      note.find(std::to_string(gpus + 1) + " ranks on this host would share") != std::string::npos,
      note);
  // Asked for explicitly, the GPU is used even when shared.
  auto forced =
      make_compute_emulator({.device = ComputeDevice::kGpu, .host_ranks = gpus + 1}, &note);
  CHECK(note.empty());
  CHECK(forced->description() != "sleep");
}
