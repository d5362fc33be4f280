#pragma once
// The two files every calibrate mode writes into its output folder, each atomically (a
// temporary file and a rename: io::write_file_atomic), the CSV first:
//   NAME.csv   every measured point (measurement.h)
//   NAME.yaml  the calibration profile (sim/io/calibration_profile.h), whose sweep.csv names
//              NAME.csv

#include <filesystem>
#include <string>
#include <vector>

#include "calibrate/measurement.h"
#include "sim/io/calibration_profile.h"

namespace adaptsim::calibrate {

// A profile with its provenance filled in: now, the command line, this host, this build.
io::CalibrationProfile new_profile(int argc, const char* const* argv, const std::string& backend);

// Sets sweep.ranks (largest n_ranks) and, when still 0, sweep.min_bytes / max_bytes from the
// rows.
void describe_sweep_from_rows(io::CalibrationProfile& profile,
                              const std::vector<coll::SweepRow>& rows);

struct WrittenFiles {
  std::filesystem::path csv;
  std::filesystem::path profile;
};

// Creates `dir` if needed and writes NAME.csv and NAME.yaml (profile.sweep.csv is set to
// NAME.csv). RuntimeFailure on I/O errors; the profile is written last, so a failure never
// leaves a profile without its CSV.
WrittenFiles write_calibration_outputs(const std::filesystem::path& dir, const std::string& name,
                                       const std::vector<coll::SweepRow>& rows,
                                       io::CalibrationProfile& profile);

}  // namespace adaptsim::calibrate
