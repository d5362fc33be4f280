#include "sim/core/inline_callback.h"

#include <doctest/doctest.h>

#include <array>
#include <functional>
#include <memory>
#include <string>
#include <utility>

using adaptsim::InlineCallback;

TEST_CASE("small and large callables run, and a moved-from callback is empty") {
  int ran = 0;
  InlineCallback small = [&ran] { ran += 1; };
  std::array<int, 32> big{};  // 128 bytes: stored on the heap
  big[31] = 10;
  InlineCallback large = [&ran, big] { ran += big[31]; };
  small();
  large();
  CHECK(ran == 11);
  InlineCallback moved = std::move(large);
  CHECK_FALSE(static_cast<bool>(large));
  CHECK(static_cast<bool>(moved));
  moved();
  CHECK(ran == 21);
}

TEST_CASE("captured state is destroyed once, in place or on the heap") {
  auto token = std::make_shared<int>(0);
  {
    InlineCallback in_place = [token] {};  // 16 bytes, not trivially copyable
    InlineCallback on_heap = [token, pad = std::array<char, 64>{}] {};
    CHECK(token.use_count() == 3);
    InlineCallback a = std::move(in_place);
    InlineCallback b = std::move(on_heap);
    CHECK(token.use_count() == 3);
    a = nullptr;
    CHECK(token.use_count() == 2);
    b = std::move(a);  // b's callable destroyed, a empty
    CHECK(token.use_count() == 1);
  }
  CHECK(token.use_count() == 1);
}

TEST_CASE("move-only callables and std::function are accepted, empty ones throw when called") {
  auto value = std::make_unique<int>(7);
  int seen = 0;
  InlineCallback move_only = [&seen, v = std::move(value)] { seen = *v; };
  move_only();
  CHECK(seen == 7);

  std::string log;
  std::function<void()> f = [&log] { log += "f"; };
  InlineCallback from_function = f;  // a copy of f, kept whole
  from_function();
  f();
  CHECK(log == "ff");

  InlineCallback empty;
  CHECK_THROWS_AS(empty(), std::bad_function_call);
  InlineCallback empty_function = std::function<void()>{};
  CHECK_THROWS_AS(empty_function(), std::bad_function_call);
}
