#include "hw/live/rank_launcher.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "hw/tcp/cluster_spec.h"
#include "hw/tcp/socket_util.h"
#include "sim/core/error.h"

extern char** environ;

namespace adaptsim::live {
namespace {

// Set by the launcher's signal handler (static storage is all a handler can reach); live only
// inside launch_commands(), like hw/tcp's launcher flag.
volatile sig_atomic_t g_interrupted = 0;

extern "C" void on_launch_signal(int) {
  g_interrupted = 1;
}

constexpr auto kPollPeriod = std::chrono::milliseconds(5);

// The variables through which hw/tcp's launcher hands a worker its cluster: a worker of ours must
// not inherit them, or it would take the launched-worker rendezvous instead of its host list.
bool is_launch_variable(const char* entry) {
  for (const char* name :
       {tcp::kEnvRank, tcp::kEnvSize, tcp::kEnvToken, tcp::kEnvAddresses, tcp::kEnvListenFd}) {
    const std::size_t n = std::strlen(name);
    if (std::strncmp(entry, name, n) == 0 && entry[n] == '=') return true;
  }
  return false;
}

std::vector<char*> c_strings(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (std::string& s : v)
    out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

std::string find_program(const std::string& name) {
  if (name.find('/') != std::string::npos) {
    if (::access(name.c_str(), X_OK) != 0) {
      throw InputError("cannot execute \"" + name + "\": " + tcp::errno_text(errno));
    }
    return name;
  }
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/local/bin:/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  throw InputError("program \"" + name + "\" not found in PATH");
}

}  // namespace

std::vector<std::string> expand_prefix_template(const std::string& template_text, int rank) {
  std::vector<std::string> out;
  std::stringstream ss(template_text);
  std::string word;
  const std::string rank_text = std::to_string(rank);
  while (ss >> word) {
    for (std::size_t at = word.find("{rank}"); at != std::string::npos;
         at = word.find("{rank}", at + rank_text.size())) {
      word.replace(at, 6, rank_text);
    }
    out.push_back(word);
  }
  return out;
}

std::vector<RankPlacement> load_rank_placements(const std::filesystem::path& path) {
  const std::string label = path.string();
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(label + ": cannot read the rank prefix file");
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(label + ": invalid JSON: " + e.what());
  }
  const nlohmann::json* ranks = &j;
  if (j.is_object()) {
    if (!j.contains("ranks") || j.size() != 1) {
      throw InputError(label + ": expected {\"ranks\": [...]} or a list of prefixes");
    }
    ranks = &j.at("ranks");
  }
  if (!ranks->is_array() || ranks->empty()) {
    throw InputError(label + ": expected a non-empty list with one entry per rank");
  }
  auto string_list = [&](const nlohmann::json& v, const std::string& where) {
    std::vector<std::string> out;
    if (!v.is_array()) throw InputError(label + ": " + where + ": expected a list of strings");
    for (const auto& s : v) {
      if (!s.is_string()) throw InputError(label + ": " + where + ": expected a list of strings");
      out.push_back(s.get<std::string>());
    }
    return out;
  };
  std::vector<RankPlacement> out;
  for (std::size_t r = 0; r < ranks->size(); ++r) {
    const nlohmann::json& e = (*ranks)[r];
    const std::string where = "rank " + std::to_string(r);
    RankPlacement p;
    if (e.is_array()) {
      p.prefix = string_list(e, where);
    } else if (e.is_object()) {
      for (auto it = e.begin(); it != e.end(); ++it) {
        const std::string& key = it.key();
        if (key == "prefix") {
          p.prefix = string_list(it.value(), where + " 'prefix'");
        } else if (key == "address" || key == "bind") {
          if (!it.value().is_string()) {
            throw InputError(label + ": " + where + " '" + key + "': expected a string");
          }
          (key == "address" ? p.address : p.bind) = it.value().get<std::string>();
        } else {
          throw InputError(label + ": " + where + ": unknown key '" + key +
                           "' (known: prefix, address, bind)");
        }
      }
    } else {
      throw InputError(label + ": " + where + ": expected a list of strings or an object");
    }
    if (!p.address.empty()) tcp::parse_host_list(p.address);  // validates "host:port"
    out.push_back(std::move(p));
  }
  return out;
}

void assign_addresses(std::vector<RankPlacement>& ranks, const std::string& host_list) {
  if (!host_list.empty()) {
    const std::vector<tcp::SocketAddress> hosts = tcp::parse_host_list(host_list);
    if (hosts.size() != ranks.size()) {
      throw InputError("--hosts lists " + std::to_string(hosts.size()) + " addresses for " +
                       std::to_string(ranks.size()) + " ranks");
    }
    for (std::size_t r = 0; r < ranks.size(); ++r) {
      if (ranks[r].address.empty()) ranks[r].address = hosts[r].str();
    }
    return;
  }
  // Hold every port until all are picked, so no two ranks get the same one.
  std::vector<tcp::UniqueFd> held;
  for (RankPlacement& p : ranks) {
    if (!p.address.empty()) continue;
    held.push_back(tcp::listen_tcp({"127.0.0.1", 0}));
    p.address = tcp::local_address(held.back().get()).str();
  }
}

std::string host_list_of(const std::vector<RankPlacement>& ranks) {
  std::string out;
  for (const RankPlacement& p : ranks)
    out += (out.empty() ? "" : ",") + p.address;
  return out;
}

std::string self_executable() {
  std::error_code ec;
  const std::filesystem::path p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw RuntimeFailure("cannot resolve /proc/self/exe: " + ec.message());
  return p.string();
}

tcp::LaunchResult launch_commands(const CommandLaunchOptions& options) {
  const int n = static_cast<int>(options.commands.size());
  if (n == 0) throw InputError("no rank to launch");
  // Everything exec needs is built before fork: the child only calls async-signal-safe functions.
  std::vector<std::vector<std::string>> argv = options.commands;
  std::vector<std::string> programs;
  for (auto& a : argv) {
    if (a.empty()) throw InputError("empty command");
    programs.push_back(find_program(a.front()));
  }
  std::vector<std::vector<char*>> argv_c;
  for (auto& a : argv)
    argv_c.push_back(c_strings(a));
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    if (!is_launch_variable(*e)) env.emplace_back(*e);
  }
  std::vector<char*> env_c = c_strings(env);

  g_interrupted = 0;
  struct sigaction action {};
  action.sa_handler = on_launch_signal;
  sigemptyset(&action.sa_mask);
  struct sigaction old_int {
  }, old_term{}, old_hup{};
  sigaction(SIGINT, &action, &old_int);
  sigaction(SIGTERM, &action, &old_term);
  sigaction(SIGHUP, &action, &old_hup);

  tcp::LaunchResult result;
  result.workers.resize(static_cast<std::size_t>(n));
  std::vector<bool> alive(static_cast<std::size_t>(n), false);
  const pid_t parent = ::getpid();
  auto kill_alive = [&] {
    for (int r = 0; r < n; ++r) {
      auto& w = result.workers[static_cast<std::size_t>(r)];
      if (alive[static_cast<std::size_t>(r)] && !w.killed_by_launcher) {
        ::kill(-w.pid, SIGKILL);  // its whole process group: wrappers and what they started
        ::kill(w.pid, SIGKILL);
        w.killed_by_launcher = true;
      }
    }
  };

  std::string spawn_error;
  for (int r = 0; r < n; ++r) {
    const pid_t pid = ::fork();
    if (pid < 0) {
      spawn_error = "fork: " + tcp::errno_text(errno);
      break;
    }
    if (pid == 0) {
      ::setpgid(0, 0);
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(1);
      ::signal(SIGINT, SIG_DFL);
      ::signal(SIGTERM, SIG_DFL);
      ::signal(SIGHUP, SIG_DFL);
      ::execve(programs[static_cast<std::size_t>(r)].c_str(),
               argv_c[static_cast<std::size_t>(r)].data(), env_c.data());
      const char msg[] = "adaptsim-live launcher: exec failed\n";
      [[maybe_unused]] ssize_t w = ::write(2, msg, sizeof msg - 1);
      ::_exit(127);
    }
    ::setpgid(pid, pid);  // also here: whichever of parent and child runs first
    auto& w = result.workers[static_cast<std::size_t>(r)];
    w.rank = r;
    w.pid = pid;
    alive[static_cast<std::size_t>(r)] = true;
  }
  if (!spawn_error.empty()) kill_alive();

  using Clock = std::chrono::steady_clock;
  std::optional<Clock::time_point> first_failure;
  int running = static_cast<int>(std::count(alive.begin(), alive.end(), true));
  int next_exit_order = 0;
  while (running > 0) {
    bool reaped = false;
    for (int r = 0; r < n; ++r) {
      if (!alive[static_cast<std::size_t>(r)]) continue;
      auto& w = result.workers[static_cast<std::size_t>(r)];
      int status = 0;
      const pid_t got = ::waitpid(w.pid, &status, WNOHANG);
      if (got == 0) continue;
      if (got < 0 && errno == EINTR) continue;
      alive[static_cast<std::size_t>(r)] = false;
      w.exit_order = next_exit_order++;
      --running;
      reaped = true;
      if (got < 0) {
        w.exit_code = 127;
      } else if (WIFEXITED(status)) {
        w.exit_code = WEXITSTATUS(status);
      } else if (WIFSIGNALED(status)) {
        w.signal = WTERMSIG(status);
      }
      if (!w.ok()) {
        if (!first_failure) first_failure = Clock::now();
        ::kill(-w.pid, SIGKILL);  // what a failed wrapper may have left in its group
      }
    }
    if (g_interrupted) {
      result.interrupted = true;
      kill_alive();
    }
    if (first_failure &&
        Clock::now() - *first_failure > std::chrono::nanoseconds(options.grace_ns)) {
      kill_alive();
    }
    if (!reaped && running > 0) std::this_thread::sleep_for(kPollPeriod);
  }

  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  sigaction(SIGHUP, &old_hup, nullptr);
  if (!spawn_error.empty()) throw RuntimeFailure("launching workers failed: " + spawn_error);
  return result;
}

}  // namespace adaptsim::live
