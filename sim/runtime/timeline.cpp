#include "sim/runtime/timeline.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <stdexcept>
#include <utility>

namespace adaptsim::runtime {
namespace {

// One event per line: readable, diffable and a tenth of an indented dump's size.
std::string render(const nlohmann::json& events) {
  std::string out = "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
  for (std::size_t i = 0; i < events.size(); ++i)
    out += events[i].dump() + (i + 1 < events.size() ? ",\n" : "\n");
  return out + "]}\n";
}

}  // namespace

void Timeline::add_transfer(int src, int dst, TimeNs first_byte, TimeNs last_byte, double bytes) {
  add({.worker = src,
       .name = "send to " + std::to_string(dst),
       .category = "transfer",
       .begin = first_byte,
       .end = last_byte,
       .overlapping = true,
       .id = (std::uint64_t{1} << 62) + transfers_++,
       .bytes = bytes});
}

std::string Timeline::chrome_json(int process, const std::string& process_name,
                                  TimeNs origin_ns) const {
  using nlohmann::json;
  const auto us = [origin_ns](TimeNs t) { return static_cast<double>(t - origin_ns) / 1e3; };
  json events = json::array();
  events.push_back({{"name", "process_name"},
                    {"ph", "M"},
                    {"pid", process},
                    {"args", {{"name", process_name}}}});
  std::set<int> workers;
  for (const TimelineSpan& s : spans_)
    workers.insert(s.worker);
  for (int w : workers) {
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", process},
                      {"tid", w},
                      {"args", {{"name", "worker " + std::to_string(w)}}}});
  }
  for (const TimelineSpan& s : spans_) {
    json e = {{"name", s.name}, {"cat", s.category}, {"pid", process}, {"tid", s.worker}};
    if (s.bytes > 0 || s.category == "transfer") {  // a live barrier's messages carry 0 bytes
      const double seconds = static_cast<double>(s.end - s.begin) / 1e9;
      e["args"] = {{"bytes", s.bytes}, {"rate_Bps", seconds > 0 ? s.bytes / seconds : 0.0}};
    }
    if (s.overlapping) {
      // Async begin and end, matched by (cat, id) within the process.
      e["id"] = std::to_string(s.worker) + ":" + std::to_string(s.id);
      for (const auto& [ph, t] : {std::pair{"b", s.begin}, std::pair{"e", s.end}}) {
        e["ph"] = ph;
        e["ts"] = us(t);
        events.push_back(e);
      }
    } else {
      e["ph"] = "X";
      e["ts"] = us(s.begin);
      e["dur"] = us(s.end) - us(s.begin);
      events.push_back(e);
    }
  }
  for (const TimelineCounter& c : counters_) {
    events.push_back({{"name", c.track},
                      {"cat", "link"},
                      {"ph", "C"},
                      {"pid", process},
                      {"ts", us(c.at)},
                      {"args", {{"utilization", c.value}}}});
  }
  return render(events);
}

std::string merge_chrome_json(const std::vector<std::string>& documents) {
  using nlohmann::json;
  json events = json::array();
  double origin = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < documents.size(); ++i) {
    const json doc = json::parse(documents[i], nullptr, /*allow_exceptions=*/false);
    if (!doc.is_object() || !doc.contains("traceEvents") || !doc["traceEvents"].is_array()) {
      throw std::runtime_error("timeline " + std::to_string(i) +
                               ": not trace-event JSON (no traceEvents array)");
    }
    for (const json& e : doc["traceEvents"]) {
      if (e.contains("ts") && e["ts"].is_number()) origin = std::min(origin, e["ts"].get<double>());
      events.push_back(e);
    }
  }
  // The ranks' clocks are one machine's steady clock: one shift puts the first event at 0.
  if (std::isfinite(origin)) {
    for (json& e : events)
      if (e.contains("ts") && e["ts"].is_number()) e["ts"] = e["ts"].get<double>() - origin;
  }
  return render(events);
}

}  // namespace adaptsim::runtime
