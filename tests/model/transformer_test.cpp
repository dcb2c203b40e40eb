#include "model/transformer.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <optional>
#include <utility>

#include "model/embeddings.h"
#include "model/int8_weight.h"
#include "model/length_chunks.h"
#include "model/loss.h"
#include "runtime/kernels.h"
#include "runtime/page_pool.h"
#include "tests/model/model_test_support.h"
#include "tests/tensor_assert.h"
#include "text/special_ids.h"

namespace tfm {
namespace {

ModelConfig tiny_config() { return testing::tiny_model_config(); }

/// Random real tokens (ids >= 4) with a few sentences padded at the end.
torch::Tensor random_ids(int64_t batch, int64_t length, int64_t vocab, int64_t seed) {
  torch::manual_seed(seed);
  auto ids = torch::randint(kNumSpecialIds, vocab, {batch, length}, torch::kLong);
  for (int64_t b = 1; b < batch; ++b) ids.index_put_({b, torch::indexing::Slice(length - b)}, kPadId);
  return ids;
}

Transformer eval_model(const ModelConfig& config, int64_t seed = 7) {
  torch::manual_seed(seed);
  Transformer model(config);
  model->eval();
  return model;
}

TEST(Positions, SinusoidsEqualThePapersFormula) {
  const int64_t d = 8;
  const auto table = sinusoidal_positions(0, 50, d, torch::kCPU);
  for (int64_t pos : {0, 1, 7, 49}) {
    for (int64_t i = 0; i < d / 2; ++i) {
      const double angle = pos / std::pow(10000.0, 2.0 * i / d);
      EXPECT_NEAR(table[pos][2 * i].item<double>(), std::sin(angle), 1e-6) << pos << "," << i;
      EXPECT_NEAR(table[pos][2 * i + 1].item<double>(), std::cos(angle), 1e-6) << pos << "," << i;
    }
  }
  EXPECT_TENSOR_NEAR(sinusoidal_positions(30, 5, d, torch::kCPU), table.narrow(0, 30, 5), 0.0);
}

// The embedding slices one table computed once, where it used to compute each call's positions:
// a row must have the same bits whichever rows were computed with it (the tail of a vectorised
// sin or cos could differ).
TEST(Positions, ARowOfSinusoidsHasTheSameBitsInAnyTable) {
  for (const int64_t d : {256, 512}) {
    const auto table = sinusoidal_positions(0, 512, d, torch::kCPU);
    for (int64_t first = 0; first < 400; first += 7) {
      for (const int64_t length : {1, 3, 13, 37}) {
        ASSERT_TRUE(torch::equal(sinusoidal_positions(first, length, d, torch::kCPU), table.narrow(0, first, length)))
            << "d " << d << ", positions " << first << " + " << length;
      }
    }
  }
}

// Training validates with its own model under InferenceMode, which may grow the shared table;
// the next training step must still take it (and learn through the embedding).
TEST(Positions, ATableGrownWhileDecodingServesTheNextTrainingStep) {
  Transformer model(tiny_config());
  {
    torch::InferenceMode decoding;
    model->eval();
    model->forward(random_ids(1, 5, 23, 1), random_ids(1, 300, 23, 2));  // grows past the first 256 rows
  }
  model->train();
  const auto logits = model->forward(random_ids(2, 6, 23, 3), random_ids(2, 280, 23, 4));
  logits.sum().backward();
  for (const auto& parameter : model->parameters()) ASSERT_TRUE(parameter.grad().defined());
}

/// §3.2.3: the decoder output at position t depends on target tokens <= t only.
TEST(Transformer, DecoderIsCausal) {
  auto model = eval_model(tiny_config());
  const auto source = random_ids(2, 6, 23, 1);
  auto target = random_ids(2, 7, 23, 2).fill_(5);
  const auto before = model->forward(source, target);
  for (int64_t t = 0; t < 6; ++t) {
    auto changed = target.clone();
    changed.index_put_({torch::indexing::Slice(), torch::indexing::Slice(t + 1)}, 9);
    const auto after = model->forward(source, changed);
    EXPECT_TENSOR_NEAR(after.narrow(1, 0, t + 1), before.narrow(1, 0, t + 1), 1e-6) << "t=" << t;
    EXPECT_FALSE(torch::allclose(after.narrow(1, t + 1, 1), before.narrow(1, t + 1, 1)));
  }
}

TEST(Transformer, PaddingDoesNotChangeRealPositions) {
  auto model = eval_model(tiny_config());
  const auto source = random_ids(1, 5, 23, 3);
  const auto target = random_ids(1, 4, 23, 4);
  const auto reference = model->forward(source, target);
  const auto padded_source = torch::cat({source, torch::full({1, 3}, kPadId, torch::kLong)}, 1);
  const auto padded_target = torch::cat({target, torch::full({1, 2}, kPadId, torch::kLong)}, 1);
  EXPECT_TENSOR_NEAR(model->forward(padded_source, target), reference, 1e-5);
  EXPECT_TENSOR_NEAR(model->forward(source, padded_target).narrow(1, 0, 4), reference, 1e-5);
}

TEST(Transformer, EncodingInLengthChunksEqualsEachSentenceAlone) {
  // One long sentence among short ones: outside training encode() parts the batch by length
  // (model/length_chunks.h), and each sentence's memory must still be its own, unpadded.
  auto model = eval_model(tiny_config());
  const int64_t rows = 30, longest = 300;
  auto source = random_ids(rows, longest, 23, 11);
  for (int64_t b = 0; b < rows; ++b) {
    if (b != 4) source[b].narrow(0, 3 + b % 5, longest - 3 - b % 5).fill_(kPadId);
  }
  const auto encoded = model->encode(source);  // [B, S, D]
  ASSERT_GT(length_chunks(mask_lengths(encoded.mask)).size(), 1U);
  const auto whole = model->encoder->forward(model->source_embedding(source), encoded.mask);  // unparted
  for (int64_t b = 0; b < rows; ++b) {
    const int64_t length = mask_lengths(encoded.mask.narrow(0, b, 1)).front();
    const auto alone = model->encode(source.narrow(0, b, 1).narrow(1, 0, length)).memory[0];  // [L, D]
    ASSERT_TENSOR_NEAR(encoded.memory[b].narrow(0, 0, length), alone, 1e-5) << "sentence " << b;
    ASSERT_TENSOR_NEAR(encoded.memory[b].narrow(0, 0, length), whole[b].narrow(0, 0, length), 1e-5) << "sentence " << b;
  }
}

/// Step-by-step decoding with the cache equals the teacher-forced forward pass (within
/// `tolerance`; with `cache_dtype`, the caches are stored in it).
void expect_incremental_equals_full(const ModelConfig& config, double tolerance = 1e-5,
                                    std::optional<torch::Dtype> cache_dtype = std::nullopt) {
  auto model = eval_model(config);
  model->set_cache_dtype(cache_dtype);
  const auto source = random_ids(3, 6, config.vocab_size, 5);
  auto target = random_ids(3, 5, config.vocab_size, 6);
  target.index_put_({torch::indexing::Slice(), 0}, kBosId);
  target.index_put_({torch::indexing::Slice(1), torch::indexing::Slice(3)}, 7);  // no pads in the target prefix
  const auto full = torch::log_softmax(model->forward(source, target), -1);      // [B, T, V]
  // With autograd on, steps take LibTorch's matmul attention; outside it (decoding), step_attention.
  for (const bool grad : {true, false}) {
    torch::AutoGradMode mode(grad);
    auto state = model->start_decoding(model->encode(source));
    for (int64_t t = 0; t < target.size(1); ++t) {
      const auto step = model->step(target.select(1, t), state);  // [B, V]
      ASSERT_TENSOR_NEAR(step, full.select(1, t), tolerance) << "step " << t << (grad ? "" : " outside autograd");
    }
    EXPECT_EQ(state.step, target.size(1));
    const auto stored = cache_dtype.value_or(torch::kFloat32);
    EXPECT_EQ(state.layers.front().self_k.scalar_type(), stored);
    EXPECT_EQ(state.layers.back().memory_v.scalar_type(), stored);
  }
}

TEST(Transformer, IncrementalDecodingEqualsFullForward) { expect_incremental_equals_full(tiny_config()); }

TEST(Transformer, IncrementalDecodingEqualsFullForwardWithVariants) {
  for (const auto& config : testing::decoding_variants()) expect_incremental_equals_full(config);
  for (const auto score : {AttentionScore::kGeneral, AttentionScore::kAdditive, AttentionScore::kCosine}) {
    auto scored = tiny_config();
    scored.score = score;
    expect_incremental_equals_full(scored);
  }
}

TEST(Transformer, IncrementalDecodingWithABFloat16CacheStaysCloseToFullForward) {
  // Keys and values rounded to 8 bits of mantissa move log-probabilities by up to 6e-3 here; a
  // cache read wrongly (a position or head off) would move them by whole units.
  expect_incremental_equals_full(tiny_config(), 2e-2, torch::kBFloat16);
}

TEST(Transformer, ReorderedStateEqualsReorderedBatch) {
  auto model = eval_model(tiny_config());
  const auto source = random_ids(3, 6, 23, 8);
  auto state = model->start_decoding(model->encode(source));
  const auto bos = torch::full({3}, kBosId, torch::kLong);
  model->step(bos, state);
  const auto rows = torch::tensor({2, 0, 0}, torch::kLong);  // reorder, repeat and drop
  state.reorder(rows);
  const auto next = torch::tensor({5, 6, 7}, torch::kLong);
  const auto reordered = model->step(next, state);

  auto fresh = model->start_decoding(model->encode(source.index_select(0, rows)));
  model->step(bos, fresh);
  EXPECT_TENSOR_NEAR(reordered, model->step(next, fresh), 1e-6);
}

TEST(Transformer, SentencesLeavingMoveNoMemoryRowUntilHalfAreGone) {
  // Finished sentences leave the batch: the others' encoder outputs stay where they are (a table
  // says which stored row each reads) until no more than half are read, and then are gathered.
  // Either way the rows decode as a batch of only the remaining sentences does.
  auto model = eval_model(tiny_config());
  const auto source = random_ids(4, 6, 23, 9);
  // With autograd on, steps take LibTorch's matmul attention (gathering by the table); outside it,
  // step_attention reads the stored rows through it.
  for (const bool grad : {true, false}) {
    SCOPED_TRACE(grad ? "in autograd" : "outside autograd");
    torch::AutoGradMode mode(grad);
    auto state = model->start_decoding(model->encode(source));
    const void* stored = state.layers.back().memory_v.data_ptr();
    model->step(torch::full({4}, kBosId, torch::kLong), state);
    auto expect_rows_of = [&](const std::vector<int64_t>& sentences, const torch::Tensor& history) {
      auto fresh = model->start_decoding(model->encode(source.index_select(0, torch::tensor(sentences))));
      const auto count = static_cast<int64_t>(sentences.size());
      model->step(torch::full({count}, kBosId, torch::kLong), fresh);
      for (int64_t t = 0; t + 1 < history.size(0); ++t) model->step(history[t], fresh);
      EXPECT_TENSOR_NEAR(model->step(history[-1], state), model->step(history[-1], fresh), 1e-5);
    };
    state.reorder(torch::tensor({3, 0, 2}, torch::kLong));  // sentence 1 finished; the rest reordered
    EXPECT_EQ(state.layers.back().memory_v.data_ptr(), stored);
    EXPECT_FALSE(state.memory_slots.identity());
    expect_rows_of({3, 0, 2}, torch::tensor({{5, 6, 7}}, torch::kLong));
    state.reorder(torch::tensor({0, 2}, torch::kLong));  // sentence 0 finished: 2 of 4 stored rows read
    EXPECT_EQ(state.layers.back().memory_v.size(0), 2);
    EXPECT_TRUE(state.memory_slots.identity());
    expect_rows_of({3, 2}, torch::tensor({{5, 7}, {8, 9}}, torch::kLong));
  }
}

/// Decoding states of three random sentences with `beam` rows each: `shared` repeats its rows
/// (the beams read one encoder output), `copied` reorders into one row per encoder output.
std::pair<DecoderState, DecoderState> shared_and_copied_states(Transformer& model, int64_t beam) {
  const auto source = random_ids(3, 6, 23, 8);
  auto shared = model->start_decoding(model->encode(source));
  shared.repeat_rows(beam);
  auto copied = model->start_decoding(model->encode(source));
  copied.reorder(torch::arange(3, torch::kLong).repeat_interleave(beam));
  return {std::move(shared), std::move(copied)};
}

TEST(Transformer, SharedMemoryRowsEqualRepeatedMemoryRows) {
  // Beam search's K rows per sentence read one copy of the encoder output (repeat_rows), which
  // must score exactly as K separate copies (reorder with repeats) through reorders and drops.
  auto model = eval_model(tiny_config());
  const int64_t beam = 2;
  auto states = shared_and_copied_states(model, beam);
  auto& [shared, copied] = states;
  ASSERT_EQ(shared.rows_per_memory, beam);
  ASSERT_EQ(shared.layers.front().memory_k.size(0), 3);
  ASSERT_EQ(copied.layers.front().memory_k.size(0), 6);

  const auto bos = torch::full({6}, kBosId, torch::kLong);
  EXPECT_TENSOR_NEAR(model->step(bos, shared), model->step(bos, copied), 1e-5);
  const auto within = torch::tensor({1, 1, 2, 3, 5, 4}, torch::kLong);  // beams move inside their sentence
  // Reorders move no cached keys (model/cache_slots.h): the caches stay where they are.
  const void* cache_before = shared.layers.front().self_k.data_ptr();
  shared.reorder(within, /*same_memory=*/true);
  copied.reorder(within, /*same_memory=*/true);
  EXPECT_EQ(shared.layers.front().self_k.data_ptr(), cache_before);
  const auto next = torch::tensor({5, 6, 7, 8, 9, 10}, torch::kLong);
  EXPECT_TENSOR_NEAR(model->step(next, shared), model->step(next, copied), 1e-5);
  const auto drop_middle = torch::tensor({1, 0, 4, 4}, torch::kLong);  // sentence 1 finished
  shared.reorder(drop_middle);
  copied.reorder(drop_middle);
  ASSERT_EQ(shared.memory_bias.size(0), 2);
  EXPECT_EQ(shared.layers.front().memory_k.size(0), 3);  // kept in place: DecoderState::memory_slots
  EXPECT_EQ(shared.layers.front().self_k.data_ptr(), cache_before);
  const auto last = torch::tensor({11, 12, 13, 14}, torch::kLong);
  EXPECT_TENSOR_NEAR(model->step(last, shared), model->step(last, copied), 1e-5);

  // A block that mixes two sentences cannot share one memory row.
  EXPECT_THROW(shared.reorder(torch::tensor({0, 2}, torch::kLong)), c10::Error);
}

TEST(Transformer, ReordersOfFourBeamsEqualOneRowPerMemory) {
  // Beam moves within a sentence (a shift, a swap, a cycle) and a sentence leaving: the rows that
  // share their sentence's encoder output decode as the rows that each have a copy.
  auto model = eval_model(tiny_config());
  auto states = shared_and_copied_states(model, /*beam=*/4);
  DecoderState& shared = states.first;
  DecoderState& copied = states.second;
  auto step_both = [&](int64_t first_token) {
    const auto tokens = torch::arange(first_token, first_token + shared.rows(), torch::kLong);
    EXPECT_TENSOR_NEAR(model->step(tokens, shared), model->step(tokens, copied), 1e-5);
  };
  step_both(4);
  step_both(5);
  const void* cache_before = shared.layers.front().self_k.data_ptr();
  // Neither reorder moves a key: each is checked before the next step (which may grow the caches).
  // Sentence 0: a shift (row 1 <- 0 directly, rows 2, 3 through the buffer); sentence 1: a cycle;
  // sentence 2: every row from its best one.
  const auto moves = torch::tensor({0, 0, 1, 2, 5, 6, 7, 4, 9, 9, 9, 9}, torch::kLong);
  shared.reorder(moves, /*same_memory=*/true);
  copied.reorder(moves, /*same_memory=*/true);
  ASSERT_EQ(shared.layers.front().self_k.data_ptr(), cache_before);
  step_both(6);
  cache_before = shared.layers.front().self_k.data_ptr();
  const auto drop_first = torch::tensor({7, 4, 4, 5, 8, 11, 10, 8}, torch::kLong);  // sentence 0 finished
  shared.reorder(drop_first);
  copied.reorder(drop_first);
  ASSERT_EQ(shared.layers.front().self_k.data_ptr(), cache_before);
  step_both(7);
}

int64_t count_parameters(Transformer& model) {
  int64_t total = 0;
  for (const auto& p : model->parameters()) total += p.numel();
  return total;
}

// Base model, shared 37000-subword vocabulary, tied embeddings (§3.4, §5.1):
//   embedding          37000 * 512                                   = 18,944,000
//   attention          4 * (512 * 512 + 512)                          =  1,050,624
//   feed-forward       512 * 2048 + 2048 + 2048 * 512 + 512           =  2,099,712
//   encoder layer      attention + FFN + 2 LayerNorms (2 * 1024)      =  3,152,384   x 6 = 18,914,304
//   decoder layer      2 attentions + FFN + 3 LayerNorms (3 * 1024)   =  4,204,032   x 6 = 25,224,192
//   total (output projection tied, no bias)                           = 63,082,496  (the paper: "65M")
TEST(Transformer, BaseModelHasThePapersParameterCount) {
  auto config = preset("base");
  config.vocab_size = 37000;
  Transformer model(config);
  EXPECT_EQ(count_parameters(model), 63082496);
  config.tie_embeddings = false;  // + source and target embeddings and the projection separately
  Transformer untied(config);
  EXPECT_EQ(count_parameters(untied), 63082496 + 2 * 18944000);
}

class BothKernels : public testing::BothKernelsTest {};
INSTANTIATE_BOTH_KERNELS(BothKernels);

TEST_P(BothKernels, ReorderedCachesDecodeAsAFreshStateOfTheSameHistories) {
  // On the CPU reorders move no cached keys (an ancestor table, model/cache_slots.h); a reorder to
  // more rows than the caches hold gathers them into new ones; the plain kernels read the table
  // through gather_slots. Each must decode as a state built afresh from the same sentences and
  // tokens.
  auto model = eval_model(tiny_config());
  const auto source = random_ids(3, 6, 23, 8);
  auto state = model->start_decoding(model->encode(source));
  std::vector<int64_t> sentence = {0, 1, 2};     // each row's source sentence
  std::vector<std::vector<int64_t>> history(3);  // each row's tokens so far
  int64_t token = 0;
  auto step_and_compare = [&] {
    for (auto& tokens : history) tokens.push_back(tokens.empty() ? kBosId : 4 + token++ % 19);
    const auto last = [&](int64_t position) {
      std::vector<int64_t> column;
      for (const auto& tokens : history) column.push_back(tokens[position]);
      return torch::tensor(column, torch::kLong);
    };
    const auto stepped = model->step(last(history.front().size() - 1), state);
    auto fresh = model->start_decoding(model->encode(source.index_select(0, torch::tensor(sentence, torch::kLong))));
    torch::Tensor expected;
    for (size_t position = 0; position < history.front().size(); ++position)
      expected = model->step(last(position), fresh);
    EXPECT_TENSOR_NEAR(stepped, expected, 1e-5);
  };
  auto reorder = [&](const std::vector<int64_t>& rows) {
    std::vector<int64_t> sentences;
    std::vector<std::vector<int64_t>> histories;
    for (const int64_t row : rows) {
      sentences.push_back(sentence[row]);
      histories.push_back(history[row]);
    }
    sentence = sentences;
    history = histories;
    state.reorder(torch::tensor(rows, torch::kLong));
  };
  step_and_compare();
  step_and_compare();
  reorder({2, 0, 0});  // rows move and repeat: the table
  step_and_compare();
  reorder({1, 1, 2, 0, 2});  // five rows, caches of three: gathered into new caches
  step_and_compare();
  reorder({4, 0, 3});  // rows leave
  step_and_compare();
  for (int i = 0; i < 17; ++i) {  // past the table's first 16 positions, a reorder at every step
    reorder({2, 0, 1});
    step_and_compare();
  }
  reorder({1});
  step_and_compare();
}

TEST(Transformer, FullCachesGrowWithOnlyTheRowsStillDecoding) {
  // Rows of finished sentences stay in the caches while most rows still decode (a reorder then
  // rewrites only the table); when the caches are full, the next step's larger buffers take only
  // the rows still decoding, and every row decodes as before.
  auto model = eval_model(tiny_config());
  const auto source = random_ids(4, 5, 23, 8);
  auto state = model->start_decoding(model->encode(source));
  auto reference = model->start_decoding(model->encode(source.index_select(0, torch::tensor({3, 1, 2}))));
  const auto tokens = [](int64_t step, int64_t rows) {
    return torch::full({rows}, step == 0 ? kBosId : 4 + step % 19, torch::kLong);
  };
  model->step(tokens(0, 4), state);
  model->step(tokens(0, 3), reference);
  state.reorder(torch::tensor({3, 1, 2}));  // one row leaves; three of four still fill the caches
  ASSERT_EQ(state.layers.front().self_k.size(1), 4);
  const int64_t capacity = state.layers.front().self_k.size(0);
  for (int64_t step = 1; step <= capacity; ++step) {
    const auto stepped = model->step(tokens(step, 3), state);
    EXPECT_TENSOR_NEAR(stepped, model->step(tokens(step, 3), reference), 1e-5) << "step " << step;
  }
  for (const auto& layer : state.layers) {
    EXPECT_GT(layer.self_k.size(0), capacity);
    EXPECT_EQ(layer.self_k.size(1), 3) << "the grown caches hold only the rows still decoding";
    EXPECT_EQ(layer.self_v.size(1), 3);
  }
  EXPECT_TRUE(state.cache_slots.identity());
}

TEST(Transformer, CachesComeFromThePagePoolAndGoBackToIt) {
  if (!PagePool::available()) GTEST_SKIP() << "PagePool needs Linux's mmap and mremap";
  // The self-attention caches grow every few steps and lose finished rows: a pool whose regions
  // serve any size lets a second batch of the same shape decode in the memory the first used.
  auto model = eval_model(tiny_config());
  const auto source = random_ids(6, 7, 23, 11);
  auto& pool = PagePool::shared();
  const size_t lent_before = pool.lent_bytes();
  const auto decode = [&] {
    auto state = model->start_decoding(model->encode(source));
    for (int64_t step = 0; step < 14; ++step) {
      model->step(torch::full({state.rows()}, step == 0 ? kBosId : 4 + step, torch::kLong), state);
      if (step == 5) state.reorder(torch::tensor({0, 2, 4, 5}));  // two sentences finish
      if (step == 9) state.reorder(torch::tensor({1, 3}));
    }
    EXPECT_GT(pool.lent_bytes(), lent_before) << "the caches are the pool's";
  };
  decode();
  EXPECT_EQ(pool.lent_bytes(), lent_before) << "a finished state gives its caches back";
  const size_t held_after_first = pool.held_bytes();
  decode();
  EXPECT_EQ(pool.lent_bytes(), lent_before);
  EXPECT_LE(pool.held_bytes(), held_after_first) << "the second batch reused the first one's regions";
}

TEST_P(BothKernels, LabelSmoothingEqualsLibTorchCrossEntropy) {
  for (const double epsilon : {0.1, 0.0}) {
    torch::manual_seed(9);
    const auto logits = torch::randn({2, 5, 11}, torch::requires_grad());
    auto target = torch::randint(4, 11, {2, 5}, torch::kLong);
    target.index_put_({1, torch::indexing::Slice(3)}, kPadId);
    const auto ours = label_smoothed_cross_entropy(logits, target, epsilon, kPadId);
    namespace F = torch::nn::functional;
    const auto reference = F::cross_entropy(
        logits.view({-1, 11}), target.view({-1}),
        F::CrossEntropyFuncOptions().label_smoothing(epsilon).ignore_index(kPadId).reduction(torch::kSum));
    EXPECT_TENSOR_NEAR(ours.loss, reference, 1e-5);
    const auto nll = F::cross_entropy(logits.view({-1, 11}), target.view({-1}),
                                      F::CrossEntropyFuncOptions().ignore_index(kPadId).reduction(torch::kSum));
    EXPECT_TENSOR_NEAR(ours.nll, nll, 1e-5);
    // Gradients agree too, also for an upstream gradient other than 1.
    const auto ours_grad = torch::autograd::grad({ours.loss * 0.5}, {logits})[0];
    const auto reference_grad = torch::autograd::grad({reference * 0.5}, {logits})[0];
    EXPECT_TENSOR_NEAR(ours_grad, reference_grad, 1e-6);
    EXPECT_EQ(ours_grad[1][4].abs().sum().item<double>(), 0.0) << "a pad target gets no gradient";
    // And for the upstream gradient of 1 that a loss's backward() passes.
    const auto again = label_smoothed_cross_entropy(logits, target, epsilon, kPadId);
    EXPECT_TENSOR_NEAR(torch::autograd::grad({again.loss}, {logits})[0], reference_grad * 2.0, 1e-6);
  }
}

TEST_P(BothKernels, LossOfBfloat16LogitsIsComputedInFloat32) {
  torch::manual_seed(3);
  const auto logits = torch::randn({3, 4, 50});
  const auto target = torch::randint(4, 50, {3, 4}, torch::kLong);
  const auto full = label_smoothed_cross_entropy(logits, target, 0.1, kPadId);
  const auto half = label_smoothed_cross_entropy(logits.to(torch::kBFloat16), target, 0.1, kPadId);
  EXPECT_EQ(half.loss.scalar_type(), torch::kFloat32);
  EXPECT_NEAR(half.loss.item<double>(), full.loss.item<double>(), 0.05 * full.loss.item<double>());
}

TEST(Transformer, TiedEmbeddingIsOneTensor) {
  auto model = eval_model(tiny_config());
  EXPECT_TRUE(model->source_embedding->tokens->weight.is_same(model->target_embedding->tokens->weight));
  EXPECT_FALSE(model->output_projection);
  int64_t named = 0;
  for (const auto& item : model->named_parameters()) named += item.key().find("embedding") != std::string::npos;
  EXPECT_EQ(named, 1);  // registered once, so optimizers update it once
}

/// Encodes `source` [3, S] with both models and decodes 4 steps from `kept`'s best tokens: every
/// encoding and step must have the same bits. Returns `freed`'s decoding state.
DecoderState expect_the_same_bits(Transformer& kept, Transformer& freed, const torch::Tensor& source) {
  const auto kept_encoded = kept->encode(source);
  const auto freed_encoded = freed->encode(source);
  EXPECT_TRUE(torch::equal(freed_encoded.memory, kept_encoded.memory));
  auto kept_state = kept->start_decoding(kept_encoded);
  auto freed_state = freed->start_decoding(freed_encoded);
  auto tokens = torch::full({source.size(0)}, kBosId, torch::kLong);
  for (int step = 0; step < 4; ++step) {
    const auto expected = kept->step(tokens, kept_state);  // [3, V]
    const auto got = freed->step(tokens, freed_state);
    EXPECT_TRUE(torch::equal(got, expected)) << "step " << step;
    tokens = expected.argmax(1);
    tokens.index_put_({tokens < kNumSpecialIds}, kNumSpecialIds);  // real subwords, never eos
  }
  return freed_state;
}

// A tied model whose embeddings read the packed output matrix (and whose table is freed) encodes
// and decodes with the same bits as one that keeps the table.
TEST(Transformer, EmbeddingsFromThePackedOutputLayerKeepEveryBit) {
  torch::NoGradGuard no_grad;
  auto config = tiny_config();
  config.vocab_size = 150;  // two full blocks of 64 rows and a partial one
  auto kept = eval_model(config);
  auto freed = eval_model(config);
  kept->pack_for_inference(FloatWeights::kDrop);
  freed->pack_for_inference(FloatWeights::kDrop);
  if (!freed->embed_from_output_layer()) {
    GTEST_SKIP() << "no small-row kernels on this CPU or build (LIBXSMM, AVX2): the packed copy's layout is oneDNN's "
                    "own, so the table stays";
  }
  EXPECT_EQ(freed->output_matrix().numel(), 0);
  EXPECT_EQ(freed->source_embedding->tokens->weight.numel(), 0);
  EXPECT_FALSE(freed->embed_from_output_layer());  // once

  const auto source = random_ids(3, 7, config.vocab_size, 11);
  auto freed_state = expect_the_same_bits(kept, freed, source);
  // Teacher forcing (what attention pictures run) projects through the packed copy instead.
  const auto target_in = random_ids(3, 5, config.vocab_size, 12);
  EXPECT_TENSOR_NEAR(freed->forward(source, target_in), kept->forward(source, target_in), 1e-4);
  EXPECT_THROW(freed->restrict_output(freed_state, torch::zeros({3, 4}, torch::kLong)), c10::Error);
}

// In int8 the embeddings read the output matrix's int8 rows, and the table is freed: a model that
// keeps its table, set to the dequantized matrix, encodes and decodes to the same bits.
TEST(Transformer, AnInt8ModelEmbedsFromItsQuantizedOutputMatrix) {
  torch::NoGradGuard no_grad;
  auto config = tiny_config();
  config.vocab_size = 150;
  auto kept = eval_model(config);
  auto freed = eval_model(config);
  const auto rows = quantize_int8_rows(kept->output_matrix());
  kept->quantize_int8(FloatWeights::kDrop, /*shortlist_rows=*/false);
  freed->quantize_int8(FloatWeights::kDrop, /*shortlist_rows=*/false);
  ASSERT_TRUE(freed->embed_from_output_layer());
  EXPECT_EQ(freed->output_matrix().numel(), 0);
  EXPECT_EQ(freed->target_embedding->tokens->weight.numel(), 0);
  // The tied table, read only by kept's embeddings now that its output layer is quantized.
  kept->source_embedding->tokens->weight.copy_(rows.values.to(torch::kFloat32) * rows.scales.unsqueeze(1));

  expect_the_same_bits(kept, freed, random_ids(3, 7, config.vocab_size, 13));
}

TEST(Transformer, AnUntiedOrUnpackedModelKeepsItsTable) {
  auto config = tiny_config();
  auto unpacked = eval_model(config);
  EXPECT_FALSE(unpacked->embed_from_output_layer());
  EXPECT_EQ(unpacked->output_matrix().size(0), config.vocab_size);
  config.tie_embeddings = false;
  auto untied = eval_model(config);
  untied->pack_for_inference(FloatWeights::kDrop);
  EXPECT_FALSE(untied->embed_from_output_layer());
  EXPECT_EQ(untied->source_embedding->tokens->weight.size(0), config.vocab_size);
}

}  // namespace
}  // namespace tfm
