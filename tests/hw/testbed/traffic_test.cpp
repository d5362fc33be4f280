// Background traffic (hw/testbed/traffic.h) with real bytes on loopback: the schedule, a source
// that follows a progress file, the rate cap, and the adaptsim-traffic tool's exits. No root.
#include <doctest/doctest.h>

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

#include "hw/testbed/traffic.h"
#include "sim/core/error.h"
#include "tests/support/background_process.h"
#include "tests/support/run_command.h"

using namespace adaptsim;
using namespace adaptsim::testbed;
namespace fs = std::filesystem;

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void sleep_s(double seconds) {
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

// Polls `done` every 5 ms for up to `seconds`.
bool wait_until(const std::function<bool()>& done, double seconds) {
  const double deadline = now_s() + seconds;
  while (now_s() < deadline) {
    if (done()) return true;
    sleep_s(0.005);
  }
  return done();
}

// A fresh directory for one test's progress file, removed at the end.
struct TempDir {
  fs::path path;
  TempDir() {
    char name[] = "/tmp/adaptsim-traffic-test-XXXXXX";
    REQUIRE(::mkdtemp(name) != nullptr);
    path = name;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// What the live job's rank 0 does at the start of every step: a temporary file, then rename.
void write_step(const fs::path& progress, int step) {
  const fs::path tmp = progress.string() + ".tmp";
  {
    std::ofstream out(tmp);
    out << step << "\n";
  }
  fs::rename(tmp, progress);
}

// A sink on a free loopback port, run by a thread until the fixture ends.
struct SinkThread {
  TrafficSink sink{"127.0.0.1:0"};
  std::atomic<bool> stop{false};
  std::thread thread{[this] { sink.run(stop, 30 * kNsPerSecond); }};
  ~SinkThread() {
    stop = true;
    thread.join();
  }
};

// A source run by a thread; what it threw, if anything, is kept for the test.
struct SourceThread {
  TrafficSource source;
  std::atomic<bool> stop{false};
  std::atomic<bool> finished{false};
  std::string failure;
  std::thread thread;
  explicit SourceThread(SourceOptions o) : source(std::move(o)) {
    thread = std::thread([this] {
      try {
        source.run(stop);
      } catch (const std::exception& e) {
        failure = e.what();
      }
      finished = true;
    });
  }
  void join() {
    stop = true;
    if (thread.joinable()) thread.join();
  }
  ~SourceThread() { join(); }
};

// A loopback port that refuses connections: bound (so no one else gets it) but not listening.
struct RefusingPort {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  int port = 0;
  RefusingPort() {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
  }
  ~RefusingPort() { ::close(fd); }
};

const std::string kTool = ADAPTSIM_TRAFFIC_TOOL;

}  // namespace

TEST_CASE("traffic schedule: active by steps and by time") {
  TrafficSchedule steps;
  steps.start_step = 2;
  steps.stop_step = 4;
  validate_schedule(steps);
  // Active for 2 <= step < 4, whatever the time.
  CHECK_FALSE(steps.active(0, 0));
  CHECK_FALSE(steps.active(1, 100 * kNsPerSecond));
  CHECK(steps.active(2, 0));
  CHECK(steps.active(3, 0));
  CHECK_FALSE(steps.active(4, 0));
  CHECK_FALSE(steps.active(5, 0));
  steps.stop_step.reset();  // no stop: from step 2 on
  CHECK(steps.active(1000, 0));
  CHECK_FALSE(steps.active(1, 0));

  TrafficSchedule time;
  time.start_ns = 500 * kNsPerMs;
  time.stop_ns = 2 * kNsPerSecond;
  validate_schedule(time);
  // Active for 0.5 s <= t < 2 s, whatever the step.
  CHECK_FALSE(time.active(7, 499 * kNsPerMs));
  CHECK(time.active(0, 500 * kNsPerMs));
  CHECK(time.active(0, 1999 * kNsPerMs));
  CHECK_FALSE(time.active(0, 2 * kNsPerSecond));
  time.stop_ns.reset();
  CHECK(time.active(0, 1000 * kNsPerSecond));
}

TEST_CASE("traffic schedule: validation names the option") {
  const auto message = [](const TrafficSchedule& s) -> std::string {
    try {
      validate_schedule(s);
    } catch (const InputError& e) {
      return e.what();
    }
    return "valid";
  };
  TrafficSchedule none;
  CHECK(message(none).find("--start-step or --start-time") != std::string::npos);
  TrafficSchedule both;
  both.start_step = 1;
  both.start_ns = 0;
  CHECK(message(both).find("not both") != std::string::npos);
  TrafficSchedule mixed;
  mixed.start_step = 1;
  mixed.stop_ns = kNsPerSecond;
  CHECK(message(mixed).find("--stop-time") != std::string::npos);
  TrafficSchedule mixed2;
  mixed2.start_ns = 0;
  mixed2.stop_step = 3;
  CHECK(message(mixed2).find("--stop-step") != std::string::npos);
  TrafficSchedule equal;
  equal.start_step = 3;
  equal.stop_step = 3;
  CHECK(message(equal).find("--stop-step: expected a step after --start-step 3") !=
        std::string::npos);
  TrafficSchedule backwards;
  backwards.start_ns = 2 * kNsPerSecond;
  backwards.stop_ns = kNsPerSecond;
  CHECK(message(backwards).find("--stop-time: expected a time after") != std::string::npos);
  TrafficSchedule negative;
  negative.start_step = -1;
  CHECK(message(negative).find("--start-step: expected a step >= 0") != std::string::npos);
  TrafficSchedule open;
  open.start_ns = 0;
  CHECK(message(open) == "valid");
}

TEST_CASE("traffic progress file: a step is a number and its newline") {
  TempDir dir;
  const fs::path p = dir.path / "progress";
  CHECK_FALSE(read_progress_step(p).has_value());  // before step 0
  write_step(p, 12);
  CHECK(read_progress_step(p) == 12);
  std::ofstream(p) << "13";  // no newline yet: not a complete record
  CHECK_FALSE(read_progress_step(p).has_value());
  std::ofstream(p) << "x\n";
  CHECK_FALSE(read_progress_step(p).has_value());
}

TEST_CASE("traffic source: sends only from step 2 to step 4, once") {
  TempDir dir;
  SinkThread sink;
  SourceOptions o;
  o.to = sink.sink.address();
  o.connections = 2;
  o.progress = dir.path / "progress";
  o.schedule.start_step = 2;
  o.schedule.stop_step = 4;
  SourceThread source(o);

  write_step(o.progress, 0);
  sleep_s(0.05);
  write_step(o.progress, 1);
  sleep_s(0.15);
  // Steps 0 and 1: inactive, no connection, no byte.
  CHECK(sink.sink.connections_accepted() == 0);
  CHECK(sink.sink.bytes() == 0);

  write_step(o.progress, 2);
  const double started = now_s();
  CHECK(wait_until([&] { return sink.sink.bytes() > 0; }, 1.0));
  CHECK(wait_until([&] { return sink.sink.connections_accepted() == 2; }, 1.0));
  sleep_s(0.1);
  write_step(o.progress, 3);  // still active
  const std::uint64_t at_step3 = sink.sink.bytes();
  CHECK(wait_until([&] { return sink.sink.bytes() > at_step3; }, 1.0));
  sleep_s(0.1);

  write_step(o.progress, 4);
  const double stopped = now_s();
  // The source polls every 1 ms and resets its connections: within 100 ms nothing more arrives.
  sleep_s(0.1);
  const std::uint64_t after_stop = sink.sink.bytes();
  sleep_s(0.2);
  CHECK(sink.sink.bytes() == after_stop);

  // Back to step 2 (a job does not do that, but the flow is active only once): nothing restarts.
  write_step(o.progress, 2);
  sleep_s(0.1);
  CHECK(sink.sink.bytes() == after_stop);
  CHECK(sink.sink.connections_accepted() == 2);

  source.join();
  CHECK(source.failure.empty());
  const SourceReport& r = source.source.report();
  CHECK(r.was_active);
  CHECK(r.connections == 2);
  // Active from the rename to step 2 until the one to step 4 (each seen within ~1 ms).
  CHECK(r.active_s == doctest::Approx(stopped - started).epsilon(0.25));
  // What the sink acknowledged is what it read, up to the acknowledgements in flight at the reset.
  const double received = static_cast<double>(after_stop);
  CHECK(static_cast<double>(r.bytes) > 0);
  CHECK(std::abs(static_cast<double>(r.bytes) - received) <= 0.05 * received + 8e6);
  CHECK(summary_line(r).find("over 2 connections") != std::string::npos);
}

TEST_CASE("traffic source: --rate 200Mbps over 2 connections paces loopback to 25 MB/s") {
  TempDir dir;
  SinkThread sink;
  SourceOptions o;
  o.to = sink.sink.address();
  o.connections = 2;
  o.rate_Bps = 200e6 / 8;  // 200 Mbit/s = 25 MB/s in all, 12.5 MB/s per connection
  o.progress = dir.path / "progress";
  // By time: active from 0.1 s to 1.1 s after step 0 started, 1 s.
  o.schedule.start_ns = 100 * kNsPerMs;
  o.schedule.stop_ns = 1100 * kNsPerMs;
  SourceThread source(o);
  write_step(o.progress, 0);
  const double step0 = now_s();

  CHECK(wait_until([&] { return sink.sink.bytes() > 0 || source.finished; }, 1.0));
  if (!source.failure.empty()) {
    // A kernel that refuses SO_MAX_PACING_RATE: the source says so, naming the option.
    CHECK(source.failure.find("SO_MAX_PACING_RATE") != std::string::npos);
    MESSAGE("the kernel refuses SO_MAX_PACING_RATE: " << source.failure);
    return;
  }
  CHECK(now_s() - step0 > 0.09);  // nothing before start_time
  // 100 ms after stop_time the source has reset its connections, dropping what its send buffers
  // still held (seconds of data at a low paced rate): nothing more arrives.
  sleep_s(1.1 - (now_s() - step0) + 0.1);
  const std::uint64_t after_stop = sink.sink.bytes();
  sleep_s(0.1);
  CHECK(sink.sink.bytes() == after_stop);
  const double received = static_cast<double>(after_stop);
  source.join();
  REQUIRE(source.failure.empty());
  const SourceReport& r = source.source.report();
  // expected: 25e6 B/s * 1 s = 25e6 bytes, within 25 %.
  MESSAGE("received " << received << " bytes in " << r.active_s
                      << " s: " << received / r.active_s / 1e6 << " MB/s (expected 25)");
  CHECK(r.active_s == doctest::Approx(1.0).epsilon(0.05));
  CHECK(received / r.active_s == doctest::Approx(25e6).epsilon(0.25));
  CHECK(r.active_rate_bps() == doctest::Approx(200e6).epsilon(0.25));
}

TEST_CASE("traffic source: a refused connection names the address") {
  TempDir dir;
  RefusingPort refusing;
  const std::string to = "127.0.0.1:" + std::to_string(refusing.port);
  SUBCASE("library") {
    SourceOptions o;
    o.to = to;
    o.progress = dir.path / "progress";
    o.schedule.start_step = 0;
    write_step(o.progress, 0);
    TrafficSource source(o);
    std::atomic<bool> stop{false};
    CHECK_THROWS_WITH_AS(source.run(stop),
                         ("cannot connect to " + to + ": Connection refused").c_str(),
                         RuntimeFailure);
  }
  SUBCASE("tool") {
    write_step(dir.path / "progress", 0);
    const testing::CommandResult r =
        testing::run_command(kTool + " source -q --to " + to + " --progress " +
                             (dir.path / "progress").string() + " --start-step 0 --connections 3");
    CHECK(r.code == 1);
    CHECK(r.output ==
          "adaptsim-traffic: source: cannot connect to " + to + ": Connection refused\n");
  }
}

TEST_CASE("traffic tool: SIGTERM ends a sending source with exit 0 and its summary") {
  TempDir dir;
  SinkThread sink;
  const fs::path progress = dir.path / "progress";
  test_support::BackgroundProcess source({kTool, "source", "--to", sink.sink.address(),
                                          "--connections", "2", "--progress", progress.string(),
                                          "--start-step", "0"});
  write_step(progress, 0);
  REQUIRE(wait_until([&] { return sink.sink.bytes() > 0; }, 2.0));
  source.signal(SIGTERM);
  CHECK(source.wait(2 * kNsPerSecond) == 0);
  const std::string out = source.output();
  CHECK(out.rfind("sent ", 0) == 0);
  CHECK(out.find(" bytes over 2 connections in ") != std::string::npos);
  CHECK(out.find(" Gbit/s while active)\n") != std::string::npos);
  CHECK(out.find('\n') == out.size() - 1);  // one line
}

TEST_CASE("traffic tool: the sink reports its port and exits 0 on SIGTERM") {
  test_support::BackgroundProcess sink({kTool, "sink", "--listen", "127.0.0.1:0"});
  REQUIRE(sink.wait_for_output("listening on 127.0.0.1:", 2 * kNsPerSecond));
  sleep_s(0.05);
  const std::string line = sink.output();
  const int port = std::atoi(line.substr(line.rfind(':') + 1).c_str());
  CHECK(port > 0);
  CHECK(port < 65536);
  sink.signal(SIGTERM);
  CHECK(sink.wait(2 * kNsPerSecond) == 0);
  CHECK(sink.output() == line);  // nothing more without -v
}

TEST_CASE("traffic tool: --timeout ends an idle source with exit 0 and a line") {
  TempDir dir;
  const testing::CommandResult r =
      testing::run_command(kTool + " source --to 127.0.0.1:9 --progress " +
                           (dir.path / "never").string() + " --start-step 0 --timeout 200ms");
  CHECK(r.code == 0);
  CHECK(r.output.find("adaptsim-traffic: source: timeout of 200ms reached\n") != std::string::npos);
  CHECK(r.output.find("sent 0 bytes over 1 connections in 0.000 s") != std::string::npos);
}
