// Policies and monitors: their registry, parameters (bad input names the file, line and key),
// decisions, and the spec a live run's processes parse back.

#include "sim/runtime/policy.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "sim/core/error.h"
#include "tests/support/read_yaml.h"

using namespace adaptsim;
using namespace adaptsim::runtime;

namespace {

SeamSpec read(const std::string& yaml) {
  return testing::read_yaml(yaml, [](io::MapReader& r) { return read_seam(r); });
}

std::string error_of(const std::string& yaml) {
  try {
    read(yaml);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

StepObservation at_step(int step, int batch) {
  StepObservation o;
  o.step = step;
  o.batch_per_gpu = batch;
  return o;
}

}  // namespace

TEST_CASE("bad policy input: one line naming the file, the line and the key") {
  CHECK(error_of("a: 1\npolicy: {name: switch-stratgy, step: 5, strategy: STAR}\n")
            .starts_with("s.yaml:2: key 'policy.name'"));
  CHECK(error_of("a: 1\npolicy: {name: switch-stratgy, step: 5, strategy: STAR}\n")
            .find("switch-strategy") != std::string::npos);  // the suggestion
  CHECK(error_of("policy:\n  name: switch-strategy\n  step: five\n  strategy: STAR\n")
            .starts_with("s.yaml:3: key 'policy.step'"));
  CHECK(error_of("policy:\n  name: switch-strategy\n  step: 5\n  strategy: STARR\n")
            .starts_with("s.yaml:4: key 'policy.strategy': unknown strategy \"STARR\""));
  CHECK(error_of("policy:\n  name: switch-strategy\n  step: 5\n  strategy: RING\n  root: 2\n")
            .starts_with("s.yaml:5: key 'policy.root': only a STAR has a root"));
  CHECK(error_of("policy:\n  name: scale-batch\n  step: 5\n  factor: 2x\n")
            .starts_with("s.yaml:4: key 'policy.factor'"));
  CHECK(error_of("policy:\n  name: scale-batch\n  step: 5\n  factor: 2\n  facter: 3\n")
            .starts_with("s.yaml:5: unknown key 'policy.facter'"));
  CHECK(error_of("monitors:\n  - {name: throughput, window: 0}\n")
            .starts_with("s.yaml:2: key 'monitors[0].window'"));
  CHECK(
      error_of("monitors:\n  - {name: thruput}\n").starts_with("s.yaml:2: key 'monitors[0].name'"));
}

TEST_CASE("a spec round-trips: the policy a live process parses decides as the scenario's") {
  const SeamSpec spec = read(
      "policy: {name: switch-strategy, step: 3, strategy: STAR, root: 1}\n"
      "monitors: [{name: throughput, window: 2}]\n");
  CHECK(spec.changes.strategy);
  CHECK_FALSE(spec.changes.batch);
  const Seam seam = make_seam(spec);
  REQUIRE(seam.policy);
  REQUIRE(seam.monitors.size() == 1);
  std::vector<StepObservation> h = {at_step(0, 32), at_step(1, 32), at_step(2, 32)};
  CHECK(seam.policy->decide(h).empty());
  h.push_back(at_step(3, 32));
  const Decision d = seam.policy->decide(h);
  REQUIRE(d.strategy);
  CHECK(d.strategy->kind == coll::StrategyKind::kStar);
  CHECK(d.strategy->root == 1);
  CHECK(d.describe() == "strategy STAR@1");
}

TEST_CASE("scale-batch: the batch times the factor, once, rounded and at least 1") {
  const Seam seam = make_seam(read("policy: {name: scale-batch, step: 1, factor: 0.01}\n"));
  std::vector<StepObservation> h = {at_step(0, 32), at_step(1, 32)};
  CHECK(seam.policy->decide(h).batch_per_gpu == 1);
  h.push_back(at_step(2, 1));
  CHECK(seam.policy->decide(h).empty());
}

TEST_CASE("the throughput monitor: the mean over its window, as a reading") {
  Seam seam = make_seam(read("monitors: [{name: throughput, window: 2}]\n"));
  StepObservation a, b, c;
  a.samples_per_s = 100;
  b.samples_per_s = 200;
  c.samples_per_s = 400;
  for (StepObservation* o : {&a, &b, &c})
    seam.monitors[0]->observe(*o);
  CHECK(a.readings.at("throughput.window_mean") == 100);
  CHECK(b.readings.at("throughput.window_mean") == 150);
  CHECK(c.readings.at("throughput.window_mean") == 300);  // (200 + 400) / 2
}

TEST_CASE("every policy and monitor kind has a name and a summary") {
  CHECK(policy_kinds().size() >= 3);
  for (const PolicyKind& k : policy_kinds()) {
    CHECK_FALSE(k.name.empty());
    CHECK_FALSE(k.summary.empty());
  }
  const SeamSpec resize = read("policy: {name: resize, step: 2, workers: 4}\n");
  CHECK(resize.changes.workers);
}

TEST_CASE("bad noise scale monitor input: an interval of 0, an alpha of 1 or more") {
  CHECK(error_of("monitors:\n  - {name: gradient-noise-scale, interval: 0}\n")
            .starts_with("s.yaml:2: key 'monitors[0].interval'"));
  CHECK(error_of("monitors:\n  - {name: gradient-noise-scale, alpha: 1}\n")
            .starts_with("s.yaml:2: key 'monitors[0].alpha': expected a number in [0, 1)"));
  CHECK(error_of("monitors:\n  - {name: gradient-noise-scale, interval: 4, alpha: 0.6}\n") ==
        "(no error)");
}

TEST_CASE("adaptive-strategy votes: a window under 0.8 x the reference window at check_from") {
  const Seam seam = make_seam(read("policy: {name: adaptive-strategy, check_from: 2}\n"));
  REQUIRE(seam.policy);
  CHECK(seam.policy->changes().strategy);
  // 100 MB over 1 s per step up to the reference (step 2); then 81 % and 79 % of it.
  std::vector<LocalStep> own;
  for (int k = 0; k <= 2; ++k) {
    own.push_back({k, 100e6, 1.0});
    CHECK(seam.policy->vote(own) == 0);  // up to and at the reference: no vote
  }
  own.push_back({3, 100e6, 1.0 / 0.81});
  CHECK(seam.policy->vote(own) == 0);
  own.push_back({4, 100e6, 1.0 / 0.79});
  CHECK(seam.policy->vote(own) == 1);
  own.push_back({5, 100e6, 1.0});  // recovered
  CHECK(seam.policy->vote(own) == 0);
  // A window of 2 steps: bytes over span, summed (the reference: steps 1 and 2).
  const Seam windowed =
      make_seam(read("policy: {name: adaptive-strategy, check_from: 2, window: 2, "
                     "threshold: 0.5}\n"));
  std::vector<LocalStep> w2 = {{0, 1, 1}, {1, 100, 1}, {2, 100, 1}, {3, 100, 1}, {4, 1, 1}};
  CHECK(windowed.policy->vote(w2) == 0);  // (100 + 1) / 2 = 50.5 >= 0.5 x 100
  w2.push_back({5, 1, 1});
  CHECK(windowed.policy->vote(w2) == 1);  // 1 < 50
}

TEST_CASE("adaptive-strategy decides once: the first step where a majority votes") {
  const Seam seam = make_seam(read("policy: {name: adaptive-strategy}\n"));
  auto obs = [](int step, double votes) {
    StepObservation o = at_step(step, 32);
    o.workers = 8;
    o.votes = votes;
    return o;
  };
  std::vector<StepObservation> h = {obs(0, 0), obs(1, 3), obs(2, 4)};
  CHECK(seam.policy->decide(h).empty());  // 4 of 8 is no majority
  h.push_back(obs(3, 5));
  const Decision d = seam.policy->decide(h);
  REQUIRE(d.strategy);
  CHECK(d.describe() == "strategy STAR@1");  // KungFu's alternative: a star rooted at rank 1
  h.push_back(obs(4, 8));
  CHECK(seam.policy->decide(h).empty());  // only one switch
  const Seam other =
      make_seam(read("policy: {name: adaptive-strategy, strategy: BINARY_TREE_STAR}\n"));
  CHECK(other.policy->decide({obs(0, 8)}).describe() == "strategy BINARY_TREE_STAR");
  CHECK(make_seam(read("policy: {name: adaptive-strategy, root: 3}\n"))
            .policy->decide({obs(0, 8)})
            .describe() == "strategy STAR@3");
}

TEST_CASE(
    "bad adaptive-strategy input: a threshold outside (0, 1), a window longer than the "
    "reference") {
  CHECK(error_of("policy:\n  name: adaptive-strategy\n  threshold: 1\n")
            .starts_with("s.yaml:3: key 'policy.threshold': expected a number in (0, 1)"));
  CHECK(error_of("policy:\n  name: adaptive-strategy\n  threshold: 0\n")
            .starts_with("s.yaml:3: key 'policy.threshold'"));
  CHECK(error_of("policy:\n  name: adaptive-strategy\n  threshold: -0.5\n")
            .starts_with("s.yaml:3: key 'policy.threshold'"));
  CHECK(error_of("policy:\n  name: adaptive-strategy\n  check_from: 2\n  window: 4\n")
            .starts_with("s.yaml:4: key 'policy.window'"));
  CHECK(error_of("policy:\n  name: adaptive-strategy\n  check_from: -1\n")
            .starts_with("s.yaml:3: key 'policy.check_from'"));
}

namespace {

// A provision run's history replayed against the policy: every step's total throughput is
// `total(n)` at the cluster's size n, and every decision resizes the cluster for the next step,
// as the trainer applies it. Returns the size each step ran at.
std::vector<int> provision_run(const Policy& policy, int steps, int initial,
                               const std::function<double(int)>& total) {
  std::vector<StepObservation> h;
  std::vector<int> sizes;
  int n = initial;
  for (int s = 0; s < steps; ++s) {
    StepObservation o = at_step(s, 8);
    o.workers = n;
    o.samples_per_s = total(n);
    h.push_back(o);
    sizes.push_back(n);
    const Decision d = policy.decide(h);
    if (d.workers) n = *d.workers;
  }
  return sizes;
}

// The size of every window of `every` steps (its last step's).
std::vector<int> window_sizes(const std::vector<int>& sizes, int every) {
  std::vector<int> out;
  for (std::size_t s = every - 1; s < sizes.size(); s += every)
    out.push_back(sizes[s]);
  return out;
}

}  // namespace

TEST_CASE("provision: throughput growing linearly adds a worker every window up to max_workers") {
  const Seam seam = make_seam(read("policy: {name: provision, every: 10, max_workers: 5}\n"));
  REQUIRE(seam.policy);
  CHECK(seam.policy->changes().workers);
  CHECK(seam.policy->changes().max_workers == 5);
  // total = 100 n: avg[n] / avg[n - 1] = n / (n - 1) = 1 + 1 / (n - 1) > 1 + 0.33 / n, so every
  // window adds; at 5 = max_workers scaling stops.
  const auto sizes = provision_run(*seam.policy, 100, 1, [](int n) { return 100.0 * n; });
  CHECK(window_sizes(sizes, 10) == std::vector<int>{1, 2, 3, 4, 5, 5, 5, 5, 5, 5});
  // The change falls after the window's last step (step 9 -> step 10 runs at 2).
  CHECK(sizes[9] == 1);
  CHECK(sizes[10] == 2);
}

TEST_CASE("provision: a knee at 3 workers adds up to 4, removes back to 3 and stops for good") {
  const Seam seam = make_seam(read("policy: {name: provision, every: 10, max_workers: 8}\n"));
  // total = 100 n up to n = 3, flat after: avg[4] = 300 < (1 + 0.33 / 4) x 300 = 324.75.
  const auto knee = [](int n) { return 100.0 * std::min(n, 3); };
  const auto sizes = provision_run(*seam.policy, 200, 1, knee);
  std::vector<int> expected = {1, 2, 3, 4};
  expected.resize(20, 3);
  CHECK(window_sizes(sizes, 10) == expected);
  // Every step after the removal runs at 3: no window decides again.
  for (std::size_t s = 40; s < sizes.size(); ++s)
    CHECK(sizes[s] == 3);
}

TEST_CASE("provision: the stop condition's boundary, avg[n] = (1 + alpha / n) x avg[n - 1]") {
  const Seam seam =
      make_seam(read("policy: {name: provision, every: 4, alpha: 0.5, max_workers: 3}\n"));
  // avg[1] = 100; at n = 2 the threshold is (1 + 0.5 / 2) x 100 = 125 (exact in binary).
  const auto at = [&](double second) {
    return window_sizes(
        provision_run(*seam.policy, 12, 1, [second](int n) { return n == 1 ? 100.0 : second; }), 4);
  };
  CHECK(at(125.0) == std::vector<int>{1, 2, 3});                       // equal: continues
  CHECK(at(std::nextafter(125.0, 0.0)) == std::vector<int>{1, 2, 1});  // just below: stops
}

TEST_CASE("provision: the window's mean is over its second half only") {
  const Seam seam = make_seam(read("policy: {name: provision, every: 4, max_workers: 4}\n"));
  // Window 0 (steps 0-3) at 100 samples/s; window 1 at 2 workers: steps 4-5 (first half) at 1,
  // steps 6-7 at 200. avg[2] = 200 >= (1 + 0.33 / 2) x 100 = 116.5: adds. Had the first half
  // counted, (1 + 1 + 200 + 200) / 4 = 100.5 would stop.
  std::vector<StepObservation> h;
  for (int s = 0; s < 8; ++s) {
    StepObservation o = at_step(s, 8);
    o.workers = s < 4 ? 1 : 2;
    o.samples_per_s = s < 4 ? 100 : (s < 6 ? 1 : 200);
    h.push_back(o);
    const Decision d = seam.policy->decide(h);
    if (s == 3) CHECK(d.workers == 2);
    if (s == 7) CHECK(d.workers == 3);
    if (s != 3 && s != 7) CHECK(d.empty());
  }
  // Pure: the same history asked again (or a copy, in any order) decides the same.
  CHECK(seam.policy->decide(h).workers == 3);
  const std::vector<StepObservation> first(h.begin(), h.begin() + 4);
  CHECK(seam.policy->decide(first).workers == 2);
  CHECK(seam.policy->decide(h).workers == 3);
}

TEST_CASE(
    "provision: starting at max_workers (or above 1 with no smaller size seen) changes nothing "
    "or adds") {
  const Seam seam = make_seam(read("policy: {name: provision, every: 5, max_workers: 4}\n"));
  // At max_workers from the start: the first window stops scaling; nothing ever changes.
  const auto flat = provision_run(*seam.policy, 50, 4, [](int n) { return 10.0 * n; });
  CHECK(std::all_of(flat.begin(), flat.end(), [](int n) { return n == 4; }));
  // From 2: no avg[1] was seen (counts as 0, as the hook's first window), so it adds.
  const auto from2 = provision_run(*seam.policy, 20, 2, [](int n) { return 10.0 * n; });
  CHECK(window_sizes(from2, 5) == std::vector<int>{2, 3, 4, 4});
}

TEST_CASE("bad provision input: every < 2, alpha < 0, max_workers < 1 or missing") {
  CHECK(error_of("policy:\n  name: provision\n  every: 1\n  max_workers: 4\n")
            .starts_with("s.yaml:3: key 'policy.every'"));
  CHECK(error_of("policy:\n  name: provision\n  alpha: -0.1\n  max_workers: 4\n")
            .starts_with("s.yaml:3: key 'policy.alpha': expected a number >= 0"));
  CHECK(error_of("policy:\n  name: provision\n  max_workers: 0\n")
            .starts_with("s.yaml:3: key 'policy.max_workers'"));
  CHECK(error_of("policy:\n  name: provision\n  every: 100\n").find("max_workers") !=
        std::string::npos);
  CHECK(error_of("policy: {name: provision, max_workers: 4, alpha: 0}\n") == "(no error)");
}

TEST_CASE("adaptive-batch: at an epoch's end the batch grows by the rise of EMA(|GNS| / batch)") {
  // KungFu's KungfuChangeBatchSizeHook (KUNGFU.md 3.3). Epochs of 256 samples: 2 workers x 32
  // per step, 4 steps each. The EMA (alpha 0.9, each sample clipped to [ema/2, 2 ema]) of
  // |GNS| / 32 over the first epoch: GNS 32, 32, 64, 64 -> ratios 1, 1, 2, 2 -> EMA 1, 1, 1.1,
  // 1.19; the batch becomes int(32 x 1.19) = 38 after step 3, and only then.
  const Seam seam =
      make_seam(read("policy: {name: adaptive-batch, epoch_samples: 256, max_batch: 40}\n"
                     "monitors: [{name: gradient-noise-scale}]\n"));
  std::vector<StepObservation> h;
  auto step = [&](int batch, double gns) {
    StepObservation o = at_step(static_cast<int>(h.size()), batch);
    o.workers = 2;
    o.readings["gradient-noise-scale.b_simple"] = gns;
    h.push_back(o);
    return seam.policy->decide(h);
  };
  CHECK(step(32, 32).empty());
  CHECK(step(32, -32).empty());  // |GNS|
  CHECK(step(32, 64).empty());
  CHECK(step(32, 64).batch_per_gpu == 38);
  // The next epoch at 38 (3 steps of 76 make 228 < 256, the 4th ends it): the EMA at its first
  // step is 0.9 x 1.19 + 0.1 x clip(512 / 38 = 13.5, to 2.38) = 1.309, then it rises under the
  // clip: 2 x scale is more than 2, so the batch doubles, capped at max_batch 40.
  CHECK(step(38, 512).empty());
  CHECK(step(38, 512).empty());
  CHECK(step(38, 512).empty());
  CHECK(step(38, 512).batch_per_gpu == 40);
  // A falling ratio never shrinks it; nor does an epoch without a finite GNS (simulated).
  for (int i = 0; i < 3; ++i)
    CHECK(step(40, 1).empty());
  CHECK(step(40, 1).empty());
  for (int i = 0; i < 4; ++i)
    CHECK(step(40, std::nan("")).empty());
}

TEST_CASE("adaptive-batch: reads the gradient noise scale, so it needs its monitor") {
  CHECK(error_of("policy: {name: adaptive-batch, epoch_samples: 256}\n")
            .starts_with("s.yaml:1: key 'policy': adaptive-batch reads the gradient noise scale"));
  CHECK(error_of("policy: {name: adaptive-batch}\nmonitors: [{name: gradient-noise-scale}]\n")
            .starts_with("s.yaml:1: key 'policy.epoch_samples'"));
  CHECK(error_of("policy: {name: adaptive-batch, epoch_samples: 256, max_batch: 0}\n"
                 "monitors: [{name: gradient-noise-scale}]\n")
            .starts_with("s.yaml:1: key 'policy.max_batch'"));
}
