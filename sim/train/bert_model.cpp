// BERT-base uncased (Devlin et al. 2019, arXiv:1810.04805), generated from its configuration in
// the module structure and parameter names of Hugging Face transformers' modeling_bert.py.

#include <cstdint>
#include <stdexcept>
#include <string>

#include "sim/train/model_builder.h"
#include "sim/train/model_zoo.h"

namespace adaptsim::train {

using detail::ModelBuilder;
using detail::ParamSpec;

namespace {

// bert-base-uncased config.json.
constexpr std::uint64_t kVocab = 30522;
constexpr std::uint64_t kMaxPositions = 512;
constexpr std::uint64_t kTypeVocab = 2;
constexpr std::uint64_t kHidden = 768;
constexpr std::uint64_t kLayers = 12;
constexpr std::uint64_t kHeads = 12;
constexpr std::uint64_t kIntermediate = 3072;
constexpr std::uint64_t kQaOutputs = 2;  // start and end logits

// Linear(in, out) applied to `rows` vectors per sample: weight [out, in] and bias [out].
void add_linear(ModelBuilder& b, const std::string& name, std::uint64_t in, std::uint64_t out,
                double rows) {
  b.add_layer(name, 2.0 * rows * static_cast<double>(in * out),
              {{name + ".weight", in * out}, {name + ".bias", out}});
}

void add_layer_norm(ModelBuilder& b, const std::string& name) {
  b.add_layer(name, 0.0, {{name + ".weight", kHidden}, {name + ".bias", kHidden}});
}

}  // namespace

Model build_bert_base(const BertOptions& options) {
  if (options.sequence_length < 1 ||
      static_cast<std::uint64_t>(options.sequence_length) > kMaxPositions) {
    throw std::invalid_argument("BERT sequence length must be in [1, 512], got " +
                                std::to_string(options.sequence_length));
  }
  const double seq = options.sequence_length;
  // BertForQuestionAnswering holds BertModel as `bert`.
  const std::string root = options.squad_head ? "bert." : "";
  ModelBuilder b;

  // Lookups and a layer norm: no multiply-adds.
  const std::string emb = root + "embeddings.";
  b.add_layer(root + "embeddings", 0.0,
              {{emb + "word_embeddings.weight", kVocab * kHidden},
               {emb + "position_embeddings.weight", kMaxPositions * kHidden},
               {emb + "token_type_embeddings.weight", kTypeVocab * kHidden},
               {emb + "LayerNorm.weight", kHidden},
               {emb + "LayerNorm.bias", kHidden}});

  for (std::uint64_t l = 0; l < kLayers; ++l) {
    const std::string p = root + "encoder.layer." + std::to_string(l) + ".";
    add_linear(b, p + "attention.self.query", kHidden, kHidden, seq);
    add_linear(b, p + "attention.self.key", kHidden, kHidden, seq);
    add_linear(b, p + "attention.self.value", kHidden, kHidden, seq);
    // Scores Q K^T and context P V, each seq x seq x head_dim multiply-adds per head:
    // 2 * heads * seq^2 * (hidden / heads) = 2 * seq^2 * hidden multiply-adds. No parameters.
    static_assert(kHidden % kHeads == 0);
    b.add_layer(p + "attention.self.scores", 2.0 * 2.0 * seq * seq * static_cast<double>(kHidden),
                {});
    add_linear(b, p + "attention.output.dense", kHidden, kHidden, seq);
    add_layer_norm(b, p + "attention.output.LayerNorm");
    add_linear(b, p + "intermediate.dense", kHidden, kIntermediate, seq);
    add_linear(b, p + "output.dense", kIntermediate, kHidden, seq);
    add_layer_norm(b, p + "output.LayerNorm");
  }
  if (options.pooler) add_linear(b, root + "pooler.dense", kHidden, kHidden, 1.0);  // [CLS] only
  if (options.squad_head) add_linear(b, "qa_outputs", kHidden, kQaOutputs, seq);

  std::string heads = "embeddings + 12 encoder layers";
  if (options.pooler) heads += " + pooler";
  if (options.squad_head) heads += " + SQuAD qa_outputs (768x2+2)";
  return b.finish(
      "bert-base",
      "BERT-base uncased (" + heads + "), sequence length " +
          std::to_string(options.sequence_length),
      "Devlin et al. 2019 arXiv:1810.04805; bert-base-uncased config (vocab 30522, 512 "
      "positions, 2 token types, hidden 768, 12 layers, 12 heads, FFN 3072); names from Hugging "
      "Face modeling_bert.py (BertModel = 109,482,240 parameters)",
      "seq", std::to_string(options.sequence_length) + " tokens");
}

}  // namespace adaptsim::train
