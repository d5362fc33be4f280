// FlatIndex (sim/core/flat_index.h): the open-addressing index of the route cache and the
// simulated mailboxes, against std::unordered_map under random inserts, erases and lookups.

#include "sim/core/flat_index.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "sim/core/rng.h"

TEST_CASE("FlatIndex: random inserts, erases and finds agree with std::unordered_map") {
  // Keys from a small range so that probe runs are long and erases hit their middles; the table
  // grows past several doublings and shrinks back to nothing.
  adaptsim::Rng rng(7);
  adaptsim::FlatIndex index;
  std::unordered_map<std::uint64_t, std::uint32_t> model;
  int mismatches = 0;
  for (int op = 0; op < 200'000; ++op) {
    const std::uint64_t key = rng.below(4096) << 32 | rng.below(8);
    const bool filling = (op / 50'000) % 2 == 0;
    const std::uint32_t* found = index.find(key);
    const auto it = model.find(key);
    if ((found != nullptr) != (it != model.end()) || (found && *found != it->second)) ++mismatches;
    if (it == model.end() && (filling || rng.below(4) == 0)) {
      const auto value = static_cast<std::uint32_t>(op);
      index.insert(key, value);
      model.emplace(key, value);
    } else if (it != model.end() && (!filling || rng.below(4) == 0)) {
      if (index.erase(key) != it->second) ++mismatches;
      model.erase(it);
    }
    if (index.size() != model.size()) ++mismatches;
  }
  CHECK(mismatches == 0);
  for (const auto& [key, value] : model) {
    const std::uint32_t* found = index.find(key);
    REQUIRE(found != nullptr);
    CHECK(*found == value);
  }
}
