#pragma once
// A deterministic discrete-event engine.
//
// Invariants:
//  - time never goes backwards: an event may be scheduled at now() or later, never earlier;
//  - events at the same time run in the order they were scheduled (a sequence number breaks ties),
//    so a run is a pure function of its inputs and seed;
//  - a cancelled event never runs; cancelling is O(1) (the heap entry is skipped when popped).
// No global state: tests create as many engines as they like. Not thread-safe: one engine is
// driven by one thread (sweep points run on separate engines).

#include <cstdint>
#include <functional>
#include <vector>

#include "sim/core/time.h"

namespace adaptsim {

class EventEngine {
 public:
  using Callback = std::function<void()>;

  // Identifies a scheduled event for cancel(). Default-constructed ids refer to nothing.
  struct EventId {
    std::uint64_t seq = 0;
    std::uint32_t slot = 0;
    bool valid() const { return seq != 0; }
  };

  EventEngine() = default;
  EventEngine(const EventEngine&) = delete;
  EventEngine& operator=(const EventEngine&) = delete;

  TimeNs now() const { return now_; }

  // Schedules `cb` at absolute time `when` (>= now(); throws std::logic_error otherwise). Time
  // stays below kTimeHorizonNs: a later event is TimeOverflow (bad input), so that now() plus
  // any delay below the horizon never overflows.
  EventId schedule_at(TimeNs when, Callback cb);
  EventId schedule_after(TimeNs delay, Callback cb) {
    if (delay > kTimeHorizonNs - now_) throw_time_overflow(to_seconds(now_) + to_seconds(delay));
    return schedule_at(now_ + delay, std::move(cb));
  }

  // Returns true if the event was pending and is now cancelled; false if it already ran, was
  // already cancelled, or the id is invalid.
  bool cancel(EventId id);

  // Runs the next event, if any. Returns false when nothing is pending.
  bool step();
  // Runs until no event is pending or stop() is called from inside a callback.
  void run();
  // Runs every event with time <= `until`, then sets now() to `until` (if it is later).
  void run_until(TimeNs until);
  // Makes run()/run_until() return after the current event.
  void stop() { stopped_ = true; }

  std::size_t pending() const { return live_events_; }
  // Time of the next pending event (kTimeNever if none): lets a component run once at the end of
  // an instant, after everything else scheduled at it.
  TimeNs next_time() { return skip_cancelled() ? heap_.front().time : kTimeNever; }
  std::uint64_t events_run() const { return events_run_; }

 private:
  struct HeapEntry {
    TimeNs time;
    std::uint64_t seq;
    std::uint32_t slot;
  };
  struct Slot {
    Callback cb;
    std::uint64_t seq = 0;  // 0 when free
  };
  static bool later(const HeapEntry& a, const HeapEntry& b) {
    return a.time != b.time ? a.time > b.time : a.seq > b.seq;
  }
  // Pops heap entries of cancelled events; returns false if the heap is empty afterwards.
  bool skip_cancelled();

  TimeNs now_ = 0;
  std::uint64_t next_seq_ = 1;
  std::uint64_t events_run_ = 0;
  std::size_t live_events_ = 0;
  bool stopped_ = false;
  std::vector<HeapEntry> heap_;
  std::vector<Slot> slots_;
  std::vector<std::uint32_t> free_slots_;
};

}  // namespace adaptsim
