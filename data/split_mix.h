#pragma once
// A random stream fixed by its definition, for everything data/ draws (batch orders, shard orders,
// the tokenizer's sample): unlike std::shuffle over a standard engine, the same seed gives the
// same order with every standard library.
#include <cstdint>
#include <utility>
#include <vector>

namespace tfm {

/// SplitMix64 (Steele et al., 2014).
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

 private:
  uint64_t state_;
};

/// Fisher-Yates shuffle (the modulo bias is below 2^-32 for any realistic size).
template <class T>
void shuffle(std::vector<T>& items, SplitMix64& random) {
  for (size_t i = items.size(); i > 1; --i) std::swap(items[i - 1], items[random.next() % i]);
}

}  // namespace tfm
