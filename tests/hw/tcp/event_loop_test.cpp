// The event loop runs everything on its own thread, never runs deferred work inside the call
// that deferred it, fires timers in deadline order, and forgets removed fds and cancelled timers.

#include <doctest/doctest.h>

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

#include "hw/tcp/buffer_pool.h"
#include "hw/tcp/event_loop.h"

using namespace adaptsim;
using namespace adaptsim::tcp;

TEST_CASE("posted tasks run on the loop thread, in posting order") {
  EventLoop loop;
  std::thread t([&] { loop.run(); });
  std::vector<int> order;
  std::atomic<bool> on_loop{true};
  for (int i = 0; i < 100; ++i) {
    loop.post([&, i] {
      if (!loop.in_loop_thread()) on_loop = false;
      order.push_back(i);
    });
  }
  loop.post([&] { loop.stop(); });
  t.join();
  REQUIRE(order.size() == 100);
  for (int i = 0; i < 100; ++i)
    CHECK(order[static_cast<std::size_t>(i)] == i);
  CHECK(on_loop);
}

TEST_CASE("deferred work never runs inside the call that deferred it") {
  EventLoop loop;
  bool inside = false;
  bool ran_inside = false;
  int ran = 0;
  loop.post([&] {
    inside = true;
    loop.defer([&] {
      ran_inside = inside;
      ++ran;
      loop.defer([&] {
        ++ran;
        loop.stop();
      });
    });
    inside = false;
  });
  loop.run();
  CHECK(ran == 2);
  CHECK_FALSE(ran_inside);
}

TEST_CASE("timers fire in deadline order and a cancelled timer never fires") {
  EventLoop loop;
  std::vector<int> fired;
  loop.post([&] {
    loop.add_timer(30 * kNsPerMs, [&] { fired.push_back(30); });
    const auto cancelled = loop.add_timer(10 * kNsPerMs, [&] { fired.push_back(-1); });
    loop.add_timer(20 * kNsPerMs, [&] { fired.push_back(20); });
    loop.add_timer(0, [&] { fired.push_back(0); });
    loop.add_timer(40 * kNsPerMs, [&] { loop.stop(); });
    loop.cancel_timer(cancelled);
  });
  const TimeNs start = EventLoop::now_ns();
  loop.run();
  CHECK(fired == std::vector<int>{0, 20, 30});
  CHECK(EventLoop::now_ns() - start >= 40 * kNsPerMs);  // never early
}

TEST_CASE("an fd removed by an earlier handler of the same batch is not dispatched") {
  EventLoop loop;
  const int a = ::eventfd(1, EFD_NONBLOCK);  // both readable at once: one epoll batch
  const int b = ::eventfd(1, EFD_NONBLOCK);
  int calls = 0;
  loop.post([&] {
    auto handler = [&](int other) {
      return [&, other](std::uint32_t) {
        ++calls;
        loop.remove_fd(other);
        loop.remove_fd(other == a ? b : a);
        loop.defer([&] { loop.stop(); });
      };
    };
    loop.add_fd(a, EPOLLIN, handler(b));
    loop.add_fd(b, EPOLLIN, handler(a));
  });
  loop.run();
  CHECK(calls == 1);
  ::close(a);
  ::close(b);
}

TEST_CASE("an exception from a task reaches the error handler and the loop keeps running") {
  EventLoop loop;
  std::string caught;
  loop.set_error_handler([&](std::exception_ptr e) {
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& ex) {
      caught = ex.what();
    }
  });
  bool after = false;
  loop.post([] { throw std::runtime_error("boom"); });
  loop.post([&] {
    after = true;
    loop.stop();
  });
  loop.run();
  CHECK(caught == "boom");
  CHECK(after);
}

TEST_CASE("the buffer pool reuses released buffers and frees what was never released") {
  BufferPool pool(1 << 20);
  std::byte* a = pool.acquire(1000);
  REQUIRE(a != nullptr);
  CHECK(reinterpret_cast<std::uintptr_t>(a) % 64 == 0);
  pool.release(a);
  CHECK(pool.acquire(1000) == a);  // same rounded size: reused
  CHECK(pool.acquire(0) == nullptr);
  std::byte* big = pool.acquire(2 << 20);  // over the cache limit: freed on release
  pool.release(big);
  CHECK(pool.outstanding() == 1);  // `a`, never released: freed by the destructor
}
