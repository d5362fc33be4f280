// The training-dynamics model (sim/train/dynamics.h): Pollux's efficiency, the noise scale's
// interpolation, the accuracy curve, against hand calculations, and its file's bad input.

#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "sim/core/error.h"
#include "sim/train/dynamics.h"

using namespace adaptsim;
using train::parse_training_dynamics;

namespace {

const std::string kHead =
    "dynamics: adaptsim-dynamics/1\n"
    "model: fashion-mlp\n"
    "source: \"hand-made\"\n"
    "fitted_on: {lr: 0.05, base_batch: 128, momentum: 0.9}\n"
    "base_batch: 128\n"
    "noise_factor: 2\n"
    "accuracy: {chance: 0.1, final: 0.9, tau_samples: 1000, alpha: 0.5}\n";

std::string error_of(const std::string& text) {
  try {
    parse_training_dynamics(text, "d.yaml");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("dynamics: efficiency, progress and accuracy follow their closed forms") {
  const train::TrainingDynamics d =
      parse_training_dynamics(kHead + "noise_scale:\n  - [1000, 100]\n  - [3000, 300]\n", "d.yaml");
  CHECK(d.fitted_lr == 0.05);
  CHECK(d.fitted_base_batch == 128);
  // B_simple: constant before the first point and after the last, linear between.
  CHECK(d.b_simple(0) == 100);
  CHECK(d.b_simple(1000) == 100);
  CHECK(d.b_simple(2000) == doctest::Approx(200));
  CHECK(d.b_simple(2500) == doctest::Approx(250));
  CHECK(d.b_simple(1e9) == 300);
  // Pollux: E(B) = (k B_simple + B0) / (k B_simple + B), k = 2.
  CHECK(d.efficiency(128, 0) == 1);
  CHECK(d.efficiency(512, 0) == doctest::Approx((200.0 + 128) / (200 + 512)));
  CHECK(d.efficiency(512, 2000) == doctest::Approx((400.0 + 128) / (400 + 512)));
  CHECK(d.efficiency(64, 0) == doctest::Approx((200.0 + 128) / (200 + 64)));
  // A step at the base batch makes its samples' progress; a larger one less per sample.
  CHECK(d.advance(500, 128) == 628);
  CHECK(d.advance(0, 512) == doctest::Approx(512 * 328.0 / 712));
  // Accuracy: chance at 0, final - (final - chance) / sqrt(1 + P / tau).
  CHECK(d.accuracy(0) == doctest::Approx(0.1));
  CHECK(d.accuracy(3000) == doctest::Approx(0.9 - 0.8 / 2));
  CHECK(d.accuracy(1e12) == doctest::Approx(0.9).epsilon(1e-3));
}

TEST_CASE("dynamics: bad input names the file, line and key") {
  const std::string points = "noise_scale:\n  - [1000, 100]\n  - [3000, 300]\n";
  CHECK(error_of("dynamics: adaptsim-dynamics/2\n" + kHead.substr(kHead.find('\n') + 1) + points)
            .find("d.yaml:1: key 'dynamics': expected 'adaptsim-dynamics/1'") != std::string::npos);
  CHECK(error_of(kHead + "noise_scale:\n  - [1000, 100]\n  - [1000, 300]\n")
            .find("d.yaml:10: key 'noise_scale[1]': progress must increase down the list") !=
        std::string::npos);
  CHECK(error_of(kHead + "noise_scale:\n  - [1000, -1]\n")
            .find("key 'noise_scale[0]': expected progress >= 0 and b_simple >= 0") !=
        std::string::npos);
  CHECK(error_of(kHead + "noise_scale:\n  - [1000]\n").find("expected [progress, b_simple]") !=
        std::string::npos);
  CHECK(error_of(kHead + "noise_scale: []\n").find("key 'noise_scale': expected a non-empty") !=
        std::string::npos);
  std::string low = kHead;
  low.replace(low.find("final: 0.9"), 10, "final: 0.05");
  CHECK(error_of(low + points).find("key 'accuracy.final': expected a number in (chance, 1]") !=
        std::string::npos);
  std::string zero = kHead;
  zero.replace(zero.find("noise_factor: 2"), 15, "noise_factor: 0");
  CHECK(
      error_of(zero + points).find("d.yaml:6: key 'noise_factor': expected a finite number > 0") !=
      std::string::npos);
  CHECK(error_of(kHead + points + "extra: 1\n").find("extra") != std::string::npos);
}
