#include "train/progress_log.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace tfm {
namespace {

/// total += value, starting from undefined.
void add_to(torch::Tensor& total, const torch::Tensor& value) { total = total.defined() ? total + value : value; }

}  // namespace

ProgressLog::ProgressLog(std::string save_dir, std::string dtype, int ranks, double now)
    : save_dir_(std::move(save_dir)),
      dtype_(std::move(dtype)),
      ranks_(ranks),
      terminal_(isatty(STDERR_FILENO) != 0),
      last_line_time_(now) {}

void ProgressLog::add(const UpdateTotals& totals) {
  ++updates_;
  add_to(loss_, totals.loss);
  add_to(nll_, totals.nll);
  target_tokens_ += totals.target_tokens;
  all_tokens_ += totals.all_tokens;
  allreduce_seconds_ += totals.allreduce_seconds;
  lr_ = totals.lr;
}

void ProgressLog::reset(double now) {
  loss_ = nll_ = torch::Tensor();
  target_tokens_ = all_tokens_ = updates_ = 0;
  allreduce_seconds_ = 0;
  last_line_time_ = now;
}

void ProgressLog::write_line(const TrainingProgress& progress, size_t epoch_batches, double elapsed_seconds,
                             std::optional<double> minutes_left, bool last, double now) {
  const double seconds = std::max(now - last_line_time_, 1e-9);
  const double loss = loss_.item<double>() / static_cast<double>(target_tokens_);
  const double ppl = std::exp(nll_.item<double>() / static_cast<double>(target_tokens_));
  const double tokens_per_second = static_cast<double>(all_tokens_) / seconds;
  const double allreduce_ms = 1000 * allreduce_seconds_ / static_cast<double>(std::max<int64_t>(updates_, 1));
  const std::string line = fmt::format(
      "epoch {} | batch {}/{} | update {} | loss {:.3f} | ppl {:.2f} | lr {:.3g} | {:.0f} tok/s{} | {:.0f} s{}",
      progress.epoch, progress.batch_in_epoch, epoch_batches, progress.update, loss, ppl, lr_, tokens_per_second,
      ranks_ > 0 ? fmt::format(" | all-reduce {:.0f} ms/update", allreduce_ms) : "", elapsed_seconds,
      minutes_left ? fmt::format(" | eta {:.0f} min", *minutes_left) : "");
  if (terminal_) {
    fmt::print(stderr, "\r\033[K{}", line);  // one live line, redrawn in place
    if (last) fmt::print(stderr, "\n");
  } else {
    spdlog::info("train | {}", line);
  }
  nlohmann::json record = {{"type", "train"},
                           {"update", progress.update},
                           {"epoch", progress.epoch},
                           {"loss", loss},
                           {"ppl", ppl},
                           {"lr", lr_},
                           {"tokens_per_s", tokens_per_second},
                           {"dtype", dtype_},
                           {"elapsed_s", elapsed_seconds}};
  if (ranks_ > 0) {
    record["ranks"] = ranks_;
    record["allreduce_ms_per_update"] = allreduce_ms;
  }
  append(record);
  reset(now);
}

void ProgressLog::write_validation(const ValidationResult& result, const TrainingProgress& progress, int64_t epoch,
                                   bool epoch_end, bool is_best, const std::string& best_metric, int64_t beam,
                                   double elapsed_seconds, double seconds_taken) {
  spdlog::info(
      "valid | epoch {} | update {} | loss {:.3f} | ppl {:.2f} | bleu {:.2f} ({} sentences, beam {}) | "
      "best {} {:.3f}{} | {:.1f} s",
      epoch, progress.update, result.loss, result.ppl, result.bleu, result.sentences, beam, best_metric, progress.best,
      is_best ? " (new)" : "", seconds_taken);
  append({{"type", "valid"},
          {"update", progress.update},
          {"epoch", epoch},
          {"epoch_end", epoch_end},
          {"loss", result.loss},
          {"ppl", result.ppl},
          {"bleu", result.bleu},
          {"elapsed_s", elapsed_seconds}});
}

void ProgressLog::append(const nlohmann::json& record) const {
  const auto path = std::filesystem::path(save_dir_) / "metrics.jsonl";
  std::ofstream out(path, std::ios::app);
  out << record.dump() << '\n';
  // A full disk must stop the run loudly, not leave a silently truncated log.
  if (!out.flush()) throw std::runtime_error(path.string() + ": cannot write (disk full?)");
}

}  // namespace tfm
