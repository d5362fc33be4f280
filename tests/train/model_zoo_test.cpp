#include "sim/train/model_zoo.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <string>

#include "sim/core/error.h"

using namespace adaptsim;
using namespace adaptsim::train;

namespace {

const Tensor* find_tensor(const Model& m, const std::string& name) {
  for (const Tensor& t : m.backward_order) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

std::size_t position(const Model& m, const std::string& name) {
  for (std::size_t i = 0; i < m.backward_order.size(); ++i) {
    if (m.backward_order[i].name == name) return i;
  }
  FAIL("no tensor " << name << " in " << m.name);
  return 0;
}

}  // namespace

TEST_CASE("the zoo lists its models and rejects unknown names with the list of known ones") {
  CHECK(model_names() == std::vector<std::string>{"bert-base", "fashion-mlp", "mobilenetv2",
                                                  "resnet50", "resnet56", "vgg16"});
  CHECK(find_model("resnet50") == &model("resnet50"));
  CHECK(find_model("resnet-50") == nullptr);
  CHECK_THROWS_WITH_AS(model("resnet-50"),
                       "unknown model 'resnet-50' (known: bert-base, fashion-mlp, mobilenetv2, "
                       "resnet50, resnet56, vgg16)",
                       InputError);
}

TEST_CASE("every model: layers and tensors are consistent, backward order groups by layer") {
  for (const std::string& name : model_names()) {
    CAPTURE(name);
    const Model& m = model(name);
    const ModelTotals t = m.totals();
    std::uint64_t params = 0;
    double forward = 0;
    std::size_t next = 0;
    for (std::size_t l = 0; l < m.layers.size(); ++l) {
      const Layer& layer = m.layers[l];
      CHECK(layer.first_tensor == next);  // contiguous, in backward order
      for (std::size_t i = 0; i < layer.tensor_count; ++i) {
        const Tensor& x = m.backward_order[layer.first_tensor + i];
        CHECK(x.layer == l);
        CHECK(x.elements > 0);
        CHECK(x.name.find("running") == std::string::npos);  // BN statistics are not gradients
        params += x.elements;
      }
      next += layer.tensor_count;
      forward += layer.forward_flops;
    }
    CHECK(next == m.backward_order.size());
    CHECK(t.parameters == params);
    CHECK(t.forward_flops == doctest::Approx(forward));
    // Backward = 2 x forward for every layer but the first of the forward pass (1 x: its input is
    // data), the last in backward order.
    for (std::size_t l = 0; l < m.layers.size(); ++l) {
      const double ratio = l + 1 == m.layers.size() ? 1.0 : 2.0;
      CHECK(m.layers[l].backward_flops == doctest::Approx(ratio * m.layers[l].forward_flops));
    }
    CHECK(t.backward_flops / t.forward_flops <= 2.0);
    CHECK(t.bytes_fp32() == 4 * t.parameters);
    CHECK(t.bytes_fp16() == 2 * t.parameters);
  }
}

TEST_CASE("resnet50: torchvision v1.5 counts, 161 tensors, fc first and conv1 last") {
  const Model& m = model("resnet50");
  const ModelTotals t = m.totals();
  // Published by torchvision: 25,557,032 parameters.
  CHECK(t.parameters == 25'557'032);
  // conv1 + bn1 (3) + 16 bottlenecks x (3 conv + 3 bn x 2) (144) + 4 downsamples x 3 (12) + fc (2).
  CHECK(t.tensors == 3 + 16 * 9 + 4 * 3 + 2);
  CHECK(t.tensors == 161);
  // fp32: 25,557,032 x 4 = 102,228,128 B (102.2 MB, 97.5 MiB); fp16 half of that.
  CHECK(t.bytes_fp32() == 102'228'128);
  CHECK(t.bytes_fp16() == 51'114'064);
  // Published 4.09 GMACs at 224x224 -> 8.18 GFLOP; within 2%.
  CHECK(t.forward_flops == doctest::Approx(2 * 4.09e9).epsilon(0.02));

  CHECK(m.backward_order.front().name == "fc.bias");
  CHECK(m.backward_order[1].name == "fc.weight");
  CHECK(m.backward_order.back().name == "conv1.weight");
  // fc: 2048 x 1000 weights; layer4.2.conv3: 1x1 from 512 to 2048 channels.
  CHECK(m.backward_order[1].elements == 2048 * 1000);
  CHECK(find_tensor(m, "layer4.2.conv3.weight")->elements == 2048 * 512);
  // v1.5: the 3x3 of layer2.0 has stride 2, so its output is 28x28:
  // 2 x 28 x 28 x 128 x (128 x 9) FLOP.
  const Tensor* conv2 = find_tensor(m, "layer2.0.conv2.weight");
  CHECK(m.layers[conv2->layer].forward_flops == doctest::Approx(2.0 * 28 * 28 * 128 * 128 * 9));
  // The downsample branch is registered after bn3, so its gradients are ready before bn3's.
  CHECK(position(m, "layer1.0.downsample.1.bias") < position(m, "layer1.0.bn3.bias"));
  CHECK(position(m, "layer1.0.bn3.bias") < position(m, "layer1.0.bn3.weight"));
  CHECK(position(m, "layer1.0.bn3.weight") < position(m, "layer1.0.conv3.weight"));
  // conv1: 2 x 112 x 112 x 64 x (3 x 7 x 7) FLOP; its input is data, so backward = 1 x forward.
  const Layer& conv1 = m.layers.back();
  CHECK(conv1.name == "conv1");
  CHECK(conv1.forward_flops == doctest::Approx(2.0 * 112 * 112 * 64 * 3 * 49));
  CHECK(conv1.backward_flops == doctest::Approx(conv1.forward_flops));
  CHECK(m.layers.front().backward_flops == doctest::Approx(2 * m.layers.front().forward_flops));
}

TEST_CASE("mobilenetv2: torchvision width 1.0 counts and the expansion-free first block") {
  const Model& m = model("mobilenetv2");
  const ModelTotals t = m.totals();
  CHECK(t.parameters == 3'504'872);  // published by torchvision
  // features.0 (3) + features.1 without expansion (2 conv + 2 bn: 6) + 16 blocks x 9 +
  // features.18 (3) + classifier.1 (2).
  CHECK(t.tensors == 3 + 6 + 16 * 9 + 3 + 2);
  CHECK(t.bytes_fp32() == 14'019'488);
  // Published 300M multiply-adds (Sandler et al. 2018, Table 4) -> 0.60 GFLOP; within 2%.
  CHECK(t.forward_flops == doctest::Approx(2 * 300e6).epsilon(0.02));
  CHECK(m.backward_order.front().name == "classifier.1.bias");
  CHECK(m.backward_order.back().name == "features.0.0.weight");
  // features.1 is depthwise 3x3 on 32 channels (32 x 1 x 9), then a 1x1 projection to 16.
  CHECK(find_tensor(m, "features.1.conv.0.0.weight")->elements == 32 * 9);
  CHECK(find_tensor(m, "features.1.conv.1.weight")->elements == 16 * 32);
  // features.2 expands 16 -> 96 first.
  CHECK(find_tensor(m, "features.2.conv.0.0.weight")->elements == 96 * 16);
  CHECK(find_tensor(m, "features.18.0.weight")->elements == 1280 * 320);
}

TEST_CASE("resnet56: CIFAR-10 option A counts computed from the architecture") {
  const Model& m = model("resnet56");
  const ModelTotals t = m.totals();
  // conv1 3*16*9 = 432, bn1 32.
  // stage 1: 9 blocks x (2 x 16*16*9 + 2 x 32) = 9 x 4,672 = 42,048.
  // stage 2: first block 16*32*9 + 32*32*9 + 128 = 13,952; 8 x (2 x 9,216 + 128) = 148,480.
  // stage 3: first block 32*64*9 + 64*64*9 + 256 = 55,552; 8 x (2 x 36,864 + 256) = 591,872.
  // linear 64*10 + 10 = 650. Option A shortcuts add nothing.
  const std::uint64_t expected = 432 + 32 + 42'048 + 13'952 + 148'480 + 55'552 + 591'872 + 650;
  CHECK(expected == 853'018);
  CHECK(t.parameters == expected);
  // conv1 (1) + bn1 (2) + 27 blocks x (2 conv + 2 bn x 2) + linear (2) = 167.
  CHECK(t.tensors == 3 + 27 * 6 + 2);
  CHECK(t.bytes_fp32() == 3'412'072);
  // Multiply-adds: conv1 32*32*16*27 = 442,368; every other 3x3 conv produces 2,359,296 except
  // the two stride-2 ones, 1,179,648 each; 54 convs; linear 640.
  const double macs = 442'368.0 + 52 * 2'359'296.0 + 2 * 1'179'648.0 + 640.0;
  CHECK(t.forward_flops == doctest::Approx(2 * macs));
  // Commonly cited 1.25e8 FLOP (multiply-adds; Li et al., ICLR 2017, Table 1; recalled, not
  // re-read); within 2%.
  CHECK(t.forward_flops == doctest::Approx(2 * 1.25e8).epsilon(0.02));
  CHECK(m.backward_order.front().name == "linear.bias");
  CHECK(m.backward_order.back().name == "conv1.weight");
}

TEST_CASE("vgg16: torchvision counts, 13 conv + 3 linear layers with biases") {
  const Model& m = model("vgg16");
  const ModelTotals t = m.totals();
  CHECK(t.parameters == 138'357'544);  // published by torchvision
  CHECK(t.tensors == 16 * 2);
  CHECK(t.bytes_fp32() == 553'430'176);
  // Published 15.47 GMACs at 224x224 -> 30.94 GFLOP; within 2%.
  CHECK(t.forward_flops == doctest::Approx(2 * 15.47e9).epsilon(0.02));
  CHECK(m.backward_order.front().name == "classifier.6.bias");
  CHECK(m.backward_order.back().name == "features.0.weight");
  // classifier.0: 512 x 7 x 7 = 25,088 inputs to 4096 outputs.
  CHECK(find_tensor(m, "classifier.0.weight")->elements == 25'088ULL * 4096);
  CHECK(find_tensor(m, "features.28.bias")->elements == 512);
}

TEST_CASE("bert-base: BertModel totals and the SQuAD fine-tuning model") {
  // Embeddings: 30522*768 + 512*768 + 2*768 + LayerNorm 2*768 = 23,837,184.
  // Per encoder layer: 4 x (768*768 + 768) + FFN (768*3072 + 3072) + (3072*768 + 768)
  //   + 2 LayerNorms x 1,536 = 7,087,872; x 12 = 85,054,464. Pooler 768*768 + 768 = 590,592.
  const std::uint64_t embeddings = 30522ULL * 768 + 512 * 768 + 2 * 768 + 2 * 768;
  const std::uint64_t per_layer =
      4 * (768 * 768 + 768) + (768 * 3072 + 3072) + (3072 * 768 + 768) + 2 * 2 * 768;
  const std::uint64_t pooler = 768 * 768 + 768;
  const std::uint64_t qa = 768 * 2 + 2;
  CHECK(embeddings == 23'837'184);
  CHECK(per_layer == 7'087'872);

  BertOptions bert_model;
  bert_model.pooler = true;
  bert_model.squad_head = false;
  const Model base = build_bert_base(bert_model);
  CHECK(base.totals().parameters == embeddings + 12 * per_layer + pooler);
  CHECK(base.totals().parameters == 109'482'240);
  CHECK(base.totals().tensors == 5 + 12 * 16 + 2);
  CHECK(base.backward_order.front().name == "pooler.dense.bias");
  CHECK(base.backward_order.back().name == "embeddings.word_embeddings.weight");

  // The zoo's bert-base is BertForQuestionAnswering: no pooler, plus qa_outputs (768x2 + 2).
  const Model& squad = model("bert-base");
  const ModelTotals t = squad.totals();
  CHECK(t.parameters == embeddings + 12 * per_layer + qa);
  CHECK(t.parameters == 108'893'186);
  CHECK(t.tensors == 5 + 12 * 16 + 2);
  CHECK(t.bytes_fp32() == 435'572'744);
  CHECK(t.bytes_fp16() == 217'786'372);
  CHECK(squad.backward_order.front().name == "qa_outputs.bias");
  CHECK(squad.backward_order[1].name == "qa_outputs.weight");
  CHECK(squad.backward_order[2].name == "bert.encoder.layer.11.output.LayerNorm.bias");
  CHECK(squad.backward_order.back().name == "bert.embeddings.word_embeddings.weight");
  CHECK(squad.sample_unit == "seq");

  // FLOPs per sequence of length L = 384 (multiply-add = 2): per token, 2 x the 84,934,656
  // encoder weights, plus attention scores and context 2 x 2 x 12 layers x L x 768, plus the
  // QA head 2 x 768 x 2 (Kaplan et al. 2020, Table 1, with bidirectional attention).
  const double L = 384;
  const double encoder_weights = 12.0 * (4 * 768 * 768 + 2 * 768 * 3072);
  CHECK(encoder_weights == 84'934'656.0);
  const double per_token = 2 * encoder_weights + 2 * 2 * 12 * L * 768 + 2 * 768 * 2;
  CHECK(t.forward_flops == doctest::Approx(L * per_token));
  CHECK(t.forward_flops / 1e9 == doctest::Approx(70.667).epsilon(0.001));

  // The attention-score layer carries FLOPs but no gradient tensors.
  bool found_scores = false;
  for (const Layer& l : squad.layers) {
    if (l.name == "bert.encoder.layer.0.attention.self.scores") {
      found_scores = true;
      CHECK(l.tensor_count == 0);
      CHECK(l.forward_flops == doctest::Approx(2 * 2 * L * L * 768));
    }
  }
  CHECK(found_scores);
}

TEST_CASE("bert-base: the sequence length changes FLOPs, not parameters") {
  BertOptions short_seq;
  short_seq.sequence_length = 128;
  const Model m = build_bert_base(short_seq);
  CHECK(m.totals().parameters == model("bert-base").totals().parameters);
  const double L = 128;
  const double per_token = 2 * 84'934'656.0 + 2 * 2 * 12 * L * 768 + 2 * 768 * 2;
  CHECK(m.totals().forward_flops == doctest::Approx(L * per_token));
  BertOptions too_long;
  too_long.sequence_length = 513;  // beyond the 512 position embeddings
  CHECK_THROWS(build_bert_base(too_long));
}

TEST_CASE("fashion-mlp: sim/learn's MLP 784-256-128-10, its tensors in backward order") {
  const Model& m = model("fashion-mlp");
  const ModelTotals t = m.totals();
  // 784 x 256 + 256 + 256 x 128 + 128 + 128 x 10 + 10 (sim/learn/mlp.h's parameter_count()).
  CHECK(t.parameters == 235'146);
  CHECK(t.tensors == 6);
  CHECK(m.sample_unit == "img");
  const std::vector<std::string> order = {"fc3.bias",   "fc3.weight", "fc2.bias",
                                          "fc2.weight", "fc1.bias",   "fc1.weight"};
  for (std::size_t i = 0; i < order.size(); ++i)
    CHECK(m.backward_order[i].name == order[i]);
  CHECK(find_tensor(m, "fc1.weight")->elements == 784 * 256);
  CHECK(find_tensor(m, "fc3.bias")->elements == 10);
  // Forward 2 x in x out per sample: fc3 2 x 128 x 10; backward 2x that, fc1 1x (input is data).
  CHECK(m.layers[0].name == "fc3");
  CHECK(m.layers[0].forward_flops == 2.0 * 128 * 10);
  CHECK(m.layers[0].backward_flops == 4.0 * 128 * 10);
  CHECK(m.layers[2].forward_flops == 2.0 * 784 * 256);
  CHECK(m.layers[2].backward_flops == 2.0 * 784 * 256);
  CHECK(t.forward_flops == 2.0 * (784 * 256 + 256 * 128 + 128 * 10));
}
