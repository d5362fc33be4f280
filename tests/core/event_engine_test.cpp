#include "sim/core/event_engine.h"

#include <doctest/doctest.h>

#include "sim/core/error.h"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

using adaptsim::EventEngine;
using adaptsim::TimeNs;

TEST_CASE("events run in time order, ties in insertion order") {
  EventEngine e;
  std::vector<int> order;
  e.schedule_at(20, [&] { order.push_back(3); });
  e.schedule_at(10, [&] { order.push_back(1); });
  e.schedule_at(10, [&] { order.push_back(2); });
  e.schedule_at(20, [&] { order.push_back(4); });
  e.run();
  CHECK(order == std::vector<int>{1, 2, 3, 4});
  CHECK(e.now() == 20);
  CHECK(e.events_run() == 4);
}

TEST_CASE("events scheduled from callbacks at the current time run after those already queued") {
  EventEngine e;
  std::vector<int> order;
  e.schedule_at(5, [&] {
    order.push_back(1);
    e.schedule_after(0, [&] { order.push_back(3); });
  });
  e.schedule_at(5, [&] { order.push_back(2); });
  e.run();
  CHECK(order == std::vector<int>{1, 2, 3});
}

TEST_CASE("cancelled events never run and cancel reports whether it took effect") {
  EventEngine e;
  int ran = 0;
  auto a = e.schedule_at(10, [&] { ran += 1; });
  auto b = e.schedule_at(10, [&] { ran += 10; });
  CHECK(e.pending() == 2);
  CHECK(e.cancel(a));
  CHECK_FALSE(e.cancel(a));  // second cancel: no effect
  CHECK(e.pending() == 1);
  e.run();
  CHECK(ran == 10);
  CHECK_FALSE(e.cancel(b));  // already ran
  CHECK_FALSE(e.cancel(EventEngine::EventId{}));
}

TEST_CASE("a reused slot does not let a stale id cancel the new event") {
  EventEngine e;
  int ran = 0;
  auto a = e.schedule_at(1, [&] { ran += 1; });
  e.cancel(a);
  e.schedule_at(2, [&] { ran += 2; });  // takes a's slot
  CHECK_FALSE(e.cancel(a));
  e.run();
  CHECK(ran == 2);
}

TEST_CASE("scheduling in the past is a logic error") {
  EventEngine e;
  e.schedule_at(10, [] {});
  e.run();
  CHECK_THROWS_AS(e.schedule_at(5, [] {}), std::logic_error);
}

TEST_CASE("run_until stops at the bound and advances the clock") {
  EventEngine e;
  int ran = 0;
  e.schedule_at(10, [&] { ++ran; });
  e.schedule_at(30, [&] { ++ran; });
  e.run_until(20);
  CHECK(ran == 1);
  CHECK(e.now() == 20);
  e.run();
  CHECK(ran == 2);
  CHECK(e.now() == 30);
}

TEST_CASE("stop() from a callback ends run() after that event") {
  EventEngine e;
  int ran = 0;
  e.schedule_at(1, [&] {
    ++ran;
    e.stop();
  });
  e.schedule_at(2, [&] { ++ran; });
  e.run();
  CHECK(ran == 1);
  e.run();
  CHECK(ran == 2);
}

TEST_CASE("time beyond the horizon is TimeOverflow, bad input, never a wrapped time (issue 21)") {
  // seconds_to_ns_ceil(1e30) was an undefined conversion (INT64_MIN on x86): "event scheduled in
  // the past: at -9223372036854775808 ns".
  CHECK_THROWS_AS(adaptsim::seconds_to_ns_ceil(1e30), adaptsim::TimeOverflow);
  CHECK_THROWS_AS(adaptsim::seconds_to_ns_ceil(std::numeric_limits<double>::infinity()),
                  adaptsim::TimeOverflow);
  CHECK_THROWS_AS(adaptsim::seconds_to_ns_ceil(std::nan("")), adaptsim::TimeOverflow);
  CHECK_THROWS_AS(adaptsim::seconds_to_ns_round(-1e30), adaptsim::TimeOverflow);
  // 2^62 ns = 4.611686e9 s: just below converts, just above does not.
  CHECK(adaptsim::seconds_to_ns_ceil(4.6e9) == 4'600'000'000'000'000'000);
  CHECK_THROWS_AS(adaptsim::seconds_to_ns_ceil(4.62e9), adaptsim::TimeOverflow);
  // A TimeOverflow is an InputError: simctl reports it as bad input (exit 2).
  CHECK_THROWS_AS(adaptsim::seconds_to_ns_ceil(1e30), adaptsim::InputError);

  EventEngine e;
  CHECK_THROWS_AS(e.schedule_at(adaptsim::kTimeHorizonNs + 1, [] {}), adaptsim::TimeOverflow);
  e.schedule_at(adaptsim::kTimeHorizonNs - 10, [] {});
  e.run();
  // now + delay would pass the horizon (and, for a delay near INT64_MAX, overflow).
  CHECK_THROWS_AS(e.schedule_after(11, [] {}), adaptsim::TimeOverflow);
  CHECK_THROWS_AS(e.schedule_after(std::numeric_limits<TimeNs>::max(), [] {}),
                  adaptsim::TimeOverflow);
  CHECK_NOTHROW(e.schedule_after(10, [] {}));
}
