// The simulated fabric's messages allocate nothing once it has warmed up (docs/performance.md,
// item 12): messages come from the fabric's pool, closed connections' nodes are reused, the
// mailboxes keep their slots and queues (and a collective's message names their ids), and the
// collectives' continuations fit the callbacks' inline storage. Counted with a replaced global
// operator new, in an executable of its own so that no other test runs under the counter. A reused
// fabric must also time the same work exactly as a fresh one does.

#include <doctest/doctest.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "tests/coll/sim_harness.h"

namespace {
std::atomic<bool> counting{false};
std::atomic<long> allocations{0};
}  // namespace

void* operator new(std::size_t size) {
  if (counting.load(std::memory_order_relaxed)) allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}

using namespace adaptsim;
using adaptsim::coll::StrategyKind;
using adaptsim::testing::SimCluster;

namespace {

// Runs one all-reduce of `bytes` on every rank of `c`; returns how long it took.
TimeNs allreduce(SimCluster& c, const coll::AllReduce& algo, std::size_t bytes) {
  const int n = c.topology.rank_count();
  const TimeNs start = c.engine.now();
  TimeNs end = start;
  for (int r = 0; r < n; ++r) {
    algo.run(c.fabric.transport(r), adaptsim::testing::size_only_workspace("t", bytes),
             [&] { end = std::max(end, c.engine.now()); });
  }
  c.engine.run();
  return end - start;
}

}  // namespace

TEST_CASE("a ring all-reduce on a warmed-up fabric allocates per rank, not per message") {
  const int n = 16;
  const std::size_t bytes = 16 << 20;
  fabric::SimTransportOptions o;
  o.socket_buffer_bytes = 4 << 20;  // sends accepted at once: their callbacks queued as events
  SimCluster c(adaptsim::testing::switched(n, 1), o);
  auto algo = coll::make_allreduce(StrategyKind::kClassicRing, c.hosts());
  const TimeNs first = allreduce(c, *algo, bytes);
  const std::uint64_t messages_before = c.fabric.messages_delivered();

  allocations = 0;
  counting = true;
  const TimeNs second = allreduce(c, *algo, bytes);
  counting = false;
  const long counted = allocations.load();
  const std::uint64_t messages = c.fabric.messages_delivered() - messages_before;

  CHECK(messages == static_cast<std::uint64_t>(2 * (n - 1) * n));
  // Each rank's run state (make_shared) and little else: before the pool every message cost
  // about 12 allocations (5760 here).
  CHECK_MESSAGE(counted <= 2 * n, counted, " allocations for ", messages, " messages");
  // Pooled messages and reused connections time the work exactly as fresh ones.
  CHECK(second == first);
}
