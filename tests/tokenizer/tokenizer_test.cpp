#include "tokenizer/tokenizer.h"

#include <gtest/gtest.h>
#include <sentencepiece_trainer.h>
#include <torch/torch.h>

#include <fstream>
#include <iostream>

#include "tests/test_support.h"
#include "text/line_reader.h"
#include "text/special_ids.h"
#include "tokenizer/tokenizer_trainer.h"

namespace tfm {
namespace {

// Sentences in German, French and English with umlauts, accents and emoji.
const std::vector<std::string> kSamples = {
    "Ein Mann fährt mit dem Fahrrad über die Straße.",
    "Zwei Hunde spielen im Schnee, während die Sonne scheint.",
    "Une femme âgée lit un journal près de la fenêtre.",
    "L'enfant mange une crème brûlée à côté du garçon.",
    "A dog runs through the grass 🐕 and a child laughs 😀.",
    "Größere Mädchen üben Ölmalerei in der Bäckerei.",
    "Où est la gare? Ça coûte 15 € — très cher!",
    "The café’s naïve façade: “quotes”, dashes – and 100% emoji 🎉.",
};

/// A deterministic corpus built from the samples' words, large enough for a 150-piece model.
std::string synthetic_corpus() {
  std::vector<std::string> words;
  for (const auto& sentence : kSamples) {
    std::istringstream in(sentence);
    for (std::string word; in >> word;) words.push_back(word);
  }
  std::string corpus;
  for (const auto& sentence : kSamples) corpus += sentence + "\n";
  uint32_t state = 12345;
  for (int line = 0; line < 3000; ++line) {
    const int length = 3 + line % 9;
    for (int i = 0; i < length; ++i) {
      state = state * 1664525u + 1013904223u;
      corpus += words[(state >> 8) % words.size()] + (i + 1 < length ? " " : "\n");
    }
  }
  return corpus;
}

/// One small unigram model shared by the tests below, trained on first use. Training errors
/// surface as failures of each test (a fixture's SetUpTestSuite would turn them into skips).
const Tokenizer& small_tokenizer() {
  static const Tokenizer tokenizer = [] {
    testing::TempDir dir;
    testing::write_text(dir / "corpus.txt", synthetic_corpus());
    TokenizerTrainOptions options;
    options.inputs = {(dir / "corpus.txt").string()};
    options.vocab_size = 150;
    return Tokenizer::from_serialized(train_tokenizer(options));
  }();
  return tokenizer;
}

class TokenizerTest : public ::testing::Test {
 protected:
  void SetUp() override { tokenizer_ = &small_tokenizer(); }
  const Tokenizer* tokenizer_ = nullptr;
};

TEST_F(TokenizerTest, SpecialIdsAreFixed) {
  EXPECT_EQ(tokenizer_->vocab_size(), 150);
  EXPECT_EQ(tokenizer_->id_to_piece(kPadId), "<pad>");
  EXPECT_EQ(tokenizer_->id_to_piece(kUnkId), "<unk>");
  EXPECT_EQ(tokenizer_->id_to_piece(kBosId), "<s>");
  EXPECT_EQ(tokenizer_->id_to_piece(kEosId), "</s>");
}

TEST_F(TokenizerTest, RoundTripsMultilingualTextWithEmoji) {
  for (const auto& sentence : kSamples) {
    const auto ids = tokenizer_->encode(sentence);
    ASSERT_FALSE(ids.empty());
    for (const int64_t id : ids) EXPECT_GE(id, kNumSpecialIds) << sentence;  // nothing unknown
    EXPECT_EQ(tokenizer_->decode(ids), sentence);
    EXPECT_EQ(tokenizer_->decode_pieces(tokenizer_->encode_pieces(sentence)), sentence);
  }
}

TEST_F(TokenizerTest, UnknownCharactersBecomeUnk) {
  const auto ids = tokenizer_->encode("Ein 漢字 Mann");
  EXPECT_NE(std::find(ids.begin(), ids.end(), kUnkId), ids.end());
  EXPECT_NE(tokenizer_->decode(ids).find("\u2047"), std::string::npos);  // rendered as ⁇
}

TEST_F(TokenizerTest, EmptyLineEncodesToNothing) {
  EXPECT_TRUE(tokenizer_->encode("").empty());
  EXPECT_EQ(tokenizer_->decode({}), "");
  EXPECT_EQ(tokenizer_->decode({kBosId, kEosId, kPadId}), "");
}

TEST_F(TokenizerTest, DecodeRejectsIdsOutsideVocabulary) {
  EXPECT_THROW(tokenizer_->decode({5, 150}), std::invalid_argument);
  EXPECT_THROW(tokenizer_->decode({-1}), std::invalid_argument);
}

TEST_F(TokenizerTest, SerializedModelReloadsIdentically) {
  const Tokenizer copy = Tokenizer::from_serialized(tokenizer_->serialized());
  for (const auto& sentence : kSamples) EXPECT_EQ(copy.encode(sentence), tokenizer_->encode(sentence));
}

// Debian's libsentencepiece carries its own protobuf-lite; LibTorch must still work beside it.
TEST_F(TokenizerTest, WorksInOneProcessWithLibTorch) {
  const auto ids = tokenizer_->encode(kSamples[0]);
  const auto tensor = torch::tensor(ids, torch::kLong);
  const auto embedded = torch::nn::Embedding(tokenizer_->vocab_size(), 8)(tensor);
  EXPECT_EQ(embedded.sizes(), (std::vector<int64_t>{static_cast<int64_t>(ids.size()), 8}));
  EXPECT_EQ(tensor.sum().item<int64_t>(), std::accumulate(ids.begin(), ids.end(), int64_t{0}));
}

TEST(TokenizerLoad, RejectsGarbageAndForeignSpecialIds) {
  testing::TempDir dir;
  testing::write_text(dir / "garbage.model", "not a model");
  EXPECT_THROW(Tokenizer::from_file((dir / "garbage.model").string()), std::runtime_error);
  EXPECT_THROW(Tokenizer::from_file((dir / "missing.model").string()), std::runtime_error);

  // A model trained with SentencePiece's own default ids (unk=0, bos=1, eos=2, no pad).
  testing::write_text(dir / "corpus.txt", synthetic_corpus());
  std::string proto;
  const auto status = sentencepiece::SentencePieceTrainer::Train(
      "--input=" + (dir / "corpus.txt").string() + " --vocab_size=100 --minloglevel=2", nullptr, &proto);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_THROW(Tokenizer::from_serialized(proto), std::invalid_argument);
}

TEST(TokenizerTrain, RejectsBadOptions) {
  TokenizerTrainOptions options;
  EXPECT_THROW(validate(options), std::invalid_argument);  // no inputs
  options.inputs = {"x"};
  options.model_type = "wordpiece";
  EXPECT_THROW(validate(options), std::invalid_argument);
  options.model_type = "bpe";
  options.vocab_size = 3;
  EXPECT_THROW(validate(options), std::invalid_argument);
  options.vocab_size = 100;
  options.character_coverage = 1.5;
  EXPECT_THROW(validate(options), std::invalid_argument);
}

TEST(TokenizerTrain, BpeModelRoundTrips) {
  testing::TempDir dir;
  testing::write_text(dir / "corpus.txt", synthetic_corpus());
  TokenizerTrainOptions options;
  options.inputs = {(dir / "corpus.txt").string()};
  options.model_type = "bpe";
  options.vocab_size = 120;
  const Tokenizer bpe = Tokenizer::from_serialized(train_tokenizer(options));
  for (const auto& sentence : kSamples) EXPECT_EQ(bpe.decode(bpe.encode(sentence)), sentence);
}

TEST(TokenizerTrain, TooLargeVocabularyNamesWhatFits) {
  // Not SentencePiece's internal message: the flag, and the largest size this corpus allows.
  testing::TempDir dir;
  testing::write_text(dir / "corpus.txt", "one two three\nfour five six\n");
  TokenizerTrainOptions options;
  options.inputs = {(dir / "corpus.txt").string()};
  options.vocab_size = 5000;
  try {
    train_tokenizer(options);
    FAIL() << "a 5000-piece vocabulary trained on two lines";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("corpus too small for vocab_size 5000; at most "), std::string::npos)
        << error.what();
  }
}

TEST(TokenizerTrain, MissingInputNamesTheFile) {
  TokenizerTrainOptions options;
  options.inputs = {"/nonexistent/train.de.gz"};
  try {
    train_tokenizer(options);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("/nonexistent/train.de.gz"), std::string::npos) << error.what();
  }
}

/// `text` as SentencePiece's nmt_nfkc rule treats whitespace: every Unicode space separator
/// (Zs: U+00A0, U+1680, U+2000-U+200A, U+202F, U+205F, U+3000) becomes U+0020, runs collapse
/// to one space, and leading/trailing spaces go.
std::string normalize_spaces(const std::string& text) {
  static const std::vector<std::string> separators = {"\u00A0", "\u1680", "\u2000", "\u2001", "\u2002", "\u2003",
                                                      "\u2004", "\u2005", "\u2006", "\u2007", "\u2008", "\u2009",
                                                      "\u200A", "\u202F", "\u205F", "\u3000"};
  std::string collapsed;
  for (size_t at = 0; at < text.size();) {
    bool is_space = text[at] == ' ';
    size_t width = 1;
    for (const auto& separator : separators) {
      if (text.compare(at, separator.size(), separator) == 0) {
        is_space = true;
        width = separator.size();
      }
    }
    if (!is_space) {
      collapsed += text[at];
    } else if (!collapsed.empty() && collapsed.back() != ' ') {
      collapsed += ' ';
    }
    at += width;
  }
  if (!collapsed.empty() && collapsed.back() == ' ') collapsed.pop_back();
  return collapsed;
}

TEST(TokenizerNormalization, SpaceSeparatorsBecomeOneAsciiSpace) {
  EXPECT_EQ(normalize_spaces("ca. 120\u00A0cm  und\u2009so "), "ca. 120 cm und so");
  const Tokenizer& tokenizer = small_tokenizer();
  EXPECT_EQ(tokenizer.decode(tokenizer.encode("Ein\u00A0Mann  fährt")), "Ein Mann fährt");
}

// Issue 2's acceptance check: a joint model trained on Multi30k train.{en,de} reproduces
// every validation line. The one permitted difference is nmt_nfkc's whitespace rule
// (val.de line 76 has "120\u00A0cm", decoded as "120 cm"); any other difference fails.
TEST(TokenizerMulti30k, EveryValidationLineRoundTrips) {
  TFM_REQUIRE_DATA("data/multi30k/train.en.gz");
  const auto dir = testing::data_dir() / "data/multi30k";
  TokenizerTrainOptions options;
  options.inputs = {(dir / "train.en.gz").string(), (dir / "train.de.gz").string()};
  options.vocab_size = 8000;
  const Tokenizer tokenizer = Tokenizer::from_serialized(train_tokenizer(options));
  int64_t lines = 0;
  int64_t exact = 0;
  for (const char* language : {"en", "de"}) {
    LineReader reader((dir / ("val." + std::string(language) + ".gz")).string());
    for (std::string line; reader.next(line); ++lines) {
      const auto ids = tokenizer.encode(line);
      const std::string decoded = tokenizer.decode(ids);
      exact += decoded == line;
      if (decoded != line) {
        EXPECT_EQ(decoded, normalize_spaces(line)) << reader.where();
      }
      EXPECT_EQ(std::count(ids.begin(), ids.end(), kUnkId), 0) << reader.where() << ": unknown piece";
    }
  }
  EXPECT_EQ(lines, 2028);
  std::cout << "[ info     ] " << exact << " of " << lines
            << " validation lines round-trip byte for byte; the rest differ only by nmt_nfkc whitespace\n";
}

}  // namespace
}  // namespace tfm
