#pragma once
// Helpers of the hw/tcp tests: clusters of ranks as threads in this process (each rank its own
// Runtime: loop thread + transport over loopback), and running the adaptsim-tcp tool as real
// processes with a deadline.

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "hw/tcp/runtime.h"

namespace adaptsim::tcp::testing {

// Short timeouts, so that no test can hang for long; log lines captured instead of printed.
struct LogCapture {
  std::mutex mu;
  std::vector<std::string> lines;
  bool contains(const std::string& needle);
};
RuntimeOptions test_options(const std::shared_ptr<LogCapture>& log = nullptr);

// n ranks on 127.0.0.1, connected by the constructor (ports picked by the kernel).
class ThreadCluster {
 public:
  // options_for_rank: per-rank options (e.g. fault injection on one rank); null = test_options().
  // connect_now = false leaves the connecting to connect_all() (tests that poke at the listening
  // ports first).
  explicit ThreadCluster(int n, std::vector<int> host_of_rank = {},
                         std::function<RuntimeOptions(int rank)> options_for_rank = nullptr,
                         bool connect_now = true);

  int size() const { return static_cast<int>(runtimes_.size()); }
  Runtime& rank(int r) { return *runtimes_.at(static_cast<std::size_t>(r)); }
  SocketAddress address(int r) const { return spec_.addresses.at(static_cast<std::size_t>(r)); }
  const ClusterSpec& spec() const { return spec_; }
  // Destroys rank r's runtime (its sockets close without a goodbye if it failed or never ran).
  void destroy(int r) { runtimes_.at(static_cast<std::size_t>(r)).reset(); }

  void connect_all();
  // Runs fn(r, runtime) on one thread per rank; returns each rank's exception text ("" = none).
  std::vector<std::string> run_all(const std::function<void(int, Runtime&)>& fn);

 private:
  ClusterSpec spec_;
  std::vector<std::unique_ptr<Runtime>> runtimes_;
};

// A child process with stdout and stderr in temporary files.
struct ProcessResult {
  int exit_code = -1;  // -1 when killed by a signal
  int signal = 0;
  bool timed_out = false;  // killed by the deadline
  double wall_s = 0;
  std::string out;
  std::string err;
};

class ChildProcess {
 public:
  // Starts argv[0] with argv and the current environment plus `env` ("NAME=value").
  ChildProcess(const std::vector<std::string>& argv, const std::vector<std::string>& env = {});
  ~ChildProcess();  // kills and reaps the process group if still running
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  int pid() const { return pid_; }
  // Waits until exit or `timeout_s` (then kills the whole process group).
  ProcessResult wait(double timeout_s);

 private:
  int pid_ = -1;
  bool reaped_ = false;
  std::string out_path_, err_path_;
  double start_s_ = 0;
};

ProcessResult run_process(const std::vector<std::string>& argv, double timeout_s,
                          const std::vector<std::string>& env = {});
// Exit code, signal, time, stdout and stderr of a run, for a failing check's message.
std::string diagnostics(const ProcessResult& r);

// Path of the adaptsim-tcp binary under test.
std::string tool_path();
// A fresh directory under the system temp dir.
std::string make_temp_dir();
// `n` TCP ports that were free a moment ago on 127.0.0.1.
std::vector<int> free_ports(int n);
// Live (non-zombie) processes whose environment contains `marker` ("NAME=value").
std::vector<int> processes_with_env(const std::string& marker);
// A unique "ADAPTSIM_TEST_MARKER=..." for tagging the processes of one test.
std::string unique_marker();
// Lines of a CSV file, split on commas (header first).
std::vector<std::vector<std::string>> read_csv(const std::string& path);
double now_s();

}  // namespace adaptsim::tcp::testing
