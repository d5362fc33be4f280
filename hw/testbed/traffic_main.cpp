// adaptsim-traffic: background TCP traffic between hosts of the live testbed
// (hw/testbed/traffic.h).
//
//   adaptsim-traffic sink --listen IP:PORT [--timeout DURATION] [-v]
//   adaptsim-traffic source --to IP:PORT --progress FILE (--start-step K | --start-time DURATION)
//       [--stop-step K | --stop-time DURATION] [--connections N] [--rate RATE]
//       [--connect-timeout DURATION] [--timeout DURATION] [-q]
//
// The sink prints "listening on IP:PORT" (the real port) once it is bound. The source prints
// "sent BYTES bytes over N connections in SECONDS s (RATE Gbit/s while active)" when it exits,
// whatever the cause (-q: not). SIGTERM or SIGINT ends either with exit code 0; so does --timeout
// (with a line on stderr). Exit codes otherwise: 1 a run-time failure (the line names the peer),
// 2 bad input.

#include <signal.h>
#include <CLI/CLI.hpp>

#include <atomic>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>

#include "hw/testbed/traffic.h"
#include "sim/core/error.h"
#include "sim/core/units.h"

namespace {

using namespace adaptsim;
using namespace adaptsim::testbed;

constexpr const char* kTool = "adaptsim-traffic";

// Set by SIGTERM/SIGINT; the loops check it at least every 10 ms (a signal also wakes their poll).
std::atomic<bool> g_stop{false};
static_assert(std::atomic<bool>::is_always_lock_free);

void on_signal(int) {
  g_stop.store(true);
}

void install_stop_signals() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a blocked poll returns at once
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
}

struct ToolOptions {
  // sink
  std::string listen;
  bool verbose = false;
  // source
  std::string to;
  int connections = 1;
  std::string rate;
  std::string progress;
  std::optional<int> start_step, stop_step;
  std::string start_time, stop_time;
  std::string connect_timeout = "5s";
  std::string congestion_control;
  bool quiet = false;
  // both
  std::string timeout = "1h";
};

TimeNs parse_option_duration(const std::string& option, const std::string& text) {
  try {
    return parse_duration_ns(text);
  } catch (const InputError& e) {
    throw InputError(option + ": " + e.what());
  }
}

SourceOptions source_options(const ToolOptions& t) {
  SourceOptions o;
  o.to = t.to;
  o.connections = t.connections;
  if (!t.rate.empty()) {
    try {
      o.rate_Bps = parse_bandwidth_Bps(t.rate);
    } catch (const InputError& e) {
      throw InputError(std::string("--rate: ") + e.what());
    }
  }
  o.progress = t.progress;
  o.schedule.start_step = t.start_step;
  o.schedule.stop_step = t.stop_step;
  if (!t.start_time.empty())
    o.schedule.start_ns = parse_option_duration("--start-time", t.start_time);
  if (!t.stop_time.empty()) o.schedule.stop_ns = parse_option_duration("--stop-time", t.stop_time);
  o.connect_timeout_ns = parse_option_duration("--connect-timeout", t.connect_timeout);
  o.congestion_control = t.congestion_control;
  o.timeout_ns = parse_option_duration("--timeout", t.timeout);
  return o;
}

int cmd_sink(const ToolOptions& t) {
  const TimeNs timeout_ns = parse_option_duration("--timeout", t.timeout);
  if (timeout_ns <= 0) throw InputError("--timeout: expected a duration > 0");
  TrafficSink sink(t.listen);
  std::printf("listening on %s\n", sink.address().c_str());
  std::fflush(stdout);
  const bool stopped = sink.run(g_stop, timeout_ns);
  if (!stopped) {
    print_error_line(kTool, "sink: timeout of " + format_duration(timeout_ns) + " reached");
  }
  if (t.verbose) {
    std::printf("received %llu bytes over %d connections\n",
                static_cast<unsigned long long>(sink.bytes()), sink.connections_accepted());
  }
  return 0;
}

int cmd_source(const ToolOptions& t) {
  TrafficSource source(source_options(t));  // InputError: exit 2, nothing printed but the line
  const auto summary = [&] {
    if (!t.quiet) {
      std::printf("%s\n", summary_line(source.report()).c_str());
      std::fflush(stdout);
    }
  };
  try {
    if (source.run(g_stop) == SourceEnd::kTimedOut) {
      print_error_line(kTool, "source: timeout of " + t.timeout + " reached");
    }
  } catch (const std::exception& e) {
    print_error_line(kTool, std::string("source: ") + e.what());
    summary();
    return 1;
  }
  summary();
  return 0;
}

int run_tool(int argc, char** argv) {
  ToolOptions t;
  CLI::App app{
      "Background TCP traffic for the live testbed: a sink, and a source that sends while "
      "the job's progress file says so",
      kTool};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Help for every subcommand");
  app.footer(R"(simctl run --live starts it for a scenario's background traffic.
Examples:
  adaptsim-traffic sink --listen 10.0.0.3:0 --timeout 600s
  adaptsim-traffic source --to 10.0.0.3:5201 --progress /tmp/job.progress --start-step 5 --rate 500Mbps
SIGTERM, SIGINT or --timeout end either with exit code 0.
Exit codes: 0 success, 1 run-time failure (the line names the peer), 2 bad input.)");

  CLI::App* sink = app.add_subcommand("sink", "Accept connections and discard what they send");
  sink->add_option("--listen", t.listen, "IP:PORT to listen on (port 0: any free port)")
      ->required();
  sink->add_option("--timeout", t.timeout, "Exit after this long")->capture_default_str();
  sink->add_flag("-v,--verbose", t.verbose, "Print the bytes received on exit");

  CLI::App* source = app.add_subcommand("source", "Send to a sink while the schedule says so");
  source->add_option("--to", t.to, "The sink, IP:PORT")->required();
  source->add_option("--connections", t.connections, "TCP connections")->capture_default_str();
  source->add_option("--rate", t.rate, "Total rate over all connections (500Mbps, 100MB/s)");
  source->add_option("--congestion-control", t.congestion_control,
                     "TCP congestion control of every connection, e.g. cubic (default: the "
                     "system's)");
  source->add_option("--progress", t.progress, "The job's progress file (its current step)")
      ->required();
  source->add_option("--start-step", t.start_step, "Send from this step on");
  source->add_option("--start-time", t.start_time, "Send from this long after step 0 started");
  source->add_option("--stop-step", t.stop_step, "Stop when this step starts");
  source->add_option("--stop-time", t.stop_time, "Stop this long after step 0 started");
  source->add_option("--connect-timeout", t.connect_timeout, "Per connection attempt")
      ->capture_default_str();
  source->add_option("--timeout", t.timeout, "Exit after this long")->capture_default_str();
  source->add_flag("-q,--quiet", t.quiet, "No summary line on exit");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    throw InputError(e.what());
  }
  install_stop_signals();
  if (sink->parsed()) return cmd_sink(t);
  return cmd_source(t);
}

}  // namespace

int main(int argc, char** argv) {
  // A closed stdout must fail a write, not kill the process; sockets use MSG_NOSIGNAL anyway.
  signal(SIGPIPE, SIG_IGN);
  try {
    return run_tool(argc, argv);
  } catch (const adaptsim::InputError& e) {
    adaptsim::print_error_line(kTool, e.what());
    return 2;
  } catch (const std::exception& e) {
    adaptsim::print_error_line(kTool, e.what());
    return 1;
  }
}
