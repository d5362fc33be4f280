// Policies and monitors: their registry, parameters (bad input names the file, line and key),
// decisions, and the spec a live run's processes parse back.

#include "sim/runtime/policy.h"

#include <doctest/doctest.h>

#include <string>

#include "sim/core/error.h"

using namespace adaptsim;
using namespace adaptsim::runtime;

namespace {

SeamSpec read(const std::string& yaml) {
  const io::Document doc = io::Document::parse_string(yaml, "s.yaml");
  io::MapReader r(doc, doc.root(), "");
  SeamSpec spec = read_seam(r);
  r.finish();
  return spec;
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
