#pragma once
// Tokenization on all cores. SentencePiece encodes ~10^5 sentences/s per core, so a WMT14-sized
// corpus (9M sentences) is a minute or two of work that splits perfectly across cores.
#include <cstdint>
#include <vector>

#include "data/parallel_text_reader.h"
#include "tokenizer/tokenizer.h"

namespace tfm {

/// The subword ids of one pair (no bos/eos).
struct EncodedPair {
  std::vector<int64_t> source;
  std::vector<int64_t> target;
};

/// Encodes every pair with `threads` std::thread workers (0 = all cores; the calling thread is one
/// of them). out[i] is pair i's ids: order is kept whatever the workers' timing. `out` is resized
/// to pairs.size(). The first exception a worker throws is rethrown.
void encode_pairs(const Tokenizer& tokenizer, const std::vector<TextPair>& pairs, int threads,
                  std::vector<EncodedPair>& out);

}  // namespace tfm
