#include "sim/io/background.h"

#include <charconv>

#include "sim/core/error.h"
#include "sim/core/units.h"

namespace adaptsim::io {

bool BackgroundSchedule::active(int step, TimeNs since_start_ns) const {
  if (by_step()) return step >= *start_step && (!stop_step || step < *stop_step);
  return start_ns && since_start_ns >= *start_ns && (!stop_ns || since_start_ns < *stop_ns);
}

std::string BackgroundSchedule::describe() const {
  if (by_step()) {
    return stop_step ? "steps " + std::to_string(*start_step) + "-" + std::to_string(*stop_step)
                     : "from step " + std::to_string(*start_step);
  }
  const std::string start = format_duration(start_ns.value_or(0));
  return stop_ns ? start + "-" + format_duration(*stop_ns) : "from " + start;
}

namespace {

// "s3" -> 3, "x1" -> servers + 1 (and the extra hosts needed); the key fails otherwise.
int host_index(MapReader& r, std::string_view key, int servers, int& extra_hosts) {
  const std::string name = r.string(key);
  const auto fail = [&](const std::string& why) {
    r.fail(key, "host \"" + name + "\" " + why + "; expected s0..s" + std::to_string(servers - 1) +
                    " (the job's servers) or x0, x1, ... (extra hosts outside the job)");
  };
  if (name.size() < 2 || (name[0] != 's' && name[0] != 'x')) fail("is not a host name");
  int index = -1;
  const char* begin = name.data() + 1;
  const char* end = name.data() + name.size();
  const auto [ptr, ec] = std::from_chars(begin, end, index);
  if (ec != std::errc() || ptr != end || index < 0 || (name.size() > 2 && name[1] == '0')) {
    fail("is not a host name");
  }
  if (name[0] == 's') {
    if (index >= servers) {
      fail("is not in the cluster, which has " + std::to_string(servers) + " servers");
    }
    return index;
  }
  constexpr int kMaxExtraHosts = 64;
  if (index >= kMaxExtraHosts) fail("asks for more than 64 extra hosts");
  extra_hosts = std::max(extra_hosts, index + 1);
  return servers + index;
}

}  // namespace

BackgroundSpec read_background(MapReader& r, int servers) {
  BackgroundSpec spec;
  if (!r.has("background")) return spec;
  const auto items = r.list("background");
  for (std::size_t i = 0; i < items.size(); ++i) {
    MapReader f = MapReader::item_map(r, "background", i, items[i]);
    BackgroundFlow flow;
    flow.from = f.string("from");
    flow.to = f.string("to");
    flow.from_host = host_index(f, "from", servers, spec.extra_hosts);
    flow.to_host = host_index(f, "to", servers, spec.extra_hosts);
    if (flow.from_host == flow.to_host) {
      f.fail("to", "is the flow's own source host \"" + flow.from + "\"; expected another host");
    }
    flow.connections = static_cast<int>(f.integer_or("connections", 1, 1, 1024));
    flow.rate_Bps = f.bandwidth_Bps_or("rate", 0);
    BackgroundSchedule& w = flow.when;
    if (f.has("start_step") && f.has("start")) {
      f.fail("start", "the flow has a start_step too; expected one of start_step and start");
    }
    if (f.has("start_step")) {
      w.start_step = static_cast<int>(f.integer("start_step", 0, 1 << 30));
      if (f.has("stop")) f.fail("stop", "expected stop_step with start_step (steps, not times)");
      if (f.has("stop_step")) {
        w.stop_step = static_cast<int>(f.integer("stop_step", 0, 1 << 30));
        if (*w.stop_step <= *w.start_step) {
          f.fail("stop_step",
                 "expected a step after start_step (" + std::to_string(*w.start_step) + ")");
        }
      }
    } else if (f.has("start")) {
      w.start_ns = f.duration_ns("start");
      if (f.has("stop_step")) f.fail("stop_step", "expected stop with start (times, not steps)");
      if (f.has("stop")) {
        w.stop_ns = f.duration_ns("stop");
        if (*w.stop_ns <= *w.start_ns) {
          f.fail("stop", "expected a time after start (" + format_duration(*w.start_ns) + ")");
        }
      }
    } else {
      f.fail("start_step", "missing: a flow starts at a step (start_step) or a time (start)");
    }
    f.finish();
    spec.flows.push_back(std::move(flow));
  }
  return spec;
}

}  // namespace adaptsim::io
