#pragma once
// A record of what each worker of a training run did and when, written once in the Trainer and
// so the same in both modes (simulated clock or live steady clock): per worker, the step, its
// compute phases (forward, the backward layers reported to the system), the update, the
// monitors' kernels and extra all-reduce, the step agreement, and each gradient's all-reduce from
// the moment its layer handed it over to the moment it was reduced. Written as Chrome /
// Perfetto trace-event JSON (the "JSON Object Format" of the Trace Event Format document):
// complete events ("X") on one track per worker for the nested phases, and async events
// ("b"/"e") for the all-reduces and each message's transfer (bytes and achieved rate in its
// args), which overlap one another; simulated, counter events ("C") of each busy link's
// utilization per time bin (net::LinkRecorder).

#include <cstdint>
#include <string>
#include <vector>

#include "sim/core/units.h"

namespace adaptsim::runtime {

struct TimelineSpan {
  int worker = 0;
  std::string name;      // "step 3", "forward", "backward conv1", "allreduce fc.w", ...
  std::string category;  // step, compute, comm, monitor, control
  TimeNs begin = 0;
  TimeNs end = 0;
  bool overlapping = false;  // may overlap its siblings (all-reduces): an async event
  std::uint64_t id = 0;      // overlapping spans: unique per worker
  double bytes = 0;          // a transfer's payload: written with its rate as the span's args
};

// One sample of a counter track (a link's utilization): `value` from `at` until the next sample
// of the same track.
struct TimelineCounter {
  std::string track;  // "link s0.nic0->switch"
  TimeNs at = 0;
  double value = 0;
};

class Timeline {
 public:
  void add(TimelineSpan span) { spans_.push_back(std::move(span)); }
  void add_counter(TimelineCounter sample) { counters_.push_back(std::move(sample)); }
  // One message's transfer from worker `src` to `dst`, from its first byte leaving to its last
  // (the simulated fabric's record; live, the transport's writes to the socket), on the sender's
  // track as an async span with its bytes.
  void add_transfer(int src, int dst, TimeNs first_byte, TimeNs last_byte, double bytes);
  const std::vector<TimelineCounter>& counters() const { return counters_; }
  const std::vector<TimelineSpan>& spans() const { return spans_; }
  bool empty() const { return spans_.empty(); }

  // The trace-event JSON: pid `process` (0 simulated; the rank live, so ranks' files merge),
  // tid = worker, times in microseconds relative to `origin_ns`; metadata names the process
  // `process_name` and each worker's track "worker <w>".
  std::string chrome_json(int process, const std::string& process_name, TimeNs origin_ns) const;

 private:
  std::vector<TimelineSpan> spans_;
  std::vector<TimelineCounter> counters_;
  std::uint64_t transfers_ = 0;  // ids of add_transfer's spans, apart from the trainer's
};

// Merges trace-event JSON documents written by chrome_json (live: one per rank, on one machine's
// steady clock) into one, shifted so that the earliest event is at 0. Throws std::runtime_error
// naming the document (by its index) that is not such JSON.
std::string merge_chrome_json(const std::vector<std::string>& documents);

}  // namespace adaptsim::runtime
