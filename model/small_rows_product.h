#pragma once
#include <array>
#include <atomic>
#include <cstdint>
#include <vector>

#include <torch/types.h>

#include "model/blocked_rows.h"
#include "runtime/huge_pages.h"

namespace tfm {

/// x W^T (+ b, ReLU) for the few rows of a decoding step, with a float32 or bfloat16 weight,
/// through LIBXSMM's JIT kernels (Debian's libxsmm-dev). At 4-32 rows oneDNN spends ~15 us a call
/// building its primitive descriptor around a product of a few microseconds (a 4 x 256 x 256
/// product: 17.8 us against LIBXSMM's 2.3; BENCHMARKS.md), while at hundreds of rows its kernels
/// are twice as fast: PackedWeight uses this up to kMaxRows rows (of 32, 48 and 64, 64 decoded
/// small batches fastest; BENCHMARKS.md). Accumulates in float32, adds the bias and applies the
/// ReLU in float32, and rounds once, as oneDNN does; only the order of the sums differs (oneDNN
/// splits long sums). Inference only, in builds with LIBXSMM (found by CMake): bfloat16 on CPUs
/// with native bfloat16 (AVX512-BF16), float32 on CPUs with AVX2. On CPUs with AMX tiles the
/// bfloat16 blocks are multiplied on the tiles instead (model/bf16_block_amx.h), which at 4-64 rows
/// also outrun oneDNN's own tile kernels. Elsewhere, at up to kLiveInputsMaxRows rows, inputs that
/// are zero in every row (a ReLU's output) are left out of the sums and their slices of the weight
/// unread, in the same bits (model/live_inputs_product.h); on the tiles, summing them costs no more.
class SmallRowsProduct {
 public:
  static constexpr int64_t kMaxRows = 64;

  /// Whether PackedWeight gives products of `rows` rows of a `dtype` weight (with `in` even) to
  /// these kernels on this CPU.
  static bool takes(torch::ScalarType dtype, int64_t rows);

  /// Whether the CPU and `weight` ([out, in] float32, or bfloat16 with in even) allow it.
  static bool supported(const torch::Tensor& weight);
  /// weight: [out, in], laid out once as LIBXSMM's kernels read it: blocks of kBlock outputs (zeros
  /// past `out`), each [in', kBlock] in float32 and [in'/2, kBlock, 2] in bfloat16, in' = `in`
  /// rounded up to 16 (float32) or 32. That is oneDNN's packed layout (AB16b64a, AB16b64a2b) on
  /// AVX-512: where `packed` (PackedWeight's copy) holds the weight so, element for element, it
  /// is read in place instead of copied.
  explicit SmallRowsProduct(const torch::Tensor& weight, const torch::Tensor& packed = {});
  SmallRowsProduct(const SmallRowsProduct&) = delete;
  SmallRowsProduct& operator=(const SmallRowsProduct&) = delete;

  /// x: [..., in] contiguous in the weight's dtype, its M rows 1 <= M <= kMaxRows; bias: [out] in
  /// that dtype or undefined -> [..., out] in that dtype.
  torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& bias, bool relu) const;
  /// Whether the products read `tensor` (the `packed` given at construction) rather than a copy.
  bool reads(const torch::Tensor& tensor) const;
  /// The weight's layout, appended to `ranges`: what every product streams.
  void add_memory(std::vector<MemoryRange>& ranges) const;
  /// The weight [out, in] as its products read it: each row's elements where they lie.
  BlockedRows blocked_rows() const;

 private:
  using Kernel = void*;  // a libxsmm_smmfunction (float32) or libxsmm_bsmmfunction (bfloat16)
  /// The kernel for `rows` rows and a block of `width` outputs (kBlock, or the last block's).
  Kernel kernel(int64_t rows, int64_t width) const;
  /// Writes the block of outputs from `first` on in the layout ([in'/pair, kBlock, pair]
  /// elements) to `to`, from `from` ([out, in]); what lies past `out` or `in` is left as it was.
  template <typename Bits>
  void lay_out_block(const Bits* from, int64_t first, Bits* to) const;
  /// run(the weight's elements as 16- or 32-bit words): compared and copied as whole words.
  template <typename Run>
  static void with_element_bits(const torch::Tensor& weight, Run run);
  /// Whether `packed` (as many bytes as the layout) holds `weight` ([out, in] contiguous) in the
  /// layout, bit for bit.
  bool holds_in_layout(const torch::Tensor& weight, const void* packed) const;
  /// result [rows, out] = relu?(input [rows, in] W^T + bias), block by block on LibTorch's threads
  /// (through the StepTeam that holds them during a search at a few rows: runtime/step_team.h).
  template <typename T>
  void multiply(const T* input, const T* bias, bool relu, int64_t rows, T* result) const;

  static constexpr int64_t kBlock = 64;  // outputs per kernel call
  torch::Tensor weight_;                 // holds the layout above: [out rounded up to kBlock, in'] elements
  MemoryRange blocks_;                   // its bytes: what every product streams
  int64_t out_ = 0, in_ = 0;
  torch::ScalarType dtype_;
  int64_t pair_ = 1;       // inputs side by side: 2 in bfloat16
  int64_t padded_in_ = 0;  // in'
  mutable std::array<std::atomic<Kernel>, kMaxRows + 1> full_{}, last_{};
};

/// What LIBXSMM's exit handler would do that outlives the process, done now, for a process about
/// to leave without its exit handlers (runtime/process_exit.h): removing the lock file that marks
/// one LIBXSMM process per user (/tmp/.libxsmm.UID in Debian's 1.17) where this process holds it.
/// The rest of that handler (freeing its kernels, statistics under LIBXSMM_VERBOSE) ends with
/// the process anyway.
void finish_small_rows_kernels();

}  // namespace tfm
