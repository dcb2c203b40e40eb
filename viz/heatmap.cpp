#include "viz/heatmap.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "viz/svg.h"

namespace tfm {
namespace {

constexpr int kColourSteps = 64;
constexpr double kFontSize = 11;
constexpr double kCharWidth = 6.6;     // rough width of one character at kFontSize, for margins
constexpr double kTitleCharWidth = 8;  // the same for the title (14 px bold)

double longest_label(const std::vector<std::string>& labels) {
  size_t longest = 0;
  for (const auto& label : labels) longest = std::max(longest, label.size());
  return static_cast<double>(longest) * kCharWidth;
}

/// Which rows/columns get a numbered tick when there are no labels: about every 40 px.
int64_t tick_every(int64_t count, double cell) {
  const auto step = static_cast<int64_t>(std::ceil(40.0 / cell));
  int64_t nice = 1;
  for (const int64_t candidate : {1, 2, 5, 10, 20, 50, 100, 200, 500}) {
    nice = candidate;
    if (candidate >= step) break;
  }
  return std::max<int64_t>(1, std::min(nice, count));
}

int colour_step(double value, bool diverging) {
  const double t = diverging ? (std::clamp(value, -1.0, 1.0) + 1) / 2 : std::clamp(value, 0.0, 1.0);
  return static_cast<int>(std::lround(t * (kColourSteps - 1)));
}

std::string step_colour(int step, bool diverging) {
  const double t = static_cast<double>(step) / (kColourSteps - 1);
  return diverging ? diverging_colour(2 * t - 1) : sequential_colour(t);
}

}  // namespace

std::string svg_document(const std::string& body) { return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" + body; }

namespace {

struct Layout {
  double left, top, width, height;
};

Layout layout_of(const Matrix& m, const HeatMapOptions& o) {
  Layout l{};
  l.left = 30 + (o.row_labels.empty() ? 40 : longest_label(o.row_labels));
  l.top = 40 + (o.col_labels.empty() ? 20 : longest_label(o.col_labels));
  // Wide enough for the title too, or a narrow map clips it.
  l.width = std::max(l.left + m.cols * o.cell_width + 90,
                     l.left + kTitleCharWidth * static_cast<double>(o.title.size()) + 10);
  l.height = l.top + m.rows * o.cell_height + 50;
  return l;
}

}  // namespace

std::pair<double, double> heat_map_size(const Matrix& m, const HeatMapOptions& o) {
  const auto l = layout_of(m, o);
  return {l.width, l.height};
}

std::string stacked(const std::vector<std::pair<std::string, std::pair<double, double>>>& pictures) {
  double width = 0, height = 0;
  for (const auto& picture : pictures) {
    width = std::max(width, picture.second.first);
    height += picture.second.second;
  }
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << svg_number(width) << "\" height=\""
      << svg_number(height) << "\">\n";
  double y = 0;
  for (const auto& [body, size] : pictures) {
    // A nested <svg> is positioned by its y attribute: insert it after the tag name.
    svg << "<svg y=\"" << svg_number(y) << "\"" << body.substr(4);
    y += size.second;
  }
  svg << "</svg>\n";
  return svg.str();
}

std::string heat_map(const Matrix& m, const HeatMapOptions& o) {
  const bool labelled_rows = !o.row_labels.empty(), labelled_cols = !o.col_labels.empty();
  const auto [left, top, width, height] = layout_of(m, o);
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << svg_number(width) << "\" height=\""
      << svg_number(height) << "\" font-family=\"sans-serif\" font-size=\"" << kFontSize << "\">\n";
  svg << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg << "<text x=\"" << svg_number(left) << "\" y=\"18\" font-size=\"14\" font-weight=\"bold\">" << xml_escape(o.title)
      << "</text>\n";
  // Cells: one path per colour step; tooltips need one element per cell instead.
  // (C++17 lambdas cannot capture structured bindings, hence the init-captures)
  const auto x_of = [&, x0 = left](int64_t col) { return x0 + col * o.cell_width; };
  const auto y_of = [&, y0 = top](int64_t row) { return y0 + row * o.cell_height; };
  if (o.tooltips) {
    for (int64_t r = 0; r < m.rows; ++r) {
      for (int64_t c = 0; c < m.cols; ++c) {
        const double value = m.at(r, c);
        svg << "<rect x=\"" << svg_number(x_of(c)) << "\" y=\"" << svg_number(y_of(r)) << "\" width=\""
            << svg_number(o.cell_width) << "\" height=\"" << svg_number(o.cell_height) << "\" fill=\""
            << step_colour(colour_step(value, o.diverging), o.diverging) << "\"><title>" << svg_number(value)
            << "</title></rect>\n";
      }
    }
  } else {
    std::map<int, std::string> paths;
    for (int64_t r = 0; r < m.rows; ++r) {
      for (int64_t c = 0; c < m.cols; ++c) {
        paths[colour_step(m.at(r, c), o.diverging)] += "M" + svg_number(x_of(c)) + " " + svg_number(y_of(r)) + "h" +
                                                       svg_number(o.cell_width) + "v" + svg_number(o.cell_height) +
                                                       "h-" + svg_number(o.cell_width) + "z";
      }
    }
    for (const auto& [step, d] : paths) {
      svg << "<path fill=\"" << step_colour(step, o.diverging) << "\" d=\"" << d << "\"/>\n";
    }
  }
  // Row labels at the left, column labels rotated above.
  const int64_t row_step = labelled_rows ? 1 : tick_every(m.rows, o.cell_height);
  for (int64_t r = 0; r < m.rows; r += row_step) {
    const std::string label = labelled_rows ? o.row_labels[static_cast<size_t>(r)] : std::to_string(r);
    svg << "<text x=\"" << svg_number(left - 4) << "\" y=\"" << svg_number(y_of(r) + o.cell_height / 2 + 4)
        << "\" text-anchor=\"end\">" << xml_escape(label) << "</text>\n";
  }
  const int64_t col_step = labelled_cols ? 1 : tick_every(m.cols, o.cell_width);
  for (int64_t c = 0; c < m.cols; c += col_step) {
    const std::string label = labelled_cols ? o.col_labels[static_cast<size_t>(c)] : std::to_string(c);
    const double x = x_of(c) + o.cell_width / 2 + 4, y = top - 4;
    svg << "<text x=\"" << svg_number(x) << "\" y=\"" << svg_number(y) << "\" transform=\"rotate(-90 " << svg_number(x)
        << " " << svg_number(y) << ")\">" << xml_escape(label) << "</text>\n";
  }
  // Axis names and the colour legend.
  svg << "<text x=\"" << svg_number(left) << "\" y=\"" << svg_number(top + m.rows * o.cell_height + 18)
      << "\" font-style=\"italic\">rows: " << xml_escape(o.row_axis) << "; columns: " << xml_escape(o.col_axis)
      << "</text>\n";
  const double legend_x = left + m.cols * o.cell_width + 20, legend_h = std::min(200.0, m.rows * o.cell_height);
  for (int step = 0; step < kColourSteps; ++step) {
    const double y = top + legend_h * (kColourSteps - 1 - step) / kColourSteps;
    svg << "<rect x=\"" << svg_number(legend_x) << "\" y=\"" << svg_number(y) << "\" width=\"12\" height=\""
        << svg_number(legend_h / kColourSteps + 0.5) << "\" fill=\"" << step_colour(step, o.diverging) << "\"/>\n";
  }
  svg << "<text x=\"" << svg_number(legend_x + 16) << "\" y=\"" << svg_number(top + 8) << "\">1</text>\n";
  svg << "<text x=\"" << svg_number(legend_x + 16) << "\" y=\"" << svg_number(top + legend_h) << "\">"
      << (o.diverging ? "-1" : "0") << "</text>\n";
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace tfm
