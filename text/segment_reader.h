#pragma once
// Hypothesis and reference files, read the way sacreBLEU's command line reads them, so that
// the same files give the same segments (and so the same scores).
#include <cstddef>
#include <string>
#include <vector>

namespace tfm {

/// The segments of a hypothesis or reference file.
/// - Plain text, gzip-compressed or not ("-" reads stdin): one segment per line. Lines end at
///   "\n" only and lose trailing whitespace (Python's str.rstrip()); an empty line is an empty
///   segment.
/// - WMT SGML/XML sets (the name ends in .sgm, .sgml or .xml, optionally followed by .gz): the
///   text of each <seg ...>...</seg> in file order, with surrounding whitespace removed, inner
///   runs of whitespace collapsed to one space, then XML entities decoded.
/// Throws std::runtime_error naming the file (and line) when it cannot be read, is not UTF-8,
/// or has a broken <seg>.
std::vector<std::string> read_segments(const std::string& path);

/// True when read_segments() treats `path` as SGML/XML.
bool is_sgml_path(const std::string& path);

/// The <seg> texts of SGML/XML `text`; `origin` names the file in error messages. WMT21+ files,
/// which hold source, references and system outputs together, are rejected (std::runtime_error).
std::vector<std::string> parse_sgml_segments(const std::string& text, const std::string& origin);

/// Decodes &amp; &lt; &gt; &quot; &apos; and character references (&#233; &#xE9;) in one pass
/// (so "&amp;lt;" becomes "&lt;"); anything else, such as "&nbsp;", is left as it is.
std::string decode_xml_entities(const std::string& text);

/// Throws std::runtime_error naming both files and their segment counts when they differ.
void check_segment_counts(const std::string& hyp_path, size_t hyp_segments, const std::string& ref_path,
                          size_t ref_segments);

}  // namespace tfm
