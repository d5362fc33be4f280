#pragma once
// Toy models for step-model and system tests: every layer owns one gradient tensor of a chosen
// element count, and forward and backward cost one FLOP each (tests set the times directly).

#include <cstdint>
#include <string>
#include <vector>

#include "sim/train/compute_profile.h"
#include "sim/train/model_zoo.h"

namespace adaptsim::train::testing {

// Layers in backward order: layer i owns tensor i with elements[i] elements.
inline Model toy_model(const std::vector<std::uint64_t>& elements) {
  Model m;
  m.name = "toy";
  m.sample_unit = "img";
  for (std::size_t i = 0; i < elements.size(); ++i) {
    Layer l;
    l.name = "layer" + std::to_string(i);
    l.forward_flops = l.backward_flops = 1;
    l.first_tensor = i;
    l.tensor_count = 1;
    m.layers.push_back(l);
    m.backward_order.push_back({"tensor" + std::to_string(i), elements[i], i});
  }
  return m;
}

// A step's compute split for a toy model: forward, then one backward time per layer.
inline ComputeProfile toy_compute(double forward_s, std::vector<double> backward_layer_s) {
  ComputeProfile p;
  p.forward_s = forward_s;
  p.backward_layer_s = std::move(backward_layer_s);
  return p;
}

}  // namespace adaptsim::train::testing
