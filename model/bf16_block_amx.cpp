#include "model/bf16_block_amx.h"

#include <c10/util/Exception.h>

#include "runtime/capabilities.h"
#include "runtime/vector_clones.h"

#ifdef TFM_EXTENSION_KERNELS
#include <immintrin.h>
#define TFM_TILES_TARGET __attribute__((target("amx-tile,amx-bf16")))
#endif

namespace tfm {
namespace {

constexpr int64_t kBlock = 64;                     // SmallRowsProduct's outputs per block
constexpr int64_t kTileInputs = 32;                // inputs a tile multiply sums: 16 pairs
constexpr int64_t kTileOutputs = 16;               // outputs of one weight tile
constexpr int64_t kPairRowBytes = kBlock * 2 * 2;  // one pair of inputs across the block, bytes

#ifdef TFM_EXTENSION_KERNELS

/// The tile configuration (palette 1): tiles 0-3 the block's four [rows, 16] float32 sums, tile 4
/// the [rows, 32] inputs, tiles 5-7 [32, 16] weight tiles (16 rows of 16 pairs).
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t bytes_per_row[16] = {};
  uint8_t rows[16] = {};
};
static_assert(sizeof(TileConfig) == 64, "LDTILECFG reads 64 bytes");

TFM_TILES_TARGET void load_tiles(int64_t rows) {
  TileConfig config;
  for (int tile = 0; tile < 5; ++tile) {
    config.rows[tile] = static_cast<uint8_t>(rows);
    config.bytes_per_row[tile] = 64;
  }
  for (int tile = 5; tile < 8; ++tile) {
    config.rows[tile] = kTileInputs / 2;
    config.bytes_per_row[tile] = 64;
  }
  // Not GCC 12's _tile_loadconfig: its asm names only the first 8 bytes as read, and the compiler
  // drops the stores to the rest.
  __asm__ volatile("ldtilecfg %0" : : "m"(config));
}

TFM_TILES_TARGET void release_tiles() { _tile_release(); }

TFM_TILES_TARGET void multiply_block(const c10::BFloat16* block, const c10::BFloat16* x, int64_t in, int64_t groups,
                                     int64_t group_rows, float* acc) {
  const char* weight = reinterpret_cast<const char*>(block);
  const auto x_stride = static_cast<int64_t>(in * sizeof(c10::BFloat16));
  constexpr auto acc_stride = static_cast<int64_t>(kBlock * sizeof(float));
  // Group by group: a block's weight (64-256 KiB at 512-2048 inputs) is read again from L2.
  for (int64_t group = 0; group < groups; ++group) {
    const c10::BFloat16* inputs = x + group * group_rows * in;
    float* sums = acc + group * group_rows * kBlock;
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (int64_t k = 0; k < in; k += kTileInputs) {
      const char* pairs = weight + k / 2 * kPairRowBytes;  // 16 pairs of inputs from k on
      _tile_loadd(4, inputs + k, x_stride);
      _tile_loadd(5, pairs, kPairRowBytes);
      _tile_dpbf16ps(0, 4, 5);
      _tile_loadd(6, pairs + kTileOutputs * 4, kPairRowBytes);
      _tile_dpbf16ps(1, 4, 6);
      _tile_loadd(7, pairs + 2 * kTileOutputs * 4, kPairRowBytes);
      _tile_dpbf16ps(2, 4, 7);
      _tile_loadd(5, pairs + 3 * kTileOutputs * 4, kPairRowBytes);
      _tile_dpbf16ps(3, 4, 5);
    }
    _tile_stored(0, sums, acc_stride);
    _tile_stored(1, sums + kTileOutputs, acc_stride);
    _tile_stored(2, sums + 2 * kTileOutputs, acc_stride);
    _tile_stored(3, sums + 3 * kTileOutputs, acc_stride);
  }
}

#endif

}  // namespace

bool bf16_block_amx_kernels() {
#ifdef TFM_EXTENSION_KERNELS
  return cpu_has_bf16_tiles();
#else
  return false;
#endif
}

Bf16Tiles::Bf16Tiles(int64_t rows) {
  TORCH_CHECK(bf16_block_amx_kernels() && rows >= 1 && rows <= kTileRows, "Bf16Tiles: AMX-BF16 and 1 to ", kTileRows,
              " rows are needed");
#ifdef TFM_EXTENSION_KERNELS
  load_tiles(rows);
#endif
}

Bf16Tiles::~Bf16Tiles() {
#ifdef TFM_EXTENSION_KERNELS
  release_tiles();
#endif
}

void multiply_bf16_block_amx(const c10::BFloat16* block, const c10::BFloat16* x, int64_t in, int64_t groups,
                             int64_t group_rows, float* acc) {
  TORCH_CHECK(in % kTileInputs == 0 && groups >= 1 && group_rows >= 1 && group_rows <= kTileRows,
              "multiply_bf16_block_amx: inputs in a multiple of ", kTileInputs, " and 1 to ", kTileRows,
              " rows a group are needed");
#ifdef TFM_EXTENSION_KERNELS
  multiply_block(block, x, in, groups, group_rows, acc);
#else
  (void)block, (void)x, (void)acc;
#endif
}

}  // namespace tfm
