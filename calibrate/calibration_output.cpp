#include "calibrate/calibration_output.h"

#include <algorithm>

#include "calibrate/host_info.h"
#include "sim/core/error.h"
#include "sim/io/output.h"

namespace adaptsim::calibrate {

io::CalibrationProfile new_profile(int argc, const char* const* argv, const std::string& backend) {
  io::CalibrationProfile p;
  p.created = utc_now_iso8601();
  p.command = command_line(argc, argv);
  p.host = this_host();
  p.software = this_software();
  p.sweep.backend = backend;
  return p;
}

void describe_sweep_from_rows(io::CalibrationProfile& p, const std::vector<coll::SweepRow>& rows) {
  std::uint64_t lo = UINT64_MAX, hi = 0;
  for (const coll::SweepRow& r : rows) {
    p.sweep.ranks = std::max(p.sweep.ranks, r.n_ranks);
    lo = std::min(lo, r.size_bytes);
    hi = std::max(hi, r.size_bytes);
  }
  if (rows.empty()) return;
  if (p.sweep.min_bytes == 0 && p.sweep.max_bytes == 0) {
    p.sweep.min_bytes = lo;
    p.sweep.max_bytes = hi;
  }
}

WrittenFiles write_calibration_outputs(const std::filesystem::path& dir, const std::string& name,
                                       const std::vector<coll::SweepRow>& rows,
                                       io::CalibrationProfile& profile) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw RuntimeFailure("cannot create " + dir.string() + ": " + ec.message());
  WrittenFiles files{dir / (name + ".csv"), dir / (name + ".yaml")};
  profile.sweep.csv = files.csv.filename().string();
  coll::write_sweep_csv(files.csv, rows, kMeasurementCsv);
  io::write_file_atomic(files.profile, io::write_calibration_profile_yaml(profile));
  return files;
}

}  // namespace adaptsim::calibrate
