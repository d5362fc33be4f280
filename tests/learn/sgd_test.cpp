// SGD with momentum and the linear scaling rule (sim/learn/sgd.h).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "sim/core/error.h"
#include "sim/learn/sgd.h"

using adaptsim::InputError;
using namespace adaptsim::learn;

TEST_CASE("sgd: two momentum steps match the closed form") {
  // theta_0 = (1, -2), constant gradient g = (0.5, 0.25), momentum 0.9, lr 0.1:
  //   v_1 = g = (0.5, 0.25);              theta_1 = theta_0 - 0.1 v_1 = (0.95, -2.025)
  //   v_2 = 0.9 v_1 + g = (0.95, 0.475);  theta_2 = theta_1 - 0.1 v_2 = (0.855, -2.0725)
  std::vector<float> theta = {1.0f, -2.0f};
  const std::vector<float> g = {0.5f, 0.25f};
  Sgd sgd(2);
  sgd.step(theta, g, 0.1);
  CHECK(theta[0] == doctest::Approx(0.95).epsilon(1e-6));
  CHECK(theta[1] == doctest::Approx(-2.025).epsilon(1e-6));
  sgd.step(theta, g, 0.1);
  CHECK(sgd.velocity()[0] == doctest::Approx(0.95).epsilon(1e-6));
  CHECK(sgd.velocity()[1] == doctest::Approx(0.475).epsilon(1e-6));
  CHECK(theta[0] == doctest::Approx(0.855).epsilon(1e-6));
  CHECK(theta[1] == doctest::Approx(-2.0725).epsilon(1e-6));
}

TEST_CASE("sgd: weight decay adds lambda * theta to the gradient") {
  // lambda = 0.1, as above otherwise:
  //   g_0 = g + 0.1 theta_0 = (0.6, 0.05);  v_1 = g_0;  theta_1 = (0.94, -2.005)
  //   g_1 = g + 0.1 theta_1 = (0.594, 0.0495);  v_2 = 0.9 v_1 + g_1 = (1.134, 0.0945)
  //   theta_2 = theta_1 - 0.1 v_2 = (0.8266, -2.01445)
  std::vector<float> theta = {1.0f, -2.0f};
  const std::vector<float> g = {0.5f, 0.25f};
  Sgd sgd(2, SgdOptions{.momentum = 0.9, .weight_decay = 0.1});
  sgd.step(theta, g, 0.1);
  CHECK(theta[0] == doctest::Approx(0.94).epsilon(1e-6));
  CHECK(theta[1] == doctest::Approx(-2.005).epsilon(1e-6));
  sgd.step(theta, g, 0.1);
  CHECK(theta[0] == doctest::Approx(0.8266).epsilon(1e-6));
  CHECK(theta[1] == doctest::Approx(-2.01445).epsilon(1e-6));
}

TEST_CASE("sgd: the linear scaling rule, lr = base_lr * B / base_batch") {
  const LrRule rule{.base_lr = 0.1, .base_batch = 256};
  CHECK(learning_rate(rule, 256) == doctest::Approx(0.1));
  CHECK(learning_rate(rule, 512) == doctest::Approx(0.2));         // k = 2
  CHECK(learning_rate(rule, 8192) == doctest::Approx(3.2));        // Goyal et al.'s 8k batch
  CHECK(learning_rate(rule, 64) == doctest::Approx(0.025));        // k = 1/4
  CHECK(learning_rate(rule, 64, 1000) == doctest::Approx(0.025));  // no warm-up: step-independent
}

TEST_CASE("sgd: gradual warm-up ramps from base_lr to the scaled rate") {
  // base 0.1 at 256, B = 1024: target 0.4 reached after 100 steps, linearly from 0.1:
  //   lr_t = 0.1 + 0.3 t / 100  (t < 100), 0.4 from t = 100.
  const LrRule rule{.base_lr = 0.1, .base_batch = 256, .warmup_steps = 100};
  CHECK(learning_rate(rule, 1024, 0) == doctest::Approx(0.1));
  CHECK(learning_rate(rule, 1024, 50) == doctest::Approx(0.25));
  CHECK(learning_rate(rule, 1024, 99) == doctest::Approx(0.397));
  CHECK(learning_rate(rule, 1024, 100) == doctest::Approx(0.4));
  CHECK(learning_rate(rule, 1024, 5000) == doctest::Approx(0.4));
  // A smaller batch's smaller rate needs no warm-up: 0.1 * 128 / 256 = 0.05 at once.
  CHECK(learning_rate(rule, 128, 0) == doctest::Approx(0.05));
}

TEST_CASE("sgd: bad learning rates, batches and options are InputErrors with one clear line") {
  const auto message = [](auto&& f) {
    try {
      f();
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const LrRule rule{};
  CHECK(message([&] { learning_rate(rule, 0); }) == "batch 0: expected > 0");
  CHECK(message([&] { learning_rate(rule, -32); }) == "batch -32: expected > 0");
  CHECK(message([&] { learning_rate(LrRule{.base_lr = 0}, 64); }) ==
        "base learning rate 0: expected a finite value > 0");
  CHECK(message([&] { learning_rate(LrRule{.base_lr = -0.5}, 64); }) ==
        "base learning rate -0.5: expected a finite value > 0");
  CHECK(message([&] { learning_rate(LrRule{.base_batch = 0}, 64); }) ==
        "base batch 0: expected > 0");
  CHECK(message([&] { learning_rate(LrRule{.warmup_steps = -1}, 64); }) ==
        "warm-up steps -1: expected >= 0");
  std::vector<float> theta = {1.0f};
  const std::vector<float> g = {1.0f};
  Sgd sgd(1);
  CHECK(message([&] { sgd.step(theta, g, 0.0); }) ==
        "learning rate 0: expected a finite value > 0");
  CHECK(message([&] { sgd.step(theta, g, -0.1); }) ==
        "learning rate -0.1: expected a finite value > 0");
  CHECK(theta[0] == 1.0f);  // a refused step changes nothing
  CHECK(message([] { Sgd(1, SgdOptions{.momentum = 1.0}); }) ==
        "SGD momentum 1: expected in [0, 1)");
  CHECK(message([] { Sgd(1, SgdOptions{.weight_decay = -1e-4}); }) ==
        "SGD weight decay -0.0001: expected a finite value >= 0");
}
