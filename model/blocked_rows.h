#pragma once
#include <cstdint>

#include <torch/types.h>

namespace tfm {

/// A [rows, dim] matrix read where a product's prepared weight holds it: in SmallRowsProduct's
/// layout (oneDNN's AB16b64a on these CPUs), blocks of `block` rows, each [padded_dim / pair, block,
/// pair] elements, `pair` inputs side by side (2 in bfloat16); or int8 rows one after another
/// (block 1, pair 1: Int8Weight::rows()), row r standing for scales[r] x its values. A tied model's
/// token embeddings read their rows here, so that the output matrix is not held twice
/// (TransformerImpl::embed_from_output_layer).
struct BlockedRows {
  torch::Tensor keeper;  // holds the bytes at `data` (it may be an opaque oneDNN tensor)
  const void* data = nullptr;
  torch::ScalarType dtype = torch::kFloat32;  // float32, bfloat16 or int8 (kChar)
  int64_t rows = 0, dim = 0, padded_dim = 0, block = 0, pair = 1;
  torch::Tensor scales;  // int8 only: [rows] float32, each row's factor

  /// Where element (row, d) is, in elements from `data`.
  int64_t offset(int64_t row, int64_t d) const {
    return (row / block) * block * padded_dim + (d / pair) * block * pair + (row % block) * pair + d % pair;
  }
};

}  // namespace tfm
