#pragma once
#include <torch/torch.h>

#include "viz/matrix.h"

namespace tfm {

/// A [rows, cols] tensor of any floating dtype or device as a float32 Matrix for viz/, which
/// knows nothing of torch.
Matrix to_matrix(const torch::Tensor& tensor);

}  // namespace tfm
