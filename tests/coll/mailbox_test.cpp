// The simulated fabric's mailboxes (SimFabric::RankTransport): a message is matched to a receive
// by (sender, name), in any order of sends and receives, first come first matched under one key;
// names are held while in use and their ids forgotten only when none is.

#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "sim/core/rng.h"
#include "tests/coll/sim_harness.h"

using namespace adaptsim;
using adaptsim::testing::SimCluster;

TEST_CASE("mailboxes: every receive gets the message its (sender, name) and order say") {
  // 6 ranks; 3000 messages, each between a random pair under one of 40 names (so keys repeat and
  // many are open at once: the tables grow, and entries are removed from the middle of probe
  // runs), each send and its receive posted at independent random times in the same 2 ms, so
  // about half the messages arrive before their receive. Under one key the k-th receive posted
  // must get the k-th message sent (one connection per pair keeps their order).
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    CAPTURE(seed);
    SimCluster c(adaptsim::testing::switched(6, 1));
    Rng rng(seed);
    using Key = std::tuple<int, int, std::string>;  // sender, receiver, name
    std::map<Key, std::vector<std::uint64_t>> sent;
    std::map<Key, int> posted;
    struct Got {
      Key key;
      int index;
      std::uint64_t value = 0;
      bool done = false;
    };
    std::vector<std::unique_ptr<Got>> got;
    constexpr int kMessages = 3000;
    for (int i = 0; i < kMessages; ++i) {
      const int src = static_cast<int>(rng.below(6));
      const int dst = static_cast<int>((src + 1 + rng.below(5)) % 6);
      const std::string name = "grad/" + std::to_string(rng.below(40));
      const std::uint64_t value = 1000 * static_cast<std::uint64_t>(i) + 7;
      const auto send_at = static_cast<TimeNs>(rng.below(2'000'000));
      const auto recv_at = static_cast<TimeNs>(rng.below(2'000'000));
      c.engine.schedule_at(send_at, [&c, &sent, src, dst, name, value] {
        sent[{src, dst, name}].push_back(value);
        std::uint64_t v = value;
        c.fabric.transport(src).send(dst, name, {reinterpret_cast<const std::byte*>(&v), sizeof v},
                                     [] {});
      });
      c.engine.schedule_at(recv_at, [&c, &posted, &got, src, dst, name] {
        const Key key{src, dst, name};
        got.push_back(std::make_unique<Got>(Got{key, posted[key]++}));
        Got* g = got.back().get();
        c.fabric.transport(dst).recv(src, name,
                                     {reinterpret_cast<std::byte*>(&g->value), sizeof g->value},
                                     [g] { g->done = true; });
      });
    }
    c.engine.run();
    REQUIRE(got.size() == kMessages);
    int wrong = 0;
    for (const auto& g : got) {
      REQUIRE(g->done);
      const std::vector<std::uint64_t>& order = sent.at(g->key);
      REQUIRE(g->index < static_cast<int>(order.size()));
      if (g->value != order[g->index]) ++wrong;
    }
    CHECK(wrong == 0);
    // Nothing left behind: no arrival is waiting under any key.
    for (const auto& [key, values] : sent)
      CHECK_FALSE(c.fabric.transport(std::get<1>(key)).arrived(std::get<0>(key), std::get<2>(key)));
  }
}

TEST_CASE("mailboxes: arrived() sees a message before its receive, under its name only") {
  SimCluster c(adaptsim::testing::switched(2, 1));
  std::uint64_t v = 42, out = 0;
  c.fabric.transport(0).send(1, "a", {reinterpret_cast<const std::byte*>(&v), sizeof v}, [] {});
  c.engine.run();
  CHECK(c.fabric.transport(1).arrived(0, "a"));
  CHECK_FALSE(c.fabric.transport(1).arrived(0, "b"));  // a name never sent: no id at all
  CHECK_FALSE(c.fabric.transport(0).arrived(1, "a"));  // the other direction
  bool done = false;
  c.fabric.transport(1).recv(0, "a", {reinterpret_cast<std::byte*>(&out), sizeof out},
                             [&] { done = true; });
  c.engine.run();
  CHECK(done);
  CHECK(out == 42);
  CHECK_FALSE(c.fabric.transport(1).arrived(0, "a"));
}

TEST_CASE("mailboxes: names used once each, past the point where their ids are forgotten") {
  // 70 000 distinct names (Horovod's names carry a cycle number), one message each, with a second
  // message pending under a name that outlives them all: the name table is cleared only when no
  // name is in use, so the pending message keeps its match across the whole run.
  SimCluster c(adaptsim::testing::switched(2, 1));
  auto as_bytes = [](std::uint64_t& v) { return coll::Bytes{reinterpret_cast<std::byte*>(&v), 8}; };
  std::uint64_t keep = 99, kept = 0;
  c.fabric.transport(1).send(0, "kept", {reinterpret_cast<const std::byte*>(&keep), 8}, [] {});
  int wrong = 0;
  for (int i = 0; i < 70'000; ++i) {
    const std::string name = "hvd:" + std::to_string(i) + ":0";
    std::uint64_t v = static_cast<std::uint64_t>(i), out = ~0ull;
    if (i % 2 == 0) {  // receive first, then send; and the other way round
      c.fabric.transport(1).recv(0, name, as_bytes(out), [] {});
      c.fabric.transport(0).send(1, name, {reinterpret_cast<const std::byte*>(&v), 8}, [] {});
    } else {
      c.fabric.transport(0).send(1, name, {reinterpret_cast<const std::byte*>(&v), 8}, [] {});
      c.engine.run();
      c.fabric.transport(1).recv(0, name, as_bytes(out), [] {});
    }
    c.engine.run();
    if (out != v) ++wrong;
  }
  CHECK(wrong == 0);
  CHECK(c.fabric.names_known() == 70'001);  // "kept" is in use all along: none forgotten
  c.fabric.transport(0).recv(1, "kept", as_bytes(kept), [] {});
  c.engine.run();
  CHECK(kept == 99);
  CHECK(c.fabric.names_known() == 0);
  // Now nothing is in use: the names are forgotten at the last release, and used afresh.
  std::uint64_t v = 5, out = 0;
  c.fabric.transport(0).send(1, "hvd:3:0", {reinterpret_cast<const std::byte*>(&v), 8}, [] {});
  c.engine.run();
  CHECK(c.fabric.transport(1).arrived(0, "hvd:3:0"));
  CHECK(c.fabric.names_known() == 1);
  CHECK_FALSE(c.fabric.transport(1).arrived(0, "hvd:4:0"));
  c.fabric.transport(1).recv(0, "hvd:3:0", as_bytes(out), [] {});
  c.engine.run();
  CHECK(out == 5);
}
