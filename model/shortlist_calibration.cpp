#include "model/shortlist_calibration.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <torch/torch.h>

#include "model/shortlist_columns.h"
#include "model/shortlist_logits.h"
#include "text/special_ids.h"

namespace tfm {
namespace {

/// Sentences per add() in add_pairs: enough rows for the products to run at speed.
constexpr size_t kPairsPerBatch = 64;

/// Rows of the full product at a time: [512, V] float32, 64 MiB at 32,000 subwords.
constexpr int64_t kRowsPerProduct = 512;

/// The widest correction solve() considers, in nats: far beyond any measured error.
constexpr double kWidest = 20.0;

double log_add_exp(double a, double b) {
  if (a == -std::numeric_limits<double>::infinity()) return b;
  if (b == -std::numeric_limits<double>::infinity()) return a;
  const double high = std::max(a, b);
  return high + std::log1p(std::exp(std::min(a, b) - high));
}

}  // namespace

ShortlistCalibrator::ShortlistCalibrator(Transformer model, const Shortlist& shortlist)
    : model_(std::move(model)), shortlist_(shortlist) {
  shortlist_.check_vocabulary(model_->config().vocab_size);
  moments_ = model_->output_moments();
}

void ShortlistCalibrator::add(const torch::Tensor& source, const torch::Tensor& target_in) {
  TORCH_CHECK(source.dim() == 2 && target_in.dim() == 2 && source.size(0) == target_in.size(0),
              "ShortlistCalibrator::add: source ", source.sizes(), " and target ", target_in.sizes());
  torch::NoGradGuard no_grad;
  const bool was_training = model_->is_training();
  model_->eval();
  const auto& matrix = model_->output_matrix();
  const auto device = matrix.device();
  const int64_t sentences = target_in.size(0), length = target_in.size(1);
  const auto hidden =
      model_->decoder_output(source.to(device), target_in.to(device)).reshape({sentences * length, -1});  // [B*T, D]
  if (was_training) model_->train();
  const auto columns = shortlist_columns(matrix, shortlist_.candidates(source), moments_);
  const auto estimate = shortlist_logits(hidden, matrix, columns, /*rows_per_list=*/length);
  const auto on_cpu = [](const torch::Tensor& values) { return values.to(torch::kCPU, torch::kDouble).contiguous(); };
  const auto listed = on_cpu(estimate.listed.logsumexp(1));  // [B*T]
  const auto rest = on_cpu(estimate.rest);                   // [B*T]
  // The whole vocabulary's logits a block of rows at a time: [B*T, V] at once is gigabytes for long
  // sentences and a WMT vocabulary.
  std::vector<torch::Tensor> blocks;
  for (int64_t first = 0; first < hidden.size(0); first += kRowsPerProduct) {
    const auto rows = hidden.narrow(0, first, std::min(kRowsPerProduct, hidden.size(0) - first));
    blocks.push_back(torch::matmul(rows, matrix.t()).to(torch::kFloat32).logsumexp(1));
  }
  const auto exact = on_cpu(torch::cat(blocks));                                      // [B*T]
  const auto real = target_in.reshape({-1}).to(torch::kCPU).ne(kPadId).contiguous();  // [B*T]
  const auto* is_real = real.data_ptr<bool>();
  for (int64_t row = 0; row < sentences * length; ++row) {
    if (!is_real[row]) continue;
    listed_.push_back(listed.data_ptr<double>()[row]);
    rest_.push_back(rest.data_ptr<double>()[row]);
    exact_.push_back(exact.data_ptr<double>()[row]);
  }
}

void ShortlistCalibrator::add_pairs(const std::vector<std::vector<int64_t>>& sources,
                                    const std::vector<std::vector<int64_t>>& targets) {
  TORCH_CHECK(sources.size() == targets.size(), "ShortlistCalibrator::add_pairs: ", sources.size(), " sources and ",
              targets.size(), " targets");
  for (size_t first = 0; first < sources.size(); first += kPairsPerBatch) {
    const size_t last = std::min(sources.size(), first + kPairsPerBatch);
    size_t source_length = 0, target_length = 0;
    for (size_t i = first; i < last; ++i) {
      source_length = std::max(source_length, sources[i].size() + 1);
      target_length = std::max(target_length, targets[i].size() + 1);
    }
    const auto rows = static_cast<int64_t>(last - first);
    auto source = torch::full({rows, static_cast<int64_t>(source_length)}, kPadId, torch::kLong);     // [B, S]
    auto target_in = torch::full({rows, static_cast<int64_t>(target_length)}, kPadId, torch::kLong);  // [B, T]
    for (size_t i = first; i < last; ++i) {
      int64_t* s = source.data_ptr<int64_t>() + (i - first) * source.size(1);
      int64_t* t = target_in.data_ptr<int64_t>() + (i - first) * target_in.size(1);
      std::copy(sources[i].begin(), sources[i].end(), s);
      s[sources[i].size()] = kEosId;
      t[0] = kBosId;
      std::copy(targets[i].begin(), targets[i].end(), t + 1);
    }
    add(source, target_in);
  }
}

ShortlistCalibration ShortlistCalibrator::solve() const {
  ShortlistCalibration out;
  out.steps = steps();
  if (out.steps == 0) return out;
  // -> (mean, mean absolute) of the estimated normalizer's error with correction c.
  const auto errors = [&](double c) {
    double sum = 0, sum_abs = 0;
    for (size_t i = 0; i < exact_.size(); ++i) {
      const double error = log_add_exp(listed_[i], rest_[i] + c) - exact_[i];
      sum += error;
      sum_abs += std::abs(error);
    }
    const auto n = static_cast<double>(exact_.size());
    return std::make_pair(sum / n, sum_abs / n);
  };
  std::tie(out.mean_before, out.mean_abs_before) = errors(0.0);
  const bool any_left_out =
      std::any_of(rest_.begin(), rest_.end(), [](double r) { return r > -std::numeric_limits<double>::infinity(); });
  if (any_left_out) {
    double low = -kWidest, high = kWidest;
    for (int i = 0; i < 100 && high - low > 1e-9; ++i) {
      const double middle = (low + high) / 2;
      (errors(middle).first < 0 ? low : high) = middle;
    }
    out.correction = (low + high) / 2;
  }
  std::tie(out.mean_after, out.mean_abs_after) = errors(out.correction);
  return out;
}

}  // namespace tfm
