#pragma once
// Background TCP traffic for the live testbed (the scenario's `background:` flows): a sink that
// accepts connections and discards what it reads, and a source whose connections send as fast as
// allowed (or at a paced rate) while a schedule says so. The schedule follows the live job through
// its progress file, so that the flow starts and stops at the same step or time as the simulator's
// model of it. Plain POSIX sockets: linking hw/tcp here would bring MPI into every tool that links
// the testbed.
//
// Progress file contract (written by the live job's rank 0): the decimal number of the step rank 0
// is running, then '\n', replaced atomically (temporary file + rename) at the start of every step;
// absent before step 0 starts. The source's clock starts (t = 0) when it first reads a step.

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "sim/core/time.h"
#include "sim/io/background.h"

namespace adaptsim::testbed {

// When a flow sends: the scenario's schedule (io::BackgroundSchedule, the one the simulator
// follows): by steps, start_step <= step < stop_step, or by time since step 0 started,
// start_ns <= t < stop_ns; no stop: until the source is stopped. A flow is active at most once
// (TrafficSource enforces that; BackgroundSchedule::active is the pure predicate).
using TrafficSchedule = io::BackgroundSchedule;

// Throws InputError, naming the tool's option (--start-step, --stop-time, ...), unless there is
// exactly one start, a stop (if any) of the same kind, no negative value and start < stop.
void validate_schedule(const TrafficSchedule& schedule);

struct SourceOptions {
  std::string to;       // the sink, IP:PORT (numeric: no name lookup, which could block)
  int connections = 1;  // 1..kMaxConnections
  double rate_Bps = 0;  // total over all connections, split evenly; 0 = uncapped
  std::filesystem::path progress;
  TrafficSchedule schedule;
  std::string congestion_control;  // TCP_CONGESTION of every connection; empty: the system's
  TimeNs connect_timeout_ns = 5 * kNsPerSecond;
  TimeNs timeout_ns = 3600 * kNsPerSecond;  // the whole run, from TrafficSource::run
  TimeNs poll_interval_ns = kNsPerMs;       // how often the progress file is read

  static constexpr int kMaxConnections = 1024;
  // Throws InputError naming the option (--connections, --rate, ...) when a value is out of range.
  void validate() const;
};

enum class SourceEnd { kStopped, kTimedOut };

struct SourceReport {
  // Bytes the sink acknowledged (TCP_INFO bytes_acked at close): what reached it, not what sat
  // in a send buffer when the connections were reset.
  std::uint64_t bytes = 0;
  int connections = 0;
  double active_s = 0;  // from becoming active to closing the connections
  bool was_active = false;
  // bytes over active_s, in bits per second (0 when never active).
  double active_rate_bps() const;
};

// The summary line the tool prints on exit:
// "sent BYTES bytes over N connections in SECONDS s (RATE Gbit/s while active)", SECONDS being the
// active time.
std::string summary_line(const SourceReport& report);

class TrafficSource {
 public:
  // Validates the options (InputError) and parses the sink's address.
  explicit TrafficSource(SourceOptions options);
  ~TrafficSource();
  TrafficSource(const TrafficSource&) = delete;
  TrafficSource& operator=(const TrafficSource&) = delete;

  // Follows the progress file and sends while the schedule says so; once the flow has become
  // inactive again it stays idle. Returns when `stop` is set or the timeout passes. Throws
  // RuntimeFailure naming the sink ("cannot connect to 10.213.0.1:7900: Connection refused",
  // a broken connection, SO_MAX_PACING_RATE refused); report() is valid afterwards either way.
  SourceEnd run(const std::atomic<bool>& stop);
  const SourceReport& report() const { return report_; }

 private:
  void open_connections(const std::atomic<bool>& stop);
  void close_connections(TimeNs now_ns);
  void send_until(TimeNs until_ns);

  SourceOptions options_;
  std::string peer_;              // the sink, as messages name it
  std::vector<int> connections_;  // socket fds, open while active
  std::vector<char> buffer_;
  TimeNs active_since_ns_ = 0;
  SourceReport report_;
};

// Accepts any number of connections on its address and reads and discards everything.
class TrafficSink {
 public:
  // Binds and listens on IP:PORT (port 0: a free port). Throws InputError for a malformed address,
  // RuntimeFailure when it cannot listen.
  explicit TrafficSink(const std::string& listen_address);
  ~TrafficSink();
  TrafficSink(const TrafficSink&) = delete;
  TrafficSink& operator=(const TrafficSink&) = delete;

  // The address it listens on, with the real port ("127.0.0.1:41234").
  const std::string& address() const { return address_; }
  std::uint16_t port() const { return port_; }

  // Reads until `stop` is set (true) or `timeout_ns` passes (false). A connection that closes or
  // breaks is dropped; the sink goes on.
  bool run(const std::atomic<bool>& stop, TimeNs timeout_ns);

  // Any thread, while run() runs.
  std::uint64_t bytes() const { return bytes_.load(std::memory_order_relaxed); }
  int connections_accepted() const { return accepted_.load(std::memory_order_relaxed); }

 private:
  int listener_ = -1;
  std::string address_;
  std::uint16_t port_ = 0;
  std::vector<int> connections_;
  std::vector<char> buffer_;
  std::atomic<std::uint64_t> bytes_{0};
  std::atomic<int> accepted_{0};
};

// Reads the progress file: the step it names, or nothing when it is absent or not (yet) a number.
std::optional<int> read_progress_step(const std::filesystem::path& progress);

}  // namespace adaptsim::testbed
