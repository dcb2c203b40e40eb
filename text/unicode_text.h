#pragma once
// Unicode operations exactly as Python 3's str methods do them. sacreBLEU is defined by Python's
// str.split(), str.rstrip(), str.lower() and the `regex` module's \p{P}, \p{S}, \p{N}; matching
// its scores to the last digit means matching those, code point by code point.
#include <string>
#include <vector>

namespace tfm {

/// True when `text` is well-formed UTF-8 as Python's strict "utf-8" codec requires (no overlong
/// forms, no surrogates, nothing above U+10FFFF). On failure `bad_offset` is the first bad byte.
bool is_valid_utf8(const std::string& text, size_t* bad_offset = nullptr);

/// `text` with every byte that is not part of a well-formed character replaced by U+FFFD (one
/// per byte), as a server must before it can put untrusted text into JSON.
std::string replace_invalid_utf8(const std::string& text);

/// Throws std::runtime_error "<where>: not valid UTF-8 (byte N of the line); ..." when `line` is not
/// well-formed UTF-8. `where` names the file and line ("corpus.de:17"). Every text reader calls this.
void check_utf8(const std::string& line, const std::string& where);

/// UTF-8 to code points. Throws std::invalid_argument on malformed UTF-8 (callers that read
/// files check is_valid_utf8 first, so they can name the file and line).
std::u32string utf8_to_u32(const std::string& text);
std::string u32_to_utf8(const std::u32string& text);

/// Python's str.isspace(): the 29 code points with bidirectional class WS, B or S, or
/// general category Zs (includes U+00A0 and U+3000, not U+200B).
bool is_python_space(char32_t c);

/// Python's str.split() with no argument: runs of whitespace separate, edges are dropped.
std::vector<std::u32string> split_python(const std::u32string& text);

/// Python's ' '.join(text.split()) on UTF-8 text: tokens separated by single spaces.
std::string normalize_spaces(const std::string& text);

/// Python's str.rstrip() with no argument, on UTF-8 text.
std::string rstrip_python(const std::string& text);

/// Python's str.lower(): full Unicode lowercase mapping, context-free except for the Greek
/// final sigma ("İ" becomes "i̇", "ΟΔΟΣ" becomes "οδος"). Locale-independent.
std::string lowercase(const std::string& text);

/// Unicode general categories: P* (punctuation), S* (symbols), N* (numbers), as \p{P}, \p{S}
/// and \p{N} in the `regex` module sacreBLEU's intl tokenizer uses.
bool is_punctuation(char32_t c);
bool is_symbol(char32_t c);
bool is_number(char32_t c);

}  // namespace tfm
