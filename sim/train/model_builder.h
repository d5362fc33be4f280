#pragma once
// Internal to sim/train: assembles a Model from layers given in FORWARD order (the order a
// network's code registers them), tracking the activation shape of convolutional networks so that
// every FLOP count follows from the architecture. finish() reverses the list into backward order
// (see model_zoo.h for the conventions).

#include <cstdint>
#include <string>
#include <vector>

#include "sim/train/model_zoo.h"

namespace adaptsim::train::detail {

struct ParamSpec {
  std::string name;  // full parameter name
  std::uint64_t elements = 0;
};

class ModelBuilder {
 public:
  // `params` in registration order; `forward_flops` per sample.
  void add_layer(std::string name, double forward_flops, std::vector<ParamSpec> params);

  // The first layer added needs no input gradient (its input is data): backward = 1 x forward.
  Model finish(std::string name, std::string description, std::string source,
               std::string sample_unit, std::string input) const;

 private:
  struct ForwardLayer {
    std::string name;
    double forward_flops = 0;
    std::vector<ParamSpec> params;
  };
  std::vector<ForwardLayer> layers_;
};

// Activation shape of one sample, channels x height x width.
struct Shape {
  int channels = 0;
  int height = 0;
  int width = 0;
  bool operator==(const Shape&) const = default;
};

// A ModelBuilder for convolutional networks that knows the current activation shape.
class ConvNetBuilder {
 public:
  explicit ConvNetBuilder(Shape input);

  Shape shape() const { return shape_; }
  // For branches: a residual shortcut starts again from the block's input shape.
  void set_shape(Shape s) { shape_ = s; }

  // Conv2d(in = shape().channels, out, kernel k, stride, padding, groups); weight
  // [out, in/groups, k, k] (+ bias [out]). Output size floor((H + 2p - k)/s) + 1.
  // FLOPs = 2 * out_h * out_w * out * (in/groups) * k * k.
  void conv(const std::string& name, int out_channels, int kernel, int stride, int padding,
            int groups = 1, bool bias = false);
  // BatchNorm2d over shape().channels: weight and bias, no FLOPs counted (element-wise).
  void batch_norm(const std::string& name);
  void max_pool(int kernel, int stride, int padding);  // shape only
  void global_avg_pool();                              // C x H x W -> C x 1 x 1
  // Linear on the flattened activation (C*H*W inputs): weight [out, in] (+ bias [out]).
  void linear(const std::string& name, int out_features, bool bias = true);

  Model finish(std::string name, std::string description, std::string source) const;

 private:
  Shape shape_;
  std::string input_;  // "3x224x224", for Model::input
  ModelBuilder builder_;
};

}  // namespace adaptsim::train::detail
