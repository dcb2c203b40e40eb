#pragma once
#include <cstdint>

namespace tfm {

/// Special token ids, fixed for every tokenizer tfm trains or loads, so the model,
/// the batcher and beam search agree without asking the tokenizer.
constexpr int64_t kPadId = 0;
constexpr int64_t kUnkId = 1;
constexpr int64_t kBosId = 2;
constexpr int64_t kEosId = 3;
constexpr int64_t kNumSpecialIds = 4;

}  // namespace tfm
