#include "hw/tcp/mpi_rendezvous.h"

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "sim/core/error.h"

#if ADAPTSIM_TCP_HAVE_MPI
#include <mpi.h>
#endif

namespace adaptsim::tcp {
namespace {

constexpr const char* kRankVariables[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"};

#if ADAPTSIM_TCP_HAVE_MPI
// Fixed-size slot per rank in the all-gather: "host:port" of a hostname or an IPv6 address fits.
constexpr int kAddressSlot = 300;

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw RuntimeFailure(std::string("MPI rendezvous: ") + what + ": " + std::string(text, len));
}
#endif

}  // namespace

bool launched_by_mpirun() {
  return mpirun_rank_from_env().has_value();
}

std::optional<int> mpirun_rank_from_env() {
  for (const char* name : kRankVariables) {
    const char* v = std::getenv(name);
    if (v == nullptr) continue;
    int rank = 0;
    const std::string_view s(v);
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), rank);
    if (ec == std::errc() && ptr == s.data() + s.size() && rank >= 0) return rank;
  }
  return std::nullopt;
}

bool mpi_rendezvous_available() {
  return ADAPTSIM_TCP_HAVE_MPI != 0;
}

std::string mpi_library_version() {
#if ADAPTSIM_TCP_HAVE_MPI
  // MPI 3.0: callable before MPI_Init. Open MPI's text is "Open MPI v4.1.4, package: Debian
  // OpenMPI, ident: 4.1.4, repo rev: v4.1.4, Jun 03, 2022"; MPICH's "MPICH Version: 4.0 ...".
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  if (MPI_Get_library_version(text, &len) != MPI_SUCCESS || len <= 0) return "unknown";
  std::string version(text, static_cast<std::size_t>(len));
  const std::size_t end = version.find_first_of(",\n");
  if (end != std::string::npos) version.resize(end);
  while (!version.empty() && (version.back() == ' ' || version.back() == '\0'))
    version.pop_back();
  return version.empty() ? "unknown" : version;
#else
  return "";
#endif
}

#if ADAPTSIM_TCP_HAVE_MPI

namespace {
bool kept = false;  // MPI initialised by a kept rendezvous, not yet finalised
}  // namespace

ClusterSpec mpi_rendezvous(const SocketAddress& advertised, std::optional<JobSecret> secret,
                           bool keep) {
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised) {
    int provided = MPI_THREAD_SINGLE;
    check(MPI_Init_thread(nullptr, nullptr, keep ? MPI_THREAD_SERIALIZED : MPI_THREAD_SINGLE,
                          &provided),
          "MPI_Init_thread");
    if (keep && provided < MPI_THREAD_SERIALIZED) {
      throw RuntimeFailure(
          "MPI rendezvous: the MPI library gives thread level " + std::to_string(provided) +
          ", the job's MPI calls need MPI_THREAD_SERIALIZED (one thread of its own makes them)");
    }
  }
  int rank = 0, size = 0;
  check(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
  check(MPI_Comm_size(MPI_COMM_WORLD, &size), "MPI_Comm_size");
  const std::string mine = advertised.str();
  if (mine.size() >= static_cast<std::size_t>(kAddressSlot)) {
    throw RuntimeFailure("MPI rendezvous: address " + mine + " is too long");
  }
  std::vector<char> slot(kAddressSlot, '\0');
  std::memcpy(slot.data(), mine.data(), mine.size());
  std::vector<char> all(static_cast<std::size_t>(kAddressSlot) * static_cast<std::size_t>(size));
  check(MPI_Allgather(slot.data(), kAddressSlot, MPI_CHAR, all.data(), kAddressSlot, MPI_CHAR,
                      MPI_COMM_WORLD),
        "MPI_Allgather");
  SecretKey key{};
  if (rank == 0) key = (secret ? *secret : JobSecret::random()).key();
  check(MPI_Bcast(key.data(), static_cast<int>(key.size()), MPI_BYTE, 0, MPI_COMM_WORLD),
        "MPI_Bcast");
  ClusterSpec cluster;
  cluster.rank = rank;
  cluster.secret = JobSecret(key);
  for (int r = 0; r < size; ++r) {
    const char* p = all.data() + static_cast<std::size_t>(r) * kAddressSlot;
    cluster.addresses.push_back(
        parse_socket_address(std::string_view(p, strnlen(p, kAddressSlot))));
  }
  if (keep) {
    kept = true;
    return cluster;
  }
  // MPI's job is done; from here on only TCP. Every rank reaches this point together.
  check(MPI_Finalize(), "MPI_Finalize");
  return cluster;
}

void mpi_finalize() {
  if (!kept) return;
  kept = false;
  check(MPI_Finalize(), "MPI_Finalize");
}

#else

void mpi_finalize() {}

ClusterSpec mpi_rendezvous(const SocketAddress&, std::optional<JobSecret>, bool) {
  throw RuntimeFailure(
      "this adaptsim-tcp was built without MPI; rebuild with an MPI development package "
      "(e.g. libopenmpi-dev) or use --procs or --hosts");
}

#endif

}  // namespace adaptsim::tcp
