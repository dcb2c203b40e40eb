#include "model/bf16_weight_copies.h"

#include <torch/torch.h>

namespace tfm {
namespace {

thread_local Bf16WeightCopies* in_use = nullptr;

}  // namespace

torch::Tensor Bf16WeightCopies::get(const torch::Tensor& weight) {
  const std::lock_guard<std::mutex> lock(mutex_);
  const uint32_t version = weight._version();
  auto found = copies_.find(weight.unsafeGetTensorImpl());
  if (found != copies_.end() && found->second.version == version) return found->second.bf16;
  torch::NoGradGuard no_grad;
  auto bf16 = weight.to(torch::kBFloat16);
  copies_[weight.unsafeGetTensorImpl()] = {version, bf16};
  return bf16;
}

void Bf16WeightCopies::clear() {
  const std::lock_guard<std::mutex> lock(mutex_);
  copies_.clear();
}

UseBf16WeightCopies::UseBf16WeightCopies(Bf16WeightCopies& copies) : previous_(in_use) { in_use = &copies; }

UseBf16WeightCopies::~UseBf16WeightCopies() { in_use = previous_; }

Bf16WeightCopies* UseBf16WeightCopies::current() { return in_use; }

}  // namespace tfm
