#pragma once
// Tearing testbeds down when the process is interrupted.
//
// install_signal_teardown() is for programs that own a Testbed and do not handle signals
// themselves: on SIGINT, SIGTERM or SIGHUP it runs every registered plan (each live testbed's
// removal; a live run's scratch folder's, hw/runner), then passes the signal on (to the handler
// installed before, or the default action, so the process still ends by that signal). A signal
// the process inherited as ignored stays ignored: nothing is torn down. Programs with their own
// signal loop (the adaptsim-testbed tool) instead block the signals and call Testbed::teardown()
// themselves.
//
// A signal handler may only use async-signal-safe calls, so each testbed registers an
// EmergencyTeardown built in advance: argv arrays for `ip link del` / `ip netns del` and the
// state file's path, run by _Fork + execve + waitpid. A signal that arrives while a testbed is
// being created or torn down is held back until that finishes (then delivered again), so the
// handler never sees half-built records.
//
// What the handler cannot do: kill processes left inside the namespaces (finding them means
// parsing `ip netns pids`); their namespaces' interfaces are removed all the same.

#include <atomic>
#include <memory>
#include <string>
#include <vector>

namespace adaptsim::testbed {

void install_signal_teardown();

// The pre-built teardown of one testbed (used by Testbed; exposed for tests).
class EmergencyTeardown {
 public:
  EmergencyTeardown(const std::string& ip_path,
                    const std::vector<std::vector<std::string>>& commands, std::string state_path);
  // Runs every command and removes the state file; async-signal-safe.
  void run() const noexcept;

 private:
  std::vector<std::vector<std::string>> commands_;
  std::vector<std::vector<char*>> argv_;
  std::string ip_path_;
  std::string state_path_;
};

// Registry of live testbeds, read by the handler. register_emergency returns a slot (or -1 when
// all 64 slots are taken: that testbed is then only cleaned up by stale detection).
int register_emergency(const EmergencyTeardown* plan);
// Unregisters; waits if the handler is running this plan right now. Returns false when the
// handler already ran it (the objects are gone).
bool unregister_emergency(int slot);

// Brackets create/teardown: signals handled meanwhile are re-raised by the outermost exit.
class SignalHoldoff {
 public:
  SignalHoldoff();
  ~SignalHoldoff();
  SignalHoldoff(const SignalHoldoff&) = delete;
  SignalHoldoff& operator=(const SignalHoldoff&) = delete;
};

}  // namespace adaptsim::testbed
