#include "translation/translator.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <torch/torch.h>
#include <unistd.h>

#include <fstream>

#include "model/linear.h"
#include "model/small_rows_product.h"
#include "runtime/errors.h"
#include "tests/decode/decode_test_support.h"
#include "tests/test_support.h"
#include "tests/translation/translation_test_support.h"

namespace tfm {
namespace {

/// A tokenizer trained on a few number phrases and an untrained model over its vocabulary:
/// enough to check the plumbing (order, line accounting, batching), not translation quality.
struct Fixture {
  Fixture() : tokenizer(testing::number_phrase_tokenizer()), model(make_model(tokenizer.vocab_size())) {}

  static Transformer make_model(int64_t vocab) {
    torch::manual_seed(5);
    return Transformer(testing::tiny_config(vocab, 1, 1));
  }
  Tokenizer tokenizer;
  Transformer model;
};

TranslatorOptions short_outputs() {
  TranslatorOptions options;
  options.search.max_len_b = 6;
  options.search.max_len_a = 0.5;
  return options;
}

TEST(Translator, LeavesTheCallersModelAsItWas) {
  // The trainer validates its live model through a Translator: weights, dtype and training mode
  // must be as they were afterwards, whatever precision the translation ran in.
  Fixture f;
  f.model->train();
  std::vector<torch::Tensor> before;
  for (const auto& parameter : f.model->parameters()) before.push_back(parameter.detach().clone());
  for (const auto precision : {Precision::kBFloat16, Precision::kFloat32}) {
    auto options = short_outputs();
    options.precision = precision;
    Translator translator({f.model}, f.tokenizer, options, torch::kCPU);
    ASSERT_EQ(translator.translate({"one cats .", "zwei"}).size(), 2U);
    EXPECT_TRUE(f.model->is_training());
    const auto after = f.model->parameters();
    ASSERT_EQ(after.size(), before.size());
    for (size_t i = 0; i < after.size(); ++i) {
      EXPECT_EQ(after[i].scalar_type(), torch::kFloat32);
      EXPECT_TRUE(torch::equal(after[i], before[i])) << "parameter " << i << " changed";
    }
  }
}

// A model nobody else holds (one loaded only to translate, moved in) is prepared in place: no copy
// of its weights. It translates as a copy prepared beside the caller's model does.
TEST(Translator, PreparesAModelNobodyElseHoldsInPlace) {
  Fixture f;
  auto options = short_outputs();
  options.quantize_int8 = true;
  std::vector<Transformer> alone{Fixture::make_model(f.tokenizer.vocab_size())};
  const std::weak_ptr<TransformerImpl> watch = alone.front().ptr();
  Translator in_place(std::move(alone), f.tokenizer, options, torch::kCPU);  // as open_translator() does
  Translator from_copy({f.model}, f.tokenizer, options, torch::kCPU);
  ASSERT_EQ(watch.use_count(), 1) << "the translator holds the model moved in";
  int64_t linear_layers = 0;
  for (const auto& module : watch.lock()->modules()) {
    if (const auto* linear = module->as<LinearImpl>()) {
      EXPECT_EQ(linear->weight.numel(), 0) << "an int8 layer's float weight is dropped";
      ++linear_layers;
    }
  }
  EXPECT_GT(linear_layers, 0);
  for (const auto& module : f.model->modules()) {
    if (const auto* linear = module->as<LinearImpl>()) {
      EXPECT_GT(linear->weight.numel(), 0);
    }
  }
  const std::vector<std::string> lines = {"one cats .", "zwei", "three cats"};
  const auto ours = in_place.translate(lines);
  const auto theirs = from_copy.translate(lines);
  ASSERT_EQ(ours.size(), theirs.size());
  for (size_t i = 0; i < ours.size(); ++i) EXPECT_EQ(ours[i].text(), theirs[i].text());
}

// In float32 a tied model prepared in place reads its embeddings from the packed output matrix
// and frees its table (where the small-row kernels lay it out); the caller's model keeps its own.
TEST(Translator, AModelPreparedInPlaceFreesItsTiedTable) {
  Fixture f;
  const auto options = short_outputs();
  std::vector<Transformer> alone{Fixture::make_model(f.tokenizer.vocab_size())};
  const std::weak_ptr<TransformerImpl> watch = alone.front().ptr();
  Translator in_place(std::move(alone), f.tokenizer, options, torch::kCPU);
  Translator from_copy({f.model}, f.tokenizer, options, torch::kCPU);
  const bool laid_out = SmallRowsProduct::supported(torch::zeros({2, 2}));
  EXPECT_EQ(watch.lock()->output_matrix().numel(), laid_out ? 0 : f.tokenizer.vocab_size() * f.model->config().d_model);
  EXPECT_EQ(f.model->output_matrix().size(0), f.tokenizer.vocab_size());
  const std::vector<std::string> lines = {"one cats .", "zwei", "three cats"};
  const auto ours = in_place.translate(lines);
  const auto theirs = from_copy.translate(lines);
  ASSERT_EQ(ours.size(), theirs.size());
  for (size_t i = 0; i < ours.size(); ++i) {
    ASSERT_EQ(ours[i].nbest.size(), theirs[i].nbest.size());
    for (size_t k = 0; k < ours[i].nbest.size(); ++k) {
      EXPECT_EQ(ours[i].nbest[k].ids, theirs[i].nbest[k].ids);
      EXPECT_EQ(ours[i].nbest[k].score, theirs[i].nbest[k].score);  // the same bits
    }
  }
}

// In int8 the tied table goes too (the embeddings read the output matrix's int8 rows: model/
// transformer.h), on every CPU; the caller's model keeps its own, and its copy translates alike.
TEST(Translator, AnInt8TranslatorFreesItsTiedTable) {
  Fixture f;
  auto options = short_outputs();
  options.quantize_int8 = true;
  std::vector<Transformer> alone{Fixture::make_model(f.tokenizer.vocab_size())};
  const std::weak_ptr<TransformerImpl> watch = alone.front().ptr();
  Translator in_place(std::move(alone), f.tokenizer, options, torch::kCPU);
  Translator from_copy({f.model}, f.tokenizer, options, torch::kCPU);
  EXPECT_EQ(watch.lock()->output_matrix().numel(), 0);
  EXPECT_EQ(f.model->output_matrix().size(0), f.tokenizer.vocab_size());
  const std::vector<std::string> lines = {"one cats .", "zwei", "three cats"};
  const auto ours = in_place.translate(lines);
  const auto theirs = from_copy.translate(lines);
  ASSERT_EQ(ours.size(), lines.size());
  for (size_t i = 0; i < ours.size(); ++i) {
    ASSERT_FALSE(ours[i].nbest.empty());
    EXPECT_EQ(ours[i].nbest[0].ids, theirs[i].nbest[0].ids);
    EXPECT_EQ(ours[i].nbest[0].score, theirs[i].nbest[0].score);
  }
}

TEST(Translator, OneOutputPerLineEvenForOddInput) {
  Fixture f;
  auto options = short_outputs();
  options.max_source_len = 20;
  Translator translator({f.model}, f.tokenizer, options, torch::kCPU);
  std::string very_long;
  for (int i = 0; i < 50; ++i) very_long += "three cats ";
  const std::vector<std::string> lines = {"one cats .", "", "   ", very_long, "Katzen \xff\xfe invalid", "zwei"};
  const auto out = translator.translate(lines);
  ASSERT_EQ(out.size(), lines.size());
  EXPECT_TRUE(out[1].nbest.empty());
  EXPECT_EQ(out[1].text(), "");
  EXPECT_EQ(out[2].text(), "");
  EXPECT_TRUE(out[3].truncated);
  EXPECT_FALSE(out[0].truncated);
  for (const auto& translation : out) EXPECT_EQ(translation.text().find('\n'), std::string::npos);
  EXPECT_FALSE(out[4].nbest.empty());  // invalid UTF-8 still translates (as unknown pieces)
}

TEST(Translator, LearnedPositionsBoundTheSourceAndTheOutputNotTheRun) {
  // --max-source-len's default (1024) and a huge --max-len-a past max_positions: the model cannot
  // place more, so both are cut to what it can read, and every line is still translated.
  Fixture f;
  ModelConfig config = f.model->config();
  config.positions = PositionEncoding::kLearned;
  config.max_positions = 8;
  torch::manual_seed(5);
  Transformer learned(config);
  TranslatorOptions options;
  options.search.max_len_a = 10;
  Translator translator({learned}, f.tokenizer, options, torch::kCPU);
  EXPECT_EQ(translator.source_limit(), 7);
  std::string very_long;
  for (int i = 0; i < 20; ++i) very_long += "three cats ";
  const auto out = translator.translate({very_long, "zwei", very_long});
  ASSERT_EQ(out.size(), 3U);
  EXPECT_TRUE(out[0].truncated);
  EXPECT_FALSE(out[1].truncated);
  EXPECT_EQ(out[0].source_ids.size(), 7U);
  for (const auto& translation : out) {
    ASSERT_FALSE(translation.nbest.empty());
    EXPECT_LT(translation.nbest.front().ids.size(), 8U);  // the output plus its eos fit 8 positions
  }
}

/// Bytes of address space this process has mapped now (/proc/self/statm: its size in pages).
uint64_t mapped_bytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t pages = 0;
  statm >> pages;
  return pages * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

TEST(Translator, RunningOutOfMemoryIsAnErrorNamingTheBatch) {
  // A batch far larger than the memory left: the address space is capped 256 MiB above what is
  // mapped now, and one batch of 2000 long sentences needs more than that for its queries, keys
  // and values alone (2000 x 601 positions x 3 x 16 floats).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "a sanitizer reserves terabytes of address space and aborts on a failed allocation";
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
  GTEST_SKIP() << "a sanitizer reserves terabytes of address space and aborts on a failed allocation";
#endif
#endif
  at::set_num_threads(1);  // no worker threads to start (or fail to start) under the cap
  Fixture f;
  TranslatorOptions options;
  options.max_tokens = 1 << 30;
  options.search.max_len_a = 0;
  options.search.max_len_b = 2;
  Translator translator({f.model}, f.tokenizer, options, torch::kCPU);
  std::string very_long;
  for (int i = 0; i < 300; ++i) very_long += "three cats ";
  const std::vector<std::string> lines(2000, very_long);
  translator.translate({"one cat"});  // everything that is set up once, set up before the cap
  rlimit old_limit{};
  getrlimit(RLIMIT_AS, &old_limit);
  rlimit capped = old_limit;
  capped.rlim_cur = mapped_bytes() + (uint64_t{256} << 20);
  ASSERT_EQ(setrlimit(RLIMIT_AS, &capped), 0);
  std::string error;
  try {
    translator.translate(lines);
  } catch (const OutOfMemory& e) {
    error = e.what();
  }
  setrlimit(RLIMIT_AS, &old_limit);
  EXPECT_NE(error.find("out of memory on a batch of 2000 sentences of up to"), std::string::npos) << error;
  EXPECT_NO_THROW(translator.translate({"one cat"}));  // and the translator works on afterwards
}

TEST(Translator, SmallBatchesGiveTheSameOutputsInOrder) {
  Fixture f;
  const std::vector<std::string> lines = {"one two three", "cats", "drei Katzen und zwei Hunde .",
                                          "two dogs",      "",     "three three three cats ."};
  auto options = short_outputs();
  Translator whole({f.model}, f.tokenizer, options, torch::kCPU);
  const auto together = whole.translate(lines);
  options.batch_size = 1;
  Translator single({f.model}, f.tokenizer, options, torch::kCPU);
  const auto one_by_one = single.translate(lines);
  for (size_t i = 0; i < lines.size(); ++i) EXPECT_EQ(together[i].text(), one_by_one[i].text()) << i;
  // The input order is kept: translating a line alone gives what it got in the batch.
  for (size_t i = 0; i < lines.size(); ++i) EXPECT_EQ(single.translate({lines[i]})[0].text(), together[i].text());
}

TEST(Translator, SearchSettingsForOneCallEqualATranslatorBuiltWithThem) {
  Fixture f;
  const std::vector<std::string> lines = {"one two three", "drei Katzen und zwei Hunde .", ""};
  auto other = short_outputs();
  other.search.beam = 2;
  other.search.nbest = 2;
  other.search.length_penalty = 0.6;
  Translator built({f.model}, f.tokenizer, other, torch::kCPU);
  Translator server({f.model}, f.tokenizer, short_outputs(), torch::kCPU);
  std::vector<std::vector<int64_t>> sources;
  for (const auto& line : lines) sources.push_back(f.tokenizer.encode(line));
  const auto expected = built.ids().translate(sources);
  const auto per_call = server.ids().translate(sources, other.search);
  const auto as_built = server.ids().translate(sources);
  for (size_t i = 0; i < lines.size(); ++i) {
    ASSERT_EQ(per_call[i].nbest.size(), expected[i].nbest.size()) << i;
    for (size_t c = 0; c < expected[i].nbest.size(); ++c) {
      EXPECT_EQ(per_call[i].nbest[c].tokens, expected[i].nbest[c].tokens) << i << " " << c;
      EXPECT_EQ(per_call[i].nbest[c].score, expected[i].nbest[c].score) << i << " " << c;
    }
    // The translator's own settings are untouched by the call: one hypothesis each.
    EXPECT_LE(as_built[i].nbest.size(), 1u);
  }
  other.search.nbest = 3;  // more than the beam
  EXPECT_THROW(server.ids().translate(sources, other.search), std::invalid_argument);
}

TEST(Translator, EnsembleOfOneModelTwiceEqualsTheModel) {
  Fixture f;
  const std::vector<std::string> lines = {"one two three", "drei Katzen"};
  Translator alone({f.model}, f.tokenizer, short_outputs(), torch::kCPU);
  Translator twice({f.model, f.model}, f.tokenizer, short_outputs(), torch::kCPU);
  const auto a = alone.translate(lines);
  const auto b = twice.translate(lines);
  for (size_t i = 0; i < lines.size(); ++i) {
    EXPECT_EQ(a[i].text(), b[i].text());
    EXPECT_NEAR(a[i].nbest[0].score, b[i].nbest[0].score, 1e-5);
  }
}

TEST(Translator, RejectsAModelOfAnotherVocabulary) {
  Fixture f;
  EXPECT_THROW(
      Translator({Fixture::make_model(f.tokenizer.vocab_size() + 1)}, f.tokenizer, short_outputs(), torch::kCPU),
      std::invalid_argument);
}

}  // namespace
}  // namespace tfm
