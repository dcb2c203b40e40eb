#include "data/batching.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

#include "data/split_mix.h"
#include "text/option_names.h"
#include "text/special_ids.h"

namespace tfm {
namespace {

/// Throws when pair i alone breaks the budget: a silent drop would lose data, a retry loop would hang.
void check_every_pair_fits(const Shard& data, int64_t max_tokens) {
  if (data.max_source_length() + 1 <= max_tokens && data.max_target_length() + 1 <= max_tokens) return;
  for (int64_t i = 0; i < data.size(); ++i) {
    const int64_t source = data.source_length(i) + 1;  // + eos
    const int64_t target = data.target_length(i) + 1;  // + bos / eos
    if (source > max_tokens || target > max_tokens) {
      throw std::invalid_argument("pair " + std::to_string(i) + " has " + std::to_string(source) + " source and " +
                                  std::to_string(target) + " target tokens (with eos/bos), more than " +
                                  option_name("max_tokens") + " " + std::to_string(max_tokens) + " (raise " +
                                  option_name("max_tokens") + ", or prepare the corpus with a lower " +
                                  option_name("max_len") + ")");
    }
  }
}

/// Pairs bucketed by (source length, target length): bucket s * (T + 1) + t, T the longest target.
/// Counting beats comparison sorting here by an order of magnitude (lengths are small integers).
struct LengthBuckets {
  int64_t targets = 0;          // T + 1
  std::vector<int64_t> counts;  // [(S + 1) * (T + 1)]

  explicit LengthBuckets(const Shard& data) : targets(data.max_target_length() + 1) {
    counts.assign(static_cast<size_t>((data.max_source_length() + 1) * targets), 0);
    for (int64_t i = 0; i < data.size(); ++i) ++counts[key(data, i)];
  }
  size_t key(const Shard& data, int64_t i) const {
    const int64_t source = data.source_length(i), target = data.target_length(i);
    if (source > data.max_source_length() || target > data.max_target_length()) {
      throw std::runtime_error(data.name() + ": corrupt dataset file (pair " + std::to_string(i + 1) +
                               " is longer than the header's longest; run `tfm prepare` again to rebuild it)");
    }
    return static_cast<size_t>(source * targets + target);
  }
};

/// Whether LengthBuckets stays small (32 MiB); sentences of thousands of subwords sort by comparison.
bool buckets_fit(const Shard& data) {
  return (data.max_source_length() + 1) * (data.max_target_length() + 1) <= (int64_t{1} << 22);
}

/// Pair indices sorted by (source length, target length); ties in an order that depends on `random`
/// (a shuffle, then a stable sort; `random` null: no shuffle).
std::vector<uint32_t> length_sorted_indices(const Shard& data, SplitMix64* random) {
  std::vector<uint32_t> order(static_cast<size_t>(data.size()));  // a shard holds fewer than 2^32 pairs
  std::iota(order.begin(), order.end(), uint32_t{0});
  if (random != nullptr) shuffle(order, *random);
  if (!buckets_fit(data)) {
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
      const int64_t source_a = data.source_length(a), source_b = data.source_length(b);
      return source_a != source_b ? source_a < source_b : data.target_length(a) < data.target_length(b);
    });
    return order;
  }
  LengthBuckets buckets(data);  // a stable counting sort
  int64_t start = 0;
  for (int64_t& count : buckets.counts) std::swap(count, start), start += count;  // counts -> first slots
  std::vector<uint32_t> sorted(order.size());
  for (const uint32_t i : order) sorted[static_cast<size_t>(buckets.counts[buckets.key(data, i)]++)] = i;
  return sorted;
}

/// The greedy cut of length-sorted pairs into batches (make_batches and batching_stats share it).
class BatchCutter {
 public:
  explicit BatchCutter(const BatchingOptions& options) : options_(options) {}
  /// Takes the next pair (lengths with eos/bos); true when it starts a new batch (never the first).
  bool add(int64_t source, int64_t target) {
    const int64_t longest_source = std::max(longest_source_, source);
    const int64_t longest_target = std::max(longest_target_, target);
    const int64_t sentences = sentences_ + 1;
    const bool fits = sentences * longest_source <= options_.max_tokens &&
                      sentences * longest_target <= options_.max_tokens &&
                      (options_.max_sentences == 0 || sentences <= options_.max_sentences);
    const bool starts = !fits && sentences_ > 0;
    if (starts) {
      padded_ += sentences_ * (longest_source_ + longest_target_);
      sentences_ = 1, longest_source_ = source, longest_target_ = target;
    } else {
      sentences_ = sentences, longest_source_ = longest_source, longest_target_ = longest_target;
    }
    return starts;
  }
  /// Padded tokens of the batches cut so far, the open one included.
  int64_t padded_tokens() const { return padded_ + sentences_ * (longest_source_ + longest_target_); }

 private:
  const BatchingOptions& options_;
  int64_t sentences_ = 0, longest_source_ = 0, longest_target_ = 0;  // the open batch
  int64_t padded_ = 0;                                               // the closed ones
};

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

size_t BatchPlan::size() const { return order.size(); }

std::vector<int64_t> BatchPlan::batch(size_t b) const {
  const size_t cut = order.at(b);
  return {rows.begin() + starts[cut], rows.begin() + starts[cut + 1]};
}

BatchPlan plan_batches(const Shard& data, const BatchingOptions& options, int64_t epoch, uint64_t stream) {
  validate(options);
  check_every_pair_fits(data, options.max_tokens);
  SplitMix64 random(SplitMix64(options.seed).next() ^ static_cast<uint64_t>(epoch) ^ (stream * 0xD1B54A32D192ED03ull));
  BatchPlan plan;
  plan.rows = length_sorted_indices(data, &random);
  BatchCutter cutter(options);
  for (size_t k = 0; k < plan.rows.size(); ++k) {
    const uint32_t i = plan.rows[k];
    if (cutter.add(data.source_length(i) + 1, data.target_length(i) + 1)) plan.starts.push_back(k);
  }
  plan.starts.push_back(plan.rows.size());
  if (plan.rows.empty()) plan.starts = {0};
  plan.order.resize(plan.starts.size() - 1);
  std::iota(plan.order.begin(), plan.order.end(), size_t{0});
  shuffle(plan.order, random);
  return plan;
}

std::vector<std::vector<int64_t>> make_batches(const Shard& data, const BatchingOptions& options, int64_t epoch,
                                               uint64_t stream) {
  const BatchPlan plan = plan_batches(data, options, epoch, stream);
  std::vector<std::vector<int64_t>> batches;
  batches.reserve(plan.size());
  for (size_t b = 0; b < plan.size(); ++b) batches.push_back(plan.batch(b));
  return batches;
}

double BatchingStats::padding_efficiency() const {
  return padded_tokens == 0 ? 1.0 : static_cast<double>(tokens) / static_cast<double>(padded_tokens);
}

BatchingStats batching_stats(const Shard& data, const BatchingOptions& options) {
  validate(options);
  check_every_pair_fits(data, options.max_tokens);
  BatchingStats stats;
  BatchCutter cutter(options);
  if (buckets_fit(data)) {
    const LengthBuckets buckets(data);
    for (size_t key = 0; key < buckets.counts.size(); ++key) {
      const int64_t source = static_cast<int64_t>(key) / buckets.targets + 1;
      const int64_t target = static_cast<int64_t>(key) % buckets.targets + 1;
      for (int64_t k = 0; k < buckets.counts[key]; ++k) stats.batches += cutter.add(source, target) ? 1 : 0;
      stats.tokens += buckets.counts[key] * (source + target);
    }
  } else {
    for (const uint32_t i : length_sorted_indices(data, nullptr)) {
      const int64_t source = data.source_length(i) + 1, target = data.target_length(i) + 1;
      stats.batches += cutter.add(source, target) ? 1 : 0;
      stats.tokens += source + target;
    }
  }
  if (data.size() > 0) ++stats.batches;  // the last, open batch
  stats.padded_tokens = cutter.padded_tokens();
  return stats;
}

Batch collate(const Shard& data, const std::vector<int64_t>& indices) {
  if (indices.empty()) throw std::invalid_argument("collate: empty batch");
  int64_t S = 0, T = 0;
  for (const int64_t i : indices) {
    if (i < 0 || i >= data.size()) {
      throw std::invalid_argument("collate: pair " + std::to_string(i) + " outside a dataset of " +
                                  std::to_string(data.size()));
    }
    S = std::max(S, data.source_length(i) + 1);
    T = std::max(T, data.target_length(i) + 1);
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
    const int64_t source_length = data.source_length(i), target_length = data.target_length(i);
    data.read_pair(i, source + b * S, target_out + b * T);
    source[b * S + source_length] = kEosId;
    target_in[b * T] = kBosId;
    std::copy_n(target_out + b * T, target_length, target_in + b * T + 1);
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

double padding_efficiency(const Shard& data, const std::vector<std::vector<int64_t>>& batches) {
  int64_t real = 0, padded = 0;
  for (const auto& batch : batches) {
    int64_t longest_source = 0, longest_target = 0;
    for (const int64_t i : batch) {
      real += data.source_length(i) + data.target_length(i) + 2;
      longest_source = std::max(longest_source, data.source_length(i) + 1);
      longest_target = std::max(longest_target, data.target_length(i) + 1);
    }
    padded += static_cast<int64_t>(batch.size()) * (longest_source + longest_target);
  }
  return padded == 0 ? 1.0 : static_cast<double>(real) / static_cast<double>(padded);
}

}  // namespace tfm
