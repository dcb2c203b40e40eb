// SkipParameterInit: tfm's modules draw no random numbers under it, and it ends with its scope.
#include "model/parameter_init.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "model/attention.h"
#include "model/embeddings.h"
#include "model/feed_forward.h"
#include "model/linear.h"
#include "model/model_config.h"

namespace tfm {
namespace {

/// The first number the default generator gives after `build` ran, from seed 5.
template <typename Build>
float first_draw_after(Build build) {
  torch::manual_seed(5);
  build();
  return torch::rand({1}).item<float>();
}

void build_layers() {
  Linear linear(LinearOptions(8, 4));
  FeedForward feed_forward(FeedForwardOptions(8, 16));
  MultiHeadAttention self_attention(MultiHeadAttentionOptions(8, 2));
  MultiHeadAttention cross_attention(MultiHeadAttentionOptions(8, 2).self_attention(false));
  ModelConfig learned_positions;
  learned_positions.d_model = 8;
  learned_positions.max_positions = 16;
  learned_positions.positions = PositionEncoding::kLearned;
  TokenAndPosition embedding(learned_positions, make_token_embedding(32, 8));  // LibTorch's Embedding inside
}

TEST(SkipParameterInit, LayersBuiltUnderItDrawNoRandomNumbers) {
  const float untouched = first_draw_after([] {});
  EXPECT_NE(first_draw_after(build_layers), untouched);  // initialising draws
  EXPECT_EQ(first_draw_after([] {
              const SkipParameterInit skip;
              build_layers();
            }),
            untouched);
}

TEST(SkipParameterInit, EndsWithItsScopeAndNests) {
  EXPECT_FALSE(parameter_init_skipped());
  {
    const SkipParameterInit outer;
    {
      const SkipParameterInit inner;
      EXPECT_TRUE(parameter_init_skipped());
    }
    EXPECT_TRUE(parameter_init_skipped());
  }
  EXPECT_FALSE(parameter_init_skipped());
}

}  // namespace
}  // namespace tfm
