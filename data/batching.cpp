#include "data/batching.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

#include "text/option_names.h"
#include "text/special_ids.h"

namespace tfm {
namespace {

/// SplitMix64 (Steele et al., 2014): a tiny generator whose output is fixed by its definition, unlike
/// std::shuffle's use of a standard engine, so batch orders are the same with every standard library.
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

/// Throws when pair i alone breaks the budget: a silent drop would lose data, a retry loop would hang.
void check_every_pair_fits(const ParallelDataset& data, int64_t max_tokens) {
  for (int64_t i = 0; i < data.size(); ++i) {
    const int64_t source = data.source.length(i) + 1;  // + eos
    const int64_t target = data.target.length(i) + 1;  // + bos / eos
    if (source > max_tokens || target > max_tokens) {
      throw std::invalid_argument("pair " + std::to_string(i) + " has " + std::to_string(source) + " source and " +
                                  std::to_string(target) + " target tokens (with eos/bos), more than " +
                                  option_name("max_tokens") + " " + std::to_string(max_tokens) + " (raise " +
                                  option_name("max_tokens") +
                                  ", or prepare the corpus with a "
                                  "lower " +
                                  option_name("max_len") + ")");
    }
  }
}

/// Pair indices sorted by (source length, target length); ties in an order that depends on `random`.
std::vector<int64_t> length_sorted_indices(const ParallelDataset& data, SplitMix64& random) {
  std::vector<int64_t> order(static_cast<size_t>(data.size()));
  std::iota(order.begin(), order.end(), int64_t{0});
  shuffle(order, random);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    const int64_t source_a = data.source.length(a), source_b = data.source.length(b);
    return source_a != source_b ? source_a < source_b : data.target.length(a) < data.target.length(b);
  });
  return order;
}

}  // namespace

void validate(const BatchingOptions& options) {
  if (options.max_tokens < 2) {
    throw std::invalid_argument(option_name("max_tokens") + " " + std::to_string(options.max_tokens) +
                                ": must be at least 2");
  }
  if (options.max_sentences < 0) {
    throw std::invalid_argument(option_name("max_sentences") + " " + std::to_string(options.max_sentences) +
                                ": must be >= 0 (0 = no limit)");
  }
}

std::vector<std::vector<int64_t>> make_batches(const ParallelDataset& data, const BatchingOptions& options,
                                               int64_t epoch) {
  validate(options);
  check_every_pair_fits(data, options.max_tokens);
  SplitMix64 random(SplitMix64(options.seed).next() ^ static_cast<uint64_t>(epoch));
  std::vector<std::vector<int64_t>> batches;
  std::vector<int64_t> batch;
  int64_t longest_source = 0, longest_target = 0;  // + eos/bos, in `batch`
  for (const int64_t i : length_sorted_indices(data, random)) {
    const int64_t source = std::max(longest_source, data.source.length(i) + 1);
    const int64_t target = std::max(longest_target, data.target.length(i) + 1);
    const int64_t sentences = static_cast<int64_t>(batch.size()) + 1;
    const bool fits = sentences * source <= options.max_tokens && sentences * target <= options.max_tokens &&
                      (options.max_sentences == 0 || sentences <= options.max_sentences);
    if (!fits) {
      batches.push_back(std::move(batch));
      batch.clear();
      longest_source = data.source.length(i) + 1;
      longest_target = data.target.length(i) + 1;
    } else {
      longest_source = source;
      longest_target = target;
    }
    batch.push_back(i);
  }
  if (!batch.empty()) batches.push_back(std::move(batch));
  shuffle(batches, random);
  return batches;
}

Batch collate(const ParallelDataset& data, const std::vector<int64_t>& indices) {
  if (indices.empty()) throw std::invalid_argument("collate: empty batch");
  int64_t S = 0, T = 0;
  for (const int64_t i : indices) {
    if (i < 0 || i >= data.size()) {
      throw std::invalid_argument("collate: pair " + std::to_string(i) + " outside a dataset of " +
                                  std::to_string(data.size()));
    }
    S = std::max(S, data.source.length(i) + 1);
    T = std::max(T, data.target.length(i) + 1);
  }
  const int64_t B = static_cast<int64_t>(indices.size());
  Batch batch;
  batch.source = torch::full({B, S}, kPadId, torch::kLong);      // [B, S]
  batch.target_in = torch::full({B, T}, kPadId, torch::kLong);   // [B, T]
  batch.target_out = torch::full({B, T}, kPadId, torch::kLong);  // [B, T]
  int64_t* source = batch.source.data_ptr<int64_t>();
  int64_t* target_in = batch.target_in.data_ptr<int64_t>();
  int64_t* target_out = batch.target_out.data_ptr<int64_t>();
  for (int64_t b = 0; b < B; ++b) {
    const int64_t i = indices[b];
    const int64_t source_length = data.source.length(i), target_length = data.target.length(i);
    std::copy_n(data.source.data(i), source_length, source + b * S);
    source[b * S + source_length] = kEosId;
    target_in[b * T] = kBosId;
    std::copy_n(data.target.data(i), target_length, target_in + b * T + 1);
    std::copy_n(data.target.data(i), target_length, target_out + b * T);
    target_out[b * T + target_length] = kEosId;
    batch.source_tokens += source_length + 1;
    batch.target_tokens += target_length + 1;
  }
  batch.indices = indices;
  return batch;
}

std::string describe(const Batch& batch) {
  const int64_t sentences = batch.source.size(0), source = batch.source.size(1), target = batch.target_in.size(1);
  return "a batch of " + std::to_string(sentences) + " sentences, " + std::to_string(source) + " source x " +
         std::to_string(target) + " target positions (" + std::to_string(sentences * source) + " and " +
         std::to_string(sentences * target) + " padded tokens)";
}

double padding_efficiency(const ParallelDataset& data, const std::vector<std::vector<int64_t>>& batches) {
  int64_t real = 0, padded = 0;
  for (const auto& batch : batches) {
    int64_t longest_source = 0, longest_target = 0;
    for (const int64_t i : batch) {
      real += data.source.length(i) + data.target.length(i) + 2;
      longest_source = std::max(longest_source, data.source.length(i) + 1);
      longest_target = std::max(longest_target, data.target.length(i) + 1);
    }
    padded += static_cast<int64_t>(batch.size()) * (longest_source + longest_target);
  }
  return padded == 0 ? 1.0 : static_cast<double>(real) / static_cast<double>(padded);
}

}  // namespace tfm
