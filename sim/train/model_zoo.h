#pragma once
// The model zoo: the networks the scenarios train, generated layer by layer from their published
// architectures (sim/train/vision_models.cpp, sim/train/bert_model.cpp), never from hand-typed
// totals. A model is what the step model and the collectives need to know:
//   - the gradient tensors in BACKWARD order, i.e. the order in which their gradients become ready
//     during back-propagation (last layer first), with exact element counts and the parameter
//     names of the reference implementation ("layer4.2.conv3.weight");
//   - per-layer forward and backward FLOPs for one sample, so that a measured step time can be
//     spread over the layers in proportion.
//
// Conventions, used by every model here:
//   - Gradient tensors are the trainable parameters: convolution/linear weights and biases,
//     batch-norm and layer-norm weight (gamma) and bias (beta), embedding tables. Batch-norm
//     running statistics are buffers, not gradients, and are not listed.
//   - Order inside the backward pass is the reverse of the framework's parameter registration
//     order (model.parameters()). PyTorch DDP buckets gradients in that same reversed order, on
//     the premise that modules are registered in the order the forward pass calls them. So a
//     layer's bias comes before its weight, and in a torchvision bottleneck the downsample branch
//     (registered last) comes before bn3/conv3.
//   - FLOPs count multiply-adds of convolutions, linear layers and attention matmuls, one
//     multiply-add = 2 FLOP, as the published counts do (torchvision's "GFLOPS" column, which is
//     in fact GMACs: ResNet-50 4.09). Element-wise work (batch norm, ReLU, pooling, residual adds,
//     softmax, GELU, layer norm, bias adds) is not counted: it is memory-bound, its time does not
//     follow FLOPs. The step model takes the total step time from measured throughput and uses
//     FLOPs only to split it between layers, so element-wise time is spread over the layers in
//     proportion to their multiply-adds.
//   - Backward FLOPs of a layer = gradient w.r.t. its input + gradient w.r.t. its weights; for a
//     convolution, linear layer or matmul each equals the forward multiply-adds, so backward = 2 x
//     forward. The first layer of a network needs no input gradient (its input is data), so its
//     backward = 1 x forward. Measured: ResNet-50 backward/forward = 68.54/35.03 ms = 1.96, VGG-16
//     87.03/41.59 ms = 2.09 (jcjohnson/cnn-benchmarks, Pascal Titan X, cuDNN 5.1, batch 16).

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace adaptsim::train {

// Backward FLOPs per forward FLOP for a layer whose input needs a gradient (see above).
inline constexpr double kBackwardFlopsPerForwardFlop = 2.0;

struct Tensor {
  std::string name;            // parameter name in the reference implementation
  std::uint64_t elements = 0;  // number of scalars
  std::size_t layer = 0;       // index into Model::layers
};

struct Layer {
  std::string name;              // module name ("layer4.2.conv3"); may own no tensors (attention)
  double forward_flops = 0;      // FLOP per sample (image or sequence), multiply-add = 2 FLOP
  double backward_flops = 0;     // FLOP per sample
  std::size_t first_tensor = 0;  // its tensors are backward_order[first_tensor, +tensor_count)
  std::size_t tensor_count = 0;
};

struct ModelTotals {
  std::uint64_t parameters = 0;  // elements over all gradient tensors
  std::size_t tensors = 0;
  std::size_t layers = 0;
  double forward_flops = 0;   // per sample
  double backward_flops = 0;  // per sample

  std::uint64_t bytes(std::size_t bytes_per_element) const {
    return parameters * bytes_per_element;
  }
  std::uint64_t bytes_fp32() const { return bytes(4); }
  std::uint64_t bytes_fp16() const { return bytes(2); }
};

struct Model {
  std::string name;         // zoo name: "resnet50"
  std::string description;  // what exactly is modelled, heads included
  std::string source;       // the reference implementation and the published totals
  std::string sample_unit;  // "img" or "seq": throughput in device profiles is <unit>/s
  std::string input;        // reference input of the FLOP counts: "3x224x224", "384 tokens"
  // Both in backward order: layers[0] is the last layer of the forward pass. Each layer's tensors
  // are contiguous in backward_order, in the order their gradients become ready.
  std::vector<Layer> layers;
  std::vector<Tensor> backward_order;

  ModelTotals totals() const;
};

// Zoo names, sorted: "bert-base", "fashion-mlp", "mobilenetv2", "resnet50", "resnet56", "vgg16".
std::vector<std::string> model_names();
// The zoo model of that name. Throws InputError listing the known names.
const Model& model(std::string_view name);
// The zoo model of that name, or nullptr.
const Model* find_model(std::string_view name);

// Builders (each call builds a fresh model; the zoo holds one of each, built on first use).
// torchvision resnet50 (v1.5: stride 2 in the 3x3 convolution), 1000 classes, 224x224 input.
Model build_resnet50();
// torchvision mobilenet_v2, width 1.0, 1000 classes, 224x224 input.
Model build_mobilenet_v2();
// CIFAR-10 ResNet-56 of He et al. 2016 (arXiv:1512.03385 section 4.2), option A shortcuts
// (identity with zero padding, no parameters), names as in akamaster/pytorch_resnet_cifar10.
Model build_resnet56();
// torchvision vgg16 (configuration D, no batch norm), 1000 classes, 224x224 input.
Model build_vgg16();

// sim/learn's MLP 784-256-128-10 on Fashion-MNIST (sim/learn/mlp.h), the model live runs train
// for real: tensors fc3.bias, fc3.weight, ..., fc1.weight, 235,146 parameters.
Model build_fashion_mlp();

struct BertOptions {
  int sequence_length = 384;  // tokens per sample; 384 is the SQuAD fine-tuning setup
  bool pooler = false;        // pooler.dense (BertModel's [CLS] head)
  bool squad_head = true;     // qa_outputs, 768 -> 2 (start/end logits)
};
// bert-base-uncased in Hugging Face naming. With squad_head the names carry the "bert." prefix
// of BertForQuestionAnswering, which has no pooler (add_pooling_layer=False); in Google's TF
// run_squad.py the pooler exists but receives no gradient. Defaults: the SQuAD fine-tuning model,
// embeddings + 12 encoder layers + qa_outputs = 108,893,186 parameters. {pooler = true,
// squad_head = false} is BertModel: 109,482,240.
Model build_bert_base(const BertOptions& options = {});

}  // namespace adaptsim::train
