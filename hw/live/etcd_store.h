#pragma once
// The config store of a live elastic run in etcd (KUNGFU.md 4: KungFu's config server; Debian's
// etcd-server), over etcd's v3 JSON gateway (POST /v3/kv/range, put, txn, /v3/lease/grant,
// keepalive; keys and values base64): under /adaptsim/<job>/ the cluster document, the runners'
// notices (created by a transaction that succeeds only while the key does not exist: the first
// wins), each version's addresses, and a key per worker bound to an etcd lease of the run's
// failure timeout that its process keeps alive (a worker is alive while its key exists: etcd
// deletes it when the lease lapses). A compare-and-swap of the cluster compares the document's
// modification revision. The bulk files (records, checkpoint) stay in the run's folder
// (FileStore). Every request has a timeout; an etcd that does not answer makes get() say so in one
// line (the job keeps its cluster), and the other operations throw RuntimeFailure naming the
// endpoint.
//
// EtcdServer starts a private etcd on loopback (a free port, a temporary data folder) for a run or
// a test, or in a testbed server's network namespace on its address (where the testbed's other
// namespaces reach it over the emulated network, as KungFu's config server runs on one of the
// cluster's hosts), and stops it and removes its data when destroyed. A client reaches one in a
// namespace it does not run in by creating its sockets there (setns(2); root, as the testbed).

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hw/live/elastic_store.h"
#include "hw/tcp/socket_util.h"
#include "sim/core/time.h"

namespace adaptsim::live {

// Where an etcd listens: its client address, and the network namespace (`ip netns` name) its
// clients connect from (empty: the caller's).
struct EtcdEndpoint {
  tcp::SocketAddress address;
  std::string netns;
};

// One blocking JSON request to etcd's gateway per call (a connection each, closed after).
class EtcdClient {
 public:
  EtcdClient(EtcdEndpoint endpoint, TimeNs timeout_ns);
  // The response body of POST `path` with `body` (JSON text); throws RuntimeFailure "etcd at
  // host:port: ..." on a connection, timeout, HTTP or gateway error.
  std::string call(const std::string& path, const std::string& body) const;
  const tcp::SocketAddress& endpoint() const { return endpoint_.address; }

 private:
  EtcdEndpoint endpoint_;
  TimeNs timeout_ns_;
};

class EtcdStore final : public FileStore {
 public:
  // `dir`: the run's folder (bulk files); `job`: the key prefix's job name; `lease_ttl_ns`: a
  // worker's lease (rounded up to whole seconds, at least 1: etcd's TTL unit).
  EtcdStore(std::filesystem::path dir, int capacity, EtcdEndpoint endpoint, std::string job,
            TimeNs lease_ttl_ns, TimeNs timeout_ns = 2 * kNsPerSecond);

  std::optional<runtime::ClusterConfig> get(std::string* error) const override;
  void put(const runtime::ClusterConfig& cluster) const override;
  bool swap(int expected_version, const runtime::ClusterConfig& cluster) const override;
  void renew_lease(int worker) const override;
  std::vector<int> live_leases(TimeNs lifetime_ns) const override;
  bool post_notice(const runtime::RunnerNotice& notice) const override;
  std::vector<int> notice_versions() const override;
  runtime::RunnerNotice read_notice(int version) const override;
  void publish_address(int version, int worker, const std::string& address) const override;
  std::optional<std::string> address(int version, int worker) const override;
  // Deletes every key of the job (the launcher, once the run is over: nothing is left in etcd).
  void remove_job() const;

 private:
  // The value of `key` under the prefix and its modification revision, or nullopt.
  std::optional<std::pair<std::string, std::string>> read(const std::string& key) const;
  void write(const std::string& key, const std::string& value) const;
  // The keys under prefix + `folder`, without the prefix.
  std::vector<std::string> keys(const std::string& folder) const;

  EtcdClient client_;
  std::string prefix_;  // "/adaptsim/<job>/"
  TimeNs lease_ttl_ns_;
  // The leases this object renews, by worker (a process: its own; a runner: its starting ones').
  mutable std::map<int, std::string> lease_ids_;
};

// A private etcd (etcd on $PATH, or $ADAPTSIM_ETCD) on 127.0.0.1, or in network namespace
// `netns` on `host` (its client and peer ports free there): started by the constructor, which
// waits until it answers (RuntimeFailure otherwise, naming its log); killed and its data folder
// removed by the destructor.
class EtcdServer {
 public:
  explicit EtcdServer(const std::filesystem::path& scratch, std::string netns = {},
                      std::string host = "127.0.0.1");
  ~EtcdServer();
  EtcdServer(const EtcdServer&) = delete;
  EtcdServer& operator=(const EtcdServer&) = delete;
  const EtcdEndpoint& endpoint() const { return endpoint_; }
  // Stops it (a test of an unavailable store), and starts it again on the same port and data.
  void stop();
  void start();

 private:
  std::filesystem::path dir_;
  EtcdEndpoint endpoint_;
  int peer_port_ = 0;
  int pid_ = -1;
};

// Whether an etcd binary is available (for tests that skip without it).
bool etcd_available();

}  // namespace adaptsim::live
