#pragma once
#include <cstdint>

#include "model/transformer.h"
#include "viz/matrix.h"

namespace tfm {

/// What `tfm plot --positions` draws from a model's position encoding (§3.5).
struct PositionMaps {
  bool sinusoidal = true;
  int64_t d_model = 0;
  Matrix encoding;  // [positions, d_model]: sinusoidal values in [-1, 1]; learned ones divided by their largest |value|
  Matrix dot;       // [positions, positions]: PE(p) . PE(q), divided by its largest value (d_model / 2 for sinusoids)
};

/// The first `positions` positions of the model's encoding (learned: at most max_positions).
PositionMaps position_maps(Transformer& model, int64_t positions);

}  // namespace tfm
