#pragma once
// Provenance of a calibration profile: the machine it was measured on, the software that
// measured it, when, and the exact command.

#include <string>

#include "sim/io/calibration_profile.h"

namespace adaptsim::calibrate {

// hostname (gethostname), CPU model (/proc/cpuinfo "model name", else "Hardware"/"cpu model";
// "unknown" when absent), online CPUs (sysconf), kernel ("Linux 6.1.0-18-amd64 x86_64", uname).
io::ProfileHost this_host();

// The adaptsim version and commit from the generated <adaptsim/version.h>, the compiler that
// built this binary, the MPI library it links (empty without MPI), and the CUDA driver version
// when a GPU is visible (CUDA builds); NCCL and the CUDA runtime are left to the GPU mode.
io::ProfileSoftware this_software();

// The compiler of this build: "GCC 12.2.0", "Clang 16.0.6 ..."; "unknown" for others.
std::string compiler_version();

// Now, as ISO 8601 UTC: "2026-11-23T06:10:00Z".
std::string utc_now_iso8601();

// argv joined by spaces, each argument quoted for a POSIX shell when it needs it, so that the
// line can be pasted back into a shell.
std::string command_line(int argc, const char* const* argv);

// The model name line of a /proc/cpuinfo text ("unknown" when none).
std::string cpu_model_from_cpuinfo(const std::string& cpuinfo);

}  // namespace adaptsim::calibrate
