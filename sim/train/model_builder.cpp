#include "sim/train/model_builder.h"

#include <stdexcept>
#include <utility>

namespace adaptsim::train::detail {

void ModelBuilder::add_layer(std::string name, double forward_flops,
                             std::vector<ParamSpec> params) {
  layers_.push_back({std::move(name), forward_flops, std::move(params)});
}

Model ModelBuilder::finish(std::string name, std::string description, std::string source,
                           std::string sample_unit, std::string input) const {
  Model m;
  m.name = std::move(name);
  m.description = std::move(description);
  m.source = std::move(source);
  m.sample_unit = std::move(sample_unit);
  m.input = std::move(input);
  m.layers.reserve(layers_.size());
  for (std::size_t f = layers_.size(); f-- > 0;) {
    const ForwardLayer& fl = layers_[f];
    Layer layer;
    layer.name = fl.name;
    layer.forward_flops = fl.forward_flops;
    // Only the first layer's input is data, which needs no gradient.
    layer.backward_flops = (f == 0 ? 1.0 : kBackwardFlopsPerForwardFlop) * fl.forward_flops;
    layer.first_tensor = m.backward_order.size();
    layer.tensor_count = fl.params.size();
    for (std::size_t p = fl.params.size(); p-- > 0;) {
      m.backward_order.push_back({fl.params[p].name, fl.params[p].elements, m.layers.size()});
    }
    m.layers.push_back(std::move(layer));
  }
  return m;
}

ConvNetBuilder::ConvNetBuilder(Shape input)
    : shape_(input),
      input_(std::to_string(input.channels) + "x" + std::to_string(input.height) + "x" +
             std::to_string(input.width)) {}

void ConvNetBuilder::conv(const std::string& name, int out_channels, int kernel, int stride,
                          int padding, int groups, bool bias) {
  const int in = shape_.channels;
  if (groups < 1 || in % groups != 0 || out_channels % groups != 0) {
    throw std::logic_error("conv " + name + ": channels not divisible by groups");
  }
  const int out_h = (shape_.height + 2 * padding - kernel) / stride + 1;
  const int out_w = (shape_.width + 2 * padding - kernel) / stride + 1;
  const std::uint64_t weight = static_cast<std::uint64_t>(out_channels) *
                               static_cast<std::uint64_t>(in / groups) *
                               static_cast<std::uint64_t>(kernel * kernel);
  const double macs = static_cast<double>(out_h) * out_w * static_cast<double>(weight);
  std::vector<ParamSpec> params{{name + ".weight", weight}};
  if (bias) params.push_back({name + ".bias", static_cast<std::uint64_t>(out_channels)});
  builder_.add_layer(name, 2.0 * macs, std::move(params));
  shape_ = {out_channels, out_h, out_w};
}

void ConvNetBuilder::batch_norm(const std::string& name) {
  const auto c = static_cast<std::uint64_t>(shape_.channels);
  builder_.add_layer(name, 0.0, {{name + ".weight", c}, {name + ".bias", c}});
}

void ConvNetBuilder::max_pool(int kernel, int stride, int padding) {
  shape_.height = (shape_.height + 2 * padding - kernel) / stride + 1;
  shape_.width = (shape_.width + 2 * padding - kernel) / stride + 1;
}

void ConvNetBuilder::global_avg_pool() {
  shape_ = {shape_.channels, 1, 1};
}

void ConvNetBuilder::linear(const std::string& name, int out_features, bool bias) {
  const auto in = static_cast<std::uint64_t>(shape_.channels) *
                  static_cast<std::uint64_t>(shape_.height) *
                  static_cast<std::uint64_t>(shape_.width);
  const std::uint64_t weight = in * static_cast<std::uint64_t>(out_features);
  std::vector<ParamSpec> params{{name + ".weight", weight}};
  if (bias) params.push_back({name + ".bias", static_cast<std::uint64_t>(out_features)});
  builder_.add_layer(name, 2.0 * static_cast<double>(weight), std::move(params));
  shape_ = {out_features, 1, 1};
}

Model ConvNetBuilder::finish(std::string name, std::string description, std::string source) const {
  return builder_.finish(std::move(name), std::move(description), std::move(source), "img", input_);
}

}  // namespace adaptsim::train::detail
