#include "runtime/streaming_copy.h"

#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace tfm {

void streaming_copy(void* to, const void* from, size_t bytes) {
#if defined(__SSE2__)
  constexpr size_t kLane = sizeof(__m128i);
  if (reinterpret_cast<uintptr_t>(to) % kLane == 0 && bytes % kLane == 0) {
    auto* out = static_cast<__m128i*>(to);
    const auto* in = static_cast<const __m128i*>(from);
    const size_t lanes = bytes / kLane;
    size_t i = 0;
    for (; i + 4 <= lanes; i += 4) {  // a 64-byte line per round: loads first, then the stores
      const __m128i a = _mm_loadu_si128(in + i), b = _mm_loadu_si128(in + i + 1);
      const __m128i c = _mm_loadu_si128(in + i + 2), d = _mm_loadu_si128(in + i + 3);
      _mm_stream_si128(out + i, a);
      _mm_stream_si128(out + i + 1, b);
      _mm_stream_si128(out + i + 2, c);
      _mm_stream_si128(out + i + 3, d);
    }
    for (; i < lanes; ++i) _mm_stream_si128(out + i, _mm_loadu_si128(in + i));
    return;
  }
#endif
  std::memcpy(to, from, bytes);
}

void streaming_fence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

}  // namespace tfm
