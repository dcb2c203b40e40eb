#include "model/model_file.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <fstream>
#include <iterator>

#include "tests/tensor_assert.h"
#include "tests/test_support.h"

namespace tfm {
namespace {

ModelConfig small_config(int64_t d_ff = 32) {
  ModelConfig config;
  config.vocab_size = 19;
  config.d_model = 16;
  config.d_ff = d_ff;
  config.heads = 2;
  config.encoder_layers = 1;
  config.decoder_layers = 2;
  return config;
}

/// Writes an archive like write_model does, but with the weights of `weights_from` under the
/// config of `config_from`, leaving out `skip` (to forge broken files).
void write_forged(const std::string& path, Transformer& config_from, Transformer& weights_from,
                  const std::string& skip = "", int64_t version = kModelFormatVersion) {
  torch::serialize::OutputArchive archive;
  archive.write("format", c10::IValue(std::string("tfm-model")));
  archive.write("format_version", c10::IValue(version));
  archive.write("model_config", c10::IValue(nlohmann::json(config_from->config()).dump()));
  archive.write("tokenizer", torch::zeros({3}, torch::kUInt8));
  torch::serialize::OutputArchive weights;
  for (const auto& item : weights_from->named_parameters()) {
    if (item.key() != skip) weights.write(item.key(), item.value().detach());
  }
  archive.write("weights", weights);
  archive.save_to(path);
}

TEST(ModelFile, SaveLoadReproducesOutputsBitForBit) {
  testing::TempDir dir;
  torch::manual_seed(3);
  Transformer model(small_config());
  model->eval();
  const std::string tokenizer_bytes("\x00\x01proto\xff", 8);
  save_model_file((dir / "m.pt").string(), model, tokenizer_bytes);
  auto loaded = load_model_file((dir / "m.pt").string(), torch::kCPU);
  loaded.model->eval();
  EXPECT_EQ(loaded.tokenizer_proto, tokenizer_bytes);
  EXPECT_EQ(nlohmann::json(loaded.config), nlohmann::json(model->config()));
  const auto source = torch::randint(4, 19, {2, 5}, torch::kLong);
  const auto target = torch::randint(4, 19, {2, 4}, torch::kLong);
  EXPECT_TRUE(torch::equal(loaded.model->forward(source, target), model->forward(source, target)));
  EXPECT_FALSE(std::filesystem::exists(dir / "m.pt.tmp"));
}

TEST(ModelFile, OverwrittenWeightBytesAreAnErrorNamingFileAndTensor) {
  // The reproduction: 8 bytes overwritten inside the stored weights. Found by content
  // (the first bytes of one weight), so the damage lands in tensor data, not in zip metadata.
  testing::TempDir dir;
  torch::manual_seed(4);
  Transformer model(small_config());
  const std::string path = (dir / "m.pt").string();
  save_model_file(path, model, "proto");
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  in.close();
  const auto weight = model->named_parameters()["decoder.layers.1.feed_forward.w1.weight"].detach().contiguous();
  const std::string pattern(static_cast<const char*>(weight.data_ptr()), 32);
  const size_t at = bytes.find(pattern);
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at + 8, 8, std::string(8, '\xff'));
  testing::write_text(path, bytes);
  try {
    load_model_file(path, torch::kCPU);
    FAIL() << "a damaged model file loaded";
  } catch (const std::runtime_error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find(path), std::string::npos) << message;
    EXPECT_NE(message.find("decoder.layers.1.feed_forward.w1.weight is damaged"), std::string::npos) << message;
  }
}

TEST(ModelFile, MismatchedShapeIsAClearError) {
  testing::TempDir dir;
  Transformer model(small_config(32));
  Transformer other(small_config(64));
  write_forged((dir / "bad.pt").string(), model, other);
  try {
    load_model_file((dir / "bad.pt").string(), torch::kCPU);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("bad.pt: tensor encoder.layers.0.feed_forward.w1.weight has shape [64, 16], the model built from its config expects [32, 16]"),
              std::string::npos)
        << message;
  }
}

TEST(ModelFile, MissingTensorIsAClearError) {
  testing::TempDir dir;
  Transformer model(small_config());
  write_forged((dir / "bad.pt").string(), model, model, "encoder.layers.0.self_attention.out_proj.bias");
  try {
    load_model_file((dir / "bad.pt").string(), torch::kCPU);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("missing tensor encoder.layers.0.self_attention.out_proj.bias"),
              std::string::npos)
        << error.what();
  }
}

TEST(ModelFile, WrongVersionAndGarbageAreClearErrors) {
  testing::TempDir dir;
  Transformer model(small_config());
  write_forged((dir / "v9.pt").string(), model, model, "", 9);
  try {
    load_model_file((dir / "v9.pt").string(), torch::kCPU);
    FAIL();
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("format version 9, this build reads 1"), std::string::npos)
        << error.what();
  }
  testing::write_text(dir / "garbage.pt", "definitely not a zip file");
  EXPECT_THROW(load_model_file((dir / "garbage.pt").string(), torch::kCPU), std::runtime_error);
  EXPECT_THROW(load_model_file((dir / "absent.pt").string(), torch::kCPU), std::runtime_error);
}

}  // namespace
}  // namespace tfm
