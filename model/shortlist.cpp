#include "model/shortlist.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

#include <torch/torch.h>

#include "text/option_names.h"
#include "text/special_ids.h"

namespace tfm {
namespace {

bool in_vocabulary(int64_t id, int64_t vocab_size) { return id >= 0 && id < vocab_size; }

template <typename T>
torch::Tensor to_tensor(const std::vector<T>& values, torch::ScalarType type) {
  return torch::from_blob(const_cast<T*>(values.data()), {static_cast<int64_t>(values.size())}, type).clone();
}

template <typename T>
std::vector<T> from_tensor(const torch::Tensor& tensor, torch::ScalarType type, const std::string& what) {
  if (tensor.scalar_type() != type || tensor.dim() != 1) throw std::runtime_error(what + " has the wrong type");
  const auto contiguous = tensor.contiguous();
  const T* data = contiguous.data_ptr<T>();
  return std::vector<T>(data, data + contiguous.numel());
}

}  // namespace

Shortlist::Shortlist(int64_t vocab_size, std::vector<int64_t> frequent, std::vector<int64_t> offsets,
                     std::vector<int32_t> targets)
    : vocab_size_(vocab_size),
      frequent_(std::move(frequent)),
      offsets_(std::move(offsets)),
      targets_(std::move(targets)) {
  if (vocab_size_ < 1) throw std::invalid_argument("a shortlist needs a vocabulary");
  if (static_cast<int64_t>(offsets_.size()) != vocab_size_ + 1 || offsets_.front() != 0 ||
      offsets_.back() != static_cast<int64_t>(targets_.size()) || !std::is_sorted(offsets_.begin(), offsets_.end())) {
    throw std::invalid_argument("shortlist offsets do not index its targets");
  }
  const auto outside = [&](int64_t id) { return !in_vocabulary(id, vocab_size_); };
  if (std::any_of(frequent_.begin(), frequent_.end(), outside) ||
      std::any_of(targets_.begin(), targets_.end(), outside)) {
    throw std::invalid_argument("shortlist ids outside the vocabulary of " + std::to_string(vocab_size_));
  }
  by_listing_ = rank_by_listing();
}

torch::Tensor Shortlist::shared_targets(int64_t count) const {
  TORCH_CHECK(count >= 0, "shared_targets: a count of ", count);
  const auto first = by_listing_.begin();
  std::vector<int64_t> kept(first, first + std::min<int64_t>(count, static_cast<int64_t>(by_listing_.size())));
  std::sort(kept.begin(), kept.end());
  return to_tensor(kept, torch::kLong);
}

std::vector<int64_t> Shortlist::rank_by_listing() const {
  // How many source tokens list each target; the special and frequent ids, in every list, first.
  std::vector<int64_t> listed_by(static_cast<size_t>(vocab_size_), 0);
  for (const int32_t target : targets_) ++listed_by[target];
  const int64_t always = std::numeric_limits<int64_t>::max();
  for (int64_t id = 0; id < std::min(kNumSpecialIds, vocab_size_); ++id) listed_by[id] = always;
  for (const int64_t id : frequent_) listed_by[id] = always;
  std::vector<int64_t> order(static_cast<size_t>(vocab_size_));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return listed_by[x] > listed_by[y]; });
  return order;
}

torch::Tensor Shortlist::candidates(const torch::Tensor& source) const {
  const auto ids = source.to(torch::kCPU, torch::kLong).contiguous();
  const int64_t sentences = ids.size(0), length = ids.size(1);
  // A mark per token and sentence (the sentence's number + 1), so that no array is cleared between
  // sentences.
  std::vector<int64_t> marked(static_cast<size_t>(vocab_size_), 0);
  std::vector<std::vector<int64_t>> kept(static_cast<size_t>(sentences));
  const int64_t* data = ids.data_ptr<int64_t>();
  for (int64_t b = 0; b < sentences; ++b) {
    auto& mine = kept[b];
    const auto keep = [&](int64_t id) {
      if (marked[id] == b + 1) return;
      marked[id] = b + 1;
      mine.push_back(id);
    };
    for (int64_t id = 0; id < std::min(kNumSpecialIds, vocab_size_); ++id) keep(id);
    for (const int64_t id : frequent_) keep(id);
    for (int64_t i = 0; i < length; ++i) {
      const int64_t id = data[b * length + i];
      // Padding is the batch's, not the sentence's: a list stored for it must not join a sentence's.
      if (id == kPadId || !in_vocabulary(id, vocab_size_)) continue;
      for (int64_t e = offsets_[id]; e < offsets_[id + 1]; ++e) keep(targets_[e]);
    }
    std::sort(mine.begin(), mine.end());
  }
  int64_t width = 0;
  for (const auto& mine : kept) width = std::max(width, static_cast<int64_t>(mine.size()));
  auto out = torch::full({sentences, width}, -1, torch::kLong);
  auto* rows = out.data_ptr<int64_t>();
  for (int64_t b = 0; b < sentences; ++b) std::copy(kept[b].begin(), kept[b].end(), rows + b * width);
  return out;  // [B, C]
}

void Shortlist::check_vocabulary(int64_t vocab_size) const {
  if (vocab_size_ != vocab_size) {
    throw std::invalid_argument("the shortlist covers a vocabulary of " + std::to_string(vocab_size_) +
                                ", the model's has " + std::to_string(vocab_size));
  }
}

std::vector<int64_t> Shortlist::candidates_of(int64_t source_id) const {
  if (!in_vocabulary(source_id, vocab_size_)) return {};
  return std::vector<int64_t>(targets_.begin() + offsets_[source_id], targets_.begin() + offsets_[source_id + 1]);
}

void Shortlist::set_rest_correction(double nats) {
  if (!std::isfinite(nats)) throw std::invalid_argument("a shortlist's correction must be finite");
  rest_correction_ = nats;
}

void Shortlist::write(torch::serialize::OutputArchive& archive) const {
  torch::serialize::OutputArchive shortlist;
  shortlist.write("vocab_size", c10::IValue(vocab_size_));
  shortlist.write("frequent", to_tensor(frequent_, torch::kLong));
  shortlist.write("offsets", to_tensor(offsets_, torch::kLong));
  shortlist.write("targets", to_tensor(targets_, torch::kInt));
  shortlist.write("rest_correction", c10::IValue(rest_correction_));
  archive.write("shortlist", shortlist);
}

Shortlist Shortlist::read(torch::serialize::InputArchive& archive, int64_t vocab_size, const std::string& origin) {
  const std::string what = origin + ": the shortlist";
  c10::IValue stored_vocab;
  torch::Tensor frequent, offsets, targets;
  if (!archive.try_read("vocab_size", stored_vocab) || !stored_vocab.isInt() ||
      !archive.try_read("frequent", frequent) || !archive.try_read("offsets", offsets) ||
      !archive.try_read("targets", targets)) {
    throw std::runtime_error(what + " is incomplete");
  }
  if (stored_vocab.toInt() != vocab_size) {
    throw std::runtime_error(what + " covers a vocabulary of " + std::to_string(stored_vocab.toInt()) +
                             ", the model's has " + std::to_string(vocab_size));
  }
  // Absent from files written before shortlists were calibrated: no correction.
  c10::IValue correction(0.0);
  if (archive.try_read("rest_correction", correction) && !correction.isDouble()) {
    throw std::runtime_error(what + "'s correction has the wrong type");
  }
  try {
    Shortlist shortlist(vocab_size, from_tensor<int64_t>(frequent, torch::kLong, what + "'s frequent ids"),
                        from_tensor<int64_t>(offsets, torch::kLong, what + "'s offsets"),
                        from_tensor<int32_t>(targets, torch::kInt, what + "'s targets"));
    shortlist.set_rest_correction(correction.toDouble());
    return shortlist;
  } catch (const std::invalid_argument& error) {
    throw std::runtime_error(what + " is damaged (" + error.what() + ")");
  }
}

void validate(const ShortlistOptions& options) {
  if (options.per_source < 1) {
    throw std::invalid_argument(option_name("shortlist_per_source") + " " + std::to_string(options.per_source) +
                                ": must be at least 1");
  }
  if (options.frequent < 0) {
    throw std::invalid_argument(option_name("shortlist_frequent") + " " + std::to_string(options.frequent) +
                                ": must be at least 0");
  }
  // IBM Model 1's ranking settles within a handful of iterations (5 by default); a count far past
  // that is a typo, and each one passes over the whole corpus without a word in the log.
  constexpr int64_t kMostIterations = 100;
  if (options.iterations < 0 || options.iterations > kMostIterations) {
    throw std::invalid_argument(option_name("shortlist_iterations") + " " + std::to_string(options.iterations) +
                                ": must be within 0 and " + std::to_string(kMostIterations));
  }
}

ShortlistBuilder::ShortlistBuilder(int64_t vocab_size)
    : vocab_size_(vocab_size),
      source_count_(static_cast<size_t>(vocab_size), 0),
      target_count_(static_cast<size_t>(vocab_size), 0),
      last_source_pair_(static_cast<size_t>(vocab_size), -1),
      last_target_pair_(static_cast<size_t>(vocab_size), -1) {
  if (vocab_size < 1) throw std::invalid_argument("a shortlist needs a vocabulary");
}

void ShortlistBuilder::add(const std::vector<int64_t>& source, const std::vector<int64_t>& target) {
  for (const auto* side : {&source, &target}) {
    for (const int64_t id : *side) {
      if (!in_vocabulary(id, vocab_size_)) {
        throw std::invalid_argument("token id " + std::to_string(id) + " outside the vocabulary of " +
                                    std::to_string(vocab_size_));
      }
    }
  }
  const int64_t pair = pairs_++;
  source_ids_.insert(source_ids_.end(), source.begin(), source.end());
  target_ids_.insert(target_ids_.end(), target.begin(), target.end());
  source_starts_.push_back(static_cast<int64_t>(source_ids_.size()));
  target_starts_.push_back(static_cast<int64_t>(target_ids_.size()));
  std::vector<int64_t> targets;  // distinct, in order of appearance
  for (const int64_t t : target) {
    if (last_target_pair_[t] == pair) continue;
    last_target_pair_[t] = pair;
    ++target_count_[t];
    targets.push_back(t);
  }
  for (const int64_t s : source) {
    if (last_source_pair_[s] == pair) continue;
    last_source_pair_[s] = pair;
    ++source_count_[s];
    for (const int64_t t : targets) ++together_[static_cast<uint64_t>(s) * static_cast<uint64_t>(vocab_size_) + t];
  }
}

Shortlist ShortlistBuilder::build(const ShortlistOptions& options) const {
  validate(options);
  // The most frequent targets (ties: lower id), specials aside: every sentence gets both.
  std::vector<int64_t> by_frequency;
  for (int64_t t = kNumSpecialIds; t < vocab_size_; ++t) {
    if (target_count_[t] > 0) by_frequency.push_back(t);
  }
  std::stable_sort(by_frequency.begin(), by_frequency.end(),
                   [&](int64_t a, int64_t b) { return target_count_[a] > target_count_[b]; });
  by_frequency.resize(std::min<size_t>(by_frequency.size(), static_cast<size_t>(options.frequent)));
  std::vector<uint8_t> is_frequent(static_cast<size_t>(vocab_size_), 0);
  for (const int64_t t : by_frequency) is_frequent[t] = 1;
  std::sort(by_frequency.begin(), by_frequency.end());

  const CooccurrenceRows rows = cooccurrence_rows();
  const std::vector<double> score = options.iterations > 0  // [E]
                                        ? model1_probabilities(rows, options.iterations)
                                        : std::vector<double>(rows.together.begin(), rows.together.end());
  std::vector<int64_t> offsets{0};
  std::vector<int32_t> targets;
  std::vector<int64_t> ranked;  // entries of one row
  for (int64_t s = 0; s < vocab_size_; ++s) {
    ranked.clear();
    for (int64_t e = rows.starts[s]; e < rows.starts[s + 1]; ++e) {
      const int64_t t = rows.targets[e];
      if (is_frequent[t] == 0 && t >= kNumSpecialIds) ranked.push_back(e);
    }
    // Higher p(t | s) first; ties: more co-occurrences, then the lower id.
    const auto better = [&](int64_t a, int64_t b) {
      if (score[a] != score[b]) return score[a] > score[b];
      if (rows.together[a] != rows.together[b]) return rows.together[a] > rows.together[b];
      return rows.targets[a] < rows.targets[b];
    };
    const size_t keep = std::min(ranked.size(), static_cast<size_t>(options.per_source));
    std::partial_sort(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(keep), ranked.end(), better);
    std::vector<int32_t> kept;
    for (size_t i = 0; i < keep; ++i) kept.push_back(rows.targets[ranked[i]]);
    std::sort(kept.begin(), kept.end());
    targets.insert(targets.end(), kept.begin(), kept.end());
    offsets.push_back(static_cast<int64_t>(targets.size()));
  }
  return Shortlist(vocab_size_, std::move(by_frequency), std::move(offsets), std::move(targets));
}

ShortlistBuilder::CooccurrenceRows ShortlistBuilder::cooccurrence_rows() const {
  CooccurrenceRows rows;
  rows.starts.assign(static_cast<size_t>(vocab_size_ + 1), 0);
  const auto V = static_cast<uint64_t>(vocab_size_);
  for (const auto& entry : together_) ++rows.starts[entry.first / V + 1];
  for (int64_t s = 0; s < vocab_size_; ++s) rows.starts[s + 1] += rows.starts[s];
  std::vector<std::pair<int32_t, uint32_t>> entries(together_.size());  // (target, together), row by row
  std::vector<int64_t> next(rows.starts.begin(), rows.starts.end() - 1);
  for (const auto& [key, count] : together_) {
    entries[next[key / V]++] = {static_cast<int32_t>(key % V), count};
  }
  rows.targets.reserve(entries.size());
  rows.together.reserve(entries.size());
  for (int64_t s = 0; s < vocab_size_; ++s) {
    std::sort(entries.begin() + rows.starts[s], entries.begin() + rows.starts[s + 1]);
  }
  for (const auto& [t, count] : entries) {
    rows.targets.push_back(t);
    rows.together.push_back(count);
  }
  return rows;
}

int64_t ShortlistBuilder::CooccurrenceRows::find(int64_t source, int64_t target) const {
  const auto begin = targets.begin() + starts[source], end = targets.begin() + starts[source + 1];
  return std::lower_bound(begin, end, static_cast<int32_t>(target)) - targets.begin();
}

std::vector<double> ShortlistBuilder::model1_probabilities(const CooccurrenceRows& rows, int64_t iterations) const {
  // p(t | s) over the co-occurring pairs (every other is 0 from the first iteration on), and
  // p(t | null). Uniform to start: the first E-step then shares each target among its sentence's
  // source tokens equally.
  std::vector<double> p(rows.targets.size(), 1.0), p_null(static_cast<size_t>(vocab_size_), 1.0);
  std::vector<double> counts(rows.targets.size()), null_counts(p_null.size());
  std::vector<int64_t> at;  // [S] the entry (s_i, t) of each source position, for one target token
  for (int64_t iteration = 0; iteration < iterations; ++iteration) {
    std::fill(counts.begin(), counts.end(), 0.0);
    std::fill(null_counts.begin(), null_counts.end(), 0.0);
    // E-step: each target token's alignment posterior over its sentence's source tokens and null.
    for (int64_t pair = 0; pair < pairs_; ++pair) {
      const int32_t* source = source_ids_.data() + source_starts_[pair];
      const int64_t length = source_starts_[pair + 1] - source_starts_[pair];
      at.resize(static_cast<size_t>(length));
      for (int64_t j = target_starts_[pair]; j < target_starts_[pair + 1]; ++j) {
        const int64_t t = target_ids_[j];
        double total = p_null[t];
        for (int64_t i = 0; i < length; ++i) {
          at[i] = rows.find(source[i], t);
          total += p[at[i]];
        }
        for (int64_t i = 0; i < length; ++i) counts[at[i]] += p[at[i]] / total;
        null_counts[t] += p_null[t] / total;
      }
    }
    // M-step: p(t | s) = expected count(s, t) / expected count(s).
    for (int64_t s = 0; s < vocab_size_; ++s) {
      double row_total = 0;
      for (int64_t e = rows.starts[s]; e < rows.starts[s + 1]; ++e) row_total += counts[e];
      for (int64_t e = rows.starts[s]; e < rows.starts[s + 1]; ++e) p[e] = row_total > 0 ? counts[e] / row_total : 0.0;
    }
    double null_total = 0;
    for (const double count : null_counts) null_total += count;
    for (size_t t = 0; t < p_null.size(); ++t) p_null[t] = null_total > 0 ? null_counts[t] / null_total : 0.0;
  }
  return p;
}

}  // namespace tfm
