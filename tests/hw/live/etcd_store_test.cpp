// The etcd config store (hw/live/etcd_store.h) against a private etcd started by the test
// (Debian's etcd-server; the cases skip, and say so, without it): the cluster document, the
// compare-and-swap, a version's first notice, the addresses, leases that lapse, and an etcd that
// is gone.

#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "hw/live/etcd_store.h"
#include "sim/core/error.h"

using namespace adaptsim;
using namespace adaptsim::live;
namespace fs = std::filesystem;

TEST_CASE("etcd store: cluster, compare-and-swap, notices, addresses, leases, unavailable" *
          doctest::skip(!etcd_available())) {
  const fs::path dir = fs::temp_directory_path() / "adaptsim-etcd-store-test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  EtcdServer server(dir);
  const EtcdStore store(dir / "run", 4, server.endpoint(), "job1", kNsPerSecond);
  store.create({0, {0}});
  std::string error;
  CHECK(store.get(&error) == runtime::ClusterConfig{0, {0}});
  store.put({1, {0, 1}});
  CHECK(store.get(&error) == runtime::ClusterConfig{1, {0, 1}});
  // Compare-and-swap: only from the version held.
  CHECK_FALSE(store.swap(0, {2, {1}}));
  CHECK(store.swap(1, {2, {1}}));
  CHECK(store.get(&error) == runtime::ClusterConfig{2, {1}});
  // Another job's keys are apart.
  const EtcdStore other(dir / "run2", 4, server.endpoint(), "job2", kNsPerSecond);
  CHECK_FALSE(other.get(&error).has_value());
  CHECK(error.find("no cluster under /adaptsim/job2/") != std::string::npos);

  runtime::RunnerNotice n;
  n.cluster = {3, {1, 2}};
  n.step = 5;
  n.agreed_state = "{}";
  CHECK(store.post_notice(n));
  CHECK_FALSE(store.post_notice(n));
  CHECK(store.notice_versions() == std::vector<int>{3});
  CHECK(store.read_notice(3).cluster == n.cluster);
  CHECK_FALSE(store.address(3, 2).has_value());
  store.publish_address(3, 2, "127.0.0.1:5000");
  CHECK(store.address(3, 2) == "127.0.0.1:5000");

  // A lease of 1 s: alive while renewed, gone once it lapses.
  store.renew_lease(2);
  CHECK(store.live_leases(kNsPerSecond) == std::vector<int>{2});
  store.renew_lease(2);
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  CHECK(store.live_leases(kNsPerSecond).empty());

  // etcd gone: one line saying so; back: the same cluster.
  server.stop();
  error.clear();
  CHECK_FALSE(store.get(&error).has_value());
  CHECK(error.find("etcd at " + server.endpoint().address.str()) != std::string::npos);
  CHECK(error.find("unavailable") != std::string::npos);
  CHECK(error.find('\n') == std::string::npos);
  server.start();
  CHECK(store.get(&error) == runtime::ClusterConfig{2, {1}});
  fs::remove_all(dir);
}
