#include "runtime/crc32.h"

#include <libdeflate.h>

namespace tfm {

uint32_t crc32_of(uint32_t crc, const void* bytes, size_t size) {
  if (size == 0) return crc;
  return libdeflate_crc32(crc, bytes, size);
}

}  // namespace tfm
