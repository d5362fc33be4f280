#pragma once
// A deterministic discrete-event engine.
//
// Invariants:
//  - time never goes backwards: an event may be scheduled at now() or later, never earlier;
//  - events at the same time run in the order they were scheduled (a sequence number breaks ties),
//    so a run is a pure function of its inputs and seed;
//  - a cancelled event never runs; cancelling is O(1) amortized (the heap entry is skipped when
//    popped, or dropped when cancelled entries outnumber pending ones and the heap is rebuilt).
// No global state: tests create as many engines as they like. Not thread-safe: one engine is
// driven by one thread (sweep points run on separate engines).

#include <cstdint>
#include <vector>

#include "sim/core/inline_callback.h"
#include "sim/core/time.h"

namespace adaptsim {

class EventEngine {
 public:
  // Any callable invocable as void(), lambdas and std::function<void()> included; up to 40 bytes
  // are stored without an allocation (sim/core/inline_callback.h).
  using Callback = InlineCallback;

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
  TimeNs next_time() { return skip_cancelled() ? front_time() : kTimeNever; }
  std::uint64_t events_run() const { return events_run_; }

 private:
  friend class EventEngineTestPeer;  // tests/core: renumbering and compaction of the heap

  // Pending events later than now: a 4-ary min-heap of 16-byte trivially copyable entries, with the
  // callbacks apart in slots_ (reused through a free list), so sifting never moves a callback. A
  // 4-ary heap is half as deep as a binary one and a node's four children are 64 adjacent bytes:
  // the cache misses of a 64 k..1 M-event heap are what costs. (Aligning each group of children to
  // a cache line measured no faster.) Cancelling only frees the slot; the entry is skipped when it
  // reaches the top, or dropped when the heap is rebuilt.
  struct HeapEntry {
    TimeNs time;
    // order << 32 | slot. `order` grows with every schedule and is unique among the entries, so
    // comparing (time, key) runs ties in schedule order; the slot below it finds the callback.
    std::uint64_t key;
  };
  struct alignas(64) Slot {  // one cache line
    Callback cb;
    std::uint64_t seq = 0;    // EventId::seq of the pending event; 0 when free
    std::uint32_t order = 0;  // `order` of its heap entry; 0 when free (orders start at 1)
  };
  static constexpr std::size_t kArity = 4;
  static std::uint32_t slot_of(const HeapEntry& e) { return static_cast<std::uint32_t>(e.key); }
  static std::uint32_t order_of(const HeapEntry& e) {
    return static_cast<std::uint32_t>(e.key >> 32);
  }
  static bool earlier(const HeapEntry& a, const HeapEntry& b) {
    return a.time < b.time || (a.time == b.time && a.key < b.key);
  }
  bool is_live(const HeapEntry& e) const { return slots_[slot_of(e)].order == order_of(e); }
  // Moves `entry` from the hole at `hole` up to its place and writes it there.
  void sift_up(std::size_t hole, const HeapEntry& entry);
  void heap_push(const HeapEntry& entry);
  // Removes heap_[0] (the heap must not be empty).
  void heap_pop();
  // The entry that runs next: the heap's top if it is due now (scheduled before this instant
  // began, so ahead of every entry of now_queue_), else now_queue_'s front, else the heap's top.
  // Requires skip_cancelled() to have returned true.
  bool next_from_heap() const {
    return now_head_ == now_queue_.size() || (!heap_.empty() && heap_.front().time == now_);
  }
  // Its time (the same requirement).
  TimeNs front_time() const { return next_from_heap() ? heap_.front().time : now_; }
  // Rebuilds the heap from its live entries only. Called when cancelled entries outnumber live
  // ones (so cancel stays O(1) amortized and the heap below about twice pending()), and when the
  // 32-bit orders run out: then the live entries are renumbered 1..n in their (time, order)
  // order, which keeps every tie in schedule order.
  void rebuild(bool renumber);
  // Pops the entries of cancelled events off the heap's top and now_queue_'s front; returns false
  // if nothing is pending then.
  bool skip_cancelled();
  void free_slot(std::uint32_t slot);

  TimeNs now_ = 0;
  std::uint64_t next_seq_ = 1;
  std::uint32_t next_order_ = 1;
  std::uint64_t events_run_ = 0;
  std::size_t live_events_ = 0;
  bool stopped_ = false;
  std::vector<HeapEntry> heap_;
  // Events scheduled at now() while it is now (about half of a training run's: a message's
  // delivery, a receive's continuation), in schedule order from now_head_: a FIFO instead of a
  // push and pop through the heap. Every entry here is later in schedule order than the heap's
  // entries due now, which were scheduled before the instant began, so they run after them;
  // time advances only once this is empty.
  std::vector<HeapEntry> now_queue_;
  std::size_t now_head_ = 0;
  std::vector<Slot> slots_;
  std::vector<std::uint32_t> free_slots_;
};

}  // namespace adaptsim
