#include "metrics/bleu_tokenizers.h"

#include <stdexcept>

#include "text/option_names.h"
#include "text/unicode_text.h"

namespace tfm {
namespace {

using CharClass = bool (*)(char32_t);

/// Python's str.replace: every non-overlapping occurrence, left to right.
void replace_all(std::u32string& text, const std::u32string& from, const std::u32string& to) {
  for (size_t at = text.find(from); at != std::u32string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
}

/// re.sub(r'(X)', r' \1 ', text) for a one-character class X.
std::u32string pad_each(const std::u32string& text, CharClass in_class) {
  std::u32string out;
  out.reserve(text.size() * 2);
  for (const char32_t c : text) {
    if (in_class(c)) {
      out += U' ';
      out += c;
      out += U' ';
    } else {
      out += c;
    }
  }
  return out;
}

/// re.sub(r'(A)(B)', r'\1 \2 ', text), or r' \1 \2' with `space_first`. A match consumes both
/// characters and the search resumes after them, so in "a.." only the first dot is split off
/// by the '([^0-9])([.,])' rule: this is how sacreBLEU's regular expressions behave.
std::u32string split_pairs(const std::u32string& text, CharClass first, CharClass second, bool space_first) {
  std::u32string out;
  out.reserve(text.size() * 2);
  size_t i = 0;
  while (i < text.size()) {
    if (i + 1 < text.size() && first(text[i]) && second(text[i + 1])) {
      if (space_first) out += U' ';
      out += text[i];
      out += U' ';
      out += text[i + 1];
      if (!space_first) out += U' ';
      i += 2;
    } else {
      out += text[i++];
    }
  }
  return out;
}

// Character classes of mteval-v13a as sacreBLEU writes them. Python's [0-9] is ASCII only.
bool is_ascii_digit(char32_t c) { return c >= U'0' && c <= U'9'; }
bool not_ascii_digit(char32_t c) { return !is_ascii_digit(c); }
bool is_period_or_comma(char32_t c) { return c == U'.' || c == U','; }
bool is_hyphen(char32_t c) { return c == U'-'; }

/// [\{-\~\[-\` -\&\(-\+\:-\@\/]: ASCII punctuation except . , ' and - (handled by context), plus space.
bool is_13a_isolated(char32_t c) {
  return (c >= U'{' && c <= U'~') || (c >= U'[' && c <= U'`') || (c >= U' ' && c <= U'&') || (c >= U'(' && c <= U'+') ||
         (c >= U':' && c <= U'@') || c == U'/';
}

bool not_number(char32_t c) { return !is_number(c); }

std::u32string tokenize_13a(std::u32string line) {
  replace_all(line, U"<skipped>", U"");
  replace_all(line, U"-\n", U"");
  replace_all(line, U"\n", U" ");
  // Only these four entities, in this order: "&amp;lt;" ends as "<", "&amp;quot;" as "&quot;".
  replace_all(line, U"&quot;", U"\"");
  replace_all(line, U"&amp;", U"&");
  replace_all(line, U"&lt;", U"<");
  replace_all(line, U"&gt;", U">");
  // The padding lets a final "." split off even after a number ("2020." -> "2020 .").
  line = pad_each(U" " + line + U" ", is_13a_isolated);
  line = split_pairs(line, not_ascii_digit, is_period_or_comma, false);  // period/comma unless after a digit
  line = split_pairs(line, is_period_or_comma, not_ascii_digit, true);   // ... unless before a digit
  return split_pairs(line, is_ascii_digit, is_hyphen, false);            // dash after a digit
}

/// mteval-v14's international tokenization. Without 13a's padding, a final "2020." keeps its dot.
std::u32string tokenize_intl(const std::u32string& line) {
  std::u32string out = split_pairs(line, not_number, is_punctuation, false);  // punctuation after a non-number
  out = split_pairs(out, is_punctuation, not_number, true);                   // punctuation before a non-number
  return pad_each(out, is_symbol);                                            // symbols always
}

}  // namespace

BleuTokenizer parse_bleu_tokenizer(const std::string& name) {
  if (name == "13a") return BleuTokenizer::k13a;
  if (name == "intl") return BleuTokenizer::kIntl;
  if (name == "char") return BleuTokenizer::kChar;
  if (name == "none") return BleuTokenizer::kNone;
  throw std::invalid_argument(option_name("tokenize") + " " + name +
                              ": unknown tokenizer (use 13a, intl, char or none)");
}

std::string tokenizer_name(BleuTokenizer tokenizer) {
  switch (tokenizer) {
    case BleuTokenizer::k13a: return "13a";
    case BleuTokenizer::kIntl: return "intl";
    case BleuTokenizer::kChar: return "char";
    case BleuTokenizer::kNone: return "none";
  }
  throw std::logic_error("unknown BleuTokenizer");
}

std::vector<std::string> tokenize_to_tokens(BleuTokenizer tokenizer, const std::string& segment) {
  const std::u32string text = utf8_to_u32(segment);
  std::vector<std::u32string> pieces;
  switch (tokenizer) {
    case BleuTokenizer::k13a: pieces = split_python(tokenize_13a(text)); break;
    case BleuTokenizer::kIntl: pieces = split_python(tokenize_intl(text)); break;
    case BleuTokenizer::kNone: pieces = split_python(text); break;
    case BleuTokenizer::kChar:
      // sacreBLEU joins every character with spaces; splitting again drops the whitespace ones.
      for (const char32_t c : text) {
        if (!is_python_space(c)) pieces.emplace_back(1, c);
      }
      break;
  }
  std::vector<std::string> tokens;
  tokens.reserve(pieces.size());
  for (const auto& piece : pieces) tokens.push_back(u32_to_utf8(piece));
  return tokens;
}

std::string tokenize(BleuTokenizer tokenizer, const std::string& segment) {
  std::string out;
  for (const auto& token : tokenize_to_tokens(tokenizer, segment)) {
    if (!out.empty()) out += ' ';
    out += token;
  }
  return out;
}

}  // namespace tfm
