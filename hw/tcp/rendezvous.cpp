#include "hw/tcp/rendezvous.h"

#include <cstdlib>

#include "hw/tcp/launcher.h"
#include "hw/tcp/mpi_rendezvous.h"
#include "sim/core/error.h"

namespace adaptsim::tcp {
namespace {

void apply_host_layout(const RendezvousOptions& o, ClusterSpec& cluster) {
  if (o.ranks_per_host > 0) cluster.host_of_rank = hosts_by_block(cluster.size(), o.ranks_per_host);
}

}  // namespace

std::optional<JobSecret> configured_secret(const RendezvousOptions& o) {
  if (!o.secret_file.empty()) return JobSecret::from_file(o.secret_file);
  if (const char* hex = std::getenv(kEnvSecret)) {
    return JobSecret::from_hex(hex, std::string("environment variable ") + kEnvSecret);
  }
  return std::nullopt;
}

RendezvousMode choose_rendezvous(const RendezvousOptions& o) {
  if (std::getenv(kEnvRank) != nullptr) return RendezvousMode::kLaunchedWorker;
  if (o.procs < 0) throw InputError("--procs must be at least 1, got " + std::to_string(o.procs));
  if (o.procs > 0) {
    if (!o.hosts.empty()) throw InputError("--procs and --hosts exclude each other");
    return RendezvousMode::kLauncher;
  }
  if (!o.hosts.empty()) {
    if (o.rank < 0) throw InputError("--hosts needs --rank (this process's index in the list)");
    return RendezvousMode::kHostList;
  }
  if (o.rank >= 0) throw InputError("--rank needs --hosts");
  if (launched_by_mpirun()) return RendezvousMode::kMpi;
  throw InputError(
      "say where the ranks are: --procs N (local processes), --hosts LIST --rank R, or start "
      "under mpirun");
}

int rank_before_connect(const RendezvousOptions& o, RendezvousMode mode) {
  switch (mode) {
    case RendezvousMode::kLaunchedWorker: {
      const char* r = std::getenv(kEnvRank);
      return r ? std::atoi(r) : -1;
    }
    case RendezvousMode::kLauncher:
      return -1;
    case RendezvousMode::kHostList:
      return o.rank;
    case RendezvousMode::kMpi:
      return mpirun_rank_from_env().value_or(-1);
  }
  return -1;
}

std::unique_ptr<Runtime> connect_runtime(const RendezvousOptions& o, RendezvousMode mode,
                                         const RuntimeOptions& runtime) {
  switch (mode) {
    case RendezvousMode::kLaunchedWorker: {
      std::optional<LaunchedWorker> w = launched_worker_from_env();
      apply_host_layout(o, w->cluster);
      auto rt = std::make_unique<Runtime>(std::move(w->listener), runtime);
      rt->connect(w->cluster);
      return rt;
    }
    case RendezvousMode::kHostList: {
      ClusterSpec cluster;
      cluster.addresses = parse_host_list(o.hosts);
      cluster.rank = o.rank;
      if (o.rank >= cluster.size()) {
        throw InputError("--rank " + std::to_string(o.rank) + " is outside the host list of " +
                         std::to_string(cluster.size()) + " entries");
      }
      const std::optional<JobSecret> secret = configured_secret(o);
      if (!secret) {
        throw InputError(
            std::string("a host-list job needs its secret: --secret-file FILE (the same "
                        "file on every host; e.g. (umask 077; head -c 32 /dev/urandom "
                        "> job.secret)) or the environment variable ") +
            kEnvSecret);
      }
      cluster.secret = *secret;
      apply_host_layout(o, cluster);
      const SocketAddress& mine = cluster.addresses[static_cast<std::size_t>(o.rank)];
      auto rt = std::make_unique<Runtime>(
          SocketAddress{o.bind_host.empty() ? mine.host : o.bind_host, mine.port}, runtime);
      rt->connect(cluster);
      return rt;
    }
    case RendezvousMode::kMpi: {
      // The job's interface, not every address, unless --bind asks for that.
      const std::string bind = o.bind_host.empty() ? default_advertised_host() : o.bind_host;
      auto rt = std::make_unique<Runtime>(SocketAddress{bind, 0}, runtime);
      const bool wildcard = bind == "0.0.0.0" || bind == "::";
      const SocketAddress advertised{wildcard ? default_advertised_host() : bind,
                                     rt->listen_address().port};
      ClusterSpec cluster = mpi_rendezvous(advertised, configured_secret(o), o.keep_mpi);
      apply_host_layout(o, cluster);
      rt->connect(cluster);
      return rt;
    }
    case RendezvousMode::kLauncher:
      break;
  }
  throw std::logic_error("connect_runtime: the launcher mode has no runtime");
}

}  // namespace adaptsim::tcp
