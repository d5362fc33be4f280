#pragma once
// The command-line face of rendezvous.h, shared by adaptsim-tcp, adaptsim-live and calibrate:
// the same option names and help in every tool. Header-only so hw/tcp does not depend on CLI11.

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

#include "hw/tcp/rendezvous.h"

namespace adaptsim::tcp {

// --procs --hosts --rank --secret-file --bind --ranks-per-host, in the help group `group`.
inline void add_rendezvous_options(CLI::App& app, RendezvousOptions& r,
                                   const std::string& group = "Rendezvous") {
  app.add_option("--procs", r.procs, "Start N worker processes on this machine")->group(group);
  app.add_option("--hosts", r.hosts, "Host list host:port,... in rank order (with --rank)")
      ->group(group);
  app.add_option("--rank", r.rank, "This process's rank in --hosts")->group(group);
  app.add_option("--secret-file", r.secret_file,
                 "File holding the job's secret, mode 600 (a host list needs it or "
                 "ADAPTSIM_JOB_SECRET; --procs and mpirun make a random one)")
      ->group(group);
  app.add_option("--bind", r.bind_host, "Address to listen on")->group(group);
  app.add_option("--ranks-per-host", r.ranks_per_host,
                 "Treat rank r as being on host r/K (0: group ranks by address)")
      ->group(group);
}

// --congestion-control NAME: TCP_CONGESTION of every connection (empty: the system's default).
inline void add_congestion_control_option(CLI::App& app, std::string& name,
                                          const std::string& group = "Rendezvous") {
  app.add_option("--congestion-control", name,
                 "TCP congestion control of every connection, e.g. cubic (default: the system's)")
      ->group(group);
}

// Hidden test hooks: rank `rank` SIGKILLs itself after `after_sends` sent messages.
inline void add_fault_hook_options(CLI::App& app, int& rank, std::uint64_t& after_sends) {
  app.add_option("--fault-kill-rank", rank, "Test hook: this rank dies mid-run")->group("");
  app.add_option("--fault-after-sends", after_sends, "Test hook: ... after N sent messages")
      ->group("");
}

}  // namespace adaptsim::tcp
