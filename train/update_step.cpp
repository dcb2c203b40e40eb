#include "train/update_step.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>

#include <torch/torch.h>

#include "data/batching.h"
#include "model/teacher_forcing_loss.h"
#include "runtime/errors.h"
#include "runtime/kernels.h"
#include "runtime/precision.h"
#include "text/option_names.h"
#include "text/special_ids.h"
#include "train/fused_adam.h"
#include "train/lr_schedule.h"
#include "train/sub_batches.h"

namespace tfm {
namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// total += value, starting from undefined.
void add_to(torch::Tensor& total, const torch::Tensor& value) { total = total.defined() ? total + value : value; }

void set_learning_rate(torch::optim::Adam& optimizer, double lr) {
  for (auto& group : optimizer.param_groups()) static_cast<torch::optim::AdamOptions&>(group.options()).lr(lr);
}

}  // namespace

UpdateStep::UpdateStep(Transformer model, torch::optim::Adam& optimizer, const TrainOptions& options,
                       const torch::Device& device, DistributedGroup* group)
    : model_(std::move(model)), optimizer_(optimizer), options_(options), device_(device), group_(group) {
  const int threads = at::get_num_threads();
  const int64_t parts = resolve_sub_batches(options_.sub_batches, device_.is_cpu(), threads);
  if (parts >= 2) {
    sub_batches_ = std::make_unique<SubBatches>(parts, threads, token_costs(model_->config()));
    spdlog::info("sub-batches: each batch as {} parts side by side on {} threads ({})", parts, threads,
                 option_name("sub_batches"));
  }
  if (!group_) return;
  buckets_ = std::make_unique<GradientBuckets>(model_->parameters());
  spdlog::info("data parallel: {} ranks ({}), gradients all-reduced in {} bucket(s), {} elements per update",
               group_->size(), group_->backend(), buckets_->bucket_count(), buckets_->elements());
}

UpdateTotals UpdateStep::run(BatchPrefetcher& batches, size_t count, int64_t update,
                             const std::function<double()>& budget_used) {
  model_->train();
  const Precision precision = parse_precision(options_.dtype);
  UpdateTotals totals;
  for (size_t i = 0; i < count; ++i) {
    const Batch batch = batches.next();
    const LossSums sums = naming_batch_on_out_of_memory(
        [&] { return describe(batch); },
        [&] {
          const auto loss_of = [&](const Batch& part) {
            AutocastGuard autocast(device_, precision);  // forward in bf16/fp16; backward outside, as autocast wants
            const UseBf16WeightCopies copies(weight_copies_);
            return teacher_forcing_loss(model_, part.source.to(device_), part.target_in.to(device_),
                                        part.target_out.to(device_), options_.label_smoothing, kPadId);
          };
          if (sub_batches_) return sub_batches_->run(batch, model_->parameters(), loss_of);
          LossSums batch_sums = loss_of(batch);
          batch_sums.loss.backward();
          return batch_sums;
        });
    // Sums stay on the device until a log line needs them: no wait for the device per batch.
    add_to(totals.loss, sums.loss.detach());
    add_to(totals.nll, sums.nll);
    totals.target_tokens += batch.target_tokens;  // counted on the host when the batch was collated
    totals.all_tokens += batch.source_tokens + batch.target_tokens;
  }
  // Each rank's gradients are sums over its target tokens; summed over the ranks and divided by
  // all their tokens below, the step is the one a single process would take on all the batches.
  double budget = budget_used();
  if (group_) {
    const double start = now_seconds();
    all_reduce(totals, budget);
    totals.allreduce_seconds = now_seconds() - start;
  }
  // A diverged run stops before its step writes NaN into every weight: the checkpoints on disk
  // stay the last good ones. The ranks hold the same summed loss, so all of them stop here.
  // (One wait for the device per update, not per batch.)
  const double loss = totals.loss.defined() ? totals.loss.item<double>() : 0.0;
  if (!std::isfinite(loss)) {
    optimizer_.zero_grad();
    throw std::runtime_error("update " + std::to_string(update) + ": the loss is " + std::to_string(loss) +
                             ": training diverged; the update was not applied, so the checkpoints hold the "
                             "weights from before it (try a lower " +
                             option_name("lr") + ", a longer " + option_name("warmup") + " or " +
                             option_name("clip_norm") + " 1)");
  }
  step_optimizer(totals, update, budget);
  return totals;
}

void UpdateStep::step_optimizer(UpdateTotals& totals, int64_t update, double budget) {
  // The summed loss over all accumulated batches, divided by their target tokens: a per-token
  // gradient however the update is split into batches.
  auto gradients = gradients_of(model_->parameters());
  scale_and_clip_gradients(gradients, 1.0 / static_cast<double>(std::max<int64_t>(totals.target_tokens, 1)),
                           options_.clip_norm);
  totals.lr = learning_rate(options_.lr, update, budget);
  set_learning_rate(optimizer_, totals.lr);
  if (fused_kernels()) {
    fused_adam_step(optimizer_);
  } else {
    optimizer_.step();
  }
  optimizer_.zero_grad();
  weight_copies_.clear();  // the weights changed
}

void UpdateStep::all_reduce(UpdateTotals& totals, double& budget) {
  buckets_->all_reduce(*group_);
  // [5]: loss sum, nll sum, target tokens, all tokens, budget used; float64 counts tokens exactly
  // up to 2^53.
  const auto options = torch::TensorOptions().dtype(torch::kDouble).device(device_);
  const auto zero = torch::zeros({}, options);
  std::vector<torch::Tensor> stats{torch::stack(
      {totals.loss.defined() ? totals.loss.to(options) : zero, totals.nll.defined() ? totals.nll.to(options) : zero,
       torch::tensor(static_cast<double>(totals.target_tokens), options),
       torch::tensor(static_cast<double>(totals.all_tokens), options), torch::tensor(budget, options)})};
  group_->all_reduce_sum(stats);
  totals.loss = stats[0][0];
  totals.nll = stats[0][1];
  const auto counts = stats[0].slice(0, 2).cpu();
  totals.target_tokens = static_cast<int64_t>(counts[0].item<double>());
  totals.all_tokens = static_cast<int64_t>(counts[1].item<double>());
  budget = counts[2].item<double>() / group_->size();
}

}  // namespace tfm
