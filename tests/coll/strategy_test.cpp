#include "sim/coll/strategy.h"

#include <doctest/doctest.h>

using namespace adaptsim::coll;

TEST_CASE("names round-trip and unknown names are rejected") {
  for (StrategyKind k : all_strategies())
    CHECK(parse_strategy(strategy_name(k)) == k);
  CHECK_FALSE(parse_strategy("STARR").has_value());
  CHECK(all_strategies().size() == 11);
}

TEST_CASE("STAR: rank 0 broadcasts to all and the reduce graph is its reverse plus self-loops") {
  auto pairs = make_graph_pairs(StrategyKind::kStar, {0, 1, 2, 3});
  REQUIRE(pairs.size() == 1);
  CHECK(pairs[0].bcast.digest() == "0->1 0->2 0->3 | self:");
  CHECK(pairs[0].reduce.digest() == "1->0 2->0 3->0 | self: 0 1 2 3");
  CHECK(pairs[0].bcast.is_spanning_tree_from(0));
}

TEST_CASE("BINARY_TREE is heap-shaped over ranks") {
  auto pairs = make_graph_pairs(StrategyKind::kBinaryTree, {0, 1, 2, 3, 4, 5});
  CHECK(pairs[0].bcast.digest() == "0->1 0->2 1->3 1->4 2->5 | self:");
}

TEST_CASE("BINARY_TREE_STAR: intra-host stars plus a binary tree over host masters") {
  // Ranks 0,1 on host 0; 2,3 on host 1; 4,5 on host 2. Masters 0, 2, 4.
  auto pairs = make_graph_pairs(StrategyKind::kBinaryTreeStar, {0, 0, 1, 1, 2, 2});
  REQUIRE(pairs.size() == 1);
  CHECK(pairs[0].bcast.digest() == "0->1 0->2 0->4 2->3 4->5 | self:");
  CHECK(pairs[0].bcast.is_spanning_tree_from(0));
}

TEST_CASE("MULTI_BINARY_TREE_STAR: one pair per host, roots rotate over the masters") {
  const std::vector<int> hosts = {0, 1, 2, 3};  // one GPU per VM: every rank a master
  auto pairs = make_graph_pairs(StrategyKind::kMultiBinaryTreeStar, hosts);
  REQUIRE(pairs.size() == 4);
  for (int i = 0; i < 4; ++i) {
    CHECK(pairs[i].bcast.root() == i);
    CHECK(pairs[i].bcast.is_spanning_tree_from(i));
  }
  // Offset 1: masters order 1,2,3,0 -> 1->2, 1->3, 2->0.
  CHECK(pairs[1].bcast.digest() == "1->2 1->3 2->0 | self:");
}

TEST_CASE("MULTI_STAR, CLIQUE and TREE") {
  const std::vector<int> hosts = {0, 0, 1, 1};
  auto ms = make_graph_pairs(StrategyKind::kMultiStar, hosts);
  REQUIRE(ms.size() == 2);
  CHECK(ms[1].bcast.digest() == "0->1 2->3 2->0 | self:");
  auto cl = make_graph_pairs(StrategyKind::kClique, hosts);
  REQUIRE(cl.size() == 4);
  CHECK(cl[2].bcast.digest() == "2->0 2->1 2->3 | self:");
  auto tr = make_graph_pairs(StrategyKind::kTree, hosts);
  CHECK(tr[0].bcast.digest() == "0->1 0->2 2->3 | self:");
}

TEST_CASE(
    "one rank per host: MULTI_STAR is CLIQUE, TREE is STAR, BINARY_TREE_STAR is BINARY_TREE") {
  // With every rank its host's master the host-level strategies build the rank-level graphs,
  // edge for edge: the validation's twin rows run the same collective (docs/validation.md).
  const std::vector<int> hosts = {0, 1, 2, 3, 4, 5, 6, 7};
  for (auto [a, b] : {std::pair{StrategyKind::kMultiStar, StrategyKind::kClique},
                      std::pair{StrategyKind::kTree, StrategyKind::kStar},
                      std::pair{StrategyKind::kBinaryTreeStar, StrategyKind::kBinaryTree}}) {
    const auto pa = make_graph_pairs(a, hosts);
    const auto pb = make_graph_pairs(b, hosts);
    REQUIRE(pa.size() == pb.size());
    for (std::size_t i = 0; i < pa.size(); ++i) {
      CHECK(pa[i].bcast.digest() == pb[i].bcast.digest());
      CHECK(pa[i].reduce.digest() == pb[i].reduce.digest());
    }
  }
  // With two ranks per host they differ.
  CHECK(make_graph_pairs(StrategyKind::kMultiStar, {0, 0, 1, 1}).size() !=
        make_graph_pairs(StrategyKind::kClique, {0, 0, 1, 1}).size());
}

TEST_CASE("RING: chain reduce ending at r and chain broadcast from r (GenCircularGraphPair)") {
  auto pairs = make_graph_pairs(StrategyKind::kRing, {0, 1, 2, 3});
  REQUIRE(pairs.size() == 4);
  // r = 1: reduce chain 2->3->0->1, broadcast chain 1->2->3->0.
  CHECK(pairs[1].reduce.digest() == "0->1 2->3 3->0 | self: 0 1 2 3");
  CHECK(pairs[1].bcast.digest() == "1->2 2->3 3->0 | self:");
}

TEST_CASE("AUTO is STAR on one host and BINARY_TREE_STAR across hosts") {
  CHECK(resolve_auto(StrategyKind::kAuto, {0, 0, 0}) == StrategyKind::kStar);
  CHECK(resolve_auto(StrategyKind::kAuto, {0, 1}) == StrategyKind::kBinaryTreeStar);
}

TEST_CASE("every graph strategy's broadcast graphs are spanning trees") {
  const std::vector<std::vector<int>> layouts = {
      {0}, {0, 1}, {0, 0, 0}, {0, 1, 2, 3, 4}, {0, 0, 1, 1, 2, 2, 2}, {0, 0, 0, 0, 1, 1, 1, 1}};
  for (StrategyKind k : all_strategies()) {
    if (!is_graph_strategy(k)) continue;
    for (const auto& hosts : layouts) {
      for (const auto& p : make_graph_pairs(k, hosts)) {
        CHECK_MESSAGE(p.bcast.is_spanning_tree_from(p.bcast.root()),
                      strategy_name(k) << " on " << hosts.size() << " ranks");
      }
    }
  }
}

TEST_CASE("KungFu's NAME hash is the sum of squared character codes") {
  // 'a' = 97, 'b' = 98: 97^2 + 98^2 = 9409 + 9604 = 19013.
  CHECK(kungfu_name_hash("ab") == 19013);
}
