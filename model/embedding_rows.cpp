#include "model/embedding_rows.h"
#include "runtime/step_team.h"

#include <ATen/Parallel.h>
#include <c10/util/BFloat16.h>
#include <torch/torch.h>

#include "runtime/kernels.h"

namespace tfm {
namespace {

/// Row `id` of a blocked matrix (BlockedRows), read element by element where it lies.
template <typename T>
struct BlockedRow {
  const T* lane;  // the row's first element
  int64_t block, pair;
  T operator[](int64_t d) const { return lane[(d / pair) * block * pair + d % pair]; }
};

/// Row `id` of int8 rows (BlockedRows of int8): each value times the row's factor, rounded to
/// float32 as dequantizing the whole matrix (values.to(float32) * scales[:, None]) rounds it.
struct ScaledInt8Row {
  const int8_t* values;
  float factor;
  float operator[](int64_t d) const { return static_cast<float>(values[d]) * factor; }
};

/// out[n] = T(T(token(ids[n])[d] * scale) + T(positions[position_rows[n]][d])), every operation in
/// float and rounded to T where LibTorch's ops round their results. token(id) gives a row that
/// reads its d-th element with [d]: a pointer into a [V, D] table, or a BlockedRow.
template <typename T, typename P, typename TokenRow>
void embed(TokenRow token_row, int64_t vocabulary, int64_t dim, const torch::Tensor& ids, float scale,
           const torch::Tensor& positions, const std::vector<int64_t>& position_rows, torch::Tensor& out) {
  const int64_t count = ids.numel();
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
      const auto token = token_row(id[n]);
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

/// The checks both embed_rows share; the result's [B, T, D] shape.
std::vector<int64_t> checked_shape(const torch::Tensor& ids, int64_t dim, const torch::Tensor& positions,
                                   const std::vector<int64_t>& position_rows) {
  TORCH_CHECK(static_cast<int64_t>(position_rows.size()) == ids.numel(), "embed_rows: ", position_rows.size(),
              " position rows for ", ids.numel(), " ids");
  for (const int64_t row : position_rows) {
    TORCH_CHECK(row >= 0 && row < positions.size(0), "embed_rows: position row ", row, " of ", positions.size(0));
  }
  auto sizes = ids.sizes().vec();
  sizes.push_back(dim);
  return sizes;
}

/// embed() over make_row(an element of the table's type)'s rows, dispatched on the table's dtype and the positions'.
template <typename MakeRow>
void embed_any(torch::ScalarType dtype, MakeRow make_row, int64_t vocabulary, int64_t dim, const torch::Tensor& ids,
               double scale, const torch::Tensor& positions, const std::vector<int64_t>& position_rows,
               torch::Tensor& out) {
  // LibTorch multiplies a float or bfloat16 tensor by a double scalar in float.
  const auto factor = static_cast<float>(scale);
  if (dtype == torch::kFloat32) {
    embed<float, float>(make_row(float{}), vocabulary, dim, ids, factor, positions, position_rows, out);
  } else if (positions.scalar_type() == torch::kFloat32) {
    embed<c10::BFloat16, float>(make_row(c10::BFloat16{}), vocabulary, dim, ids, factor, positions, position_rows, out);
  } else {
    embed<c10::BFloat16, c10::BFloat16>(make_row(c10::BFloat16{}), vocabulary, dim, ids, factor, positions,
                                        position_rows, out);
  }
}

/// What both embed_rows_fit ask of the ids and positions beside a table of `dim` columns in
/// `dtype` (float32 or bfloat16).
bool ids_and_positions_fit(torch::ScalarType dtype, int64_t dim, const torch::Tensor& ids,
                           const torch::Tensor& positions) {
  return (dtype == torch::kFloat32 || dtype == torch::kBFloat16) && ids.is_cpu() && positions.is_cpu() &&
         ids.scalar_type() == torch::kLong && ids.is_contiguous() && positions.dim() == 2 &&
         positions.is_contiguous() && positions.size(1) == dim &&
         (positions.scalar_type() == torch::kFloat32 || positions.scalar_type() == dtype);
}

}  // namespace

bool embed_rows_fit(const torch::Tensor& table, const torch::Tensor& ids, const torch::Tensor& positions) {
  return fused_kernels() && table.is_cpu() && table.dim() == 2 && table.is_contiguous() &&
         ids_and_positions_fit(table.scalar_type(), table.size(1), ids, positions) &&
         !(torch::GradMode::is_enabled() && (table.requires_grad() || positions.requires_grad()));
}

torch::Tensor embed_rows(const torch::Tensor& table, const torch::Tensor& ids, double scale,
                         const torch::Tensor& positions, const std::vector<int64_t>& position_rows) {
  TORCH_CHECK(embed_rows_fit(table, ids, positions), "embed_rows: unsupported tensors (see embed_rows_fit)");
  const int64_t dim = table.size(1);
  auto out = torch::empty(checked_shape(ids, dim, positions, position_rows), table.options());  // [B, T, D]
  const auto row_of = [&](auto element) {
    using T = decltype(element);
    const T* first = table.data_ptr<T>();
    return [first, dim](int64_t id) { return first + id * dim; };
  };
  embed_any(table.scalar_type(), row_of, table.size(0), dim, ids, scale, positions, position_rows, out);
  return out;
}

namespace {

bool is_int8(const BlockedRows& table) { return table.dtype == torch::kChar; }

/// The dtype embed_rows() computes and returns from `table`'s rows: int8 rows give float32.
torch::ScalarType embedded_dtype(const BlockedRows& table) { return is_int8(table) ? torch::kFloat32 : table.dtype; }

}  // namespace

bool embed_rows_fit(const BlockedRows& table, const torch::Tensor& ids, const torch::Tensor& positions) {
  // int8 rows lie one after another (ScaledInt8Row), each with its factor.
  const bool int8_fits = !is_int8(table) || (table.block == 1 && table.pair == 1 && table.scales.defined() &&
                                             table.scales.is_cpu() && table.scales.scalar_type() == torch::kFloat32 &&
                                             table.scales.is_contiguous() && table.scales.numel() == table.rows);
  return table.data != nullptr && int8_fits && ids_and_positions_fit(embedded_dtype(table), table.dim, ids, positions);
}

torch::Tensor embed_rows(const BlockedRows& table, const torch::Tensor& ids, double scale,
                         const torch::Tensor& positions, const std::vector<int64_t>& position_rows) {
  TORCH_CHECK(embed_rows_fit(table, ids, positions), "embed_rows: unsupported blocked rows (see embed_rows_fit)");
  auto out = torch::empty(checked_shape(ids, table.dim, positions, position_rows),
                          torch::TensorOptions().dtype(embedded_dtype(table)));  // [B, T, D]
  if (is_int8(table)) {
    const auto* first = static_cast<const int8_t*>(table.data);
    const float* factors = table.scales.data_ptr<float>();
    const auto row_of = [first, factors, &table](int64_t id) {
      return ScaledInt8Row{first + table.offset(id, 0), factors[id]};
    };
    embed<float, float>(row_of, table.rows, table.dim, ids, static_cast<float>(scale), positions, position_rows, out);
    return out;
  }
  const auto row_of = [&](auto element) {
    using T = decltype(element);
    const T* first = static_cast<const T*>(table.data);
    return [first, &table](int64_t id) { return BlockedRow<T>{first + table.offset(id, 0), table.block, table.pair}; };
  };
  embed_any(table.dtype, row_of, table.rows, table.dim, ids, scale, positions, position_rows, out);
  return out;
}

}  // namespace tfm
