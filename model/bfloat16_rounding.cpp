#include "model/bfloat16_rounding.h"

#include "runtime/float_lanes.h"
#include "runtime/vector_clones.h"

namespace tfm {
namespace {

TFM_LANE_KERNEL((void round_range(const float* from, c10::BFloat16* to, int64_t count)), int64_t i = 0;
                for (; i + kVectorLanes <= count; i += kVectorLanes) store_lanes(to + i, load_lanes<Lanes>(from + i));
                for (; i < count; ++i) to[i] = c10::BFloat16(from[i]);)

}  // namespace

void round_to_bfloat16(const float* from, c10::BFloat16* to, int64_t count) { round_range(from, to, count); }

}  // namespace tfm
