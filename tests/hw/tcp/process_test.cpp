// adaptsim-tcp across real processes: the local launcher and the host-list rendezvous, exact
// results in the CSV, failures that name the dead peer, and no process left behind. (The mpirun
// rendezvous is mpirun_test.cpp: a CTest entry of its own, skipped where mpirun is missing.)

#include <doctest/doctest.h>

#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include "hw/tcp/frame.h"
#include "hw/tcp/socket_util.h"
#include "sim/coll/strategy.h"
#include "tests/hw/tcp/tcp_test_support.h"
#include "tests/support/time_scale.h"

using namespace adaptsim;
using namespace adaptsim::tcp;
using namespace adaptsim::tcp::testing;

namespace {

// Every process run has a deadline far below ctest's; nothing can hang the suite.
const double kDeadlineS = 30 * adaptsim::testing::time_scale();

// Rows of the sweep CSV in `dir`, header excluded; checks the header.
std::vector<std::vector<std::string>> sweep_rows(const std::string& dir) {
  auto csv = read_csv(dir + "/allreduce_tcp.csv");
  REQUIRE(!csv.empty());
  CHECK(csv[0].size() == 10);
  CHECK(csv[0][9] == "wrong");
  csv.erase(csv.begin());
  return csv;
}

std::vector<std::string> tool(std::vector<std::string> args) {
  args.insert(args.begin(), tool_path());
  return args;
}

// A job secret file in `dir` with `mode`: `bytes` random bytes (the form the docs suggest).
std::string secret_file(const std::string& dir, ::mode_t mode = 0600, std::size_t bytes = 32) {
  const std::string path = dir + "/job.secret";
  std::string content(bytes, '\0');
  for (std::size_t i = 0; i < bytes; i += kNonceBytes) {
    const Nonce n = random_nonce();
    std::memcpy(content.data() + i, n.data(), std::min(kNonceBytes, bytes - i));
  }
  std::ofstream(path, std::ios::binary) << content;
  ::chmod(path.c_str(), mode);
  return path;
}

}  // namespace

TEST_CASE("launcher: representative strategies on 4 processes, odd and multi-chunk sizes, exact") {
  const std::string dir = make_temp_dir();
  // Sizes 4 B, 68 B, 1156 B, 19652 B, 334084 B and 5679428 B (5.4 MiB: six 1 MiB chunks, the
  // last one short). Two ranks per host exercise host masters.
  const auto r = run_process(
      tool({"--procs",
            "4",
            "--ranks-per-host",
            "2",
            "--strategy",
            "STAR,RING,BINARY_TREE_STAR,MULTI_BINARY_TREE_STAR,CLASSIC_RING,HALVING_DOUBLING",
            "--minbytes",
            "4B",
            "--maxbytes",
            "6MiB",
            "--stepfactor",
            "17",
            "--iters",
            "2",
            "--warmup-iters",
            "1",
            "--timeout",
            "20s",
            "-o",
            dir}),
      kDeadlineS);
  INFO(diagnostics(r));
  REQUIRE(r.exit_code == 0);
  const auto rows = sweep_rows(dir);
  CHECK(rows.size() == 6 * 6);
  for (const auto& row : rows) {
    CHECK(row[5] == "4");  // n_ranks
    CHECK(row[9] == "0");  // wrong
  }
  CHECK(rows.back()[0] == "5679428");
  CHECK(r.out.find("# all-reduce HALVING_DOUBLING, 4 ranks, float32 sum") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("launcher: a 64 MiB all-reduce across 4 processes is exact for every strategy") {
  // --strategy all: one 64 MiB float32 point per strategy (count = 2^26 / 4 = 16777216), one
  // timed iteration, no warm-up; each rank checks all 2^24 elements of its result. About 5 s
  // for the 11 strategies on a 2-core machine (measured under nice 19).
  const std::string dir = make_temp_dir();
  const auto r = run_process(
      tool({"--procs", "4", "--strategy", "all", "--minbytes", "64MiB", "--maxbytes", "64MiB",
            "--iters", "1", "--warmup-iters", "0", "--timeout", "20s", "-q", "-o", dir}),
      2 * kDeadlineS);
  INFO(diagnostics(r));
  REQUIRE(r.exit_code == 0);
  const auto rows = sweep_rows(dir);
  const auto& all = coll::all_strategies();
  REQUIRE(rows.size() == all.size());
  for (std::size_t i = 0; i < all.size(); ++i) {
    CHECK(rows[i][4] == coll::strategy_name(all[i]));
    CHECK(rows[i][0] == "67108864");
    CHECK(rows[i][1] == "16777216");
    CHECK(rows[i][5] == "4");
    CHECK(rows[i][9] == "0");
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("launcher: bfloat16 max and float64 min across 3 processes are exact") {
  for (const auto& case_ : {std::pair{"bfloat16", "max"}, std::pair{"float64", "min"}}) {
    // Named copies, not structured bindings: INFO's lambda captures them, which clang 14 (the
    // fuzz build's, where CI runs this file under ASan) does not allow for bindings.
    const std::string dtype = case_.first;
    const std::string op = case_.second;
    const std::string dir = make_temp_dir();
    const auto r = run_process(tool({"--procs",
                                     "3",
                                     "--strategy",
                                     "RING,HALVING_DOUBLING",
                                     "--dtype",
                                     dtype,
                                     "--op",
                                     op,
                                     "--minbytes",
                                     "2B",
                                     "--maxbytes",
                                     "64KiB",
                                     "--stepfactor",
                                     "8",
                                     "--iters",
                                     "1",
                                     "--warmup-iters",
                                     "0",
                                     "-q",
                                     "-o",
                                     dir}),
                               kDeadlineS);
    INFO(dtype << " " << op << "\n" << diagnostics(r));
    REQUIRE(r.exit_code == 0);
    for (const auto& row : sweep_rows(dir)) {
      CHECK(row[2] == dtype);
      CHECK(row[3] == op);
      CHECK(row[9] == "0");
    }
    std::filesystem::remove_all(dir);
  }
}

TEST_CASE(
    "host-list rendezvous: separately started processes find each other, in any start order") {
  const std::vector<int> ports = free_ports(3);
  std::string hosts;
  for (int p : ports) {
    if (!hosts.empty()) hosts += ',';
    hosts += "127.0.0.1:" + std::to_string(p);
  }
  const std::string dir = make_temp_dir();
  const std::string secret = secret_file(dir);
  std::vector<std::unique_ptr<ChildProcess>> procs(3);
  // Rank 2 first: it dials ranks 0 and 1 before they listen, and must retry.
  for (int rank : {2, 1, 0}) {
    procs[static_cast<std::size_t>(rank)] =
        std::make_unique<ChildProcess>(tool({"--hosts",
                                             hosts,
                                             "--rank",
                                             std::to_string(rank),
                                             "--secret-file",
                                             secret,
                                             "--strategy",
                                             "CLASSIC_RING,TREE",
                                             "--maxbytes",
                                             "256KiB",
                                             "--stepfactor",
                                             "16",
                                             "--iters",
                                             "2",
                                             "--warmup-iters",
                                             "1",
                                             "--timeout",
                                             "20s",
                                             "-q",
                                             "-o",
                                             dir}));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  for (int rank = 0; rank < 3; ++rank) {
    const auto r = procs[static_cast<std::size_t>(rank)]->wait(kDeadlineS);
    INFO("rank " << rank << " " << diagnostics(r));
    CHECK(r.exit_code == 0);
  }
  const auto rows = sweep_rows(dir);
  CHECK(rows.size() == 2 * 4);  // 8 B, 128 B, 2 KiB, 32 KiB (x16 again is over 256 KiB)
  for (const auto& row : rows) {
    CHECK(row[5] == "3");
    CHECK(row[9] == "0");
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE(
    "a worker's port shrugs off garbage and a handshake without the secret, and the run "
    "completes") {
  const std::vector<int> ports = free_ports(2);
  const std::string hosts =
      "127.0.0.1:" + std::to_string(ports[0]) + ",127.0.0.1:" + std::to_string(ports[1]);
  // The secret reaches the ranks through the environment here (as adaptsim-live hands it on).
  const JobSecret secret = JobSecret::random();
  std::vector<std::unique_ptr<ChildProcess>> procs;
  for (int rank = 0; rank < 2; ++rank) {
    procs.push_back(std::make_unique<ChildProcess>(
        tool({"--hosts", hosts, "--rank", std::to_string(rank), "--strategy", "CLASSIC_RING",
              "--maxbytes", "1MiB", "--iters", "5", "--warmup-iters", "1", "--timeout", "20s",
              "-q"}),
        std::vector<std::string>{std::string(kEnvSecret) + "=" + secret.hex()}));
  }
  // Attack rank 0's port as soon as it listens.
  const SocketAddress target{"127.0.0.1", static_cast<std::uint16_t>(ports[0])};
  int attacks = 0;
  for (int attempt = 0; attempt < 200 && attacks < 2; ++attempt) {
    auto [addr, len] = resolve_address(target);
    UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), len) != 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    std::vector<std::byte> bytes(kFrameHeaderBytes + kHelloPayloadBytes + kTagBytes,
                                 std::byte{0x5a});
    if (attacks == 1) {  // a well-formed hello with the job's public id and an all-0x5a tag
      FrameHeader h;
      h.kind = FrameKind::kHello;
      h.job_id = secret.job_id();
      h.src_rank = 1;
      h.payload_bytes = kHelloPayloadBytes;
      encode_frame_header(h, bytes.data());
      encode_hello_payload({0, 2, random_nonce()}, bytes.data() + kFrameHeaderBytes);
    }
    [[maybe_unused]] ssize_t w = ::send(fd.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL);
    ++attacks;
  }
  CHECK(attacks == 2);
  for (int rank = 0; rank < 2; ++rank) {
    const auto r = procs[static_cast<std::size_t>(rank)]->wait(kDeadlineS);
    INFO("rank " << rank << " " << diagnostics(r));
    CHECK(r.exit_code == 0);
    if (rank == 0) {
      CHECK(r.err.find("rejected connection from 127.0.0.1") != std::string::npos);
      CHECK(r.err.find("bad magic") != std::string::npos);
      CHECK(r.err.find("hello frame failed authentication") != std::string::npos);
    }
  }
}

TEST_CASE(
    "a worker killed mid-collective: the others fail naming it, and nothing is left running") {
  const std::string marker = unique_marker();
  const auto r =
      run_process(tool({"--procs", "4", "--strategy", "CLASSIC_RING", "--minbytes", "4MiB",
                        "--maxbytes", "4MiB", "--iters", "100", "--warmup-iters", "0", "--timeout",
                        "10s", "-q", "--fault-kill-rank", "2", "--fault-after-sends", "5"}),
                  kDeadlineS, {marker});
  INFO(diagnostics(r));
  CHECK(r.exit_code == 1);
  CHECK(r.wall_s < 8.0);  // well within the 10 s timeout: the loss is noticed at once
  CHECK(r.err.find("fault injection: killing this process") != std::string::npos);
  // Each survivor names itself and the dead rank.
  for (int rank : {0, 1, 3}) {
    const std::string line = "adaptsim-tcp: rank " + std::to_string(rank) + ": ";
    const auto at = r.err.find(line);
    REQUIRE_MESSAGE(at != std::string::npos, "no error line from rank " << rank);
    const std::string text = r.err.substr(at, r.err.find('\n', at) - at);
    CHECK_MESSAGE(text.find("rank 2 (127.0.0.1:") != std::string::npos, text);
  }
  // The launcher's summary names the dead rank first.
  CHECK(r.err.find("adaptsim-tcp: launcher: rank 2 (pid") != std::string::npos);
  CHECK(r.err.find("was killed by signal 9") != std::string::npos);
  CHECK(processes_with_env(marker).empty());
}

TEST_CASE("a fault aimed past the run's last send fails the run with the rank's live count") {
  // The count the error reports is the one the hook compares: aimed at it, the fault fires.
  auto run = [](const std::string& after) {
    return run_process(tool({"--procs", "2", "--strategy", "STAR", "--minbytes", "8B", "--maxbytes",
                             "8B", "--iters", "2", "--warmup-iters", "1", "--timeout", "10s", "-q",
                             "--fault-kill-rank", "1", "--fault-after-sends", after}),
                       kDeadlineS);
  };
  const auto missed = run("1000");
  INFO(diagnostics(missed));
  CHECK(missed.exit_code == 1);
  const std::regex line(
      "adaptsim-tcp: rank 1: fault injection did not fire: this rank sent ([0-9]+) messages, "
      "fewer than --fault-after-sends 1000\n");
  std::smatch m;
  REQUIRE(std::regex_search(missed.err, m, line));
  const std::string sent = m[1];
  CHECK(std::stoi(sent) >= 3);  // one input per all-reduce at least, 1 + 2 of them
  const auto hit = run(sent);
  INFO(diagnostics(hit));
  CHECK(hit.exit_code == 1);
  CHECK(hit.err.find("fault injection: killing this process after " + sent + " sent messages") !=
        std::string::npos);
  CHECK(hit.err.find("launcher: rank 1 (pid") != std::string::npos);
  CHECK(hit.err.find("was killed by signal 9") != std::string::npos);
}

TEST_CASE("killing the launcher takes its workers with it") {
  const std::string marker = unique_marker();
  ChildProcess launcher(tool({"--procs", "3", "--strategy", "STAR", "--minbytes", "8B",
                              "--maxbytes", "8B", "--iters", "1000000", "--timeout", "20s", "-q"}),
                        {marker});
  // Wait until the launcher and its 3 workers exist, seen in three polls in a row: while the
  // launcher forks, a child between fork and exec (or one whose environ is briefly unreadable
  // during exec) makes a single count too high or too low (CI saw 4, then 2, within 80 ms).
  int stable = 0;
  for (int i = 0; i < 400 && stable < 3; ++i) {
    stable = processes_with_env(marker).size() == 4 ? stable + 1 : 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  REQUIRE(processes_with_env(marker).size() == 4);
  ::kill(launcher.pid(), SIGKILL);
  const auto r = launcher.wait(kDeadlineS);
  CHECK(r.signal == SIGKILL);
  bool gone = false;
  for (int i = 0; i < 300 && !gone; ++i) {
    gone = processes_with_env(marker).empty();
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(gone);
}

TEST_CASE("bad input: one clear line and exit code 2") {
  const std::string dir = make_temp_dir();
  const std::string open_secret = secret_file(dir, 0644);
  const std::string short_secret = dir + "/short.secret";
  std::ofstream(short_secret) << "12345678";
  ::chmod(short_secret.c_str(), 0600);
  struct Case {
    std::vector<std::string> args;
    std::string expect;
  };
  const std::vector<Case> cases = {
      {{"--procs", "2", "--maxbytes", "64"}, "expected a size"},
      {{"--procs", "2", "--strategy", "FASTEST"}, "unknown strategy \"FASTEST\""},
      {{"--procs", "2", "--dtype", "int4"}, "--dtype"},
      {{"--procs", "2", "--congestion-control", "no-such-cc"},
       "TCP congestion control \"no-such-cc\" cannot be used"},
      {{"--procs", "2", "--timeout", "soon"}, "expected a duration"},
      {{"--procs", "2", "--minbytes", "1MiB", "--maxbytes", "1KiB"}, "--maxbytes"},
      {{"--hosts", "127.0.0.1:1,127.0.0.1:2"}, "--hosts needs --rank"},
      {{"--hosts", "127.0.0.1", "--rank", "0"}, "expected an address"},
      {{"--hosts", "127.0.0.1:1,127.0.0.1:2", "--rank", "0"},
       "a host-list job needs its secret: --secret-file FILE"},
      {{"--hosts", "127.0.0.1:1,127.0.0.1:2", "--rank", "0", "--secret-file", open_secret},
       "may be read by group or others (mode 0644); chmod 600"},
      {{"--hosts", "127.0.0.1:1,127.0.0.1:2", "--rank", "0", "--secret-file", short_secret},
       "has 8 bytes, at least 16 are needed"},
      {{"--hosts", "127.0.0.1:1,127.0.0.1:2", "--rank", "0", "--secret-file", dir + "/none"},
       "cannot read the secret file"},
      {{}, "--procs N"},
      {{"--no-such-flag"}, "no-such-flag"},
  };
  for (const Case& c : cases) {
    const auto r = run_process(tool(c.args), kDeadlineS);
    INFO(diagnostics(r));
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(c.expect) != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
  {  // a secret in the environment that is not one
    const auto r = run_process(tool({"--hosts", "127.0.0.1:1,127.0.0.1:2", "--rank", "0"}),
                               kDeadlineS, {std::string(kEnvSecret) + "=xyz"});
    INFO(diagnostics(r));
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("environment variable ADAPTSIM_JOB_SECRET: expected a job secret of 64 hex "
                     "digits, got 3 characters") != std::string::npos);
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("congestion control: set on a socket, checked by name, and used by a whole run") {
  // reno is built into every Linux kernel (tcp_available_congestion_control always lists it).
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  REQUIRE(fd.valid());
  std::string why;
  CHECK(tune_socket(fd.get(), 0, "reno", &why));
  CHECK(socket_congestion_control(fd.get()) == "reno");
  CHECK_FALSE(tune_socket(fd.get(), 0, "no-such-cc", &why));
  CHECK_FALSE(why.empty());
  CHECK_NOTHROW(check_congestion_control(""));
  CHECK_NOTHROW(check_congestion_control("reno"));
  CHECK_THROWS_WITH(check_congestion_control("no-such-cc"),
                    doctest::Contains("TCP congestion control \"no-such-cc\" cannot be used"));

  const std::string dir = make_temp_dir();
  const auto r = run_process(tool({"--procs", "2", "--congestion-control", "reno", "--strategy",
                                   "RING", "--minbytes", "4B", "--maxbytes", "1MiB", "--stepfactor",
                                   "64", "--iters", "1", "--warmup-iters", "0", "-q", "-o", dir}),
                             kDeadlineS);
  INFO(diagnostics(r));
  REQUIRE(r.exit_code == 0);
  for (const auto& row : sweep_rows(dir))
    CHECK(row[9] == "0");
  std::filesystem::remove_all(dir);
}
