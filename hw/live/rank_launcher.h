#pragma once
// Launching ranks with a per-rank command prefix, e.g. each rank in its own network namespace:
//   rank i runs  `ip netns exec ns<i> /path/to/adaptsim-live CONFIG --hosts LIST --rank i ...`.
// hw/tcp's local launcher (launch_local) cannot do this: it binds every rank's listening socket
// in the parent, and a socket belongs to the namespace it was created in. Here every rank binds
// its own address (host-list rendezvous), so the launcher only needs the address plan.
//
// The process handling is hw/tcp's: workers are reaped, a failed worker gives the others a grace
// period before they are killed, SIGINT/SIGTERM/SIGHUP kill them all, and workers die with the
// launcher (PR_SET_PDEATHSIG, kept across a prefix that execs, such as `ip netns exec`). Each
// worker also leads its own process group, which the launcher kills as a whole, so a prefix that
// forks (`sudo`, a shell) leaves nothing behind either.

#include <filesystem>
#include <string>
#include <vector>

#include "hw/tcp/launcher.h"
#include "sim/core/time.h"

namespace adaptsim::live {

// Where and how one rank runs.
struct RankPlacement {
  std::vector<std::string> prefix;  // argv prefix ("ip", "netns", "exec", "ns0"); may be empty
  std::string address;              // "host:port" it listens on; empty: chosen by the launcher
  std::string bind;                 // --bind for this rank; empty: its address's host
};

// The network namespace a prefix runs its command in: NAME of `ip netns exec NAME`, else empty.
std::string netns_of(const std::vector<std::string>& prefix);

// `template_text` split at spaces, with every "{rank}" replaced: "ip netns exec ns{rank}".
std::vector<std::string> expand_prefix_template(const std::string& template_text, int rank);

// A JSON file with one entry per rank, either an argv prefix or an object:
//   [["ip", "netns", "exec", "ns0"], ...]
//   {"ranks": [{"prefix": ["ip", "netns", "exec", "ns0"], "address": "10.0.0.1:7000",
//               "bind": "10.0.0.1"}, ...]}
// Throws InputError naming the file and the entry.
std::vector<RankPlacement> load_rank_placements(const std::filesystem::path& path);

// Fills empty addresses: the --hosts list when given (entry per rank), else free ports on
// 127.0.0.1 (picked now; another process could take one before the rank binds it). Throws
// InputError when the counts disagree.
void assign_addresses(std::vector<RankPlacement>& ranks, const std::string& host_list);

// The host list "a:p,b:q,..." of the placements, in rank order.
std::string host_list_of(const std::vector<RankPlacement>& ranks);

struct CommandLaunchOptions {
  // Full argv of every rank (prefix + program + arguments); argv[0] is looked up in PATH when it
  // has no slash.
  std::vector<std::vector<std::string>> commands;
  TimeNs grace_ns = 10 * kNsPerSecond;  // as LaunchOptions::grace_ns
  // Added to every rank's environment ("NAME=value"), e.g. the job's secret.
  std::vector<std::string> env;
};

// Starts every command and waits for all; results by rank as hw/tcp's launcher reports them.
// Throws InputError for an empty list or a program not found, RuntimeFailure when a process
// cannot be created (then nothing is left running). Call before the process starts any thread.
tcp::LaunchResult launch_commands(const CommandLaunchOptions& options);

// The program a command's argv[0] names: itself when it has a slash (and is executable), else
// the first match on $PATH. Throws InputError naming it otherwise.
std::string resolve_program(const std::string& name);

// The absolute path of the running executable (/proc/self/exe resolved), for commands whose
// prefix execs another program first.
std::string self_executable();

}  // namespace adaptsim::live
