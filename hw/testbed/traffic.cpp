#include "hw/testbed/traffic.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/tcp.h>  // struct tcp_info with tcpi_bytes_acked (glibc's netinet/tcp.h lacks it)
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>

#include "hw/testbed/command.h"
#include "sim/core/error.h"
#include "sim/core/units.h"

namespace adaptsim::testbed {
namespace {

// Reads and writes of 1 MiB: few system calls per gigabyte, one buffer reused for every call.
constexpr std::size_t kIoBytes = std::size_t{1} << 20;
// The sink's longest wait in poll when no signal interrupts it: how late it notices `stop`.
constexpr TimeNs kSinkPollNs = 10 * kNsPerMs;

std::string errno_text(int err) {
  return std::strerror(err);
}

timespec to_timespec(TimeNs ns) {
  ns = std::max<TimeNs>(ns, 0);
  return timespec{static_cast<time_t>(ns / kNsPerSecond), static_cast<long>(ns % kNsPerSecond)};
}

// ppoll with a nanosecond timeout; EINTR (a signal for the tool's stop flag) counts as no event.
int poll_for(std::vector<pollfd>& fds, TimeNs timeout_ns) {
  const timespec ts = to_timespec(timeout_ns);
  const int n = ::ppoll(fds.data(), fds.size(), &ts, nullptr);
  if (n < 0 && errno != EINTR) throw RuntimeFailure("poll: " + errno_text(errno));
  return std::max(n, 0);
}

void sleep_for(TimeNs ns) {
  std::vector<pollfd> none;
  poll_for(none, ns);
}

struct Endpoint {
  sockaddr_storage storage{};
  socklen_t length = 0;
};

// "IP:PORT" or "[IPv6]:PORT", numeric only. `option` names the value in the message.
Endpoint parse_endpoint(const std::string& text, const std::string& option, bool allow_port_zero) {
  const std::string expected =
      option + ": expected IP:PORT such as 10.213.0.1:7900, got \"" + text + "\"";
  const std::size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) {
    throw InputError(expected);
  }
  std::string host = text.substr(0, colon);
  const std::string port_text = text.substr(colon + 1);
  unsigned port = 0;
  auto [ptr, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || ptr != port_text.data() + port_text.size() || port > 65535 ||
      (port == 0 && !allow_port_zero)) {
    throw InputError(option + ": expected a port in " + (allow_port_zero ? "0" : "1") +
                     "..65535 in \"" + text + "\"");
  }
  Endpoint e;
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
    auto* a = reinterpret_cast<sockaddr_in6*>(&e.storage);
    if (::inet_pton(AF_INET6, host.c_str(), &a->sin6_addr) != 1) throw InputError(expected);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(static_cast<std::uint16_t>(port));
    e.length = sizeof(sockaddr_in6);
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&e.storage);
    if (::inet_pton(AF_INET, host.c_str(), &a->sin_addr) != 1) throw InputError(expected);
    a->sin_family = AF_INET;
    a->sin_port = htons(static_cast<std::uint16_t>(port));
    e.length = sizeof(sockaddr_in);
  }
  return e;
}

std::string endpoint_text(const sockaddr_storage& s) {
  char host[INET6_ADDRSTRLEN] = {};
  if (s.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&s);
    ::inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
    std::string text = "[";  // appended, not "[" + host: GCC 12 warns falsely (-Wrestrict)
    text += host;
    text += "]:";
    text += std::to_string(ntohs(a->sin6_port));
    return text;
  }
  const auto* a = reinterpret_cast<const sockaddr_in*>(&s);
  ::inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
  return std::string(host) + ":" + std::to_string(ntohs(a->sin_port));
}

int socket_error(int fd) {
  int err = 0;
  socklen_t len = sizeof err;
  if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) return errno;
  return err;
}

// What the peer acknowledged on this socket; 0 when the kernel cannot say.
std::uint64_t bytes_acked(int fd) {
  tcp_info info{};
  socklen_t len = sizeof info;
  if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) return 0;
  if (len < offsetof(tcp_info, tcpi_bytes_acked) + sizeof info.tcpi_bytes_acked) return 0;
  // The SYN takes one sequence number, and bytes_acked counts it once the handshake is done.
  return info.tcpi_bytes_acked > 0 ? info.tcpi_bytes_acked - 1 : 0;
}

}  // namespace

// ---- schedule ----

void validate_schedule(const TrafficSchedule& schedule) {
  const auto& [start_step, stop_step, start_ns, stop_ns] = schedule;
  if (start_step && start_ns) {
    throw InputError("--start-step, --start-time: expected one start, a step or a time, not both");
  }
  if (!start_step && !start_ns) {
    throw InputError("--start-step or --start-time: expected when the flow starts");
  }
  if (stop_step && stop_ns) {
    throw InputError("--stop-step, --stop-time: expected at most one stop, a step or a time");
  }
  if (start_step && stop_ns) {
    throw InputError(
        "--stop-time: a flow that starts at a step (--start-step) stops at a step "
        "(--stop-step), expected the same kind");
  }
  if (start_ns && stop_step) {
    throw InputError(
        "--stop-step: a flow that starts at a time (--start-time) stops at a time "
        "(--stop-time), expected the same kind");
  }
  if (start_step && *start_step < 0) {
    throw InputError("--start-step: expected a step >= 0, got " + std::to_string(*start_step));
  }
  if (start_ns && *start_ns < 0) throw InputError("--start-time: expected a time >= 0");
  if (start_step && stop_step && *stop_step <= *start_step) {
    throw InputError("--stop-step: expected a step after --start-step " +
                     std::to_string(*start_step) + ", got " + std::to_string(*stop_step));
  }
  if (start_ns && stop_ns && *stop_ns <= *start_ns) {
    throw InputError("--stop-time: expected a time after --start-time " +
                     format_duration(*start_ns) + ", got " + format_duration(*stop_ns));
  }
}

void SourceOptions::validate() const {
  parse_endpoint(to, "--to", false);
  if (connections < 1 || connections > kMaxConnections) {
    throw InputError("--connections: expected 1.." + std::to_string(kMaxConnections) + ", got " +
                     std::to_string(connections));
  }
  if (!(rate_Bps >= 0)) throw InputError("--rate: expected a positive bandwidth");
  if (progress.empty()) throw InputError("--progress: expected the job's progress file");
  if (connect_timeout_ns <= 0) throw InputError("--connect-timeout: expected a duration > 0");
  if (timeout_ns <= 0) throw InputError("--timeout: expected a duration > 0");
  if (poll_interval_ns <= 0) throw InputError("progress poll interval: expected > 0");
  validate_schedule(schedule);
}

std::optional<int> read_progress_step(const std::filesystem::path& progress) {
  // Re-opened every time: the writer replaces the file by rename, so an open descriptor would
  // keep reading the old one.
  const int fd = ::open(progress.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return std::nullopt;
  char text[32];
  const ssize_t n = ::read(fd, text, sizeof text);
  ::close(fd);
  if (n <= 0) return std::nullopt;
  int step = 0;
  const char* end = text + n;
  auto [ptr, ec] = std::from_chars(text, end, step);
  // A complete record is the number and its '\n'; anything else is not (yet) a step.
  if (ec != std::errc() || ptr == text || ptr == end || *ptr != '\n' || step < 0) {
    return std::nullopt;
  }
  return step;
}

double SourceReport::active_rate_bps() const {
  return active_s > 0 ? static_cast<double>(bytes) * 8 / active_s : 0;
}

std::string summary_line(const SourceReport& r) {
  char line[200];
  std::snprintf(line, sizeof line,
                "sent %llu bytes over %d connections in %.3f s (%.3f Gbit/s while active)",
                static_cast<unsigned long long>(r.bytes), r.connections, r.active_s,
                r.active_rate_bps() / 1e9);
  return line;
}

// ---- source ----

TrafficSource::TrafficSource(SourceOptions options) : options_(std::move(options)) {
  options_.validate();
  peer_ = endpoint_text(parse_endpoint(options_.to, "--to", false).storage);
  report_.connections = options_.connections;
}

TrafficSource::~TrafficSource() {
  for (int fd : connections_)
    ::close(fd);
}

void TrafficSource::open_connections(const std::atomic<bool>& stop) {
  const Endpoint peer = parse_endpoint(options_.to, "--to", false);
  const auto fail = [&](const std::string& why) -> void {
    throw RuntimeFailure("cannot connect to " + peer_ + ": " + why);
  };
  // SO_MAX_PACING_RATE: bytes per second per connection; TCP paces internally (no fq qdisc needed)
  // since Linux 4.13. A 64-bit value since 4.20; a 32-bit one before.
  const std::uint64_t per_connection_Bps =
      options_.rate_Bps > 0
          ? std::max<std::uint64_t>(
                1, static_cast<std::uint64_t>(options_.rate_Bps / options_.connections))
          : 0;
  for (int i = 0; i < options_.connections; ++i) {
    const int fd =
        ::socket(peer.storage.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP);
    if (fd < 0) fail("socket: " + errno_text(errno));
    connections_.push_back(fd);
    if (per_connection_Bps > 0 &&
        ::setsockopt(fd, SOL_SOCKET, SO_MAX_PACING_RATE, &per_connection_Bps,
                     sizeof per_connection_Bps) != 0) {
      throw RuntimeFailure("cannot cap the rate to " + peer_ + " at " +
                           format_bandwidth(static_cast<double>(per_connection_Bps)) +
                           " per connection: setsockopt(SO_MAX_PACING_RATE): " + errno_text(errno));
    }
    // The job's congestion control (a live run's `congestion_control`): flows that share a
    // bottleneck share it by their algorithms (CUBIC fills a deep buffer; BBR beside it gets
    // little), so the background must use the job's to be the interference the scenario means.
    if (!options_.congestion_control.empty() &&
        ::setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, options_.congestion_control.data(),
                     static_cast<socklen_t>(options_.congestion_control.size())) != 0) {
      throw RuntimeFailure("cannot use TCP congestion control \"" + options_.congestion_control +
                           "\" towards " + peer_ +
                           ": setsockopt(TCP_CONGESTION): " + errno_text(errno));
    }
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&peer.storage), peer.length) != 0 &&
        errno != EINPROGRESS) {
      fail(errno_text(errno));
    }
  }
  // All connects in parallel, each bounded by the connect timeout.
  const TimeNs deadline = steady_now_ns() + options_.connect_timeout_ns;
  std::vector<pollfd> pending;
  for (int fd : connections_)
    pending.push_back({fd, POLLOUT, 0});
  while (!pending.empty()) {
    if (stop.load()) return;  // run() notices stop and closes
    const TimeNs left = deadline - steady_now_ns();
    if (left <= 0) {
      fail("no answer within " + format_duration(options_.connect_timeout_ns));
    }
    poll_for(pending, std::min(left, kSinkPollNs));
    std::vector<pollfd> still;
    for (const pollfd& p : pending) {
      if (p.revents == 0) {
        still.push_back({p.fd, POLLOUT, 0});
        continue;
      }
      if (const int err = socket_error(p.fd); err != 0) fail(errno_text(err));
    }
    pending = std::move(still);
  }
}

void TrafficSource::close_connections(TimeNs now) {
  for (int fd : connections_) {
    report_.bytes += bytes_acked(fd);
    // Abortive close (RST): what still sits in the send buffer is dropped, so the flow stops now
    // rather than after the buffer drains (seconds at a low paced rate).
    const linger abort{1, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &abort, sizeof abort);
    ::close(fd);
  }
  connections_.clear();
  report_.active_s += to_seconds(now - active_since_ns_);
}

void TrafficSource::send_until(TimeNs until) {
  std::vector<pollfd> fds;
  for (int fd : connections_)
    fds.push_back({fd, POLLOUT, 0});
  for (TimeNs now = steady_now_ns(); now < until; now = steady_now_ns()) {
    for (pollfd& p : fds)
      p.revents = 0;
    if (poll_for(fds, until - now) == 0) continue;
    for (const pollfd& p : fds) {
      if (p.revents == 0) continue;
      const ssize_t n = ::send(p.fd, buffer_.data(), buffer_.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n >= 0 || errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) continue;
      const int err = errno;
      throw RuntimeFailure("connection to " + peer_ + " broken while sending: " + errno_text(err));
    }
  }
}

SourceEnd TrafficSource::run(const std::atomic<bool>& stop) {
  buffer_.assign(kIoBytes, '\0');
  const TimeNs deadline = steady_now_ns() + options_.timeout_ns;
  std::optional<TimeNs> step0_ns;  // when the progress file was first seen
  int step = -1;
  bool done = false;  // active once and then inactive: idle for good
  try {
    while (true) {
      TimeNs now = steady_now_ns();
      if (stop.load()) break;
      if (now >= deadline) {
        if (!connections_.empty()) close_connections(now);
        return SourceEnd::kTimedOut;
      }
      const bool active = !connections_.empty();
      if (!done) {
        if (!step0_ns || options_.schedule.by_step()) {
          if (const std::optional<int> s = read_progress_step(options_.progress)) {
            step = *s;
            if (!step0_ns) step0_ns = now;
          }
        }
        const bool should = step0_ns && options_.schedule.active(step, now - *step0_ns);
        if (should && !active && !report_.was_active) {
          active_since_ns_ = now;
          report_.was_active = true;
          open_connections(stop);
          continue;
        }
        if (!should && active) {
          close_connections(now);
          done = true;
          continue;
        }
      }
      const TimeNs next = std::min(now + options_.poll_interval_ns, deadline);
      if (active) {
        send_until(next);
      } else {
        sleep_for(next - now);
      }
    }
  } catch (...) {
    if (!connections_.empty()) close_connections(steady_now_ns());
    throw;
  }
  if (!connections_.empty()) close_connections(steady_now_ns());
  return SourceEnd::kStopped;
}

// ---- sink ----

TrafficSink::TrafficSink(const std::string& listen_address) : buffer_(kIoBytes) {
  const Endpoint e = parse_endpoint(listen_address, "--listen", true);
  listener_ = ::socket(e.storage.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (listener_ < 0) throw RuntimeFailure("socket: " + errno_text(errno));
  const int one = 1;
  ::setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(listener_, reinterpret_cast<const sockaddr*>(&e.storage), e.length) != 0 ||
      ::listen(listener_, 128) != 0) {
    const int err = errno;
    ::close(listener_);
    listener_ = -1;
    throw RuntimeFailure("cannot listen on " + endpoint_text(e.storage) + ": " + errno_text(err));
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  ::getsockname(listener_, reinterpret_cast<sockaddr*>(&bound), &len);
  address_ = endpoint_text(bound);
  port_ = static_cast<std::uint16_t>(std::stoi(address_.substr(address_.rfind(':') + 1)));
}

TrafficSink::~TrafficSink() {
  for (int fd : connections_)
    ::close(fd);
  if (listener_ >= 0) ::close(listener_);
}

bool TrafficSink::run(const std::atomic<bool>& stop, TimeNs timeout_ns) {
  const TimeNs deadline = steady_now_ns() + timeout_ns;
  std::vector<pollfd> fds;
  while (!stop.load()) {
    const TimeNs left = deadline - steady_now_ns();
    if (left <= 0) return false;
    fds.assign(1, pollfd{listener_, POLLIN, 0});
    for (int fd : connections_)
      fds.push_back({fd, POLLIN, 0});
    if (poll_for(fds, std::min(left, kSinkPollNs)) == 0) continue;
    if (fds[0].revents != 0) {
      while (true) {
        const int fd = ::accept4(listener_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) break;  // EAGAIN, or a connection gone before it was accepted
        connections_.push_back(fd);
        accepted_.fetch_add(1, std::memory_order_relaxed);
      }
    }
    std::vector<int> closed;
    for (std::size_t i = 1; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      const ssize_t n = ::recv(fds[i].fd, buffer_.data(), buffer_.size(), MSG_DONTWAIT);
      if (n > 0) {
        bytes_.fetch_add(static_cast<std::uint64_t>(n), std::memory_order_relaxed);
      } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        closed.push_back(fds[i].fd);  // closed or reset by the source: it is done
      }
    }
    for (int fd : closed) {
      ::close(fd);
      connections_.erase(std::find(connections_.begin(), connections_.end(), fd));
    }
  }
  return true;
}

}  // namespace adaptsim::testbed
