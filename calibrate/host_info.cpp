#include "calibrate/host_info.h"

#include <adaptsim/version.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <ctime>
#include <fstream>
#include <sstream>

#include "hw/tcp/mpi_rendezvous.h"
#include "sim/core/strings.h"
#if ADAPTSIM_CALIBRATE_HAVE_CUDA
#include "hw/cuda/cuda_device.h"
#endif

namespace adaptsim::calibrate {
std::string cpu_model_from_cpuinfo(const std::string& cpuinfo) {
  // x86: "model name"; ARM: "Hardware" or none; POWER: "cpu"; MIPS: "cpu model".
  for (const char* key : {"model name", "Hardware", "cpu model"}) {
    std::istringstream in(cpuinfo);
    std::string line;
    while (std::getline(in, line)) {
      const auto colon = line.find(':');
      if (colon == std::string::npos) continue;
      if (trim(std::string_view(line).substr(0, colon)) == key) {
        const std::string value(trim(std::string_view(line).substr(colon + 1)));
        if (!value.empty()) return value;
      }
    }
  }
  return "unknown";
}

io::ProfileHost this_host() {
  io::ProfileHost h;
  char name[256] = {};
  h.hostname = ::gethostname(name, sizeof name - 1) == 0 ? name : "unknown";
  std::ifstream in("/proc/cpuinfo");
  std::stringstream text;
  text << in.rdbuf();
  h.cpu_model = cpu_model_from_cpuinfo(text.str());
  const long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
  h.cores = cores > 0 ? static_cast<int>(cores) : 0;
  struct utsname u {};
  h.kernel =
      ::uname(&u) == 0 ? std::string(u.sysname) + " " + u.release + " " + u.machine : "unknown";
  return h;
}

std::string compiler_version() {
#if defined(__clang__)
  return "Clang " __clang_version__;
#elif defined(__GNUC__)
  return "GCC " __VERSION__;
#else
  return "unknown";
#endif
}

io::ProfileSoftware this_software() {
  io::ProfileSoftware s;
  s.adaptsim_version = ADAPTSIM_VERSION;
  s.adaptsim_commit = ADAPTSIM_GIT_COMMIT;
  s.compiler = compiler_version();
  s.mpi_version = tcp::mpi_library_version();
#if ADAPTSIM_CALIBRATE_HAVE_CUDA
  if (hw::probe_cuda().device_count > 0) s.cuda_driver_version = hw::cuda_driver_version();
#endif
  return s;
}

std::string utc_now_iso8601() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string command_line(int argc, const char* const* argv) {
  std::string out;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool plain =
        !arg.empty() && arg.find_first_not_of(
                            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                            "-_./:=,+@%") == std::string::npos;
    if (!out.empty()) out += ' ';
    if (plain) {
      out += arg;
    } else {
      out += '\'';
      for (char c : arg) {
        if (c == '\'') {
          out += "'\\''";
        } else {
          out += c;
        }
      }
      out += '\'';
    }
  }
  return out;
}

}  // namespace adaptsim::calibrate
