#pragma once
#include <mutex>
#include <unordered_map>

#include <torch/types.h>

namespace tfm {

/// bfloat16 copies of float32 weights, made once and shared by every thread until clear(): for
/// bf16_training_linear, which otherwise casts a layer's weight at each call. Under bf16 autocast
/// each sub-batch of an update cast every weight again (autocast's cache is per thread and per
/// forward pass); one set of copies an update halves that with two sub-batches.
/// The owner clears the copies whenever the weights change (after each optimizer step); a copy
/// whose weight's version counter moved is made again all the same.
class Bf16WeightCopies {
 public:
  /// weight's bfloat16 copy (no autograd history): made on the first call, then shared.
  torch::Tensor get(const torch::Tensor& weight);
  void clear();

 private:
  struct Copy {
    uint32_t version;
    torch::Tensor bf16;
  };
  std::mutex mutex_;  // a copy is made under it: the other sub-batch needs the same weight next
  std::unordered_map<const c10::TensorImpl*, Copy> copies_;
};

/// While alive, bf16_training_linear on this thread takes its weights' copies from `copies`.
class UseBf16WeightCopies {
 public:
  explicit UseBf16WeightCopies(Bf16WeightCopies& copies);
  ~UseBf16WeightCopies();
  UseBf16WeightCopies(const UseBf16WeightCopies&) = delete;
  UseBf16WeightCopies& operator=(const UseBf16WeightCopies&) = delete;

  /// The copies in use on this thread, or null.
  static Bf16WeightCopies* current();

 private:
  Bf16WeightCopies* previous_;
};

}  // namespace tfm
