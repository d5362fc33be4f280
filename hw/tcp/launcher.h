#pragma once
// The local launcher: one parent process starts N workers on this machine (fork + exec), hands
// each its rank and the cluster through the environment, reaps them, and never leaves one
// running.
//
// The parent binds every rank's listening socket itself (port 0 on 127.0.0.1 by default) before
// forking, and each worker inherits its own socket: the "port plan" cannot race with any other
// process for a port, so tests can launch many clusters at once.
//
// Failure handling: when a worker fails (non-zero exit or a signal), the others get grace_ns to
// notice (they fail fast on the lost connection, each with a message naming the dead peer) and
// exit on their own; whoever is still running then is killed. Workers also die with the parent
// (PR_SET_PDEATHSIG), and SIGINT/SIGTERM/SIGHUP to the parent kill and reap them.

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "hw/tcp/cluster_spec.h"
#include "hw/tcp/socket_util.h"
#include "sim/core/time.h"

namespace adaptsim::tcp {

// Environment of a launched worker.
inline constexpr const char* kEnvRank = "ADAPTSIM_TCP_RANK";
inline constexpr const char* kEnvSize = "ADAPTSIM_TCP_SIZE";
inline constexpr const char* kEnvAddresses = "ADAPTSIM_TCP_ADDRESSES";  // host:port,... by rank
inline constexpr const char* kEnvListenFd = "ADAPTSIM_TCP_LISTEN_FD";   // inherited listener

struct LaunchOptions {
  int procs = 1;
  // The program every worker runs and its argv (argv[0] included; empty: {program}).
  std::string program = "/proc/self/exe";
  std::vector<std::string> argv;
  // Where the workers listen.
  std::string host = "127.0.0.1";
  // After the first worker failure, how long the others may take to exit on their own before
  // they are killed. Workers notice a dead peer at once (EOF), so this only bounds hung ones.
  TimeNs grace_ns = 10 * kNsPerSecond;
};

struct WorkerExit {
  int rank = 0;
  int pid = 0;
  int exit_code = -1;  // when it exited
  int signal = 0;      // when a signal ended it
  bool killed_by_launcher = false;
  int exit_order = 0;  // 0 for the first worker reaped, 1 for the next, ...
  bool ok() const { return signal == 0 && exit_code == 0; }
  // "rank 2 (pid 4242) was killed by signal 9 (Killed)", "rank 0 (pid 4240) exited with code 1".
  std::string describe() const;
};

struct LaunchResult {
  std::vector<WorkerExit> workers;  // by rank
  bool interrupted = false;         // the launcher got SIGINT/SIGTERM/SIGHUP
  bool ok() const;
  // One line naming every failed worker: those killed by a signal first (the likely root cause),
  // then in the order they were reaped.
  std::string summary() const;
};

// Starts options.procs workers and waits for all of them. Throws InputError for procs < 1 and
// RuntimeFailure when the sockets or processes cannot be created (then nothing is left running).
// Call it before the process starts any thread (it forks).
LaunchResult launch_local(const LaunchOptions& options);

// The usual use: this same program, with its own command line, as `procs` workers (the workers
// see the launched-worker environment and take that rendezvous instead of launching again).
LaunchResult launch_self(int procs, int argc, char** argv, TimeNs grace_ns);

// Lower level, shared with hw/live's prefixed launcher: fork + exec of prepared commands and the
// supervision above (reaping, grace period after the first failure, signals, PDEATHSIG).
struct WorkerCommand {
  std::string program;            // path to exec (already resolved)
  std::vector<std::string> argv;  // argv[0] included
  std::vector<std::string> env;   // the whole environment
  UniqueFd inherit;               // kept open across exec in this worker only; closed in the parent
};
struct SuperviseOptions {
  TimeNs grace_ns = 10 * kNsPerSecond;  // as LaunchOptions::grace_ns
  // Each worker leads its own process group, killed as a whole (wrappers such as `sudo` or a
  // shell that fork leave nothing behind).
  bool own_process_group = false;
  std::string name = "launcher";  // in the exec-failure message
  // Called every poll period while workers run, and once more when the last one has exited,
  // with which of the workers started so far still run (by their index in the result): commands
  // to start now, appended to the result in that order (an elastic run's runner starts a process
  // for each worker a new cluster adds, or, for a restart, every worker once the old ones have
  // exited). Null: a fixed set of workers. A worker that exits with code 0 before the others is
  // normal (it left the cluster).
  std::function<std::vector<WorkerCommand>(const std::vector<bool>& alive)> more;
  // A failed worker does not end the others after the grace period: they are expected to carry on
  // without it (an elastic run's failure detector). The result still reports it.
  bool others_carry_on = false;
};
// Starts every command and waits for all of them; results by rank. Throws RuntimeFailure when a
// process cannot be created (then nothing is left running). Call before starting any thread.
LaunchResult spawn_and_supervise(std::vector<WorkerCommand> workers,
                                 const SuperviseOptions& options);
// This process's environment without the launched-worker variables (kEnv*), so a worker started
// by another launcher does not take the launched-worker rendezvous.
std::vector<std::string> environment_without_launch_variables();

// Worker side.
struct LaunchedWorker {
  ClusterSpec cluster;
  UniqueFd listener;
};
// The cluster and listening socket a launcher passed down, or nullopt when this process was not
// started by launch_local(). Throws InputError when the environment is malformed.
std::optional<LaunchedWorker> launched_worker_from_env();

}  // namespace adaptsim::tcp
