#include "viz/svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace tfm {

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default:
        // Control characters other than tab and newline are not allowed in XML 1.0 at all.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n') {
          out += "\xEF\xBF\xBD";  // U+FFFD
        } else {
          out += c;
        }
    }
  }
  return out;
}

std::string svg_number(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.2f", std::isfinite(value) ? value : 0.0);
  std::string text(buffer);
  while (text.back() == '0') text.pop_back();
  if (text.back() == '.') text.pop_back();
  return text == "-0" ? "0" : text;
}

namespace {

std::string rgb(double r, double g, double b) {
  char buffer[8];
  std::snprintf(buffer, sizeof(buffer), "#%02x%02x%02x", static_cast<int>(std::lround(r)),
                static_cast<int>(std::lround(g)), static_cast<int>(std::lround(b)));
  return buffer;
}

}  // namespace

std::string sequential_colour(double value) {
  const double t = std::clamp(std::isfinite(value) ? value : 0.0, 0.0, 1.0);
  // white (255, 255, 255) -> dark blue (8, 48, 107), ColorBrewer's Blues end points
  return rgb(255 + (8 - 255) * t, 255 + (48 - 255) * t, 255 + (107 - 255) * t);
}

std::string diverging_colour(double value) {
  const double t = std::clamp(std::isfinite(value) ? value : 0.0, -1.0, 1.0);
  // blue (33, 102, 172) at -1, white at 0, red (178, 24, 43) at +1: ColorBrewer's RdBu ends
  if (t < 0) return rgb(255 + (33 - 255) * -t, 255 + (102 - 255) * -t, 255 + (172 - 255) * -t);
  return rgb(255 + (178 - 255) * t, 255 + (24 - 255) * t, 255 + (43 - 255) * t);
}

std::string json_for_script(std::string json) {
  for (size_t at = 0; (at = json.find("</", at)) != std::string::npos; at += 3) json.replace(at, 2, "<\\/");
  for (size_t at = 0; (at = json.find("]]>", at)) != std::string::npos; at += 7) json.replace(at, 3, "]]\\u003e");
  return json;
}

}  // namespace tfm
