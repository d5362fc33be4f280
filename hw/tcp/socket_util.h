#pragma once
// Thin, exception-throwing helpers over BSD sockets: addresses, an owning fd, listening and
// socket tuning. Everything returned is non-blocking and close-on-exec unless said otherwise.

#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace adaptsim::tcp {

// "host:port" as given by the user or published by a rank; host may be a name, an IPv4 address
// or a bracketed IPv6 address ("[::1]:7000").
struct SocketAddress {
  std::string host;
  std::uint16_t port = 0;
  std::string str() const;
  bool operator==(const SocketAddress&) const = default;
};

// Throws InputError naming the text when it is not host:port with a port in 1..65535
// (0 allowed when allow_port_zero, for "pick a free port").
SocketAddress parse_socket_address(std::string_view text, bool allow_port_zero = false);

// Owns a file descriptor; closes it on destruction.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept;
  ~UniqueFd() { reset(); }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() { return std::exchange(fd_, -1); }
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

// Resolves host:port (numeric or by name) into a socket address; throws RuntimeFailure.
std::pair<sockaddr_storage, socklen_t> resolve_address(const SocketAddress& address);

// A listening TCP socket bound to host:port (port 0 = any free port), SO_REUSEADDR, non-blocking.
// Throws RuntimeFailure naming the address.
UniqueFd listen_tcp(const SocketAddress& bind_address, int backlog = 128);

// The address a socket is bound to (for a listener bound to port 0: the port it got).
SocketAddress local_address(int fd);
// accept4(2) on a listener, non-blocking and close-on-exec; `remote` gets the peer's host:port
// from accept itself ("?" if the kernel gave none), which stays known when the peer has already
// reset the connection (getpeername then fails). Returns -1 with errno set as accept4 does.
int accept_from(int listener, std::string& remote);

void set_nonblocking(int fd);
void set_cloexec(int fd, bool on);
// TCP_NODELAY (collective messages are latency-bound at small sizes, and Nagle would hold back
// the tail of every frame), and SO_SNDBUF/SO_RCVBUF of `buffer_bytes` when > 0 (0 keeps the
// kernel's autotuning), and the congestion control algorithm when not empty ("cubic"; root may
// pick any loaded one). Buffer failures are ignored (they cost speed, not correctness); returns
// false, with the reason in *error, when the congestion control cannot be set.
bool tune_socket(int fd, int buffer_bytes, const std::string& congestion_control = {},
                 std::string* error = nullptr);
// Throws InputError (one line: the name, why, where the available ones are listed) when this
// process cannot use `congestion_control` on its TCP sockets; for tools to check before starting.
void check_congestion_control(const std::string& congestion_control);
// The congestion control a socket uses (getsockopt TCP_CONGESTION); empty on error.
std::string socket_congestion_control(int fd);

// An address other ranks can reach this host at when bound to the wildcard: the first
// non-loopback IPv4 address of an interface that is up, else "127.0.0.1".
std::string default_advertised_host();

// strerror(err) as a std::string.
std::string errno_text(int err);

}  // namespace adaptsim::tcp
