// The WMT SGML/XML reader (`tfm eval` and the corpus readers): <seg> extraction, whitespace
// normalisation and entity decoding, on arbitrary text.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_support.h"
#include "text/segment_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    for (const auto& segment : tfm::parse_sgml_segments(text, "fuzz.sgm")) {
      // Surrounding whitespace is stripped before entities are decoded (so only a character
      // reference such as &#32; can put a space at either end).
      const bool stripped = segment.empty() || (segment.front() != ' ' && segment.back() != ' ');
      tfm::fuzz::require(stripped || text.find("&#") != std::string::npos, "segments are stripped");
    }
  } catch (const std::runtime_error&) {
  } catch (const std::invalid_argument&) {
  }
  const std::string decoded = tfm::decode_xml_entities(text);
  // Every entity is longer than the UTF-8 it stands for ("&#65536;" is 8 bytes for 4).
  tfm::fuzz::require(decoded.size() <= text.size(), "decoding never makes text longer");
  return 0;
}
