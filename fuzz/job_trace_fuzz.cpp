// Fuzz target: a job trace (sim/io/job_trace.h, the jobs workload's `trace:`) read with
// io::parse_job_trace from the input's text, for a cluster of 1 to 64 GPUs (the first byte picks
// it), then every job's fields checked against what the reader promises.
//
// InputError is the documented outcome of bad input; any other exception, a crash, a sanitizer
// report, a hang or a job outside the promises is a finding.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "sim/core/error.h"
#include "sim/io/job_trace.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const int max_gpus = 1 + data[0] % 64;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    const adaptsim::io::JobTrace t = adaptsim::io::parse_job_trace(text, "fuzz.csv", max_gpus);
    adaptsim::TimeNs last = 0;
    for (const adaptsim::io::TraceJob& j : t.jobs) {
      // Sorted by submission from 0, every field in its range.
      if (j.submit < last || j.gpus < 1 || j.gpus > max_gpus || !(j.samples >= 1) || j.id.empty() ||
          j.model.empty() || j.line < 2)
        std::abort();
      last = j.submit;
    }
    if (t.jobs.empty() || t.jobs.front().submit != 0) std::abort();
  } catch (const adaptsim::InputError&) {
    // Bad input, reported as one line: what the reader promises.
  }
  return 0;
}
