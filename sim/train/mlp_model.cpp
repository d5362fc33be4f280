// The zoo's multi-layer perceptron: the model sim/learn trains for real (sim/learn/mlp.h), so a
// simulated run and a live run of "fashion-mlp" all-reduce the same tensors.

#include <string>
#include <vector>

#include "sim/learn/mlp.h"
#include "sim/train/model_builder.h"
#include "sim/train/model_zoo.h"

namespace adaptsim::train {

Model build_fashion_mlp() {
  // sim/learn/mlp.h's default layer sizes, 784-256-128-10, so the two never drift apart. Layer
  // l (1-based) is a linear layer d_{l-1} -> d_l registered as fc<l> with weight [d_l, d_{l-1}]
  // then bias [d_l] (PyTorch's nn.Linear order); the backward order is therefore fc3.bias,
  // fc3.weight, fc2.bias, ..., fc1.weight (model_zoo.h's convention), each layer's two
  // gradients ready together.
  // FLOPs per sample: forward 2 d_{l-1} d_l (a multiply-add per weight); backward twice that (the
  // input's gradient and the weight's), except fc1, whose input is data: 1x forward, as Mlp's
  // backward pass skips that product (sim/learn/mlp.cpp). Bias adds, ReLU and softmax are
  // element-wise and not counted (model_zoo.h).
  const std::vector<int> sizes = learn::MlpOptions{}.layer_sizes;
  detail::ModelBuilder b;
  for (std::size_t l = 1; l < sizes.size(); ++l) {
    const auto in = static_cast<std::uint64_t>(sizes[l - 1]);
    const auto out = static_cast<std::uint64_t>(sizes[l]);
    const std::string name = "fc" + std::to_string(l);
    b.add_layer(name, 2.0 * static_cast<double>(in * out),
                {{name + ".weight", out * in}, {name + ".bias", out}});
  }
  return b.finish("fashion-mlp",
                  "multi-layer perceptron 784-256-128-10 (ReLU, softmax cross-entropy) on "
                  "Fashion-MNIST 28x28 grey images, trained for real by sim/learn",
                  "sim/learn/mlp.h (He initialisation, float32); 235,146 parameters "
                  "(200,960 + 32,896 + 1,290)",
                  "img", "1x28x28");
}

}  // namespace adaptsim::train
