#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include <torch/types.h>

#include "model/blocked_rows.h"
#include "runtime/huge_pages.h"

namespace tfm {

class SmallRowsProduct;

/// A linear layer's weight laid out once in oneDNN's blocked format for CPU inference
/// (mkldnn::_reorder_linear_weight), so that each product (mkldnn::_linear_pointwise) skips the
/// repacking that a plain matmul does on every call: at the few rows of a decoding step, packing
/// costs more than the product. Inference only (no autograd); the source weight must not change.
class PackedWeight {
 public:
  PackedWeight() = default;
  /// Whether `weight` can be packed: a CPU tensor in float32, or in bfloat16 where oneDNN computes
  /// it (cpu_has_onednn_bf16), with oneDNN present.
  static bool supported(const torch::Tensor& weight);
  /// weight: [out, in]
  explicit PackedWeight(const torch::Tensor& weight);

  /// Process-wide, off by default: pad each product's rows up to padded_rows(M) (zero rows, cut
  /// off again). oneDNN compiles a kernel per row count, and decoding meets a new count at most
  /// steps as sentences finish; padded, small batches reuse ~20 cached kernels instead of compiling
  /// ~2 per step. `tfm serve` turns it on (with a wider primitive cache): its batches are small. At
  /// file mode's large batches the padding costs more than it saves (BENCHMARKS.md), except for
  /// bfloat16 on AMX tiles (cpu_has_bf16_tiles), whose products always pad: there a new kernel
  /// costs as much as several products.
  static void set_row_padding(bool pad);
  /// Rows a product of `rows` rows is padded to: exact up to 4, then a multiple of 4 up to 16, then
  /// four steps per doubling (20, 24, 28, 32, 40, 48, ...): at most a quarter more rows.
  static int64_t padded_rows(int64_t rows);

  bool defined() const { return packed_.defined(); }
  /// x: [..., in], bias: [out] or undefined -> x W^T + b, [..., out]; with `relu`, max(0, x W^T + b)
  /// applied before the result is stored (the same bits as a separate ReLU). A few rows go through
  /// SmallRowsProduct instead of oneDNN where the CPU has its kernels.
  torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& bias = {}, bool relu = false) const;
  /// The packed weight and the small-row products' copy (where it is one), appended to `ranges`.
  void add_memory(std::vector<MemoryRange>& ranges) const;
  /// The weight's rows where the small-row products read them, on CPUs with their kernels.
  std::optional<BlockedRows> blocked_rows() const;

 private:
  torch::Tensor packed_;
  int64_t out_features_ = 0;
  // Products of up to SmallRowsProduct::kMaxRows rows, where the CPU has its kernels;
  // shared by copies, like packed_.
  std::shared_ptr<const SmallRowsProduct> small_rows_;
};

}  // namespace tfm
