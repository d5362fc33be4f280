// Event engine throughput: schedule + run of events with random future times, and cancellation.

#include <benchmark/benchmark.h>

#include "sim/core/event_engine.h"
#include "sim/core/rng.h"

using namespace adaptsim;

// A steady-state queue of `depth` pending events: each event schedules one successor at a random
// delay, so the heap keeps its size. items_per_second = events run per second.
static void BM_EngineEvents(benchmark::State& state) {
  const int depth = static_cast<int>(state.range(0));
  const std::int64_t per_iter = 1 << 16;
  for (auto _ : state) {
    EventEngine e;
    Rng rng(1);
    std::int64_t left = per_iter;
    std::function<void()> tick = [&] {
      if (--left > 0) e.schedule_after(1 + static_cast<TimeNs>(rng.below(1000)), tick);
    };
    for (int i = 0; i < depth; ++i)
      e.schedule_after(static_cast<TimeNs>(rng.below(1000)), tick);
    e.run();
    benchmark::DoNotOptimize(e.now());
  }
  state.SetItemsProcessed(state.iterations() * (per_iter + depth - 1));
}
BENCHMARK(BM_EngineEvents)->Arg(16)->Arg(1024)->Arg(65536);

// Schedule then cancel half: cancelled entries are skipped lazily when popped.
static void BM_EngineCancel(benchmark::State& state) {
  const int n = 1 << 16;
  for (auto _ : state) {
    EventEngine e;
    std::vector<EventEngine::EventId> ids;
    ids.reserve(n);
    for (int i = 0; i < n; ++i)
      ids.push_back(e.schedule_at(i, [] {}));
    for (int i = 0; i < n; i += 2)
      e.cancel(ids[i]);
    e.run();
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_EngineCancel);
