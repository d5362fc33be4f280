#include "hw/live/etcd_store.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "hw/live/rank_launcher.h"
#include "sim/core/error.h"

namespace adaptsim::live {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The calling thread in network namespace `netns` (`ip netns add`'s /run/netns/NAME) while it
// lives, so the sockets it creates belong there; back in its own when destroyed. Empty: nothing.
class ThreadInNetns {
 public:
  explicit ThreadInNetns(const std::string& netns) {
    if (netns.empty()) return;
    own_ = tcp::UniqueFd(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
    const std::string path = "/run/netns/" + netns;
    const tcp::UniqueFd there(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!own_.valid() || !there.valid()) {
      throw RuntimeFailure("network namespace " + netns + ": cannot open " +
                           (own_.valid() ? path : "/proc/thread-self/ns/net") + ": " +
                           tcp::errno_text(errno));
    }
    if (::setns(there.get(), CLONE_NEWNET) != 0)
      throw RuntimeFailure("network namespace " + netns + ": setns: " + tcp::errno_text(errno));
  }
  ~ThreadInNetns() {
    // A thread left in another namespace would send the process's later traffic there.
    if (own_.valid() && ::setns(own_.get(), CLONE_NEWNET) != 0) std::abort();
  }
  ThreadInNetns(const ThreadInNetns&) = delete;
  ThreadInNetns& operator=(const ThreadInNetns&) = delete;

 private:
  tcp::UniqueFd own_;
};

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string base64(const std::string& in) {
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const unsigned v = (static_cast<unsigned char>(in[i]) << 16) |
                       (static_cast<unsigned char>(in[i + 1]) << 8) |
                       static_cast<unsigned char>(in[i + 2]);
    for (int s : {18, 12, 6, 0})
      out += kAlphabet[(v >> s) & 63];
  }
  if (i < in.size()) {
    unsigned v = static_cast<unsigned char>(in[i]) << 16;
    if (i + 1 < in.size()) v |= static_cast<unsigned char>(in[i + 1]) << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < in.size() ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::string unbase64(const std::string& in) {
  std::string out;
  unsigned v = 0;
  int bits = 0;
  for (char c : in) {
    const char* p = std::strchr(kAlphabet, c);
    if (c == '=' || c == '\0' || p == nullptr) break;
    v = (v << 6) | static_cast<unsigned>(p - kAlphabet);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((v >> bits) & 0xff);
    }
  }
  return out;
}

// The end of a key range covering every key with `prefix` (etcd's prefix range: the last byte + 1).
std::string prefix_end(std::string prefix) {
  prefix.back() = static_cast<char>(prefix.back() + 1);
  return prefix;
}

// The body of an HTTP/1.1 response (Content-Length, chunked, or up to the close).
std::string http_body(const std::string& response, const std::string& who) {
  const std::size_t head_end = response.find("\r\n\r\n");
  if (head_end == std::string::npos) throw RuntimeFailure(who + ": a truncated HTTP response");
  const std::string head = response.substr(0, head_end);
  const std::size_t sp = head.find(' ');
  const int status = sp == std::string::npos ? 0 : std::atoi(head.c_str() + sp + 1);
  std::string body = response.substr(head_end + 4);
  std::string lower = head;
  std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
  if (lower.find("transfer-encoding: chunked") != std::string::npos) {
    std::string out;
    std::size_t at = 0;
    while (at < body.size()) {
      const std::size_t eol = body.find("\r\n", at);
      if (eol == std::string::npos) break;
      const std::size_t n = std::strtoul(body.c_str() + at, nullptr, 16);
      if (n == 0) break;
      out += body.substr(eol + 2, n);
      at = eol + 2 + n + 2;
    }
    body = out;
  }
  if (status != 200) {
    throw RuntimeFailure(who + ": HTTP " + std::to_string(status) + ": " + body.substr(0, 200));
  }
  return body;
}

}  // namespace

EtcdClient::EtcdClient(EtcdEndpoint endpoint, TimeNs timeout_ns)
    : endpoint_(std::move(endpoint)), timeout_ns_(timeout_ns) {}

std::string EtcdClient::call(const std::string& path, const std::string& body) const {
  const std::string who = "etcd at " + endpoint_.address.str() +
                          (endpoint_.netns.empty() ? "" : " (namespace " + endpoint_.netns + ")");
  const auto [addr, len] = tcp::resolve_address(endpoint_.address);
  tcp::UniqueFd fd = [&] {
    const ThreadInNetns there(endpoint_.netns);
    return tcp::UniqueFd(::socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  }();
  if (!fd.valid()) throw RuntimeFailure(who + ": socket: " + tcp::errno_text(errno));
  timeval tv{};
  tv.tv_sec = timeout_ns_ / kNsPerSecond;
  tv.tv_usec = (timeout_ns_ % kNsPerSecond) / 1000;
  // Bounds connect(2) too on Linux, and every read and write.
  ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), len) != 0) {
    throw RuntimeFailure(who + ": unavailable (connect: " + tcp::errno_text(errno) + ")");
  }
  const std::string request =
      "POST " + path + " HTTP/1.1\r\nHost: " + endpoint_.address.host +
      "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
      "\r\nConnection: close\r\n\r\n" + body;
  for (std::size_t at = 0; at < request.size();) {
    const ssize_t n = ::send(fd.get(), request.data() + at, request.size() - at, MSG_NOSIGNAL);
    if (n <= 0) throw RuntimeFailure(who + ": send: " + tcp::errno_text(errno));
    at += static_cast<std::size_t>(n);
  }
  std::string response;
  char buf[16384];
  for (;;) {
    const ssize_t n = ::recv(fd.get(), buf, sizeof buf, 0);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      throw RuntimeFailure(who + ": no answer (recv: " + tcp::errno_text(errno) + ")");
    }
    response.append(buf, static_cast<std::size_t>(n));
  }
  return http_body(response, who);
}

EtcdStore::EtcdStore(fs::path dir, int capacity, EtcdEndpoint endpoint, std::string job,
                     TimeNs lease_ttl_ns, TimeNs timeout_ns)
    : FileStore(std::move(dir), capacity),
      client_(std::move(endpoint), timeout_ns),
      prefix_("/adaptsim/" + job + "/"),
      lease_ttl_ns_(lease_ttl_ns) {}

std::optional<std::pair<std::string, std::string>> EtcdStore::read(const std::string& key) const {
  const json r =
      json::parse(client_.call("/v3/kv/range", json{{"key", base64(prefix_ + key)}}.dump()));
  if (!r.contains("kvs") || r.at("kvs").empty()) return std::nullopt;
  const json& kv = r.at("kvs").at(0);
  return std::pair{unbase64(kv.value("value", "")), kv.value("mod_revision", "0")};
}

void EtcdStore::write(const std::string& key, const std::string& value) const {
  client_.call("/v3/kv/put", json{{"key", base64(prefix_ + key)}, {"value", base64(value)}}.dump());
}

std::vector<std::string> EtcdStore::keys(const std::string& folder) const {
  const std::string from = prefix_ + folder;
  const json r = json::parse(client_.call(
      "/v3/kv/range",
      json{{"key", base64(from)}, {"range_end", base64(prefix_end(from))}, {"keys_only", true}}
          .dump()));
  std::vector<std::string> out;
  if (r.contains("kvs")) {
    for (const json& kv : r.at("kvs"))
      out.push_back(unbase64(kv.at("key").get<std::string>()).substr(prefix_.size()));
  }
  return out;
}

std::optional<runtime::ClusterConfig> EtcdStore::get(std::string* error) const {
  try {
    const auto doc = read("cluster");
    if (!doc) {
      *error = "etcd at " + client_.endpoint().str() + ": no cluster under " + prefix_;
      return std::nullopt;
    }
    std::string why;
    std::optional<runtime::ClusterConfig> c = parse_cluster(doc->first, capacity(), &why);
    if (!c) *error = "etcd at " + client_.endpoint().str() + ", " + prefix_ + "cluster: " + why;
    return c;
  } catch (const std::exception& e) {
    *error = std::string(e.what()) + " (the config store is unavailable)";
    return std::nullopt;
  }
}

void EtcdStore::put(const runtime::ClusterConfig& cluster) const {
  write("cluster", cluster_json(cluster));
}

bool EtcdStore::swap(int expected_version, const runtime::ClusterConfig& cluster) const {
  const auto doc = read("cluster");
  std::string why;
  const std::optional<runtime::ClusterConfig> now =
      doc ? parse_cluster(doc->first, capacity(), &why) : std::nullopt;
  if (!now || now->version != expected_version) return false;
  // Only while nobody has written it since it was read.
  const json r = json::parse(client_.call(
      "/v3/kv/txn", json{{"compare", json::array({{{"key", base64(prefix_ + "cluster")},
                                                   {"target", "MOD"},
                                                   {"result", "EQUAL"},
                                                   {"mod_revision", doc->second}}})},
                         {"success", json::array({{{"request_put",
                                                    {{"key", base64(prefix_ + "cluster")},
                                                     {"value", base64(cluster_json(cluster))}}}}})}}
                        .dump()));
  return r.value("succeeded", false);
}

void EtcdStore::renew_lease(int worker) const {
  std::string& id = lease_ids_[worker];
  if (!id.empty()) {
    const json r = json::parse(client_.call("/v3/lease/keepalive", json{{"ID", id}}.dump()));
    // An expired lease answers without a TTL: its key is gone; take a new one.
    if (!r.contains("result") || !r.at("result").contains("TTL")) id.clear();
  }
  if (id.empty()) {
    const TimeNs ttl_s = std::max<TimeNs>(1, (lease_ttl_ns_ + kNsPerSecond - 1) / kNsPerSecond);
    const json g = json::parse(client_.call("/v3/lease/grant", json{{"TTL", ttl_s}}.dump()));
    id = g.at("ID").get<std::string>();
  }
  // The key is put again each time, bound to this lease: a runner that held a starting process's
  // lease may have bound it to the runner's own (FileStore::mark_started), which then lapses.
  client_.call("/v3/kv/put", json{{"key", base64(prefix_ + "leases/w" + std::to_string(worker))},
                                  {"value", base64("alive")},
                                  {"lease", id}}
                                 .dump());
}

std::vector<int> EtcdStore::live_leases(TimeNs) const {
  std::vector<int> out;
  for (const std::string& k : keys("leases/w"))
    out.push_back(std::stoi(k.substr(std::string("leases/w").size())));
  std::sort(out.begin(), out.end());
  return out;
}

bool EtcdStore::post_notice(const runtime::RunnerNotice& notice) const {
  const std::string key = base64(prefix_ + "notices/v" + std::to_string(notice.cluster.version));
  // Created only where the key does not exist yet (its create revision is 0).
  const json r = json::parse(client_.call(
      "/v3/kv/txn",
      json{{"compare", json::array({{{"key", key},
                                     {"target", "CREATE"},
                                     {"result", "EQUAL"},
                                     {"create_revision", "0"}}})},
           {"success", json::array({{{"request_put",
                                      {{"key", key}, {"value", base64(notice_json(notice))}}}}})}}
          .dump()));
  return r.value("succeeded", false);
}

std::vector<int> EtcdStore::notice_versions() const {
  std::vector<int> out;
  for (const std::string& k : keys("notices/v"))
    out.push_back(std::stoi(k.substr(std::string("notices/v").size())));
  std::sort(out.begin(), out.end());
  return out;
}

runtime::RunnerNotice EtcdStore::read_notice(int version) const {
  const std::string key = std::string("notices/v") + std::to_string(version);
  const auto v = read(key);
  if (!v) throw RuntimeFailure("etcd at " + client_.endpoint().str() + ": no " + prefix_ + key);
  return notice_from_json(v->first, prefix_ + key);
}

void EtcdStore::publish_address(int version, int worker, const std::string& address) const {
  write(std::string("addresses/v") + std::to_string(version) + "/w" + std::to_string(worker),
        address);
}

std::optional<std::string> EtcdStore::address(int version, int worker) const {
  const auto v =
      read(std::string("addresses/v") + std::to_string(version) + "/w" + std::to_string(worker));
  if (!v) return std::nullopt;
  return v->first;
}

void EtcdStore::remove_job() const {
  client_.call("/v3/kv/deleterange",
               json{{"key", base64(prefix_)}, {"range_end", base64(prefix_end(prefix_))}}.dump());
}

namespace {

std::string etcd_program() {
  if (const char* e = std::getenv("ADAPTSIM_ETCD")) return e;
  return resolve_program("etcd");
}

// A port free on `host` in network namespace `netns`.
int free_port(const std::string& netns, const std::string& host) {
  const ThreadInNetns there(netns);
  const tcp::UniqueFd l = tcp::listen_tcp({host, 0});
  return tcp::local_address(l.get()).port;
}

}  // namespace

bool etcd_available() {
  try {
    etcd_program();
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

EtcdServer::EtcdServer(const fs::path& scratch, std::string netns, std::string host)
    : dir_(scratch / "etcd") {
  fs::create_directories(dir_);
  endpoint_.netns = std::move(netns);
  endpoint_.address = {host, static_cast<std::uint16_t>(free_port(endpoint_.netns, host))};
  peer_port_ = free_port(endpoint_.netns, host);
  start();
}

void EtcdServer::start() {
  const std::string program = etcd_program();
  const std::string client = "http://" + endpoint_.address.str();
  const std::string peer =
      "http://" +
      tcp::SocketAddress{endpoint_.address.host, static_cast<std::uint16_t>(peer_port_)}.str();
  std::vector<std::string> args = {program,
                                   "--data-dir",
                                   (dir_ / "data").string(),
                                   "--listen-client-urls",
                                   client,
                                   "--advertise-client-urls",
                                   client,
                                   "--listen-peer-urls",
                                   peer,
                                   "--initial-advertise-peer-urls",
                                   peer,
                                   "--initial-cluster",
                                   "default=" + peer};
  std::vector<char*> argv;
  for (std::string& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string log = (dir_ / "etcd.log").string();
  // Its namespace's file, opened before the fork (the child only calls setns and exec).
  tcp::UniqueFd netns;
  if (!endpoint_.netns.empty()) {
    const std::string path = "/run/netns/" + endpoint_.netns;
    netns = tcp::UniqueFd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!netns.valid())
      throw RuntimeFailure("cannot start etcd in " + path + ": " + tcp::errno_text(errno));
  }
  const pid_t pid = ::fork();
  if (pid < 0) throw RuntimeFailure("cannot start etcd: fork: " + tcp::errno_text(errno));
  if (pid == 0) {
    ::setpgid(0, 0);
    if (netns.valid() && ::setns(netns.get(), CLONE_NEWNET) != 0) ::_exit(126);
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    ::execv(program.c_str(), argv.data());
    ::_exit(127);
  }
  pid_ = pid;
  const EtcdClient probe(endpoint_, kNsPerSecond / 2);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  while (std::chrono::steady_clock::now() < deadline) {
    try {
      probe.call("/v3/kv/range", json{{"key", base64("/adaptsim/probe")}}.dump());
      return;
    } catch (const std::exception&) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  stop();
  throw RuntimeFailure("etcd did not answer at " + endpoint_.address.str() +
                       " within 15 s (its log: " + log + ")");
}

void EtcdServer::stop() {
  if (pid_ <= 0) return;
  ::kill(-pid_, SIGKILL);
  ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
}

EtcdServer::~EtcdServer() {
  stop();
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

}  // namespace adaptsim::live
