#include "train/replicas.h"

#include <spdlog/spdlog.h>

#include <functional>
#include <stdexcept>
#include <vector>

#include <torch/torch.h>

#include "runtime/errors.h"

namespace tfm {

void join_ranks(DistributedGroup& group, Transformer& model, const TrainingProgress& progress, int64_t training_pairs,
                const std::string& tokenizer, const torch::Device& device) {
  torch::NoGradGuard no_grad;
  const auto on_device = torch::TensorOptions().dtype(torch::kLong).device(device);
  // Where this rank starts: ranks that loaded other data, another tokenizer or no checkpoint
  // (a save directory not shared between nodes) would silently train different models.
  const auto tokenizer_hash = static_cast<int64_t>(std::hash<std::string>{}(tokenizer));
  const auto mine = torch::tensor(
      {progress.update, progress.epoch, progress.batch_in_epoch, training_pairs, tokenizer_hash}, on_device);
  std::vector<torch::Tensor> main{mine.clone()};
  group.broadcast_from_main(main);
  std::vector<torch::Tensor> disagreeing{(mine != main[0]).any().to(torch::kLong).reshape({1})};
  group.all_reduce_sum(disagreeing);
  if (const auto count = disagreeing[0].item<int64_t>(); count > 0) {
    throw std::runtime_error(fmt::format(
        "rank {}: {} rank(s) start from other data or another checkpoint than rank 0 (this rank: update {}, "
        "{} training pairs): every rank needs the same data flags and a save directory on a shared filesystem",
        group.rank(), count, progress.update, training_pairs));
  }
  // Rank 0's initialisation for all (on resume they are equal already: this costs one broadcast).
  auto parameters = model->parameters();
  group.broadcast_from_main(parameters);
}

void verify_replicas(DistributedGroup& group, Transformer& model, int64_t update) {
  torch::NoGradGuard no_grad;
  // Integer sums of each parameter's bit patterns: exact whatever the summation order, so equal
  // on every rank exactly when the replicas are (bar a collision no update produces by chance).
  std::vector<torch::Tensor> sums;
  for (const auto& parameter : model->parameters()) {
    const auto bits = parameter.detach().reshape(-1);
    const auto as_int = parameter.element_size() == 8   ? torch::kLong
                        : parameter.element_size() == 4 ? torch::kInt
                        : parameter.element_size() == 2 ? torch::kShort
                                                        : torch::kByte;
    sums.push_back(bits.view(as_int).to(torch::kLong).sum());
  }
  const auto mine = torch::stack(sums);
  std::vector<torch::Tensor> main{mine.clone()};
  group.broadcast_from_main(main);
  std::vector<torch::Tensor> differing{(mine != main[0]).any().to(torch::kLong).reshape({1})};
  group.all_reduce_sum(differing);
  if (const auto count = differing[0].item<int64_t>(); count > 0) {
    throw InternalError(fmt::format("update {}: the parameters of {} rank(s) differ from rank 0's", update, count));
  }
  spdlog::info("ranks agree: parameters bit-identical on all {} ranks at update {}", group.size(), update);
}

}  // namespace tfm
