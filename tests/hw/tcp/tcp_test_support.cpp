#include "tests/hw/tcp/tcp_test_support.h"

#include "tests/support/csv_rows.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "hw/tcp/socket_util.h"
#include "tests/support/csv_rows.h"

extern char** environ;

namespace adaptsim::tcp::testing {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

bool LogCapture::contains(const std::string& needle) {
  std::lock_guard<std::mutex> lock(mu);
  for (const std::string& l : lines) {
    if (l.find(needle) != std::string::npos) return true;
  }
  return false;
}

RuntimeOptions test_options(const std::shared_ptr<LogCapture>& log) {
  RuntimeOptions o;
  o.transport.connect_timeout_ns = 10 * kNsPerSecond;
  o.transport.handshake_timeout_ns = 2 * kNsPerSecond;
  o.shutdown_timeout_ns = 2 * kNsPerSecond;
  // Many runtimes live in one test process: keep their buffer caches small.
  o.transport.pool_cache_bytes = 64 << 20;
  if (log) {
    o.transport.log = [log](const std::string& line) {
      std::lock_guard<std::mutex> lock(log->mu);
      log->lines.push_back(line);
    };
  } else {
    o.transport.log = [](const std::string&) {};
  }
  return o;
}

ThreadCluster::ThreadCluster(int n, std::vector<int> host_of_rank,
                             std::function<RuntimeOptions(int)> options_for_rank,
                             bool connect_now) {
  spec_.secret = JobSecret::random();
  spec_.host_of_rank = std::move(host_of_rank);
  for (int r = 0; r < n; ++r) {
    RuntimeOptions o = options_for_rank ? options_for_rank(r) : test_options();
    runtimes_.push_back(std::make_unique<Runtime>(SocketAddress{"127.0.0.1", 0}, o));
    spec_.addresses.push_back(runtimes_.back()->listen_address());
  }
  if (connect_now) connect_all();
}

void ThreadCluster::connect_all() {
  const std::vector<std::string> errors = run_all([this](int r, Runtime& rt) {
    ClusterSpec s = spec_;
    s.rank = r;
    rt.connect(s);
  });
  for (const std::string& e : errors) {
    if (!e.empty()) throw std::runtime_error("cluster connect failed: " + e);
  }
}

std::vector<std::string> ThreadCluster::run_all(const std::function<void(int, Runtime&)>& fn) {
  std::vector<std::string> errors(runtimes_.size());
  std::vector<std::thread> threads;
  for (std::size_t r = 0; r < runtimes_.size(); ++r) {
    if (!runtimes_[r]) continue;
    threads.emplace_back([&, r] {
      try {
        fn(static_cast<int>(r), *runtimes_[r]);
      } catch (const std::exception& e) {
        errors[r] = e.what();
        if (errors[r].empty()) errors[r] = "(empty exception message)";
      }
    });
  }
  for (std::thread& t : threads)
    t.join();
  return errors;
}

// ---------------------------------------------------------------------------------------------

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string temp_file(const char* tag) {
  std::string path = (std::filesystem::temp_directory_path() /
                      (std::string("adaptsim-tcp-test-") + tag + "-XXXXXX"))
                         .string();
  const int fd = ::mkstemp(path.data());
  if (fd < 0) throw std::runtime_error("mkstemp failed");
  ::close(fd);
  return path;
}

}  // namespace

ChildProcess::ChildProcess(const std::vector<std::string>& argv,
                           const std::vector<std::string>& env) {
  out_path_ = temp_file("out");
  err_path_ = temp_file("err");
  std::vector<std::string> args = argv;
  std::vector<std::string> envs;
  for (char** e = environ; e && *e; ++e)
    envs.emplace_back(*e);
  for (const std::string& e : env)
    envs.push_back(e);
  std::vector<char*> argv_c, env_c;
  for (auto& a : args)
    argv_c.push_back(a.data());
  argv_c.push_back(nullptr);
  for (auto& e : envs)
    env_c.push_back(e.data());
  env_c.push_back(nullptr);
  const int out_fd = ::open(out_path_.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  const int err_fd = ::open(err_path_.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  start_s_ = now_s();
  pid_ = ::fork();
  if (pid_ == 0) {
    ::setpgid(0, 0);  // its own group: a timeout kills the tool and its workers together
    ::dup2(out_fd, 1);
    ::dup2(err_fd, 2);
    ::execve(argv_c[0], argv_c.data(), env_c.data());
    ::_exit(127);
  }
  ::close(out_fd);
  ::close(err_fd);
  if (pid_ < 0) throw std::runtime_error("fork failed");
  ::setpgid(pid_, pid_);
}

ChildProcess::~ChildProcess() {
  if (!reaped_ && pid_ > 0) {
    ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
  ::unlink(out_path_.c_str());
  ::unlink(err_path_.c_str());
}

ProcessResult ChildProcess::wait(double timeout_s) {
  ProcessResult r;
  int status = 0;
  for (;;) {
    const pid_t got = ::waitpid(pid_, &status, WNOHANG);
    if (got == pid_) break;
    if (now_s() - start_s_ > timeout_s) {
      r.timed_out = true;
      ::kill(-pid_, SIGKILL);
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  reaped_ = true;
  r.wall_s = now_s() - start_s_;
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  r.out = read_file(out_path_);
  r.err = read_file(err_path_);
  return r;
}

ProcessResult run_process(const std::vector<std::string>& argv, double timeout_s,
                          const std::vector<std::string>& env) {
  ChildProcess p(argv, env);
  return p.wait(timeout_s);
}

std::string diagnostics(const ProcessResult& r) {
  return "exit " + std::to_string(r.exit_code) + " signal " + std::to_string(r.signal) +
         (r.timed_out ? " TIMED OUT" : "") + " after " + std::to_string(r.wall_s) +
         " s\n--- stdout\n" + r.out + "\n--- stderr\n" + r.err;
}

std::string tool_path() {
  return ADAPTSIM_TCP_TOOL;
}

std::string make_temp_dir() {
  std::string path = (std::filesystem::temp_directory_path() / "adaptsim-tcp-test-XXXXXX").string();
  if (::mkdtemp(path.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  return path;
}

std::vector<int> free_ports(int n) {
  std::vector<UniqueFd> held;
  std::vector<int> ports;
  for (int i = 0; i < n; ++i) {
    held.push_back(listen_tcp({"127.0.0.1", 0}));
    ports.push_back(local_address(held.back().get()).port);
  }
  return ports;  // closed here; SO_REUSEADDR lets the tool bind them at once
}

std::vector<int> processes_with_env(const std::string& marker) {
  std::vector<int> pids;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return pids;
  while (dirent* d = ::readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(d->d_name, &end, 10);
    if (*end != '\0' || pid <= 0) continue;
    const std::string base = "/proc/" + std::string(d->d_name);
    const std::string stat = read_file(base + "/stat");
    const std::size_t paren = stat.rfind(')');
    if (paren == std::string::npos || paren + 2 >= stat.size() || stat[paren + 2] == 'Z') continue;
    const std::string env = read_file(base + "/environ");
    std::size_t begin = 0;
    while (begin < env.size()) {
      std::size_t end_i = env.find('\0', begin);
      if (end_i == std::string::npos) end_i = env.size();
      if (env.compare(begin, end_i - begin, marker) == 0) {
        pids.push_back(static_cast<int>(pid));
        break;
      }
      begin = end_i + 1;
    }
  }
  ::closedir(proc);
  return pids;
}

std::string unique_marker() {
  std::random_device rd;
  return "ADAPTSIM_TEST_MARKER=" + std::to_string(::getpid()) + "-" + std::to_string(rd());
}

std::vector<std::vector<std::string>> read_csv(const std::string& path) {
  return adaptsim::testing::csv_rows(path);
}

}  // namespace adaptsim::tcp::testing
