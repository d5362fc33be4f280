#include "hw/tcp/mpi_rendezvous.h"

#include <charconv>
#include <cstdlib>
#include <cstring>
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

#if ADAPTSIM_TCP_HAVE_MPI

ClusterSpec mpi_rendezvous(const SocketAddress& advertised) {
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised) check(MPI_Init(nullptr, nullptr), "MPI_Init");
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
  std::uint64_t token = rank == 0 ? random_token() : 0;
  check(MPI_Bcast(&token, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD), "MPI_Bcast");
  ClusterSpec cluster;
  cluster.rank = rank;
  cluster.token = token;
  for (int r = 0; r < size; ++r) {
    const char* p = all.data() + static_cast<std::size_t>(r) * kAddressSlot;
    cluster.addresses.push_back(
        parse_socket_address(std::string_view(p, strnlen(p, kAddressSlot))));
  }
  // MPI's job is done; from here on only TCP. Every rank reaches this point together.
  check(MPI_Finalize(), "MPI_Finalize");
  return cluster;
}

#else

ClusterSpec mpi_rendezvous(const SocketAddress&) {
  throw RuntimeFailure(
      "this adaptsim-tcp was built without MPI; rebuild with an MPI development package "
      "(e.g. libopenmpi-dev) or use --procs or --hosts");
}

#endif

}  // namespace adaptsim::tcp
