#include "model/decoder_state.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <utility>
#include <vector>

#include "model/transformer.h"
#include "runtime/page_pool.h"
#include "tests/model/model_test_support.h"
#include "tests/tensor_assert.h"
#include "text/special_ids.h"

// A decoding state through beam search's reorders, repeats and drops, and sentences leaving: it
// must decode as a state built afresh from the same sentences and tokens, and move as little
// memory as it can.

namespace tfm {
namespace {

TEST(DecoderState, ReorderedStateEqualsReorderedBatch) {
  auto model = testing::eval_model(testing::tiny_model_config());
  const auto source = testing::random_ids(3, 6, 23, 8);
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

TEST(DecoderState, SentencesLeavingMoveNoMemoryRowUntilHalfAreGone) {
  // Finished sentences leave the batch: the others' encoder outputs stay where they are (a table
  // says which stored row each reads) until no more than half are read, and then are gathered.
  // Either way the rows decode as a batch of only the remaining sentences does.
  auto model = testing::eval_model(testing::tiny_model_config());
  const auto source = testing::random_ids(4, 6, 23, 9);
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
  const auto source = testing::random_ids(3, 6, 23, 8);
  auto shared = model->start_decoding(model->encode(source));
  shared.repeat_rows(beam);
  auto copied = model->start_decoding(model->encode(source));
  copied.reorder(torch::arange(3, torch::kLong).repeat_interleave(beam));
  return {std::move(shared), std::move(copied)};
}

TEST(DecoderState, SharedMemoryRowsEqualRepeatedMemoryRows) {
  // Beam search's K rows per sentence read one copy of the encoder output (repeat_rows), which
  // must score exactly as K separate copies (reorder with repeats) through reorders and drops.
  auto model = testing::eval_model(testing::tiny_model_config());
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

TEST(DecoderState, ReordersOfFourBeamsEqualOneRowPerMemory) {
  // Beam moves within a sentence (a shift, a swap, a cycle) and a sentence leaving: the rows that
  // share their sentence's encoder output decode as the rows that each have a copy.
  auto model = testing::eval_model(testing::tiny_model_config());
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

class DecoderStateKernels : public testing::BothKernelsTest {};
INSTANTIATE_BOTH_KERNELS(DecoderStateKernels);

TEST_P(DecoderStateKernels, ReorderedCachesDecodeAsAFreshStateOfTheSameHistories) {
  // On the CPU reorders move no cached keys (an ancestor table, model/cache_slots.h); a reorder to
  // more rows than the caches hold gathers them into new ones; the plain kernels read the table
  // through gather_slots. Each must decode as a state built afresh from the same sentences and
  // tokens.
  auto model = testing::eval_model(testing::tiny_model_config());
  const auto source = testing::random_ids(3, 6, 23, 8);
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

TEST(DecoderState, FullCachesGrowWithOnlyTheRowsStillDecoding) {
  // Rows of finished sentences stay in the caches while most rows still decode (a reorder then
  // rewrites only the table); when the caches are full, the next step's larger buffers take only
  // the rows still decoding, and every row decodes as before.
  auto model = testing::eval_model(testing::tiny_model_config());
  const auto source = testing::random_ids(4, 5, 23, 8);
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

TEST(DecoderState, CachesComeFromThePagePoolAndGoBackToIt) {
  if (!PagePool::available()) GTEST_SKIP() << "PagePool needs Linux's mmap and mremap";
  // The self-attention caches grow every few steps and lose finished rows: a pool whose regions
  // serve any size lets a second batch of the same shape decode in the memory the first used.
  auto model = testing::eval_model(testing::tiny_model_config());
  const auto source = testing::random_ids(6, 7, 23, 11);
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

}  // namespace
}  // namespace tfm
