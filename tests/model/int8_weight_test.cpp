#include "model/int8_weight.h"

#include <optional>

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

namespace tfm {
namespace {

/// LibTorch's own dynamic int8 product over the same packed weight, built independently of
/// Int8Weight: per-row int8 weight, input quantized to [0, 127] per call.
torch::Tensor libtorch_linear_dynamic(const torch::Tensor& weight, const torch::Tensor& bias, const torch::Tensor& x) {
  const auto scales = (weight.abs().amax(1) / 127.0).clamp_min(1e-12).to(torch::kDouble);
  const auto qweight =
      torch::quantize_per_channel(weight, scales, torch::zeros({weight.size(0)}, torch::kLong), 0, torch::kQInt8);
  auto& dispatcher = c10::Dispatcher::singleton();
  torch::jit::Stack stack{qweight, std::optional<torch::Tensor>(bias)};
  dispatcher.findSchemaOrThrow("quantized::linear_prepack", "").callBoxed(&stack);
  torch::jit::Stack product{x.contiguous(), stack[0], /*reduce_range=*/true};
  dispatcher.findSchemaOrThrow("quantized::linear_dynamic", "").callBoxed(&product);
  return product[0].toTensor();
}

// The row blocks (an int32 accumulator of at most 2^21 elements: 262 rows of 8000 outputs) must
// give the bits of LibTorch's whole-output product, for one row, a few, and several blocks with
// a partial last one; and at 1 and 2 threads (FBGEMM splits each block among them, and the
// input's range is found in pieces).
TEST(Int8Weight, GivesTheBitsOfLibTorchsDynamicProductInRowBlocks) {
  torch::manual_seed(11);
  for (const int64_t out : {8000, 96}) {
    const auto weight = torch::randn({out, 64});
    const auto bias = torch::randn({out});
    const Int8Weight int8(weight, bias);
    for (const int64_t rows : {1, 7, 600, 2100}) {
      auto x = torch::randn({rows, 64}) * 3.0 + 0.5;
      // 2100 rows: the input's range is found a piece per thread; the extremes in the last piece.
      if (rows == 2100) x[rows - 1][63] = 40.0, x[rows - 2][5] = -30.0;
      const auto expected = libtorch_linear_dynamic(weight, bias, x);
      for (const int threads : {1, 2}) {
        at::set_num_threads(threads);
        const auto got = int8.linear(x);
        ASSERT_EQ(got.sizes(), expected.sizes());
        EXPECT_TRUE(torch::equal(got, expected)) << out << " outputs, " << rows << " rows, " << threads << " threads";
      }
    }
  }
  // Leading dimensions are kept.
  const Int8Weight small(torch::randn({5, 8}), torch::randn({5}));
  EXPECT_EQ(small.linear(torch::randn({2, 3, 8})).sizes(), (std::vector<int64_t>{2, 3, 5}));
}

}  // namespace
}  // namespace tfm
