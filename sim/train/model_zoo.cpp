#include "sim/train/model_zoo.h"

#include <algorithm>
#include <vector>

#include "sim/core/error.h"

namespace adaptsim::train {
namespace {

// Built once on first use and never modified: an immutable table, safe to share between threads
// (function-local static initialisation is thread-safe).
const std::vector<Model>& zoo() {
  static const std::vector<Model> models = [] {
    std::vector<Model> m;
    m.push_back(build_bert_base());
    m.push_back(build_fashion_mlp());
    m.push_back(build_mobilenet_v2());
    m.push_back(build_resnet50());
    m.push_back(build_resnet56());
    m.push_back(build_vgg16());
    std::sort(m.begin(), m.end(), [](const Model& a, const Model& b) { return a.name < b.name; });
    return m;
  }();
  return models;
}

}  // namespace

ModelTotals Model::totals() const {
  ModelTotals t;
  t.tensors = backward_order.size();
  t.layers = layers.size();
  for (const Tensor& x : backward_order)
    t.parameters += x.elements;
  for (const Layer& l : layers) {
    t.forward_flops += l.forward_flops;
    t.backward_flops += l.backward_flops;
  }
  return t;
}

std::vector<std::string> model_names() {
  std::vector<std::string> names;
  for (const Model& m : zoo())
    names.push_back(m.name);
  return names;
}

const Model* find_model(std::string_view name) {
  for (const Model& m : zoo()) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

const Model& model(std::string_view name) {
  if (const Model* m = find_model(name)) return *m;
  std::string known;
  for (const std::string& n : model_names())
    known += (known.empty() ? "" : ", ") + n;
  throw InputError("unknown model '" + std::string(name) + "' (known: " + known + ")");
}

}  // namespace adaptsim::train
