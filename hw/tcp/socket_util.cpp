#include "hw/tcp/socket_util.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include "sim/core/error.h"

namespace adaptsim::tcp {

std::string errno_text(int err) {
  return std::strerror(err);
}

std::string SocketAddress::str() const {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

SocketAddress parse_socket_address(std::string_view text, bool allow_port_zero) {
  std::string quoted(1, '"');
  quoted.append(text);
  quoted += '"';
  const std::size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == text.size()) {
    throw InputError("expected an address such as 127.0.0.1:7000, got " + quoted);
  }
  std::string_view host = text.substr(0, colon);
  if (host.front() == '[') {
    if (host.back() != ']' || host.size() < 3) {
      throw InputError("expected an address such as [::1]:7000, got " + quoted);
    }
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    throw InputError("IPv6 addresses need brackets, as in [::1]:7000; got " + quoted);
  }
  const std::string_view port_text = text.substr(colon + 1);
  unsigned port = 0;
  auto [ptr, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || ptr != port_text.data() + port_text.size() || port > 65535 ||
      (port == 0 && !allow_port_zero)) {
    throw InputError("expected a port in 1..65535 in " + quoted);
  }
  return {std::string(host), static_cast<std::uint16_t>(port)};
}

UniqueFd& UniqueFd::operator=(UniqueFd&& o) noexcept {
  if (this != &o) reset(o.release());
  return *this;
}

void UniqueFd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

std::pair<sockaddr_storage, socklen_t> resolve_address(const SocketAddress& address) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* result = nullptr;
  const std::string port = std::to_string(address.port);
  const int rc = ::getaddrinfo(address.host.c_str(), port.c_str(), &hints, &result);
  if (rc != 0 || result == nullptr) {
    throw RuntimeFailure("cannot resolve " + address.str() + ": " + ::gai_strerror(rc));
  }
  sockaddr_storage storage{};
  std::memcpy(&storage, result->ai_addr, result->ai_addrlen);
  const socklen_t len = result->ai_addrlen;
  ::freeaddrinfo(result);
  return {storage, len};
}

void set_nonblocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL, 0);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    throw RuntimeFailure("fcntl(O_NONBLOCK): " + errno_text(errno));
  }
}

void set_cloexec(int fd, bool on) {
  const int flags = ::fcntl(fd, F_GETFD, 0);
  if (flags < 0 || ::fcntl(fd, F_SETFD, on ? (flags | FD_CLOEXEC) : (flags & ~FD_CLOEXEC)) < 0) {
    throw RuntimeFailure("fcntl(FD_CLOEXEC): " + errno_text(errno));
  }
}

UniqueFd listen_tcp(const SocketAddress& bind_address, int backlog) {
  auto [storage, len] = resolve_address(bind_address);
  UniqueFd fd(::socket(storage.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) throw RuntimeFailure("socket: " + errno_text(errno));
  const int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&storage), len) != 0) {
    throw RuntimeFailure("cannot listen on " + bind_address.str() + ": bind: " + errno_text(errno));
  }
  if (::listen(fd.get(), backlog) != 0) {
    throw RuntimeFailure("cannot listen on " + bind_address.str() + ": " + errno_text(errno));
  }
  return fd;
}

namespace {

SocketAddress from_sockaddr(const sockaddr_storage& s) {
  char host[INET6_ADDRSTRLEN] = {};
  if (s.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&s);
    ::inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
    return {host, ntohs(a->sin_port)};
  }
  if (s.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&s);
    ::inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
    return {host, ntohs(a->sin6_port)};
  }
  return {"?", 0};
}

}  // namespace

SocketAddress local_address(int fd) {
  sockaddr_storage s{};
  socklen_t len = sizeof s;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&s), &len) != 0) {
    throw RuntimeFailure("getsockname: " + errno_text(errno));
  }
  return from_sockaddr(s);
}

int accept_from(int listener, std::string& remote) {
  sockaddr_storage s{};
  socklen_t len = sizeof s;
  const int fd =
      ::accept4(listener, reinterpret_cast<sockaddr*>(&s), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd >= 0) remote = len > 0 ? from_sockaddr(s).str() : "?";
  return fd;
}

bool tune_socket(int fd, int buffer_bytes, const std::string& congestion_control,
                 std::string* error) {
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (buffer_bytes > 0) {
    ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buffer_bytes, sizeof buffer_bytes);
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buffer_bytes, sizeof buffer_bytes);
  }
  if (congestion_control.empty()) return true;
  if (::setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, congestion_control.data(),
                   static_cast<socklen_t>(congestion_control.size())) == 0) {
    return true;
  }
  if (error != nullptr) *error = errno_text(errno);
  return false;
}

void check_congestion_control(const std::string& congestion_control) {
  if (congestion_control.empty()) return;
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  std::string why = "socket: " + errno_text(errno);
  if (fd.valid() && tune_socket(fd.get(), 0, congestion_control, &why)) return;
  throw InputError("TCP congestion control \"" + congestion_control + "\" cannot be used: " + why +
                   " (available: /proc/sys/net/ipv4/tcp_available_congestion_control)");
}

std::string socket_congestion_control(int fd) {
  char name[32] = {};
  socklen_t len = sizeof name;
  if (::getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, &len) != 0) return {};
  return std::string(name, ::strnlen(name, len));
}

std::string default_advertised_host() {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return "127.0.0.1";
  std::string found = "127.0.0.1";
  for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    if ((i->ifa_flags & IFF_UP) == 0 || (i->ifa_flags & IFF_LOOPBACK) != 0) continue;
    char host[INET_ADDRSTRLEN] = {};
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr, host,
                sizeof host);
    found = host;
    break;
  }
  ::freeifaddrs(list);
  return found;
}

}  // namespace adaptsim::tcp
