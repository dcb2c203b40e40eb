#pragma once
#include <cstdint>

#include <torch/types.h>

namespace tfm {

/// The bytes a tensor holds, wherever they live: a strided CPU tensor's storage, or the buffer
/// of an MKLDNN-layout tensor (oneDNN's opaque tensors, such as mkldnn::_reorder_linear_weight's
/// packed weights, which have no storage). {nullptr, 0} for anything else.
struct TensorBytes {
  const void* data = nullptr;
  int64_t size = 0;
};
TensorBytes tensor_bytes(const torch::Tensor& tensor);

}  // namespace tfm
