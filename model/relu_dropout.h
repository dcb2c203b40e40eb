#pragma once
#include <torch/types.h>

namespace tfm {

/// apply_dropout(relu(x), p, training), the feed-forward layer's hidden activations: on the CPU
/// in float32 or bfloat16 while training, one pass each way that keeps only its output for the
/// backward (which the next layer keeps anyway), where relu and dropout made two passes each way
/// and kept the relu output and the noise as well. The same bits as the two ops, and the same
/// random stream. x: any shape -> its shape.
torch::Tensor relu_dropout(const torch::Tensor& x, double p, bool training);

}  // namespace tfm
