#include "viz/attention_page.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "viz/heatmap.h"
#include "viz/svg.h"

namespace tfm {
namespace {

/// The head average of one layer: [rows, cols].
Matrix head_average(const std::vector<Matrix>& heads) {
  Matrix average = heads.front();
  for (size_t h = 1; h < heads.size(); ++h) {
    for (size_t i = 0; i < average.values.size(); ++i) average.values[i] += heads[h].values[i];
  }
  for (auto& value : average.values) value /= static_cast<float>(heads.size());
  return average;
}

HeatMapOptions view_options(const AttentionView& view, const std::string& which) {
  HeatMapOptions options;
  options.title = view.title + ", " + which;
  options.row_axis = view.row_axis;
  options.col_axis = view.col_axis;
  options.row_labels = view.row_labels;
  options.col_labels = view.col_labels;
  options.tooltips = true;
  return options;
}

/// Draws the heat map the same way viz/heatmap.cpp does, for the selection made on the page.
const char* const kScript = R"JS(
function esc(s) { return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;"); }
function colour(t) {
  t = Math.max(0, Math.min(1, t));
  const c = [255 + (8 - 255) * t, 255 + (48 - 255) * t, 255 + (107 - 255) * t].map(Math.round);
  return "rgb(" + c.join(",") + ")";
}
function average(heads) {
  return heads[0].map((row, r) => row.map((_, c) => heads.reduce((s, h) => s + h[r][c], 0) / heads.length));
}
function draw() {
  const view = DATA.views[+document.getElementById("view").value];
  const layerSelect = document.getElementById("layer"), headSelect = document.getElementById("head");
  if (+layerSelect.value >= view.layers.length) layerSelect.value = view.layers.length - 1;
  const heads = view.layers[+layerSelect.value];
  const head = headSelect.value;
  const m = head === "avg" ? average(heads) : heads[+head];
  const cw = 18, ch = 18, charW = 6.6;
  const longest = a => a.reduce((n, s) => Math.max(n, s.length), 0) * charW;
  const left = 30 + longest(view.row_labels), top = 40 + longest(view.col_labels);
  const width = left + view.col_labels.length * cw + 90, height = top + view.row_labels.length * ch + 50;
  let s = '<svg xmlns="http://www.w3.org/2000/svg" width="' + width + '" height="' + height +
          '" font-family="sans-serif" font-size="11"><rect width="100%" height="100%" fill="white"/>';
  s += '<text x="' + left + '" y="18" font-size="14" font-weight="bold">' + esc(view.title + ", layer " +
       (+layerSelect.value + 1) + ", " + (head === "avg" ? "average of " + heads.length + " heads" : "head " + (+head + 1))) + "</text>";
  m.forEach((row, r) => row.forEach((v, c) => {
    s += '<rect x="' + (left + c * cw) + '" y="' + (top + r * ch) + '" width="' + cw + '" height="' + ch +
         '" fill="' + colour(v) + '"><title>' + esc(view.row_labels[r] + " \u2192 " + view.col_labels[c] + ": " + v.toFixed(3)) + "</title></rect>";
  }));
  view.row_labels.forEach((l, r) => {
    s += '<text x="' + (left - 4) + '" y="' + (top + r * ch + ch / 2 + 4) + '" text-anchor="end">' + esc(l) + "</text>";
  });
  view.col_labels.forEach((l, c) => {
    const x = left + c * cw + cw / 2 + 4, y = top - 4;
    s += '<text x="' + x + '" y="' + y + '" transform="rotate(-90 ' + x + " " + y + ')">' + esc(l) + "</text>";
  });
  s += '<text x="' + left + '" y="' + (top + m.length * ch + 18) + '" font-style="italic">rows: ' + esc(view.row_axis) +
       "; columns: " + esc(view.col_axis) + "</text></svg>";
  document.getElementById("map").innerHTML = s;
}
function fillSelectors() {
  const view = DATA.views[+document.getElementById("view").value];
  const headSelect = document.getElementById("head"), chosen = headSelect.value;
  headSelect.innerHTML = '<option value="avg">average of heads</option>' +
    view.layers[0].map((_, h) => '<option value="' + h + '">head ' + (h + 1) + "</option>").join("");
  headSelect.value = chosen && (chosen === "avg" || +chosen < view.layers[0].length) ? chosen : "avg";
  const layerSelect = document.getElementById("layer"), layer = layerSelect.value;
  layerSelect.innerHTML = view.layers.map((_, l) => '<option value="' + l + '">layer ' + (l + 1) + "</option>").join("");
  layerSelect.value = layer !== "" && +layer < view.layers.length ? layer : view.layers.length - 1;
}
document.getElementById("view").addEventListener("change", () => { fillSelectors(); draw(); });
document.getElementById("layer").addEventListener("change", draw);
document.getElementById("head").addEventListener("change", draw);
fillSelectors();
)JS";

const char* const kStyle =
    "body{font-family:sans-serif;margin:1.5em}p.text{font-size:1.1em}select{margin-right:1em}"
    "label{margin-right:.3em}#map{margin-top:1em}";

}  // namespace

nlohmann::json attention_json(const AttentionPage& page) {
  nlohmann::json views = nlohmann::json::array();
  for (const auto& view : page.views) {
    nlohmann::json layers = nlohmann::json::array();
    for (const auto& heads : view.heads) {
      nlohmann::json layer = nlohmann::json::array();
      for (const auto& m : heads) {
        nlohmann::json rows = nlohmann::json::array();
        for (int64_t r = 0; r < m.rows; ++r) {
          nlohmann::json row = nlohmann::json::array();
          for (int64_t c = 0; c < m.cols; ++c) row.push_back(std::round(m.at(r, c) * 1e5) / 1e5);
          rows.push_back(std::move(row));
        }
        layer.push_back(std::move(rows));
      }
      layers.push_back(std::move(layer));
    }
    views.push_back({{"key", view.key},
                     {"title", view.title},
                     {"row_axis", view.row_axis},
                     {"col_axis", view.col_axis},
                     {"row_labels", view.row_labels},
                     {"col_labels", view.col_labels},
                     {"layers", std::move(layers)}});
  }
  return {{"title", page.title}, {"source", page.source}, {"translation", page.translation}, {"views", views}};
}

std::string attention_html(const AttentionPage& page) {
  std::ostringstream html;
  html << "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head>\n"
       << "<meta charset=\"utf-8\"/>\n<title>" << xml_escape(page.title) << ": attention</title>\n<style>" << kStyle
       << "</style>\n</head>\n<body>\n<h1>" << xml_escape(page.title) << "</h1>\n"
       << "<p class=\"text\"><b>source</b>: " << xml_escape(page.source) << "</p>\n"
       << "<p class=\"text\"><b>translation</b>: " << xml_escape(page.translation) << "</p>\n<p>\n";
  html << "<label for=\"view\">attention</label><select id=\"view\">";
  for (size_t v = 0; v < page.views.size(); ++v) {
    html << "<option value=\"" << v << "\">" << xml_escape(page.views[v].title) << "</option>";
  }
  html << "</select>\n<label for=\"layer\">layer</label><select id=\"layer\"></select>\n"
       << "<label for=\"head\">head</label><select id=\"head\"></select>\n</p>\n<div id=\"map\">\n"
       << attention_svg(page) << "</div>\n"
       << "<p>Rows are queries, columns keys; each row's weights sum to 1. Hover a cell for its value. "
       << "The numbers are in the .json file beside this page.</p>\n";
  if (page.views.size() > 1) {
    html << "<h2>The other views: last layer, average of heads</h2>\n";
    for (size_t v = 1; v < page.views.size(); ++v) html << "<div>\n" << attention_svg(page, v) << "</div>\n";
  }
  html << "<script>//<![CDATA[\nconst DATA = " << json_for_script(attention_json(page).dump()) << ";\n"
       << kScript << "//]]></script>\n</body>\n</html>\n";
  return html.str();
}

std::string attention_svg(const AttentionPage& page, size_t view) {
  if (view >= page.views.size() || page.views[view].heads.empty()) return "";
  const auto& first = page.views[view];
  const auto& last_layer = first.heads.back();
  return heat_map(head_average(last_layer),
                  view_options(first, "layer " + std::to_string(first.heads.size()) + ", average of " +
                                          std::to_string(last_layer.size()) + " heads"));
}

std::string attention_index_html(const std::vector<std::pair<std::string, AttentionPage>>& pages) {
  std::ostringstream html;
  html
      << "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head>\n"
      << "<meta charset=\"utf-8\"/>\n<title>attention pages</title>\n<style>" << kStyle
      << "td{padding:.2em .6em;vertical-align:top}</style>\n</head>\n<body>\n<h1>Attention, sentence by sentence</h1>\n"
      << "<table>\n";
  for (const auto& [file, page] : pages) {
    html << "<tr><td><a href=\"" << xml_escape(file) << "\">" << xml_escape(page.title) << "</a></td><td>"
         << xml_escape(page.source) << "</td><td>" << xml_escape(page.translation) << "</td></tr>\n";
  }
  html << "</table>\n</body>\n</html>\n";
  return html.str();
}

}  // namespace tfm
