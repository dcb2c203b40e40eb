#pragma once
#include <string>
#include <string_view>

namespace tfm {

/// Text made safe for XML (element content and attribute values): & < > " ' escaped. Every
/// label in tfm's pictures (subword pieces can be any Unicode, including '<') goes through it.
std::string xml_escape(std::string_view text);

/// A number for an SVG attribute: at most 2 decimals, no trailing zeros ("12", "3.5").
std::string svg_number(double value);

/// The colour of `value` in [0, 1] on a white-to-dark-blue scale (attention weights).
std::string sequential_colour(double value);

/// The colour of `value` in [-1, 1] on a blue-white-red scale (positional encodings, dot products).
std::string diverging_colour(double value);

/// A JSON text made safe to embed in an HTML <script> that is also well-formed XML: "</" and "]]>"
/// become JSON escapes, so neither closes the script nor its CDATA section.
std::string json_for_script(std::string json);

}  // namespace tfm
