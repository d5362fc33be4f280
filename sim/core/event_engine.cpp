#include "sim/core/event_engine.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace adaptsim {

EventEngine::EventId EventEngine::schedule_at(TimeNs when, Callback cb) {
  if (when > kTimeHorizonNs) throw_time_overflow(to_seconds(when));
  if (when < now_) {
    throw std::logic_error("event scheduled in the past: at " + std::to_string(when) + " ns, now " +
                           std::to_string(now_) + " ns");
  }
  std::uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = static_cast<std::uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  const std::uint64_t seq = next_seq_++;
  slots_[slot].cb = std::move(cb);
  slots_[slot].seq = seq;
  heap_.push_back({when, seq, slot});
  std::push_heap(heap_.begin(), heap_.end(), later);
  ++live_events_;
  return {seq, slot};
}

bool EventEngine::cancel(EventId id) {
  if (!id.valid() || id.slot >= slots_.size() || slots_[id.slot].seq != id.seq) return false;
  Slot& s = slots_[id.slot];
  s.cb = nullptr;
  s.seq = 0;
  free_slots_.push_back(id.slot);
  --live_events_;
  return true;
}

bool EventEngine::skip_cancelled() {
  while (!heap_.empty()) {
    const HeapEntry& top = heap_.front();
    if (slots_[top.slot].seq == top.seq) return true;
    std::pop_heap(heap_.begin(), heap_.end(), later);
    heap_.pop_back();
  }
  return false;
}

bool EventEngine::step() {
  if (!skip_cancelled()) return false;
  std::pop_heap(heap_.begin(), heap_.end(), later);
  const HeapEntry entry = heap_.back();
  heap_.pop_back();
  Slot& s = slots_[entry.slot];
  Callback cb = std::move(s.cb);
  s.cb = nullptr;
  s.seq = 0;
  free_slots_.push_back(entry.slot);
  --live_events_;
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
  while (!stopped_ && skip_cancelled() && heap_.front().time <= until)
    step();
  if (!stopped_ && until > now_) now_ = until;
}

}  // namespace adaptsim
