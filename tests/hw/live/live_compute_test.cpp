// Where a live rank's compute runs (hw/live/compute_emulator.h): the CPU emulator keeps the step's
// absolute deadlines, compute_mode gpu without a GPU fails every rank naming the cause, and auto
// falls back to sleep and says so. The GPU itself is live_gpu_test.cpp's (skipped without one).

#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "hw/live/compute_emulator.h"
#include "hw/live/live_config.h"
#include "hw/live/live_training.h"
#include "hw/tcp/event_loop.h"
#include "sim/core/error.h"
#include "tests/hw/live/live_test_support.h"

using namespace adaptsim;
using namespace adaptsim::live;
using namespace adaptsim::live::testing;

namespace {

// Whether this process can use a GPU: auto reports a fallback exactly when it cannot.
bool gpu_visible() {
  std::string note;
  const auto emulator = make_compute_emulator({.device = ComputeDevice::kAuto}, &note);
  return note.empty();
}

LiveRunSpec parse(const std::string& compute_mode) {
  return parse_live_run_spec(R"({"model": {"name": "m", "layers": [{"name": "fc",
      "tensors": [{"name": "fc.w", "elements": 10}]}]},
      "compute": {"forward": "1ms", "backward": "1ms", "optimizer": "1ms"},
      "system": {"kind": "ideal"}, "compute_mode": ")" +
                                 compute_mode + R"("})",
                             "cfg.json", ".");
}

}  // namespace

TEST_CASE("compute_mode: sleep (default), spin, gpu and auto: anything else names the choices") {
  CHECK(parse("sleep").live.compute_device == ComputeDevice::kCpu);
  CHECK(parse("sleep").live.compute_mode == hw::CpuComputeMode::kSleep);
  CHECK(parse("spin").live.compute_device == ComputeDevice::kCpu);
  CHECK(parse("spin").live.compute_mode == hw::CpuComputeMode::kSpin);
  // auto's CPU fallback sleeps.
  CHECK(parse("auto").live.compute_device == ComputeDevice::kAuto);
  CHECK(parse("auto").live.compute_mode == hw::CpuComputeMode::kSleep);
  if (gpu_compute_available_in_build()) {
    CHECK(parse("gpu").live.compute_device == ComputeDevice::kGpu);
  } else {
    // Refused with the file and key before any worker starts (exit code 2 in the tool).
    CHECK_THROWS_WITH_AS(parse("gpu"),
                         doctest::Contains("cfg.json:4: key 'compute_mode': gpu needs an "
                                           "adaptsim-live built with CUDA"),
                         InputError);
  }
  CHECK_THROWS_WITH_AS(
      parse("cuda"),
      doctest::Contains("cfg.json:4: key 'compute_mode': expected one of sleep, spin, gpu, "
                        "auto, got \"cuda\""),
      InputError);
}

TEST_CASE("CPU emulator: each phase ends at its absolute deadline, the update at its own") {
  // Lower bounds only (a loaded machine may oversleep, never undersleep): phases of 5, 5 and 10 ms
  // from the start end no sooner than their deadlines.
  const auto emulator = make_compute_emulator({.device = ComputeDevice::kCpu}, nullptr);
  CHECK(emulator->description() == "sleep");
  const TimeNs start = tcp::EventLoop::now_ns();
  const std::vector<TimeNs> ends = {start + 5 * kNsPerMs, start + 10 * kNsPerMs,
                                    start + 20 * kNsPerMs};
  emulator->begin_step(start, ends);
  emulator->wait_phase(0);
  CHECK(tcp::EventLoop::now_ns() >= ends[0]);
  emulator->wait_phase(2);
  const TimeNs after = tcp::EventLoop::now_ns();
  CHECK(after >= ends[2]);
  emulator->run_until(after + 3 * kNsPerMs);
  CHECK(tcp::EventLoop::now_ns() >= after + 3 * kNsPerMs);
  // Absolute, not per call: a caller already past a 200 ms phase's deadline gets it back at once,
  // where waiting the phase's length would take 200 ms (a margin no scheduler delay reaches).
  const TimeNs start2 = tcp::EventLoop::now_ns();
  emulator->begin_step(start2,
                       std::vector<TimeNs>{start2 + 10 * kNsPerMs, start2 + 210 * kNsPerMs});
  std::this_thread::sleep_until(std::chrono::steady_clock::now() + std::chrono::milliseconds(250));
  const TimeNs called = tcp::EventLoop::now_ns();
  emulator->wait_phase(1);
  CHECK(tcp::EventLoop::now_ns() - called < 100 * kNsPerMs);
  CHECK(make_compute_emulator(
            {.device = ComputeDevice::kCpu, .cpu_mode = hw::CpuComputeMode::kSpin}, nullptr)
            ->description() == "spin");
}

TEST_CASE("compute_mode gpu without a GPU: every rank fails before any step, naming the cause") {
  if (gpu_visible()) {
    MESSAGE("a GPU is visible: live_gpu_test covers compute_mode gpu here");
    return;
  }
  const train::Model model = synthetic_model();
  LiveConfig c = small_config(runtime::SystemKind::kKungFu);
  c.compute_device = ComputeDevice::kGpu;
  const ClusterRun run = run_cluster(2, {0, 1}, model, c);
  for (int r = 0; r < 2; ++r) {
    const std::string& e = run.errors[static_cast<std::size_t>(r)];
    INFO("rank " << r << ": " << e);
    // Each rank names itself and the cause: no CUDA in the build, or no visible device.
    CHECK(e.find("compute_mode gpu: ") != std::string::npos);
    CHECK((e.find("no CUDA device is visible") != std::string::npos ||
           e.find("this build has no CUDA") != std::string::npos));
    CHECK(run.results[static_cast<std::size_t>(r)].training.step_s.empty());
  }
  CHECK_THROWS_WITH_AS(make_compute_emulator({.device = ComputeDevice::kGpu}, nullptr),
                       doctest::Contains("use compute_mode sleep, spin or auto"), RuntimeFailure);
}

TEST_CASE("compute_mode auto without a GPU: sleeps, says so, and trains as sleep does") {
  if (gpu_visible()) {
    MESSAGE("a GPU is visible: auto runs on it (live_gpu_test)");
    return;
  }
  std::string note;
  const auto emulator = make_compute_emulator({.device = ComputeDevice::kAuto}, &note);
  CHECK(emulator->description() == "sleep");
  CHECK(note.find("compute_mode auto: ") == 0);
  CHECK(note.find("emulating compute on the CPU (sleep)") != std::string::npos);

  const train::Model model = synthetic_model();
  LiveConfig c = small_config(runtime::SystemKind::kKungFu);
  c.compute_device = ComputeDevice::kAuto;
  const ClusterRun run = run_cluster(2, {0, 1}, model, c);
  for (const std::string& e : run.errors)
    REQUIRE(e.empty());
  const LiveResult& r = run.results[0];
  CHECK(r.compute_device == "sleep");
  CHECK(r.verified_steps == c.warmup_steps + c.measured_steps);
  // Sleeps only overshoot: compute is at least the configured 4 + 8 + 1 ms.
  CHECK(r.training.compute_s >= c.compute(c.batch_per_gpu).total_s() * (1 - 1e-9));
}
