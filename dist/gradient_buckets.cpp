#include "dist/gradient_buckets.h"

#include <unordered_set>

namespace tfm {

GradientBuckets::GradientBuckets(const std::vector<torch::Tensor>& parameters, int64_t bucket_bytes) {
  std::unordered_set<const void*> seen;
  std::vector<std::vector<torch::Tensor>> groups;
  int64_t group_bytes = 0;
  for (const auto& parameter : parameters) {
    if (!parameter.requires_grad() || !seen.insert(parameter.unsafeGetTensorImpl()).second) continue;
    const int64_t bytes = parameter.numel() * static_cast<int64_t>(parameter.element_size());
    const bool same_kind = !groups.empty() && groups.back().front().dtype() == parameter.dtype() &&
                           groups.back().front().device() == parameter.device();
    if (!same_kind || group_bytes + bytes > bucket_bytes) {
      groups.emplace_back();
      group_bytes = 0;
    }
    groups.back().push_back(parameter);
    group_bytes += bytes;
  }
  for (auto& group : groups) {
    int64_t numel = 0;
    for (const auto& parameter : group) numel += parameter.numel();
    auto flat = torch::empty({numel}, group.front().options());
    buckets_.push_back({std::move(group), std::move(flat)});
  }
}

int64_t GradientBuckets::elements() const {
  int64_t total = 0;
  for (const auto& bucket : buckets_) total += bucket.flat.numel();
  return total;
}

void GradientBuckets::all_reduce(DistributedGroup& group) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> flats;
  for (auto& bucket : buckets_) {
    int64_t offset = 0;
    for (const auto& parameter : bucket.parameters) {
      auto slice = bucket.flat.narrow(0, offset, parameter.numel());
      const auto& grad = parameter.grad();
      if (grad.defined()) {
        slice.copy_(grad.reshape(-1));
      } else {
        slice.zero_();
      }
      offset += parameter.numel();
    }
    flats.push_back(bucket.flat);
  }
  group.all_reduce_sum(flats);
  for (auto& bucket : buckets_) {
    int64_t offset = 0;
    for (auto& parameter : bucket.parameters) {
      const auto summed = bucket.flat.narrow(0, offset, parameter.numel()).view(parameter.sizes());
      if (parameter.grad().defined()) {
        parameter.mutable_grad().copy_(summed);
      } else {
        parameter.mutable_grad() = summed.clone();
      }
      offset += parameter.numel();
    }
  }
}

}  // namespace tfm
