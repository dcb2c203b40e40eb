#include "text/unicode_text.h"

#include <unicode/ucasemap.h>
#include <unicode/uchar.h>

#include <memory>
#include <stdexcept>

namespace tfm {
namespace {

/// Decodes the code point starting at text[i]; returns its length in bytes, 0 when malformed.
/// The ranges are those of RFC 3629, which Python's strict codec enforces.
size_t decode_one(const std::string& text, size_t i, char32_t* out) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  if (lead < 0x80) {
    *out = lead;
    return 1;
  }
  // The lead byte gives the length; continuation bytes, 0xC0/0xC1 (overlong) and 0xF5..0xFF cannot lead.
  const size_t length = lead >= 0xF0 ? (lead <= 0xF4 ? 4 : 0) : lead >= 0xE0 ? 3 : lead >= 0xC2 ? 2 : 0;
  if (length == 0 || i + length > text.size()) return 0;
  static constexpr char32_t kShortest[] = {0, 0, 0x80, 0x800, 0x10000};  // smallest code point per length
  *out = lead & (0x7F >> length);
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    *out = (*out << 6) | (byte(i + k) & 0x3F);
  }
  const bool surrogate = *out >= 0xD800 && *out <= 0xDFFF;
  return (*out < kShortest[length] || *out > 0x10FFFF || surrogate) ? 0 : length;
}

void append_utf8(char32_t c, std::string& out) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

uint32_t category_mask(char32_t c) { return U_GET_GC_MASK(static_cast<UChar32>(c)); }

}  // namespace

bool is_valid_utf8(const std::string& text, size_t* bad_offset) {
  char32_t c = 0;
  for (size_t i = 0; i < text.size();) {
    const size_t length = decode_one(text, i, &c);
    if (length == 0) {
      if (bad_offset != nullptr) *bad_offset = i;
      return false;
    }
    i += length;
  }
  return true;
}

std::string replace_invalid_utf8(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  char32_t c = 0;
  for (size_t i = 0; i < text.size();) {
    const size_t length = decode_one(text, i, &c);
    if (length == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD for the one byte that cannot start a character here
      ++i;
    } else {
      out.append(text, i, length);
      i += length;
    }
  }
  return out;
}

void check_utf8(const std::string& line, const std::string& where) {
  size_t bad = 0;
  if (!is_valid_utf8(line, &bad)) {
    throw std::runtime_error(where + ": not valid UTF-8 (byte " + std::to_string(bad + 1) +
                             " of the line); convert the file to UTF-8 (e.g. iconv -f latin1 -t utf-8)");
  }
}

std::u32string utf8_to_u32(const std::string& text) {
  std::u32string out;
  out.reserve(text.size());
  char32_t c = 0;
  for (size_t i = 0; i < text.size();) {
    const size_t length = decode_one(text, i, &c);
    if (length == 0) throw std::invalid_argument("invalid UTF-8 at byte " + std::to_string(i));
    out += c;
    i += length;
  }
  return out;
}

std::string u32_to_utf8(const std::u32string& text) {
  std::string out;
  out.reserve(text.size());
  for (const char32_t c : text) append_utf8(c, out);
  return out;
}

bool is_python_space(char32_t c) {
  if (c <= 0x20) return c == 0x20 || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F);
  if (c < 0x85) return false;
  return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
         c == 0x202F || c == 0x205F || c == 0x3000;
}

std::vector<std::u32string> split_python(const std::u32string& text) {
  std::vector<std::u32string> pieces;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && is_python_space(text[i])) ++i;
    const size_t start = i;
    while (i < text.size() && !is_python_space(text[i])) ++i;
    if (i > start) pieces.emplace_back(text, start, i - start);
  }
  return pieces;
}

std::string normalize_spaces(const std::string& text) {
  std::string out;
  for (const auto& piece : split_python(utf8_to_u32(text))) {
    if (!out.empty()) out += ' ';
    out += u32_to_utf8(piece);
  }
  return out;
}

std::string rstrip_python(const std::string& text) {
  std::u32string code_points = utf8_to_u32(text);
  size_t end = code_points.size();
  while (end > 0 && is_python_space(code_points[end - 1])) --end;
  if (end == code_points.size()) return text;
  code_points.resize(end);
  return u32_to_utf8(code_points);
}

std::string lowercase(const std::string& text) {
  // "" selects ICU's root locale: no Turkish or Lithuanian rules, which is what Python does.
  UErrorCode status = U_ZERO_ERROR;
  const std::unique_ptr<UCaseMap, decltype(&ucasemap_close)> map(ucasemap_open("", 0, &status), ucasemap_close);
  if (U_FAILURE(status)) throw std::runtime_error(std::string("ICU case mapping: ") + u_errorName(status));
  // Lowercasing grows UTF-8 text by at most 3/2 ("İ", 2 bytes, becomes 3); one retry covers surprises.
  std::string out(text.size() * 3 / 2 + 4, '\0');
  for (int attempt = 0; attempt < 2; ++attempt) {
    status = U_ZERO_ERROR;
    const int32_t length = ucasemap_utf8ToLower(map.get(), out.data(), static_cast<int32_t>(out.size()), text.data(),
                                                static_cast<int32_t>(text.size()), &status);
    if (status == U_BUFFER_OVERFLOW_ERROR) {
      out.resize(static_cast<size_t>(length));
      continue;
    }
    if (U_FAILURE(status)) throw std::invalid_argument(std::string("cannot lowercase: ") + u_errorName(status));
    out.resize(static_cast<size_t>(length));
    return out;
  }
  throw std::runtime_error("ICU lowercasing did not converge");
}

bool is_punctuation(char32_t c) { return (category_mask(c) & U_GC_P_MASK) != 0; }
bool is_symbol(char32_t c) { return (category_mask(c) & U_GC_S_MASK) != 0; }
bool is_number(char32_t c) { return (category_mask(c) & U_GC_N_MASK) != 0; }

}  // namespace tfm
