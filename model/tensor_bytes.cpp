#include "model/tensor_bytes.h"

#include <ATen/Context.h>

// Exported by libtorch_cpu (AOTInductor reads packed weights through them) but declared in
// ATen/native/mkldnn/MKLDNNCommon.h, which LibTorch does not install. The pointer comes back as
// a 64-bit integer in some releases and as void* in others: the same register either way.
namespace at::native {
TORCH_API int64_t data_ptr_from_mkldnn(const at::Tensor& mkldnn_tensor);
TORCH_API int64_t nbytes_from_mkldnn(const at::Tensor& mkldnn_tensor);
}  // namespace at::native

namespace tfm {

TensorBytes tensor_bytes(const torch::Tensor& tensor) {
  if (!tensor.defined() || !tensor.device().is_cpu()) return {};
  if (tensor.layout() == torch::kStrided) {
    if (!tensor.is_contiguous()) return {};
    return {tensor.data_ptr(), static_cast<int64_t>(tensor.nbytes())};
  }
  if (tensor.layout() == torch::kMkldnn && at::hasMKLDNN()) {
    return {reinterpret_cast<const void*>(at::native::data_ptr_from_mkldnn(tensor)),
            at::native::nbytes_from_mkldnn(tensor)};
  }
  return {};
}

}  // namespace tfm
