// int8 model files (ModelFileWeights::kInt8, `tfm quantize`): a model read from one decodes to the
// bits of its float model quantized at load, holds no float copy of what it stores in int8, only
// translates, and a damaged quantized weight is an error naming the file and the tensor.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "model/int8_weight.h"
#include "model/linear.h"
#include "model/model_file.h"
#include "tests/test_support.h"
#include "text/special_ids.h"

namespace tfm {
namespace {

ModelConfig int8_config(bool tied) {
  ModelConfig config;
  config.vocab_size = 150;
  config.d_model = 32;
  config.d_ff = 64;
  config.heads = 2;
  config.encoder_layers = 1;
  config.decoder_layers = 2;
  config.tie_embeddings = tied;
  return config;
}

/// Encodes a batch and decodes 4 greedy steps; every step's log-probabilities, concatenated.
torch::Tensor encode_and_step(Transformer& model) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(21);
  auto source = torch::randint(kNumSpecialIds, model->config().vocab_size, {3, 6}, torch::kLong);
  source.index_put_({2, torch::indexing::Slice(4)}, kPadId);
  const auto encoded = model->encode(source);
  auto state = model->start_decoding(encoded);
  auto tokens = torch::full({3}, kBosId, torch::kLong);
  std::vector<torch::Tensor> steps{encoded.memory.reshape({3, -1})};
  for (int step = 0; step < 4; ++step) {
    steps.push_back(model->step(tokens, state));
    tokens = steps.back().argmax(1);
    tokens.index_put_({tokens < kNumSpecialIds}, kNumSpecialIds);
  }
  return torch::cat(steps, 1);
}

TEST(Int8ModelFile, DecodesToTheBitsOfItsFloatModelQuantizedAtLoad) {
  for (const auto& [tied, stored] :
       {std::pair{true, torch::kFloat32}, std::pair{false, torch::kFloat32}, std::pair{true, torch::kBFloat16}}) {
    testing::TempDir dir;
    torch::manual_seed(5);
    Transformer model(int8_config(tied));
    model->eval();
    model->to(stored);  // a bfloat16 model file is quantized from its bfloat16 values
    const Shortlist none;
    save_model_file((dir / "float.pt").string(), model, "tok", none);
    save_model_file((dir / "int8.pt").string(), model, "tok", none, ModelFileWeights::kInt8);

    auto quantized_at_load = load_model_file((dir / "float.pt").string(), torch::kCPU).model;
    quantized_at_load->eval();
    quantized_at_load->to(torch::kFloat32);  // as IdTranslator converts it before quantizing
    quantized_at_load->quantize_int8(FloatWeights::kDrop, /*shortlist_rows=*/false);
    quantized_at_load->set_cache_dtype(torch::kBFloat16);
    quantized_at_load->embed_from_output_layer();  // as IdTranslator prepares it (tied only)

    auto loaded = load_model_file((dir / "int8.pt").string(), torch::kCPU);
    EXPECT_EQ(loaded.tokenizer_proto, "tok");
    ASSERT_TRUE(loaded.model->loaded_in_int8());
    EXPECT_EQ(loaded.model->output_matrix().numel(), 0) << "tied " << tied << ", stored " << stored;
    EXPECT_TRUE(torch::equal(encode_and_step(loaded.model), encode_and_step(quantized_at_load)))
        << "tied " << tied << ", stored " << stored;

    // quantize_int8 leaves it as it is; a shortlist gets back the matrix its int8 rows stand for.
    loaded.model->quantize_int8(FloatWeights::kDrop, false);
    EXPECT_TRUE(torch::equal(encode_and_step(loaded.model), encode_and_step(quantized_at_load)));
    loaded.model->restore_output_matrix_from_int8();
    const auto rows = quantize_int8_rows(model->output_matrix().detach().to(torch::kFloat32));
    EXPECT_TRUE(
        torch::equal(loaded.model->output_matrix(), rows.values.to(torch::kFloat32) * rows.scales.unsqueeze(1)));
  }
}

TEST(Int8ModelFile, OnlyTranslates) {
  testing::TempDir dir;
  Transformer model(int8_config(true));
  const std::string path = (dir / "int8.pt").string();
  save_model_file(path, model, "tok", Shortlist(), ModelFileWeights::kInt8);
  auto loaded = load_model_file(path, torch::kCPU);
  EXPECT_THROW(save_model_file((dir / "again.pt").string(), loaded.model, "tok"), std::invalid_argument);
  try {
    load_float_model_file(path, torch::kCPU, "averaging");
    FAIL() << "expected an error";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("int8.pt: an int8 model file, which only translates; averaging needs"),
              std::string::npos)
        << error.what();
  }
}

/// An int8 model file written by hand (no checksums), with `change(name, values, scales)` applied
/// to each quantized weight first.
void write_int8_forged(const std::string& path, Transformer& model,
                       const std::function<void(const std::string&, torch::Tensor&, torch::Tensor&)>& change) {
  std::set<std::string> quantized;
  for (const auto& item : model->named_modules()) {
    if (item.value()->as<LinearImpl>() != nullptr) quantized.insert(item.key() + ".weight");
  }
  for (const auto& item : model->named_parameters()) {
    if (item.value().is_same(model->output_matrix())) quantized.insert(item.key());
  }
  torch::serialize::OutputArchive archive;
  archive.write("format", c10::IValue(std::string("tfm-model")));
  archive.write("format_version", c10::IValue(kModelFormatVersion));
  archive.write("model_config", c10::IValue(nlohmann::json(model->config()).dump()));
  archive.write("tokenizer", torch::zeros({3}, torch::kUInt8));
  archive.write("quantization", c10::IValue(std::string("int8")));
  torch::serialize::OutputArchive weights;
  for (const auto& item : model->named_parameters()) {
    if (quantized.count(item.key()) == 0) {
      weights.write(item.key(), item.value().detach());
      continue;
    }
    auto rows = quantize_int8_rows(item.value().detach());
    change(item.key(), rows.values, rows.scales);
    if (rows.values.defined()) weights.write(item.key(), rows.values);
    if (rows.scales.defined()) weights.write(item.key() + ".scale", rows.scales);
  }
  archive.write("weights", weights);
  archive.save_to(path);
}

TEST(Int8ModelFile, DamagedQuantizedWeightsAreClearErrors) {
  testing::TempDir dir;
  Transformer model(int8_config(true));
  const std::string target = "encoder.layers.0.feed_forward.w1.weight";
  const std::vector<std::pair<std::function<void(torch::Tensor&, torch::Tensor&)>, std::string>> cases = {
      {[](torch::Tensor&, torch::Tensor&) {}, ""},
      {[](torch::Tensor& values, torch::Tensor&) { values[0][0] = -128; }, "tensor " + target + " holds -128"},
      {[](torch::Tensor&, torch::Tensor& scales) { scales[1] = 0.0F; },
       "tensor " + target + ".scale holds a scale that is not"},
      {[](torch::Tensor&, torch::Tensor& scales) { scales[1] = NAN; },
       "tensor " + target + ".scale holds a scale that is not"},
      {[](torch::Tensor& values, torch::Tensor&) { values = values.to(torch::kFloat32); },
       "tensor " + target + " should be int8"},
      {[](torch::Tensor& values, torch::Tensor&) { values = values.narrow(0, 0, 3).contiguous(); },
       "tensor " + target + " should be int8 of shape [64, 32]"},
      {[](torch::Tensor&, torch::Tensor& scales) { scales = scales.narrow(0, 0, 3).contiguous(); },
       "tensor " + target + ".scale should be float32 of shape [64]"},
      {[](torch::Tensor&, torch::Tensor& scales) { scales = torch::Tensor(); }, "missing tensor " + target + ".scale"},
  };
  for (const auto& [change, expected] : cases) {
    const std::string path = (dir / "forged.pt").string();
    write_int8_forged(path, model, [&, &change = change](const std::string& name, torch::Tensor& v, torch::Tensor& s) {
      if (name == target) change(v, s);
    });
    if (expected.empty()) {
      EXPECT_TRUE(load_model_file(path, torch::kCPU).model->loaded_in_int8());  // the forger itself is sound
      continue;
    }
    try {
      load_model_file(path, torch::kCPU);
      ADD_FAILURE() << "expected: " << expected;
    } catch (const std::runtime_error& error) {
      EXPECT_NE(std::string(error.what()).find("forged.pt: " + expected), std::string::npos) << error.what();
    }
  }
}

}  // namespace
}  // namespace tfm
