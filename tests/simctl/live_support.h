#pragma once
// Helpers of the `simctl run --live` tests: simctl as a child process with its own TMPDIR (the
// live backend's scratch folders, and so every adaptsim-live command line, contain it: a test
// finds its own processes among others'), scenario files, the CSV, and free loopback ports.

#include <sys/types.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "sim/core/time.h"
#include "tests/support/background_process.h"

namespace adaptsim::simctl_test {

// simctl started in the background with TMPDIR=`tmpdir`, stdout and stderr into one file.
class SimctlProcess {
 public:
  SimctlProcess(const std::vector<std::string>& args, const std::filesystem::path& tmpdir);

  pid_t pid() const { return process_.pid(); }
  std::string output() const { return process_.output(); }
  // Exit code, 128 + signal when a signal ended it, -1 when still running after `timeout_s`.
  int wait(double timeout_s) { return process_.wait(seconds_to_ns_ceil(timeout_s)); }
  void signal(int sig) { process_.signal(sig); }

 private:
  test_support::BackgroundProcess process_;  // SIGKILLed and reaped by its destructor
};

// A small live training scenario: cloud-vms (one GPU per server), the MobileNetV2 gradient set
// (3.5 M float32 parameters, 14 MB a step) with the half-K80's compute scaled down so a step
// takes tens of milliseconds.
struct LiveScenario {
  int servers = 4;
  std::string nic_bandwidth = "1Gbps";
  int warmup_steps = 1;
  int steps = 2;
  double compute_scale = 0.05;
  std::vector<std::string> systems = {
      "{label: mbts, kind: kungfu, strategy: MULTI_BINARY_TREE_STAR}",
      "{label: horovod, kind: horovod}"};
  std::string live;            // the `live:` section's entries, YAML flow style without braces
  std::string workload_extra;  // more `workload:` lines, each indented by two spaces
  std::string text() const;
};

// `simctl run [--live] SCENARIO -o DIR/<sim|live> --no-progress` and then `extra`, where each
// "{}" in an argument becomes "sim" or "live" (per-mode output folders: "{}-tl").
std::vector<std::string> sim_or_live_args(bool live, const std::filesystem::path& scenario,
                                          const std::filesystem::path& dir,
                                          const std::vector<std::string>& extra);

// A fresh folder under /tmp named after the test (removed first if it exists).
std::filesystem::path scratch_dir(const std::string& name);

// Rows of a CSV file as column -> value (no quoting: the training CSV has none).
std::vector<std::map<std::string, std::string>> read_csv(const std::filesystem::path& path);

// Pids of processes (other than this one) whose command line contains `text`.
std::vector<pid_t> processes_mentioning(const std::string& text);

// `n` distinct TCP ports free on 127.0.0.1 right now (another process could take one later).
std::vector<int> free_loopback_ports(int n);

// Seconds since an arbitrary epoch (steady clock).
double now_s();
void sleep_ms(int ms);

// Polls `condition` every 50 ms until it holds or `timeout_s` passes; returns its last value.
template <typename F>
bool eventually(F condition, double timeout_s) {
  const double deadline = now_s() + timeout_s;
  while (true) {
    if (condition()) return true;
    if (now_s() > deadline) return false;
    sleep_ms(50);
  }
}

}  // namespace adaptsim::simctl_test
