#include "data/parallel_encode.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>

#include "runtime/threads.h"

namespace tfm {

void encode_pairs(const Tokenizer& tokenizer, const std::vector<TextPair>& pairs, int threads,
                  std::vector<EncodedPair>& out) {
  out.resize(pairs.size());
  // Workers take blocks of pairs from a shared counter, so a block of long sentences does not
  // leave the other workers idle; each writes only its own out[i], so the order is kept.
  constexpr size_t kBlock = 256;
  std::atomic<size_t> next_block{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto work = [&] {
    try {
      for (size_t begin = next_block.fetch_add(kBlock); begin < pairs.size(); begin = next_block.fetch_add(kBlock)) {
        const size_t end = std::min(begin + kBlock, pairs.size());
        for (size_t i = begin; i < end; ++i) {
          out[i].source = tokenizer.encode(pairs[i].source);
          out[i].target = tokenizer.encode(pairs[i].target);
        }
      }
    } catch (...) {
      const std::lock_guard<std::mutex> lock(failure_mutex);
      if (!failure) failure = std::current_exception();
      next_block = pairs.size();  // stop the others early
    }
  };
  const size_t blocks = (pairs.size() + kBlock - 1) / kBlock;
  const size_t workers = std::min<size_t>(threads > 0 ? threads : available_cores(), std::max<size_t>(blocks, 1));
  std::vector<std::thread> helpers;
  helpers.reserve(workers - 1);
  for (size_t i = 1; i < workers; ++i) helpers.emplace_back(work);
  work();
  for (auto& helper : helpers) helper.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace tfm
