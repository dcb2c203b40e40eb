#include "model/head_attention.h"
#include "runtime/step_team.h"

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include "model/attention_rows.h"
#include "model/dropout.h"
#include "runtime/vector_clones.h"

namespace tfm {
namespace {

using BFloat16 = c10::BFloat16;

/// One projection's rows: head h of row t of sentence b starts at data + b * batch + t * row +
/// column + h * Dh.
template <typename T>
struct Rows {
  T* data = nullptr;
  int64_t batch = 0, row = 0;
  T* at(int64_t b, int64_t t, int64_t column) const { return data + b * batch + t * row + column; }
};

template <typename T>
Rows<T> rows_of(const torch::Tensor& x) {
  return {x.data_ptr<std::remove_const_t<T>>(), x.stride(0), x.stride(1)};
}

/// What both passes read: the projections, the columns of q, k and v, the sizes and the mask.
struct Problem {
  Rows<const BFloat16> queries, memory;
  HeadColumns columns;
  int64_t heads = 0, head_dim = 0, time = 0, keys = 0;
  MaskRows mask;
  float scale = 1;

  int64_t padded_keys() const { return (keys + kVectorLanes - 1) / kVectorLanes * kVectorLanes; }
  /// Row (b, h, t) of [B, H, T, S] tensors.
  int64_t score_row(int64_t b, int64_t h, int64_t t) const { return (b * heads + h) * time + t; }
};

struct ForwardArgs {
  Problem problem;
  const BFloat16* noise;  // [B, H, T, S] or null
  BFloat16* probs;        // [B, H, T, S]
  BFloat16* context;      // [B, T, H * Dh]
};

struct BackwardArgs {
  Problem problem;
  const BFloat16* grad_context;  // [B, T, H * Dh]
  const BFloat16* probs;         // [B, H, T, S]
  const BFloat16* noise;         // [B, H, T, S] or null
  Rows<BFloat16> grad_queries, grad_memory;
};

/// Rows 0..count-1 of sentence b's heads at `column` (H * Dh elements each), read once, in order:
/// as floats [count, H * Dh] into `rows`, and/or transposed into `transposed` [H * Dh, padded]
/// (head h's [Dh, padded] at h * Dh * padded) with zeros in columns count..padded-1.
template <typename Lanes>
TFM_ALWAYS_INLINE void widen_rows(const Rows<const BFloat16>& from, int64_t b, int64_t column, int64_t count,
                                  int64_t width, int64_t padded, float* rows, float* transposed) {
  if (transposed != nullptr) {
    for (int64_t d = 0; d < width; ++d) std::fill(transposed + d * padded + count, transposed + (d + 1) * padded, 0.0F);
  }
  alignas(64) float lanes[kVectorLanes];
  for (int64_t j = 0; j < count; ++j) {
    const BFloat16* row = from.at(b, j, column);
    for (int64_t d = 0; d < width; d += kVectorLanes) {
      const Lanes x = load_lanes<Lanes>(row + d);
      if (rows != nullptr) store_lanes(rows + j * width + d, x);
      if (transposed != nullptr) {
        store_lanes(lanes, x);
        for (int64_t e = 0; e < kVectorLanes; ++e) transposed[(d + e) * padded + j] = lanes[e];
      }
    }
  }
}

/// out[0, padded) = x[0, depth) times matrix [depth, padded]: four independent sums over depth
/// keep the multiply-adds from waiting on each other. depth a multiple of 4.
template <typename Lanes>
TFM_ALWAYS_INLINE void times_matrix(const float* x, const float* matrix, int64_t depth, int64_t padded, float* out) {
  for (int64_t c = 0; c < padded; c += kVectorLanes) {
    Lanes a0{}, a1{}, a2{}, a3{};
    for (int64_t d = 0; d < depth; d += 4) {
      const float* m = matrix + d * padded + c;
      a0 += splat<Lanes>(x[d]) * load_lanes<Lanes>(m);
      a1 += splat<Lanes>(x[d + 1]) * load_lanes<Lanes>(m + padded);
      a2 += splat<Lanes>(x[d + 2]) * load_lanes<Lanes>(m + 2 * padded);
      a3 += splat<Lanes>(x[d + 3]) * load_lanes<Lanes>(m + 3 * padded);
    }
    store_lanes(out + c, (a0 + a1) + (a2 + a3));
  }
}

/// out[0, width) = sum_j w[j * stride] * rows[j * row_stride ...], j < count; width a multiple of
/// kVectorLanes.
template <typename Lanes, typename Out>
TFM_ALWAYS_INLINE void weighted_rows(const float* w, int64_t stride, const float* rows, int64_t row_stride,
                                     int64_t count, int64_t width, Out* out) {
  int64_t c = 0;
  for (; c + 4 * kVectorLanes <= width; c += 4 * kVectorLanes) {
    Lanes a0{}, a1{}, a2{}, a3{};
    for (int64_t j = 0; j < count; ++j) {
      const Lanes f = splat<Lanes>(w[j * stride]);
      const float* row = rows + j * row_stride + c;
      a0 += f * load_lanes<Lanes>(row);
      a1 += f * load_lanes<Lanes>(row + kVectorLanes);
      a2 += f * load_lanes<Lanes>(row + 2 * kVectorLanes);
      a3 += f * load_lanes<Lanes>(row + 3 * kVectorLanes);
    }
    store_lanes(out + c, a0);
    store_lanes(out + c + kVectorLanes, a1);
    store_lanes(out + c + 2 * kVectorLanes, a2);
    store_lanes(out + c + 3 * kVectorLanes, a3);
  }
  for (; c < width; c += kVectorLanes) {
    Lanes a{};
    for (int64_t j = 0; j < count; ++j) a += splat<Lanes>(w[j * stride]) * load_lanes<Lanes>(rows + j * row_stride + c);
    store_lanes(out + c, a);
  }
}

/// What the values are summed with: weights[j] = probs[j] x noise[j] (noise null: no dropout).
TFM_ALWAYS_INLINE void dropped_weights(const BFloat16* probs, const BFloat16* noise, int64_t keys, float* weights) {
  for (int64_t j = 0; j < keys; ++j) {
    weights[j] = static_cast<float>(probs[j]) * (noise == nullptr ? 1.0F : static_cast<float>(noise[j]));
  }
}

/// Floats of scratch one sentence takes in either pass.
int64_t scratch_floats(const Problem& p) {
  const int64_t padded = p.padded_keys(), model = p.heads * p.head_dim;
  return model * padded + p.keys * model + 2 * p.time * model + 2 * p.time * padded + padded;
}

/// Sentences [begin, end), every head: scores, mask, softmax, dropout and the context.
template <typename Lanes>
TFM_ALWAYS_INLINE void forward_heads(const ForwardArgs& a, int64_t begin, int64_t end, float* scratch) {
  const Problem& p = a.problem;
  const int64_t padded = p.padded_keys(), dh = p.head_dim, model = p.heads * dh;
  float* keys_t = scratch;                   // [H * Dh, padded]
  float* values = keys_t + model * padded;   // [S, H * Dh]
  float* queries = values + p.keys * model;  // [T, H * Dh]
  float* row = queries + p.time * model;     // [padded]
  float* weights = row + padded;             // [padded]
  for (int64_t b = begin; b < end; ++b) {
    widen_rows<Lanes>(p.memory, b, p.columns.key, p.keys, model, padded, nullptr, keys_t);
    widen_rows<Lanes>(p.memory, b, p.columns.value, p.keys, model, padded, values, nullptr);
    widen_rows<Lanes>(p.queries, b, p.columns.query, p.time, model, padded, queries, nullptr);
    for (int64_t h = 0; h < p.heads; ++h) {
      for (int64_t t = 0; t < p.time; ++t) {
        times_matrix<Lanes>(queries + t * model + h * dh, keys_t + h * dh * padded, dh, padded, row);
        const int64_t r = p.score_row(b, h, t);
        const bool* keep = p.mask.row(r);
        for (int64_t j = 0; j < p.keys; ++j) row[j] = (keep == nullptr || keep[j]) ? row[j] * p.scale : kRowNegInf;
        BFloat16* probs = a.probs + r * p.keys;
        softmax_row<Lanes>(row, p.keys, probs, nullptr, nullptr);
        dropped_weights(probs, a.noise == nullptr ? nullptr : a.noise + r * p.keys, p.keys, weights);
        weighted_rows<Lanes>(weights, 1, values + h * dh, model, p.keys, dh,
                             a.context + (b * p.time + t) * model + h * dh);
      }
    }
  }
}

/// Sentences [begin, end), every head: the gradients of q, k and v from the context's.
template <typename Lanes>
TFM_ALWAYS_INLINE void backward_heads(const BackwardArgs& a, int64_t begin, int64_t end, float* scratch) {
  const Problem& p = a.problem;
  const int64_t padded = p.padded_keys(), dh = p.head_dim, model = p.heads * dh;
  float* values_t = scratch;                       // [H * Dh, padded]
  float* keys = values_t + model * padded;         // [S, H * Dh]
  float* queries = keys + p.keys * model;          // [T, H * Dh]
  float* grad_context = queries + p.time * model;  // [T, H * Dh]
  float* weights = grad_context + p.time * model;  // [T, padded]: what the values were summed with
  float* grad_scores = weights + p.time * padded;  // [T, padded]
  float* row = grad_scores + p.time * padded;      // [padded]
  const Rows<const BFloat16> context_rows{a.grad_context, p.time * model, model};
  for (int64_t b = begin; b < end; ++b) {
    widen_rows<Lanes>(p.memory, b, p.columns.value, p.keys, model, padded, nullptr, values_t);
    widen_rows<Lanes>(p.memory, b, p.columns.key, p.keys, model, padded, keys, nullptr);
    widen_rows<Lanes>(p.queries, b, p.columns.query, p.time, model, padded, queries, nullptr);
    widen_rows<Lanes>(context_rows, b, 0, p.time, model, padded, grad_context, nullptr);
    for (int64_t h = 0; h < p.heads; ++h) {
      const int64_t q_column = p.columns.query + h * dh, k_column = p.columns.key + h * dh;
      const int64_t v_column = p.columns.value + h * dh;
      for (int64_t t = 0; t < p.time; ++t) {
        times_matrix<Lanes>(grad_context + t * model + h * dh, values_t + h * dh * padded, dh, padded, row);
        const int64_t r = p.score_row(b, h, t);
        const BFloat16* probs = a.probs + r * p.keys;
        const BFloat16* noise = a.noise == nullptr ? nullptr : a.noise + r * p.keys;
        dropped_weights(probs, noise, p.keys, weights + t * padded);
        softmax_gradient_row<Lanes>(row, probs, noise, p.keys, p.scale, grad_scores + t * padded);
        weighted_rows<Lanes>(grad_scores + t * padded, 1, keys + h * dh, model, p.keys, dh,
                             a.grad_queries.at(b, t, q_column));
      }
      for (int64_t j = 0; j < p.keys; ++j) {  // columns j of the score gradients and of the weights
        weighted_rows<Lanes>(grad_scores + j, padded, queries + h * dh, model, p.time, dh,
                             a.grad_memory.at(b, j, k_column));
        weighted_rows<Lanes>(weights + j, padded, grad_context + h * dh, model, p.time, dh,
                             a.grad_memory.at(b, j, v_column));
      }
    }
  }
}

TFM_LANE_KERNEL((void forward_heads(const ForwardArgs& a, int64_t begin, int64_t end, float* scratch)),
                forward_heads<Lanes>(a, begin, end, scratch);)
TFM_LANE_KERNEL((void backward_heads(const BackwardArgs& a, int64_t begin, int64_t end, float* scratch)),
                backward_heads<Lanes>(a, begin, end, scratch);)

/// Sentences per chunk of LibTorch's threads: each is H x T x S x Dh multiply-adds a product.
constexpr int64_t kTaskGrain = 4;

/// Whether `columns` of width `head_dim * heads` tile x's last dimension exactly: then every
/// element of x's gradient is written and it needs no zero fill.
bool tiles(const torch::Tensor& x, std::vector<int64_t> columns, int64_t model) {
  std::sort(columns.begin(), columns.end());
  for (size_t i = 0; i < columns.size(); ++i) {
    if (columns[i] != static_cast<int64_t>(i) * model) return false;
  }
  return static_cast<int64_t>(columns.size()) * model == x.size(2);
}

torch::Tensor gradient_like(const torch::Tensor& x, const std::vector<int64_t>& columns, int64_t model) {
  return tiles(x, columns, model) ? torch::empty(x.sizes(), x.options()) : torch::zeros(x.sizes(), x.options());
}

class HeadAttention : public torch::autograd::Function<HeadAttention> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& queries,
                               const torch::Tensor& memory, int64_t query_column, int64_t key_column,
                               int64_t value_column, int64_t heads, int64_t head_dim, const torch::Tensor& mask,
                               double scale, const torch::Tensor& noise_or_empty) {
    torch::Tensor mask_holder;
    const Problem p =
        problem(queries, memory, {query_column, key_column, value_column}, heads, head_dim, mask, scale, mask_holder);
    const int64_t batch = queries.size(0);
    const auto probs = torch::empty({batch, heads, p.time, p.keys}, queries.options());
    auto context = torch::empty({batch, p.time, heads * head_dim}, queries.options());
    const ForwardArgs args{p, noise_or_empty.numel() > 0 ? noise_or_empty.data_ptr<BFloat16>() : nullptr,
                           probs.data_ptr<BFloat16>(), context.data_ptr<BFloat16>()};
    for_each_head(p, batch,
                  [&](int64_t begin, int64_t end, float* scratch) { forward_heads(args, begin, end, scratch); });
    ctx->save_for_backward({queries, memory, probs, noise_or_empty});
    ctx->saved_data["columns"] = std::vector<int64_t>{query_column, key_column, value_column};
    ctx->saved_data["heads"] = heads;
    ctx->saved_data["head_dim"] = head_dim;
    ctx->saved_data["scale"] = scale;
    return context;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const auto& queries = saved[0];
    const auto& memory = saved[1];
    const auto& probs = saved[2];
    const auto& noise = saved[3];
    const auto columns = ctx->saved_data["columns"].toIntVector();
    const int64_t heads = ctx->saved_data["heads"].toInt();
    const int64_t head_dim = ctx->saved_data["head_dim"].toInt();
    torch::Tensor no_mask;
    const Problem p = problem(queries, memory, {columns[0], columns[1], columns[2]}, heads, head_dim, torch::Tensor(),
                              ctx->saved_data["scale"].toDouble(), no_mask);
    const bool same = queries.is_same(memory);
    const int64_t model = heads * head_dim;
    const auto grad_context = grad_outputs[0].to(torch::kBFloat16).contiguous();
    const auto grad_queries = gradient_like(
        queries, same ? std::vector<int64_t>{columns[0], columns[1], columns[2]} : std::vector<int64_t>{columns[0]},
        model);
    const auto grad_memory = same ? grad_queries : gradient_like(memory, {columns[1], columns[2]}, model);
    const BackwardArgs args{p,
                            grad_context.data_ptr<BFloat16>(),
                            probs.data_ptr<BFloat16>(),
                            noise.numel() > 0 ? noise.data_ptr<BFloat16>() : nullptr,
                            rows_of<BFloat16>(grad_queries),
                            rows_of<BFloat16>(grad_memory)};
    for_each_head(p, queries.size(0),
                  [&](int64_t begin, int64_t end, float* scratch) { backward_heads(args, begin, end, scratch); });
    const torch::Tensor none;
    return {grad_queries, same ? none : grad_memory, none, none, none, none, none, none, none, none};
  }

 private:
  static Problem problem(const torch::Tensor& queries, const torch::Tensor& memory, HeadColumns columns, int64_t heads,
                         int64_t head_dim, const torch::Tensor& mask, double scale, torch::Tensor& mask_holder) {
    Problem p;
    p.queries = rows_of<const BFloat16>(queries);
    p.memory = rows_of<const BFloat16>(memory);
    p.columns = columns;
    p.heads = heads;
    p.head_dim = head_dim;
    p.time = queries.size(1);
    p.keys = memory.size(1);
    p.mask = mask_rows(mask, {queries.size(0), heads, p.time, p.keys}, mask_holder);
    p.scale = static_cast<float>(scale);
    return p;
  }

  template <typename Kernel>
  static void for_each_head(const Problem& p, int64_t batch, Kernel kernel) {
    team_parallel_for(0, batch, kTaskGrain, [&](int64_t begin, int64_t end) {
      std::vector<float> scratch(static_cast<size_t>(scratch_floats(p)));
      kernel(begin, end, scratch.data());
    });
  }
};

}  // namespace

bool head_attention_supported(const torch::Tensor& queries, const torch::Tensor& memory, int64_t head_dim,
                              const torch::Tensor& mask) {
  auto projection = [](const torch::Tensor& x) {
    return x.is_cpu() && x.dim() == 3 && x.scalar_type() == torch::kBFloat16 && x.stride(2) == 1;
  };
  return projection(queries) && projection(memory) && queries.size(0) == memory.size(0) &&
         head_dim % kVectorLanes == 0 && head_dim > 0 &&
         (!mask.defined() || (mask.is_cpu() && mask.scalar_type() == torch::kBool && mask.dim() == 4));
}

torch::Tensor head_attention(const torch::Tensor& queries, const torch::Tensor& memory, HeadColumns columns,
                             int64_t heads, int64_t head_dim, const torch::Tensor& mask, double scale, double dropout,
                             bool training) {
  TORCH_CHECK(head_attention_supported(queries, memory, head_dim, mask),
              "head_attention: CPU bfloat16 projections [B, T|S, *] with unit column stride, a head size that is "
              "a multiple of 16, and a 4-d bool mask or none");
  const int64_t width = heads * head_dim;
  TORCH_CHECK(columns.query >= 0 && columns.query + width <= queries.size(2) && columns.key >= 0 &&
                  columns.key + width <= memory.size(2) && columns.value >= 0 &&
                  columns.value + width <= memory.size(2),
              "head_attention: the heads' columns lie outside the projections");
  torch::Tensor noise;
  if (training && dropout > 0.0) {
    // The shape attention_softmax draws its noise in, so that a seed drops the same weights.
    noise = dropout_noise(torch::empty({queries.size(0), heads, queries.size(1), memory.size(1)}, queries.options()),
                          dropout);
  }
  return HeadAttention::apply(queries, memory, columns.query, columns.key, columns.value, heads, head_dim,
                              or_empty(mask, torch::kBool), scale, or_empty(noise, torch::kBFloat16));
}

}  // namespace tfm
