#include "model/embedding_rows.h"
#include "runtime/step_team.h"

#include <ATen/Parallel.h>
#include <c10/util/BFloat16.h>
#include <torch/torch.h>

#include "runtime/kernels.h"

namespace tfm {
namespace {

/// out[n] = T(T(tokens[ids[n]] * scale) + T(positions[position_rows[n]])), every operation in
/// float and rounded to T where LibTorch's ops round their results.
template <typename T, typename P>
void embed(const torch::Tensor& table, const torch::Tensor& ids, float scale, const torch::Tensor& positions,
           const std::vector<int64_t>& position_rows, torch::Tensor& out) {
  const int64_t vocabulary = table.size(0), dim = table.size(1), count = ids.numel();
  const auto* tokens = table.data_ptr<T>();
  const auto* id = ids.data_ptr<int64_t>();
  const auto* position = positions.data_ptr<P>();
  auto* result = out.data_ptr<T>();
  for (int64_t n = 0; n < count; ++n) {
    TORCH_CHECK_INDEX(id[n] >= 0 && id[n] < vocabulary, "embed_rows: id ", id[n], " is outside the table's ",
                      vocabulary, " rows");
  }
  // As LibTorch parallelizes an elementwise op: a decoding step's few rows stay on this thread.
  team_parallel_for(0, count, std::max<int64_t>(1, at::internal::GRAIN_SIZE / dim), [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      const T* token = tokens + id[n] * dim;
      const P* at = position + position_rows[n] * dim;
      T* row = result + n * dim;
      for (int64_t d = 0; d < dim; ++d) {
        const T scaled = static_cast<T>(static_cast<float>(token[d]) * scale);
        const T placed = static_cast<T>(static_cast<float>(at[d]));
        row[d] = static_cast<T>(static_cast<float>(scaled) + static_cast<float>(placed));
      }
    }
  });
}

}  // namespace

bool embed_rows_fit(const torch::Tensor& table, const torch::Tensor& ids, const torch::Tensor& positions) {
  const auto dtype = table.scalar_type();
  return fused_kernels() && table.is_cpu() && ids.is_cpu() && positions.is_cpu() && table.dim() == 2 &&
         table.is_contiguous() && (dtype == torch::kFloat32 || dtype == torch::kBFloat16) &&
         ids.scalar_type() == torch::kLong && ids.is_contiguous() && positions.dim() == 2 &&
         positions.is_contiguous() && positions.size(1) == table.size(1) &&
         (positions.scalar_type() == torch::kFloat32 || positions.scalar_type() == dtype) &&
         !(torch::GradMode::is_enabled() && (table.requires_grad() || positions.requires_grad()));
}

torch::Tensor embed_rows(const torch::Tensor& table, const torch::Tensor& ids, double scale,
                         const torch::Tensor& positions, const std::vector<int64_t>& position_rows) {
  TORCH_CHECK(embed_rows_fit(table, ids, positions), "embed_rows: unsupported tensors (see embed_rows_fit)");
  TORCH_CHECK(static_cast<int64_t>(position_rows.size()) == ids.numel(), "embed_rows: ", position_rows.size(),
              " position rows for ", ids.numel(), " ids");
  for (const int64_t row : position_rows) {
    TORCH_CHECK(row >= 0 && row < positions.size(0), "embed_rows: position row ", row, " of ", positions.size(0));
  }
  auto sizes = ids.sizes().vec();
  sizes.push_back(table.size(1));
  auto out = torch::empty(sizes, table.options());  // [B, T, D]
  // LibTorch multiplies a float or bfloat16 tensor by a double scalar in float.
  const auto factor = static_cast<float>(scale);
  const bool float_positions = positions.scalar_type() == torch::kFloat32;
  if (table.scalar_type() == torch::kFloat32) {
    embed<float, float>(table, ids, factor, positions, position_rows, out);
  } else if (float_positions) {
    embed<c10::BFloat16, float>(table, ids, factor, positions, position_rows, out);
  } else {
    embed<c10::BFloat16, c10::BFloat16>(table, ids, factor, positions, position_rows, out);
  }
  return out;
}

}  // namespace tfm
