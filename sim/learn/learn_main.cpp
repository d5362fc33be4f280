// adaptsim-learn: single-process training of the MLP (sim/learn/mlp.h) on Fashion-MNIST with SGD
// and momentum; prints the test loss and accuracy every --eval-every steps and at the end, and
// the training throughput in samples/s (training steps only, evaluation excluded; one thread).
// Exit codes: 0 success, 1 run-time failure, 2 bad input (one line on stderr).
#include <CLI/CLI.hpp>

#include <Eigen/Core>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "sim/core/error.h"
#include "sim/learn/dataset.h"
#include "sim/learn/mlp.h"
#include "sim/learn/sgd.h"

using namespace adaptsim;
using namespace adaptsim::learn;

namespace {

constexpr int kExitRuntime = 1;
constexpr int kExitInput = 2;

struct LearnOptions {
  std::string data_dir{kDefaultFashionMnistDir};
  std::int64_t steps = 1000;
  std::int64_t epochs = 0;      // > 0: run this many epochs instead of --steps
  std::int64_t batch = 64;      // samples per step
  double lr = 0.05;             // at --base-batch; linear scaling rule for other batches
  std::int64_t base_batch = 0;  // 0: the batch itself (lr used as given)
  std::int64_t warmup_steps = 0;
  double momentum = 0.9;
  double weight_decay = 0;
  std::uint64_t seed = 1;
  std::int64_t eval_every = 200;  // steps; 0: only at the end
};

std::string format_number(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

// `epochs`: the epochs completed (steps / steps per epoch); `train_loss`: the mean loss of the
// batches since the last evaluation.
void print_eval(const Mlp& model, const Dataset& test, std::int64_t step, double epochs,
                double train_loss) {
  const Evaluation e = model.evaluate(test);
  std::printf("step %6lld  epochs %6.2f  train_loss %.4f  test_loss %.4f  test_acc %.4f\n",
              static_cast<long long>(step), epochs, train_loss, e.mean_loss, e.accuracy);
  std::fflush(stdout);
}

int run(const LearnOptions& o) {
  if (o.batch <= 0) throw InputError("--batch " + std::to_string(o.batch) + ": expected > 0");
  if (o.steps <= 0) throw InputError("--steps " + std::to_string(o.steps) + ": expected > 0");
  if (o.epochs < 0) throw InputError("--epochs " + std::to_string(o.epochs) + ": expected >= 0");
  if (o.eval_every < 0) {
    throw InputError("--eval-every " + std::to_string(o.eval_every) + ": expected >= 0");
  }
  LrRule rule;
  rule.base_lr = o.lr;
  rule.base_batch = o.base_batch > 0 ? o.base_batch : o.batch;
  rule.warmup_steps = o.warmup_steps;
  if (!(o.lr > 0) || !std::isfinite(o.lr)) {
    throw InputError("--lr " + format_number(o.lr) + ": expected a finite value > 0");
  }
  learning_rate(rule, o.batch);  // validates the rest of the rule
  SgdOptions sgd_options;
  sgd_options.momentum = o.momentum;
  sgd_options.weight_decay = o.weight_decay;

  Mlp model(MlpOptions{.seed = o.seed});
  Sgd sgd(model.parameter_count(), sgd_options);
  const FashionMnist data = load_fashion_mnist(o.data_dir);
  const auto batch = static_cast<std::size_t>(o.batch);
  std::uint64_t epoch = 0;
  EpochShards shards(data.train.size(), batch, 1, o.seed, epoch);
  const std::int64_t steps =
      o.epochs > 0 ? o.epochs * static_cast<std::int64_t>(shards.steps()) : o.steps;
  std::printf(
      "# adaptsim-learn: MLP %zu parameters, %zu train / %zu test samples, batch %lld, "
      "%lld steps (%zu per epoch, partial batch dropped), lr %g (base %g at batch %lld, "
      "warm-up %lld steps), momentum %g, seed %llu\n",
      model.parameter_count(), data.train.size(), data.test.size(), static_cast<long long>(o.batch),
      static_cast<long long>(steps), shards.steps(),
      learning_rate(rule, o.batch, rule.warmup_steps), rule.base_lr,
      static_cast<long long>(rule.base_batch), static_cast<long long>(rule.warmup_steps),
      o.momentum, static_cast<unsigned long long>(o.seed));

  std::vector<float> gradient(model.parameter_count());
  std::size_t step_in_epoch = 0;
  double train_seconds = 0;
  double loss_sum = 0;  // since the last evaluation
  std::int64_t loss_count = 0;
  for (std::int64_t step = 0; step < steps; ++step) {
    if (step_in_epoch == shards.steps()) {
      shards = EpochShards(data.train.size(), batch, 1, o.seed, ++epoch);
      step_in_epoch = 0;
    }
    const auto start = std::chrono::steady_clock::now();
    loss_sum += model.loss_and_gradient(data.train, shards.shard(step_in_epoch++, 0), gradient);
    sgd.step(model.params(), gradient, learning_rate(rule, o.batch, step));
    train_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ++loss_count;
    const bool last = step + 1 == steps;
    if (last || (o.eval_every > 0 && (step + 1) % o.eval_every == 0)) {
      print_eval(model, data.test, step + 1,
                 static_cast<double>(step + 1) / static_cast<double>(shards.steps()),
                 loss_sum / static_cast<double>(loss_count));
      loss_sum = 0;
      loss_count = 0;
    }
  }
  std::printf("train throughput: %.0f samples/s (batch %lld, %lld steps, %.2f s, 1 thread)\n",
              static_cast<double>(steps) * static_cast<double>(o.batch) / train_seconds,
              static_cast<long long>(o.batch), static_cast<long long>(steps), train_seconds);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"adaptsim-learn: train an MLP on Fashion-MNIST (one process, one thread)"};
  app.footer(R"(Examples:
  adaptsim-learn --steps 300 --batch 64
  adaptsim-learn --epochs 3 --batch 64 --lr 0.05 --eval-every 937
  adaptsim-learn --batch 256 --base-batch 64 --lr 0.05 --warmup-steps 200   # linear scaling
Exit codes: 0 success, 1 run-time failure, 2 bad input.)");
  LearnOptions o;
  app.add_option("--data", o.data_dir,
                 "Folder of the Fashion-MNIST IDX files (default " +
                     std::string(kDefaultFashionMnistDir) + ")");
  app.add_option("--steps", o.steps, "Training steps (default 1000)");
  app.add_option("--epochs", o.epochs, "Train this many epochs instead of --steps");
  app.add_option("--batch", o.batch, "Samples per step (default 64)");
  app.add_option("--lr", o.lr, "Learning rate at --base-batch (default 0.05)");
  app.add_option("--base-batch", o.base_batch,
                 "Batch at which --lr applies; others scale linearly (default: --batch)");
  app.add_option("--warmup-steps", o.warmup_steps, "Gradual warm-up steps (default 0)");
  app.add_option("--momentum", o.momentum, "SGD momentum (default 0.9)");
  app.add_option("--weight-decay", o.weight_decay, "L2 weight decay (default 0)");
  app.add_option("--seed", o.seed, "Initialisation and shuffling seed (default 1)");
  app.add_option("--eval-every", o.eval_every,
                 "Evaluate every N steps, 0: at the end (default 200)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : kExitInput;
  }
  Eigen::setNbThreads(1);  // the measured throughput is one core's
  try {
    return run(o);
  } catch (const InputError& e) {
    print_error_line("adaptsim-learn", std::string("error: ") + e.what());
    return kExitInput;
  } catch (const std::exception& e) {
    print_error_line("adaptsim-learn", std::string("failed: ") + e.what());
    return kExitRuntime;
  }
}
