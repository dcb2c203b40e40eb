#include "train/sub_batches.h"

#include <algorithm>
#include <exception>
#include <stdexcept>

#include <torch/torch.h>

#include "data/batch_split.h"
#include "model/dropout.h"
#include "runtime/threads.h"
#include "text/option_names.h"

namespace tfm {

int64_t resolve_sub_batches(int64_t requested, bool cpu, int threads) {
  if (requested < 0) throw std::invalid_argument(option_name("sub_batches") + " must be >= 0 (0 = auto)");
  if (!cpu) return 1;  // one device: its kernels are queued by one thread anyway
  if (requested >= 1) return requested;
  return threads >= 2 ? 2 : 1;
}

TokenCosts token_costs(const ModelConfig& config) {
  const auto d = static_cast<double>(config.d_model);
  const double feed_forward = 2 * d * static_cast<double>(config.d_ff);
  const auto encoder_layers = static_cast<double>(config.encoder_layers);
  const auto decoder_layers = static_cast<double>(config.decoder_layers);
  TokenCosts costs;
  costs.source = encoder_layers * (4 * d * d + feed_forward) + decoder_layers * 2 * d * d;
  costs.target = decoder_layers * (6 * d * d + feed_forward) + d * static_cast<double>(config.vocab_size);
  return costs;
}

SubBatches::SubBatches(int64_t parts, int threads, const TokenCosts& costs)
    : parts_(parts), costs_(costs), calling_team_(std::max(threads, 1)) {
  if (parts < 2) throw std::invalid_argument("SubBatches: two parts or more");
  for (int64_t p = 0; p < parts; ++p) {
    const int64_t share = threads / parts + (p < threads % parts ? 1 : 0);
    team_.push_back(static_cast<int>(std::max<int64_t>(share, 1)));
  }
  for (int64_t p = 1; p < parts; ++p) threads_.push_back(std::make_unique<TaskThread>());
}

SubBatches::~SubBatches() = default;

LossSums SubBatches::run(const Batch& batch, const std::vector<torch::Tensor>& parameters,
                         const std::function<LossSums(const Batch&)>& loss_of) {
  const std::vector<Batch> split = split_batch(batch, parts_, costs_);
  const auto count = static_cast<int64_t>(split.size());
  std::vector<uint64_t> seeds(count);
  for (auto& seed : seeds) seed = next_dropout_seed();
  std::vector<LossSums> sums(count);
  std::vector<std::vector<torch::Tensor>> gradients(count);  // parts 1 ..: [parameter]
  for (int64_t p = 1; p < count; ++p) {
    threads_[p - 1]->start([&, p] {
      set_this_thread_team(team_[p]);
      const DropoutSeedScope dropout(seeds[p]);
      sums[p] = loss_of(split[p]);
      gradients[p] = torch::autograd::grad({sums[p].loss}, parameters, {}, /*retain_graph=*/false,
                                           /*create_graph=*/false, /*allow_unused=*/true);
    });
  }
  std::exception_ptr error;
  try {
    set_this_thread_team(team_[0]);
    const DropoutSeedScope dropout(seeds[0]);
    sums[0] = loss_of(split[0]);
    sums[0].loss.backward();
  } catch (...) {
    error = std::current_exception();
  }
  set_this_thread_team(calling_team_);
  for (int64_t p = 1; p < count; ++p) {  // every part is waited for, whichever failed
    try {
      threads_[p - 1]->wait();
    } catch (...) {
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);

  torch::NoGradGuard no_grad;
  LossSums total{sums[0].loss.detach(), sums[0].nll};
  for (int64_t p = 1; p < count; ++p) {
    total.loss = total.loss + sums[p].loss.detach();
    total.nll = total.nll + sums[p].nll;
    for (size_t i = 0; i < parameters.size(); ++i) {
      const torch::Tensor& gradient = gradients[p][i];
      if (!gradient.defined()) continue;
      auto parameter = parameters[i];
      if (parameter.grad().defined()) {
        parameter.mutable_grad().add_(gradient);
      } else {
        parameter.mutable_grad() = gradient;
      }
    }
  }
  return total;
}

}  // namespace tfm
