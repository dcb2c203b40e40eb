#include "metrics/numpy_random.h"

#include <array>
#include <stdexcept>
#include <vector>

namespace tfm {
namespace {

// SeedSequence's hashing constants and pool size (NumPy's bit_generator, after O'Neill's seed_seq).
constexpr uint32_t kInitA = 0x43b0d7e5U;
constexpr uint32_t kMultA = 0x931e8875U;
constexpr uint32_t kInitB = 0x8b51f9ddU;
constexpr uint32_t kMultB = 0x58f38dedU;
constexpr uint32_t kMixMultL = 0xca01f9ddU;
constexpr uint32_t kMixMultR = 0x4973f715U;
constexpr int kShift = 16;
constexpr size_t kPoolSize = 4;

/// Hashes one word with a running constant that every call advances.
uint32_t hash_mix(uint32_t value, uint32_t& hash_constant) {
  value ^= hash_constant;
  hash_constant *= kMultA;
  value *= hash_constant;
  return value ^ (value >> kShift);
}

uint32_t mix(uint32_t x, uint32_t y) {
  const uint32_t result = kMixMultL * x - kMixMultR * y;
  return result ^ (result >> kShift);
}

/// SeedSequence(seed).generate_state(4, uint64): the seed's 32-bit words (least significant
/// first, one word for a seed below 2^32) mixed into a pool of 4, then hashed out.
std::array<uint64_t, 4> seed_sequence_state(uint64_t seed) {
  std::vector<uint32_t> entropy = {static_cast<uint32_t>(seed)};
  if (seed >> 32 != 0) entropy.push_back(static_cast<uint32_t>(seed >> 32));
  std::array<uint32_t, kPoolSize> pool{};
  uint32_t hash_constant = kInitA;
  for (size_t i = 0; i < kPoolSize; ++i) pool[i] = hash_mix(i < entropy.size() ? entropy[i] : 0, hash_constant);
  for (size_t source = 0; source < kPoolSize; ++source) {
    for (size_t target = 0; target < kPoolSize; ++target) {
      if (source != target) pool[target] = mix(pool[target], hash_mix(pool[source], hash_constant));
    }
  }
  std::array<uint64_t, 4> state{};
  uint32_t out_constant = kInitB;
  for (size_t word = 0; word < 2 * state.size(); ++word) {
    uint32_t value = pool[word % kPoolSize] ^ out_constant;
    out_constant *= kMultB;
    value *= out_constant;
    value ^= value >> kShift;
    state[word / 2] |= static_cast<uint64_t>(value) << (32 * (word % 2));  // little-endian pairs
  }
  return state;
}

Uint128 join(uint64_t high, uint64_t low) { return (static_cast<Uint128>(high) << 64) | low; }

const Uint128 kMultiplier = join(0x2360ed051fc65da4ULL, 0x4385df649fccf645ULL);

}  // namespace

NumpyRandom::NumpyRandom(uint64_t seed) {
  const auto words = seed_sequence_state(seed);
  increment_ = (join(words[2], words[3]) << 1) | 1;
  step();
  state_ += join(words[0], words[1]);
  step();
}

void NumpyRandom::step() { state_ = state_ * kMultiplier + increment_; }

uint64_t NumpyRandom::next64() {
  step();
  const auto value = static_cast<uint64_t>(state_ >> 64) ^ static_cast<uint64_t>(state_);
  const auto rotation = static_cast<unsigned>(state_ >> 122);
  return (value >> rotation) | (value << ((64 - rotation) & 63));
}

uint32_t NumpyRandom::next32() {
  if (has_spare_half_) {
    has_spare_half_ = false;
    return spare_half_;
  }
  const uint64_t draw = next64();
  spare_half_ = static_cast<uint32_t>(draw >> 32);
  has_spare_half_ = true;
  return static_cast<uint32_t>(draw);
}

uint32_t NumpyRandom::below(uint64_t n) {
  if (n == 0 || n > (uint64_t{1} << 32)) throw std::invalid_argument("NumpyRandom::below: n must be in 1..2^32");
  if (n == 1) return 0;  // NumPy draws nothing for a range of one value
  if (n == (uint64_t{1} << 32)) return next32();
  // Lemire's method: the high half of a 32x32-bit product, redrawn while the low half falls in
  // the short first interval.
  uint64_t product = static_cast<uint64_t>(next32()) * n;
  auto low = static_cast<uint32_t>(product);
  if (low < n) {
    const auto threshold = static_cast<uint32_t>((uint64_t{1} << 32) - n) % static_cast<uint32_t>(n);
    while (low < threshold) {
      product = static_cast<uint64_t>(next32()) * n;
      low = static_cast<uint32_t>(product);
    }
  }
  return static_cast<uint32_t>(product >> 32);
}

}  // namespace tfm
