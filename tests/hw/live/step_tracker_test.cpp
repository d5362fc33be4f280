// The pieces of a live step that need no network: exposed-time accounting, gradient values and
// their check, and the jitter shared with the simulator.

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include "hw/live/gradient_buffers.h"
#include "hw/live/live_training.h"
#include "hw/live/step_tracker.h"
#include "hw/tcp/event_loop.h"
#include "sim/core/error.h"
#include "sim/core/rng.h"
#include "tests/hw/live/live_test_support.h"

using namespace adaptsim;
using namespace adaptsim::live;

namespace {

void sleep_ms(int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

double ms(TimeNs ns) {
  return to_seconds(ns) * 1e3;
}

}  // namespace

TEST_CASE("tracker: exposed time after backward splits into link (in flight) and wait (idle)") {
  StepTracker tracker(2);
  tracker.begin_step();
  tracker.activity(+1);  // tensor 0 in flight before backward ends: not exposed yet
  sleep_ms(10);
  tracker.backward_ended();
  sleep_ms(20);  // link: tensor 0 still in flight
  tracker.activity(-1);
  tracker.gradient_reduced(0);
  sleep_ms(30);  // wait: nothing in flight, tensor 1 not negotiated yet
  tracker.activity(+1);
  sleep_ms(10);  // link again
  tracker.activity(-1);
  tracker.gradient_reduced(1);
  const TimeNs update = tracker.wait_update_start(tcp::EventLoop::now_ns() + kNsPerSecond);
  CHECK(update > 0);
  const StepExposure e = tracker.exposure();
  // Expected: link = 20 + 10 = 30 ms, wait = 30 ms; sleeps overshoot, never undershoot.
  CHECK(ms(e.link_ns) >= 30.0);
  CHECK(ms(e.link_ns) < 30.0 + 25.0);
  CHECK(ms(e.wait_ns) >= 30.0);
  CHECK(ms(e.wait_ns) < 30.0 + 25.0);
}

TEST_CASE("tracker: gradients reduced before backward ends leave no exposed time") {
  StepTracker tracker(1);
  tracker.begin_step();
  tracker.gradient_reduced(0);
  sleep_ms(5);
  tracker.backward_ended();
  const TimeNs update = tracker.wait_update_start(tcp::EventLoop::now_ns() + kNsPerSecond);
  CHECK(update <= tcp::EventLoop::now_ns());
  CHECK(tracker.exposure().link_ns == 0);
  CHECK(tracker.exposure().wait_ns == 0);
  // A second report of the same gradient in one step is a bug, not a silent double count.
  CHECK_THROWS_AS(tracker.gradient_reduced(0), std::logic_error);
}

TEST_CASE(
    "tracker: a reported failure wakes the waiter with its reason, the deadline names the "
    "missing gradients") {
  StepTracker tracker(3);
  tracker.begin_step();
  tracker.backward_ended();
  tracker.gradient_reduced(1);
  CHECK_THROWS_WITH_AS(tracker.wait_update_start(tcp::EventLoop::now_ns() + 20 * kNsPerMs),
                       "2 of 3 gradients were not reduced in time (tensors 0, 2)", RuntimeFailure);
  std::thread failer([&] {
    sleep_ms(10);
    tracker.fail("rank 1: lost the connection to rank 2");
  });
  CHECK_THROWS_WITH_AS(tracker.wait_update_start(tcp::EventLoop::now_ns() + 10 * kNsPerSecond),
                       "rank 1: lost the connection to rank 2", RuntimeFailure);
  failer.join();
}

TEST_CASE(
    "gradient buffers: exact sums pass and are poisoned, a wrong element names tensor and "
    "rank") {
  const train::Model model = testing::synthetic_model();
  const int n = 3;
  GradientBuffers b(model, 1, n);
  CHECK(b.tensors() == model.backward_order.size());
  CHECK(b.bytes() == model.totals().bytes_fp32());
  // Values are small positive integers that differ between ranks.
  CHECK(GradientBuffers::value(0, 0, 0) != GradientBuffers::value(1, 0, 0));
  CHECK(b.send(2)[5] == GradientBuffers::value(1, 2, 5));
  // Stand in for the all-reduce: recv = sum over ranks.
  auto fill_sums = [&] {
    for (std::size_t t = 0; t < b.tensors(); ++t) {
      for (std::size_t i = 0; i < b.elements(t); ++i) {
        float sum = 0;
        for (int r = 0; r < n; ++r)
          sum += GradientBuffers::value(r, t, i);
        b.recv(t)[i] = sum;
      }
    }
  };
  fill_sums();
  CHECK_NOTHROW(b.verify_and_poison(0));
  CHECK(std::isnan(b.recv(0)[0]));  // poisoned: a step that writes nothing cannot pass
  CHECK_THROWS_AS(b.verify_and_poison(1), RuntimeFailure);
  fill_sums();
  b.recv(3)[17] += 1;
  try {
    b.verify_and_poison(2);
    FAIL("a wrong element passed");
  } catch (const RuntimeFailure& e) {
    const std::string what = e.what();
    CHECK(what.find("rank 1: step 2: gradient '" + model.backward_order[3].name +
                    "' (tensor 3) element 17") != std::string::npos);
  }
}

TEST_CASE("jitter: the simulator's per-(worker, step) derivation, N(1, cv) clamped at 0.5") {
  for (int w : {0, 3}) {
    for (int s : {0, 7}) {
      Rng rng = Rng::derive(42, static_cast<std::uint64_t>(w) * 1'000'003ULL + s);
      const double expected = std::max(0.5, rng.normal(1.0, 0.3));
      CHECK(step_jitter(42, 0.3, w, s) == expected);
    }
  }
  CHECK(step_jitter(42, 0.0, 1, 1) == 1.0);
}
