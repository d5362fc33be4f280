#include "sim/core/event_engine.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

namespace adaptsim {

namespace {

// Below this many heap entries cancelled ones are left to be popped: rebuilding a small heap
// saves nothing.
constexpr std::size_t kMinHeapToRebuild = 1024;

}  // namespace

EventEngine::EventId EventEngine::schedule_at(TimeNs when, Callback cb) {
  if (when > kTimeHorizonNs) throw_time_overflow(to_seconds(when));
  if (when < now_) {
    throw std::logic_error("event scheduled in the past: at " + std::to_string(when) + " ns, now " +
                           std::to_string(now_) + " ns");
  }
  if (next_order_ == std::numeric_limits<std::uint32_t>::max()) rebuild(/*renumber=*/true);
  std::uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    if (slots_.size() > std::numeric_limits<std::uint32_t>::max())
      throw std::length_error("event engine: more than 2^32 pending events");
    slot = static_cast<std::uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  const std::uint64_t seq = next_seq_++;
  const std::uint32_t order = next_order_++;
  Slot& s = slots_[slot];
  s.cb = std::move(cb);
  s.seq = seq;
  s.order = order;
  const HeapEntry entry{when, std::uint64_t{order} << 32 | slot};
  if (when == now_) {
    now_queue_.push_back(entry);
  } else {
    heap_push(entry);
  }
  ++live_events_;
  return {seq, slot};
}

void EventEngine::free_slot(std::uint32_t slot) {
  slots_[slot].seq = 0;
  slots_[slot].order = 0;
  free_slots_.push_back(slot);
  --live_events_;
}

bool EventEngine::cancel(EventId id) {
  if (!id.valid() || id.slot >= slots_.size() || slots_[id.slot].seq != id.seq) return false;
  slots_[id.slot].cb = nullptr;
  free_slot(id.slot);
  if (heap_.size() >= kMinHeapToRebuild && heap_.size() > 2 * live_events_)
    rebuild(/*renumber=*/false);
  return true;
}

void EventEngine::sift_up(std::size_t hole, const HeapEntry& entry) {
  while (hole > 0) {
    const std::size_t parent = (hole - 1) / kArity;
    if (!earlier(entry, heap_[parent])) break;
    heap_[hole] = heap_[parent];
    hole = parent;
  }
  heap_[hole] = entry;
}

void EventEngine::heap_push(const HeapEntry& entry) {
  heap_.push_back(entry);
  sift_up(heap_.size() - 1, entry);
}

void EventEngine::heap_pop() {
  const HeapEntry last = heap_.back();
  heap_.pop_back();
  const std::size_t n = heap_.size();
  if (n == 0) return;
  // Bottom-up: move the hole at the root down to a leaf along the earliest children, then sift
  // `last` (a leaf, so most likely late) up from there; this saves comparing it at every level.
  std::size_t hole = 0;
  for (;;) {
    const std::size_t first = kArity * hole + 1;
    std::size_t best;
    if (first + kArity <= n) {
      const std::size_t a = earlier(heap_[first + 1], heap_[first]) ? first + 1 : first;
      const std::size_t b = earlier(heap_[first + 3], heap_[first + 2]) ? first + 3 : first + 2;
      best = earlier(heap_[b], heap_[a]) ? b : a;
    } else if (first < n) {
      best = first;
      for (std::size_t c = first + 1; c < n; ++c)
        if (earlier(heap_[c], heap_[best])) best = c;
    } else {
      break;
    }
    heap_[hole] = heap_[best];
    hole = best;
  }
  sift_up(hole, last);
}

void EventEngine::rebuild(bool renumber) {
  std::size_t kept = 0;
  for (const HeapEntry& e : heap_)
    if (is_live(e)) heap_[kept++] = e;
  heap_.resize(kept);
  if (renumber) {
    // A sorted array is a heap. The pending events keep their relative order, the queue's after
    // the heap's (every one of them was scheduled later than the heap's entries due now), and
    // every event scheduled from now on gets a larger order than all of them.
    std::sort(heap_.begin(), heap_.end(), earlier);
    std::uint32_t order = 0;
    const auto renumber_entry = [&](HeapEntry& e) {
      const std::uint32_t slot = slot_of(e);
      slots_[slot].order = ++order;
      e.key = std::uint64_t{order} << 32 | slot;
    };
    for (HeapEntry& e : heap_)
      renumber_entry(e);
    std::size_t queued = 0;
    for (std::size_t i = now_head_; i < now_queue_.size(); ++i) {
      if (!is_live(now_queue_[i])) continue;
      now_queue_[queued] = now_queue_[i];
      renumber_entry(now_queue_[queued++]);
    }
    now_queue_.resize(queued);
    now_head_ = 0;
    next_order_ = order + 1;
    return;
  }
  // Floyd's construction: sift down every inner node, the last first.
  if (kept < 2) return;
  for (std::size_t i = (kept - 2) / kArity + 1; i-- > 0;) {
    const HeapEntry e = heap_[i];
    std::size_t hole = i;
    for (;;) {
      const std::size_t first = kArity * hole + 1;
      if (first >= kept) break;
      std::size_t best = first;
      const std::size_t end = std::min(first + kArity, kept);
      for (std::size_t c = first + 1; c < end; ++c)
        if (earlier(heap_[c], heap_[best])) best = c;
      if (!earlier(heap_[best], e)) break;
      heap_[hole] = heap_[best];
      hole = best;
    }
    heap_[hole] = e;
  }
}

bool EventEngine::skip_cancelled() {
  // Every entry is live when there are as many as pending events: no slot to look at.
  if (heap_.size() + (now_queue_.size() - now_head_) == live_events_) return live_events_ > 0;
  while (now_head_ < now_queue_.size() && !is_live(now_queue_[now_head_]))
    ++now_head_;
  while (!heap_.empty() && !is_live(heap_.front()))
    heap_pop();
  return now_head_ < now_queue_.size() || !heap_.empty();
}

bool EventEngine::step() {
  if (!skip_cancelled()) return false;
  HeapEntry entry;
  std::uint32_t slot;
  if (next_from_heap()) {
    entry = heap_.front();
    slot = slot_of(entry);
    // The slot is a random one in a large table: load it while the heap is sifted.
    __builtin_prefetch(&slots_[slot]);
    heap_pop();
  } else {
    entry = now_queue_[now_head_++];
    slot = slot_of(entry);
    if (now_head_ == now_queue_.size()) {
      now_queue_.clear();
      now_head_ = 0;
    }
  }
  Callback cb = std::move(slots_[slot].cb);
  free_slot(slot);
  now_ = entry.time;
  ++events_run_;
  cb();
  return true;
}

void EventEngine::run() {
  stopped_ = false;
  while (!stopped_ && step()) {
  }
}

void EventEngine::run_until(TimeNs until) {
  stopped_ = false;
  while (!stopped_ && skip_cancelled() && front_time() <= until)
    step();
  if (!stopped_ && until > now_) now_ = until;
}

}  // namespace adaptsim
