// Fuzz target: nccl-tests output (text or -J JSON, chosen by the first non-blank character) read
// with calibrate::parse_nccl_tests, then made into a profile as `calibrate import` makes it
// (calibrate_main.cpp, run_import: the sweep from the rows, the alpha-beta fits) and written:
// whatever the import accepts must give a profile that io::parse_calibration_profile reads back.
// The input is the file's text.
//
// InputError is the documented outcome of bad input to the import; any other exception, an
// InputError from reading the written profile, a crash, a sanitizer report or a hang is a
// finding.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "calibrate/calibration_output.h"
#include "calibrate/nccl_tests_import.h"
#include "calibrate/profile_builder.h"
#include "sim/core/error.h"
#include "sim/io/calibration_profile.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace calibrate = adaptsim::calibrate;
  namespace io = adaptsim::io;
  // Provenance (this host, this build) once: it does not depend on the input.
  static const io::CalibrationProfile kBase = [] {
    const char* argv[] = {"calibrate", "import", "fuzz.txt"};
    return calibrate::new_profile(3, argv, "import");
  }();
  const std::string text(reinterpret_cast<const char*>(data), size);
  calibrate::NcclTestsImport imp;
  try {
    imp = calibrate::parse_nccl_tests(text, "fuzz.txt");
  } catch (const adaptsim::InputError&) {
    return 0;  // bad input, reported as one line: what the import promises
  }
  io::CalibrationProfile profile = kBase;
  profile.host = io::ProfileHost{imp.first_hostname.empty() ? "unknown" : imp.first_hostname,
                                 "unknown", 0, "unknown"};
  profile.software.nccl_version = imp.nccl_version;
  profile.sweep.source = "fuzz.txt";
  profile.sweep.ranks = imp.n_ranks;
  profile.sweep.hosts = imp.hosts;
  profile.sweep.step_factor = imp.step_factor;
  profile.sweep.iters = imp.iters;
  profile.sweep.warmup_iters = imp.warmup_iters;
  calibrate::describe_sweep_from_rows(profile, imp.rows);
  std::vector<std::string> notes = imp.notes;
  profile.fits = calibrate::fit_link_groups(imp.rows, {}, notes);
  if (profile.fits.empty()) return 0;  // `calibrate import` stops here with an InputError
  profile.sweep.csv = "fuzz.csv";
  (void)io::parse_calibration_profile(io::write_calibration_profile_yaml(profile), "written.yaml");
  return 0;
}
