#include "model/small_rows_product.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include "model/bf16_block_amx.h"
#include "model/float_block_avx2.h"
#include "model/live_inputs_product.h"
#include "model/tensor_bytes.h"
#include "runtime/process_exit.h"
#include "runtime/step_team.h"
#include "runtime/vector_clones.h"

#if TFM_HAVE_LIBXSMM
#include <libxsmm.h>
#endif

namespace tfm {
namespace {

#if TFM_HAVE_LIBXSMM
std::atomic<bool> libxsmm_started{false};

/// LIBXSMM's code path for this CPU (a LIBXSMM_X86_* id).
int libxsmm_target() {
  static const int target = [] {
    libxsmm_init();
    libxsmm_started = true;
    return libxsmm_get_target_archid();
  }();
  return target;
}

bool cpu_has_bf16_kernels() { return libxsmm_target() >= LIBXSMM_X86_AVX512_CPX; }
bool cpu_has_float_kernels() { return libxsmm_target() >= LIBXSMM_X86_AVX2; }
#else
// Built without LIBXSMM: oneDNN takes every product.
bool cpu_has_bf16_kernels() { return false; }
bool cpu_has_float_kernels() { return false; }
#endif

/// acc [rows, kBlock-apart rows] = x [rows, in] times one block of the weight, through `kernel`.
void run_kernel(void* kernel, const c10::BFloat16* weight_block, const c10::BFloat16* x, float* acc) {
#if TFM_HAVE_LIBXSMM
  reinterpret_cast<libxsmm_bsmmfunction>(kernel)(reinterpret_cast<const libxsmm_bfloat16*>(weight_block),
                                                 reinterpret_cast<const libxsmm_bfloat16*>(x), acc);
#else
  (void)kernel, (void)weight_block, (void)x, (void)acc;
  TORCH_CHECK(false, "SmallRowsProduct: this build has no LIBXSMM");
#endif
}

void run_kernel(void* kernel, const float* weight_block, const float* x, float* acc) {
#if TFM_HAVE_LIBXSMM
  reinterpret_cast<libxsmm_smmfunction>(kernel)(weight_block, x, acc);
#else
  (void)kernel, (void)weight_block, (void)x, (void)acc;
  TORCH_CHECK(false, "SmallRowsProduct: this build has no LIBXSMM");
#endif
}

/// out[r, c] = round(relu?(acc[r, c] + bias[c])) for a block of `width` outputs: acc [rows, width]
/// (leading dimension `ld`), out rows `out_stride` apart.
template <typename T>
TFM_VECTOR_CLONES void finish_block(const float* acc, int64_t ld, const T* bias, bool relu, int64_t rows, int64_t width,
                                    T* out, int64_t out_stride) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* a = acc + r * ld;
    T* o = out + r * out_stride;
    for (int64_t c = 0; c < width; ++c) {
      float v = bias != nullptr ? a[c] + static_cast<float>(bias[c]) : a[c];
      if (relu) v = std::max(v, 0.0F);
      o[c] = static_cast<T>(v);
    }
  }
}

}  // namespace

void finish_small_rows_kernels() {
#if TFM_HAVE_LIBXSMM
  if (libxsmm_started.exchange(false)) remove_unless_locked_elsewhere("/tmp/.libxsmm." + std::to_string(::getuid()));
#endif
}

bool SmallRowsProduct::supported(const torch::Tensor& weight) {
  if (!weight.defined() || !weight.device().is_cpu() || weight.dim() != 2 || weight.size(0) == 0) return false;
  if (weight.scalar_type() == torch::kFloat32) return cpu_has_float_kernels();
  return weight.scalar_type() == torch::kBFloat16 && weight.size(1) % 2 == 0 && cpu_has_bf16_kernels();
}

bool SmallRowsProduct::takes(torch::ScalarType dtype, int64_t rows) {
  const bool kernels = dtype == torch::kFloat32    ? cpu_has_float_kernels()
                       : dtype == torch::kBFloat16 ? cpu_has_bf16_kernels()
                                                   : false;
  return kernels && rows >= 1 && rows <= kMaxRows;
}

SmallRowsProduct::SmallRowsProduct(const torch::Tensor& weight, const torch::Tensor& packed)
    : out_(weight.size(0)),
      in_(weight.size(1)),
      dtype_(weight.scalar_type()),
      pair_(dtype_ == torch::kBFloat16 ? 2 : 1),
      padded_in_((in_ + 16 * pair_ - 1) / (16 * pair_) * (16 * pair_)) {
  TORCH_CHECK(supported(weight),
              "SmallRowsProduct: a [out, in] float32 CPU weight, or bfloat16 with in even, is needed");
  torch::NoGradGuard no_grad;
  const auto w = weight.detach().contiguous();  // [out, in]
  const int64_t size = (out_ + kBlock - 1) / kBlock * kBlock * padded_in_;
  const TensorBytes bytes = tensor_bytes(packed);
  if (bytes.data != nullptr && packed.scalar_type() == dtype_ && bytes.size == size * w.element_size() &&
      holds_in_layout(w, bytes.data)) {
    weight_ = packed;  // oneDNN's own copy, read in place: no second one
    blocks_ = {bytes.data, bytes.size};
    return;
  }
  weight_ = torch::zeros({size}, w.options());
  blocks_ = {weight_.data_ptr(), static_cast<int64_t>(weight_.nbytes())};
  with_element_bits(w, [&](const auto* from) {
    using Bits = std::remove_const_t<std::remove_pointer_t<decltype(from)>>;
    auto* to = static_cast<Bits*>(weight_.data_ptr());
    for (int64_t first = 0; first < out_; first += kBlock) lay_out_block(from, first, to + first * padded_in_);
  });
}

template <typename Bits>
void SmallRowsProduct::lay_out_block(const Bits* from, int64_t first, Bits* to) const {
  // Row by row of the weight, so that the reads run forward; the block's writes (in' x kBlock
  // elements, 128 KiB at 512 float32 inputs) stay in the cache.
  const int64_t width = std::min(kBlock, out_ - first);
  for (int64_t o = 0; o < width; ++o) {
    const Bits* row = from + (first + o) * in_;
    if (pair_ == 1) {
      for (int64_t i = 0; i < in_; ++i) to[i * kBlock + o] = row[i];
    } else {
      for (int64_t i = 0; i < in_; i += 2) {
        to[i * kBlock + 2 * o] = row[i];
        to[i * kBlock + 2 * o + 1] = row[i + 1];
      }
    }
  }
}

template <typename Run>
void SmallRowsProduct::with_element_bits(const torch::Tensor& weight, Run run) {
  if (weight.element_size() == 2) {
    run(static_cast<const uint16_t*>(weight.data_ptr()));
  } else {
    run(static_cast<const uint32_t*>(weight.data_ptr()));
  }
}

bool SmallRowsProduct::holds_in_layout(const torch::Tensor& weight, const void* in_packed) const {
  bool same = true;
  with_element_bits(weight, [&](const auto* from) {
    using Bits = std::remove_const_t<std::remove_pointer_t<decltype(from)>>;
    const auto* packed = static_cast<const Bits*>(in_packed);
    std::vector<Bits> block(static_cast<size_t>(padded_in_ * kBlock));  // one block in the layout
    for (int64_t first = 0; first < out_ && same; first += kBlock) {
      lay_out_block(from, first, block.data());
      // Only the weight's own elements count: what lies past `out` or `in` is padding.
      const int64_t width = std::min(kBlock, out_ - first);
      const Bits* expected = packed + first * padded_in_;
      for (int64_t i = 0; i < in_ && same; i += pair_) {
        same = std::memcmp(block.data() + i * kBlock, expected + i * kBlock,
                           static_cast<size_t>(width * pair_) * sizeof(Bits)) == 0;
      }
    }
  });
  return same;
}

bool SmallRowsProduct::reads(const torch::Tensor& tensor) const { return weight_.is_same(tensor); }

void SmallRowsProduct::add_memory(std::vector<MemoryRange>& ranges) const { ranges.push_back(blocks_); }

BlockedRows SmallRowsProduct::blocked_rows() const {
  return {weight_, blocks_.data, dtype_, out_, in_, padded_in_, kBlock, pair_, /*scales=*/{}};
}

SmallRowsProduct::Kernel SmallRowsProduct::kernel(int64_t rows, int64_t width) const {
  auto& slot = width == kBlock ? full_[rows] : last_[rows];
  if (Kernel known = slot.load(std::memory_order_acquire)) return known;
#if TFM_HAVE_LIBXSMM
  // Column-major in LIBXSMM's terms: C [width x rows] = A [width x in] x B [in x rows], where A is a
  // block of weight_ (kBlock apart; bfloat16: pairs of inputs side by side), B is x and C's columns
  // are rows of a block's results.
  const libxsmm_blasint m = width, n = rows, k = in_, lda = kBlock, ldb = in_, ldc = kBlock;
  const float alpha = 1.0F, beta = 0.0F;
  const int prefetch = LIBXSMM_PREFETCH_NONE;
  Kernel made = nullptr;
  if (dtype_ == torch::kFloat32) {
    const int flags = LIBXSMM_GEMM_FLAG_NONE;
    made = reinterpret_cast<Kernel>(libxsmm_smmdispatch(m, n, k, &lda, &ldb, &ldc, &alpha, &beta, &flags, &prefetch));
  } else {
    const int flags = LIBXSMM_GEMM_FLAG_VNNI_A;
    made = reinterpret_cast<Kernel>(libxsmm_bsmmdispatch(m, n, k, &lda, &ldb, &ldc, &alpha, &beta, &flags, &prefetch));
  }
  TORCH_CHECK(made != nullptr, "LIBXSMM made no ", dtype_, " kernel for ", rows, " x ", in_, " x ", width);
  slot.store(made, std::memory_order_release);
  return made;
#else
  TORCH_CHECK(false, "SmallRowsProduct: this build has no LIBXSMM");
#endif
}

torch::Tensor SmallRowsProduct::linear(const torch::Tensor& x, const torch::Tensor& bias, bool relu) const {
  const int64_t rows = x.dim() >= 1 && x.size(-1) == in_ ? x.numel() / in_ : 0;
  TORCH_CHECK(x.dim() >= 1 && x.size(-1) == in_ && rows >= 1 && rows <= kMaxRows && x.is_contiguous() &&
                  x.scalar_type() == dtype_,
              "SmallRowsProduct: x must be [..., ", in_, "] contiguous ", dtype_, " of 1 to ", kMaxRows, " rows");
  TORCH_CHECK(!bias.defined() || (bias.numel() == out_ && bias.scalar_type() == dtype_),
              "SmallRowsProduct: the bias must be [", out_, "] ", dtype_);
  // Allocated in x's shape directly: a decoding step makes ~20 products, and a reshape and a view
  // around each cost as much as a quarter of a small one.
  c10::SmallVector<int64_t, 4> sizes(x.sizes().begin(), x.sizes().end());
  sizes.back() = out_;
  const auto bias_contiguous = bias.defined() ? bias.contiguous() : bias;
  auto out = torch::empty(sizes, x.options());  // [..., out]
  if (dtype_ == torch::kFloat32) {
    multiply(x.data_ptr<float>(), bias.defined() ? bias_contiguous.data_ptr<float>() : nullptr, relu, rows,
             out.data_ptr<float>());
  } else {
    multiply(x.data_ptr<c10::BFloat16>(), bias.defined() ? bias_contiguous.data_ptr<c10::BFloat16>() : nullptr, relu,
             rows, out.data_ptr<c10::BFloat16>());
  }
  return out;
}

template <typename T>
void SmallRowsProduct::multiply(const T* input, const T* bias, bool relu, int64_t rows, T* result) const {
  const T* weight = static_cast<const T*>(blocks_.data);
  const int64_t blocks = (out_ + kBlock - 1) / kBlock;
  // Inputs zero in every row (most of a ReLU's output at a beam's rows) are left out of the sums
  // where at least a quarter are, and their slices of the weight are never read
  // (model/live_inputs_product.h).
  thread_local std::vector<int32_t> live;  // the calling thread's: the workers read it through `skip`
  const int64_t units = in_ / pair_;
  int64_t summed = units;
  const int32_t* skip = nullptr;
  // On AVX2 alone, float32 full blocks of a few rows take a kernel that reads them ahead
  // (model/float_block_avx2.h); it skips dead inputs too.
  const bool avx2_floats = std::is_same_v<T, float> && rows <= kFloatBlockMaxRows && float_block_avx2_kernels();
  const bool tiles = std::is_same_v<T, c10::BFloat16> && bf16_block_amx_kernels();
  if (!tiles && rows <= kLiveInputsMaxRows && (live_inputs_kernels(pair_ == 2) || avx2_floats)) {
    find_live_inputs(input, rows, in_, live);
    if (static_cast<int64_t>(live.size()) * 4 <= units * 3) {
      skip = live.data();
      summed = static_cast<int64_t>(live.size());
    }
  }
  // At a few rows a product streams its weight from memory and two cores stream it faster than
  // one, so the blocks are shared out down to ~64k multiply-adds a thread (BENCHMARKS.md: at
  // batch 1, sharing from ~1M on left most products on one thread).
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(1, rows * summed * pair_ * kBlock));
  // On AMX tiles bfloat16 blocks are multiplied a tile at a time (model/bf16_block_amx.h), 16 rows
  // at a time past 16, over inputs padded to the tiles' 32 where the weight's are; padding rows
  // and inputs are zeros.
  const int64_t group_rows = std::min(rows, kTileRows);
  const int64_t groups = (rows + group_rows - 1) / group_rows;
  const T* tile_input = input;
  thread_local std::vector<T> padded;  // [groups x group_rows, in'] where that is more than x
  if (tiles && (padded_in_ != in_ || groups * group_rows != rows)) {
    padded.assign(static_cast<size_t>(groups * group_rows * padded_in_), T(0));
    for (int64_t r = 0; r < rows; ++r) std::memcpy(padded.data() + r * padded_in_, input + r * in_, in_ * sizeof(T));
    tile_input = padded.data();
  }
  team_parallel_for(
      0, blocks, grain,
      [&](int64_t begin, int64_t end) {
        float acc[kMaxRows * kBlock];  // [M, width] with rows kBlock apart
        std::optional<Bf16Tiles> tiles_set;
        if (tiles) tiles_set.emplace(group_rows);
        for (int64_t block = begin; block < end; ++block) {
          const int64_t first = block * kBlock, width = std::min(kBlock, out_ - first);
          const T* weight_block = weight + block * kBlock * padded_in_;
          // A narrower last block stays LIBXSMM's (or the tiles', whose layout pads it with zeros): its
          // kernel for such widths sums in another order than the two kernels that skip inputs.
          if (avx2_floats && width == kBlock) {
            const T* next = block + 1 < end ? weight_block + kBlock * padded_in_ : nullptr;
            multiply_float_block(reinterpret_cast<const float*>(weight_block), reinterpret_cast<const float*>(next),
                                 block == begin, reinterpret_cast<const float*>(input), rows, in_, skip, summed, acc);
          } else if (skip != nullptr && width == kBlock) {
            multiply_live_inputs(weight_block, input, rows, in_, skip, summed, acc);
          } else if (tiles) {
            multiply_bf16_block_amx(reinterpret_cast<const c10::BFloat16*>(weight_block),
                                    reinterpret_cast<const c10::BFloat16*>(tile_input), padded_in_, groups, group_rows,
                                    acc);
          } else {
            run_kernel(kernel(rows, width), weight_block, input, acc);
          }
          finish_block(acc, kBlock, bias != nullptr ? bias + first : nullptr, relu, rows, width, result + first, out_);
        }
      },
      blocks_);
}

}  // namespace tfm
