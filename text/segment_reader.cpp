#include "text/segment_reader.h"

#include <algorithm>
#include <cstddef>
#include <stdexcept>

#include "text/line_reader.h"
#include "text/unicode_text.h"

namespace tfm {
namespace {

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string line_at(const std::string& text, size_t offset, const std::string& origin) {
  const auto newlines = std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(offset), '\n');
  return origin + ":" + std::to_string(1 + newlines);
}

/// The next "<seg" that opens a seg element (not "<segment"), or npos.
size_t find_seg_open(const std::string& text, size_t from) {
  for (size_t at = text.find("<seg", from); at != std::string::npos; at = text.find("<seg", at + 4)) {
    const char next = at + 4 < text.size() ? text[at + 4] : '\0';
    if (next == '>' || next == ' ' || next == '\t' || next == '\n' || next == '\r') return at;
  }
  return std::string::npos;
}

/// The text an entity name (between '&' and ';') stands for; false when it is not one we decode.
bool decode_entity(const std::string& name, std::string& out) {
  static const std::pair<const char*, const char*> kNamed[] = {
      {"amp", "&"}, {"lt", "<"}, {"gt", ">"}, {"quot", "\""}, {"apos", "'"}};
  for (const auto& [entity, text] : kNamed) {
    if (name == entity) {
      out = text;
      return true;
    }
  }
  if (name.size() < 2 || name[0] != '#') return false;
  const bool hex = name[1] == 'x' || name[1] == 'X';
  const std::string digits = name.substr(hex ? 2 : 1);
  const char* allowed = hex ? "0123456789abcdefABCDEF" : "0123456789";
  if (digits.empty() || digits.size() > 8 || digits.find_first_not_of(allowed) != std::string::npos) return false;
  const unsigned long code = std::stoul(digits, nullptr, hex ? 16 : 10);
  if (code == 0 || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return false;
  out = u32_to_utf8(std::u32string(1, static_cast<char32_t>(code)));
  return true;
}

}  // namespace

bool is_sgml_path(const std::string& path) {
  const std::string name = ends_with(path, ".gz") ? path.substr(0, path.size() - 3) : path;
  return ends_with(name, ".sgm") || ends_with(name, ".sgml") || ends_with(name, ".xml");
}

std::string decode_xml_entities(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const size_t semicolon = text[i] == '&' ? text.find(';', i) : std::string::npos;
    std::string decoded;
    if (semicolon != std::string::npos && semicolon - i <= 12 &&
        decode_entity(text.substr(i + 1, semicolon - i - 1), decoded)) {
      out += decoded;
      i = semicolon + 1;
    } else {
      out += text[i++];
    }
  }
  return out;
}

std::vector<std::string> parse_sgml_segments(const std::string& text, const std::string& origin) {
  if (text.find("<src ") != std::string::npos || text.find("<src>") != std::string::npos) {
    throw std::runtime_error(origin +
                             ": a WMT21+ XML test set (source, references and systems in one file) is "
                             "not supported; extract the side to score first (e.g. sacrebleu -t wmt21 -l en-de "
                             "--echo ref)");  // NOLINT(flag-name): sacrebleu's flag
  }
  std::vector<std::string> segments;
  for (size_t open = find_seg_open(text, 0); open != std::string::npos;) {
    const size_t content = text.find('>', open);
    const size_t close = content == std::string::npos ? content : text.find("</seg>", content);
    if (close == std::string::npos) {
      throw std::runtime_error(line_at(text, open, origin) + ": <seg> without a matching </seg>");
    }
    // WMT's fake SGML is cleaned as sacreBLEU cleans it: strip, then collapse whitespace.
    segments.push_back(decode_xml_entities(normalize_spaces(text.substr(content + 1, close - content - 1))));
    open = find_seg_open(text, close + 6);
  }
  return segments;
}

std::vector<std::string> read_segments(const std::string& path) {
  LineReader reader(path);
  std::vector<std::string> segments;
  std::string line;
  if (!is_sgml_path(path)) {
    while (reader.next(line)) {
      check_utf8(line, reader.where());  // Python's strict codec fails here too
      segments.push_back(rstrip_python(line));
    }
    return segments;
  }
  std::string text;
  while (reader.next(line)) {
    check_utf8(line, reader.where());  // Python's strict codec fails here too
    (text += line) += '\n';
  }
  return parse_sgml_segments(text, reader.path());
}

void check_segment_counts(const std::string& hyp_path, size_t hyp_segments, const std::string& ref_path,
                          size_t ref_segments) {
  if (hyp_segments == ref_segments) return;
  throw std::runtime_error(hyp_path + " has " + std::to_string(hyp_segments) + " segments but " + ref_path + " has " +
                           std::to_string(ref_segments) +
                           " (line i of the hypothesis must translate line i of "
                           "each reference)");
}

}  // namespace tfm
