#include "sim/io/job_trace.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <map>
#include <set>
#include <sstream>

#include "sim/core/error.h"
#include "sim/core/strings.h"
#include "sim/core/units.h"
#include "sim/io/csv.h"
#include "sim/io/input_file.h"

namespace adaptsim::io {
namespace {

bool whole_number(const std::string& s, long long& out) {
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, out);
  return ec == std::errc() && p == end;
}

// Helios' "YYYY-MM-DD HH:MM:SS" as seconds since 1970 (UTC; only differences are used).
bool timestamp(const std::string& s, double& out) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, se = 0;
  char tail = 0;
  if (std::sscanf(s.c_str(), "%4d-%2d-%2d %2d:%2d:%2d%c", &y, &mo, &d, &h, &mi, &se, &tail) != 6)
    return false;
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60 || y < 1970)
    return false;
  std::tm t{};
  t.tm_year = y - 1900;
  t.tm_mon = mo - 1;
  t.tm_mday = d;
  t.tm_hour = h;
  t.tm_min = mi;
  t.tm_sec = se;
  out = static_cast<double>(timegm(&t));
  return true;
}

}  // namespace

JobTrace read_job_trace(const std::filesystem::path& path, int max_gpus) {
  return parse_job_trace(read_input_file(path), path.string(), max_gpus);
}

JobTrace parse_job_trace(const std::string& text, const std::string& file, int max_gpus) {
  JobTrace trace;
  trace.file = file;
  auto fail = [&](int line, const std::string& column, const std::string& what) {
    throw InputError(trace.file + ":" + std::to_string(line) +
                     (column.empty() ? std::string() : ": column '" + column + "'") + ": " + what);
  };
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line)) fail(1, "", "the file is empty; expected a CSV header");
  if (!line.empty() && line.back() == '\r') line.pop_back();
  const std::vector<std::string> header = split_csv_row(line);
  std::map<std::string, std::size_t> col;
  for (std::size_t i = 0; i < header.size(); ++i) {
    if (header[i].find('"') != std::string::npos)
      fail(1, header[i], "quoted cells are not read; expected plain CSV");
    if (!col.emplace(header[i], i).second) fail(1, header[i], "is named twice in the header");
  }
  for (const char* required : {"job_id", "gpu_num", "submit_time", "model", "samples"}) {
    if (col.count(required) == 0) {
      fail(1, required,
           "is missing from the header; expected Helios' job_id, gpu_num and submit_time, and "
           "model and samples");
    }
  }
  std::set<std::string> ids;
  std::vector<double> submit_s;
  for (int n = 2; std::getline(in, line); ++n) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (trim(line).empty()) continue;
    const std::vector<std::string> cells = split_csv_row(line);
    if (cells.size() != header.size()) {
      fail(n, "",
           "has " + std::to_string(cells.size()) + " cells; expected " +
               std::to_string(header.size()) + " (the header's)");
    }
    auto cell = [&](const char* name) -> const std::string& { return cells[col.at(name)]; };
    TraceJob j;
    j.line = n;
    j.id = cell("job_id");
    if (j.id.empty()) fail(n, "job_id", "is empty; expected the job's id");
    if (!ids.insert(j.id).second) fail(n, "job_id", "'" + j.id + "' is given twice");
    long long gpus = 0;
    if (!whole_number(cell("gpu_num"), gpus) || gpus < 1 || gpus > max_gpus) {
      fail(n, "gpu_num",
           "'" + cell("gpu_num") + "': expected a whole number of GPUs from 1 to " +
               std::to_string(max_gpus) + " (the cluster's)");
    }
    j.gpus = static_cast<int>(gpus);
    double t = 0;
    if (!(parse_number(cell("submit_time"), t) && t >= 0) && !timestamp(cell("submit_time"), t)) {
      fail(n, "submit_time",
           "'" + cell("submit_time") +
               "': expected seconds >= 0 or a time as YYYY-MM-DD HH:MM:SS (Helios)");
    }
    submit_s.push_back(t);
    j.model = cell("model");
    if (j.model.empty()) fail(n, "model", "is empty; expected a zoo model");
    if (!parse_number(cell("samples"), j.samples) || !(j.samples >= 1 && j.samples <= 1e12)) {
      fail(n, "samples", "'" + cell("samples") + "': expected a number of samples from 1 to 1e12");
    }
    trace.jobs.push_back(std::move(j));
  }
  if (trace.jobs.empty()) fail(2, "", "the trace has no jobs; expected at least one row");
  const double first = *std::min_element(submit_s.begin(), submit_s.end());
  for (std::size_t i = 0; i < trace.jobs.size(); ++i) {
    const double since = submit_s[i] - first;
    if (!(since <= to_seconds(kMaxDurationNs)))
      fail(trace.jobs[i].line, "submit_time", "lies more than 1e6 s after the first submission");
    trace.jobs[i].submit = seconds_to_ns_ceil(since);
  }
  std::stable_sort(trace.jobs.begin(), trace.jobs.end(),
                   [](const TraceJob& a, const TraceJob& b) { return a.submit < b.submit; });
  return trace;
}

}  // namespace adaptsim::io
