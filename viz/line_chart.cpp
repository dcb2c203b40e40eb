#include "viz/line_chart.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <limits>
#include <sstream>

#include "viz/svg.h"

namespace tfm {
namespace {

// Tableau 10: distinct hues that stay apart for the few runs a comparison has.
const char* const kPalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
constexpr double kPanelWidth = 420, kPanelHeight = 260;
constexpr double kLeft = 62, kRight = 14, kTop = 28, kBottom = 40;  // plot area margins in a panel

struct Range {
  double low = std::numeric_limits<double>::infinity(), high = -std::numeric_limits<double>::infinity();
  void add(double v) {
    low = std::min(low, v);
    high = std::max(high, v);
  }
  bool empty() const { return !(low <= high); }
};

/// A tick label: 3 significant digits ("0.0005", "1.5e-05", "2000"), no "-0".
std::string format_tick(double value) {
  std::ostringstream out;
  out << std::setprecision(3) << (value == 0 ? 0.0 : value);
  return out.str();
}

void draw_panel(std::ostringstream& svg, const ChartPanel& panel, double x0, double y0) {
  const auto transform_y = [&](double y) { return panel.log_y ? std::log10(y) : y; };
  Range xs, ys;
  for (const auto& series : panel.series) {
    for (size_t i = 0; i < series.x.size() && i < series.y.size(); ++i) {
      const double y = series.y[i];
      if (!std::isfinite(series.x[i]) || !std::isfinite(y) || (panel.log_y && y <= 0)) continue;
      xs.add(series.x[i]);
      ys.add(transform_y(y));
    }
  }
  const double w = kPanelWidth - kLeft - kRight, h = kPanelHeight - kTop - kBottom;
  const double px = x0 + kLeft, py = y0 + kTop;
  svg << "<text x=\"" << svg_number(px) << "\" y=\"" << svg_number(y0 + 16) << "\" font-weight=\"bold\">"
      << xml_escape(panel.title) << "</text>\n";
  svg << "<rect x=\"" << svg_number(px) << "\" y=\"" << svg_number(py) << "\" width=\"" << svg_number(w)
      << "\" height=\"" << svg_number(h) << "\" fill=\"none\" stroke=\"#888\"/>\n";
  if (xs.empty()) {
    svg << "<text x=\"" << svg_number(px + w / 2) << "\" y=\"" << svg_number(py + h / 2)
        << "\" text-anchor=\"middle\" fill=\"#888\">no data</text>\n";
    return;
  }
  const auto x_ticks = nice_ticks(xs.low, xs.high);
  std::vector<double> y_ticks;
  if (panel.log_y) {
    for (double e = std::floor(ys.low); e <= std::ceil(ys.high); ++e) y_ticks.push_back(e);
  } else {
    y_ticks = nice_ticks(ys.low, ys.high);
  }
  const double x_low = std::min(xs.low, x_ticks.front()), x_high = std::max(xs.high, x_ticks.back());
  const double y_low = std::min(ys.low, y_ticks.front()), y_high = std::max(ys.high, y_ticks.back());
  const auto sx = [&](double x) { return px + (x_high > x_low ? (x - x_low) / (x_high - x_low) : 0.5) * w; };
  const auto sy = [&](double y) { return py + h - (y_high > y_low ? (y - y_low) / (y_high - y_low) : 0.5) * h; };
  for (const double t : x_ticks) {
    svg << "<line x1=\"" << svg_number(sx(t)) << "\" x2=\"" << svg_number(sx(t)) << "\" y1=\"" << svg_number(py)
        << "\" y2=\"" << svg_number(py + h) << "\" stroke=\"#eee\"/>\n";
    svg << "<text x=\"" << svg_number(sx(t)) << "\" y=\"" << svg_number(py + h + 14) << "\" text-anchor=\"middle\">"
        << format_tick(t) << "</text>\n";
  }
  for (const double t : y_ticks) {
    svg << "<line x1=\"" << svg_number(px) << "\" x2=\"" << svg_number(px + w) << "\" y1=\"" << svg_number(sy(t))
        << "\" y2=\"" << svg_number(sy(t)) << "\" stroke=\"#eee\"/>\n";
    svg << "<text x=\"" << svg_number(px - 4) << "\" y=\"" << svg_number(sy(t) + 4) << "\" text-anchor=\"end\">"
        << format_tick(panel.log_y ? std::pow(10.0, t) : t) << "</text>\n";
  }
  svg << "<text x=\"" << svg_number(px + w / 2) << "\" y=\"" << svg_number(py + h + 32)
      << "\" text-anchor=\"middle\" font-style=\"italic\">" << xml_escape(panel.x_axis) << "</text>\n";
  svg << "<text x=\"" << svg_number(x0 + 12) << "\" y=\"" << svg_number(py + h / 2) << "\" transform=\"rotate(-90 "
      << svg_number(x0 + 12) << " " << svg_number(py + h / 2) << ")\" text-anchor=\"middle\" font-style=\"italic\">"
      << xml_escape(panel.y_axis) << "</text>\n";
  // The series, then the legend in the top right corner of the plot area.
  double legend_y = py + 14;
  for (const auto& series : panel.series) {
    const char* colour = kPalette[static_cast<size_t>(series.colour) % std::size(kPalette)];
    std::string points;
    std::string dots;
    for (size_t i = 0; i < series.x.size() && i < series.y.size(); ++i) {
      const double y = series.y[i];
      if (!std::isfinite(series.x[i]) || !std::isfinite(y) || (panel.log_y && y <= 0)) continue;
      const std::string x_text = svg_number(sx(series.x[i])), y_text = svg_number(sy(transform_y(y)));
      points += (points.empty() ? "" : " ") + x_text + "," + y_text;
      if (series.dashed) dots += "M" + x_text + " " + y_text + "m-2 0a2 2 0 1 0 4 0a2 2 0 1 0-4 0";
    }
    if (points.empty()) continue;
    svg << "<polyline fill=\"none\" stroke=\"" << colour << "\" stroke-width=\"1.5\""
        << (series.dashed ? " stroke-dasharray=\"5 3\"" : "") << " points=\"" << points << "\"/>\n";
    if (!dots.empty()) svg << "<path fill=\"" << colour << "\" d=\"" << dots << "\"/>\n";
    svg << "<line x1=\"" << svg_number(px + w - 150) << "\" x2=\"" << svg_number(px + w - 130) << "\" y1=\""
        << svg_number(legend_y - 4) << "\" y2=\"" << svg_number(legend_y - 4) << "\" stroke=\"" << colour
        << "\" stroke-width=\"2\"" << (series.dashed ? " stroke-dasharray=\"5 3\"" : "") << "/>\n";
    svg << "<text x=\"" << svg_number(px + w - 126) << "\" y=\"" << svg_number(legend_y) << "\">"
        << xml_escape(series.label) << "</text>\n";
    legend_y += 14;
  }
}

}  // namespace

std::vector<double> nice_ticks(double low, double high, int count) {
  if (!(high > low)) {
    const double pad = low == 0 ? 1 : std::abs(low) * 0.1;
    low -= pad;
    high += pad;
  }
  const double raw = (high - low) / std::max(count, 1);
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  double step = power;
  for (const double factor : {1.0, 2.0, 5.0, 10.0}) {
    step = factor * power;
    if (step >= raw) break;
  }
  std::vector<double> ticks;
  for (double t = std::floor(low / step) * step; t <= high + step * 1e-9; t += step) {
    ticks.push_back(std::abs(t) < step * 1e-9 ? 0 : t);
  }
  if (ticks.back() < high) ticks.push_back(ticks.back() + step);
  return ticks;
}

std::string line_charts(const std::vector<ChartPanel>& panels, int columns, const std::string& title) {
  columns = std::max(columns, 1);
  const auto rows = static_cast<int>((panels.size() + columns - 1) / columns);
  const double width = columns * kPanelWidth, height = 30 + rows * kPanelHeight;
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << svg_number(width) << "\" height=\""
      << svg_number(height) << "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  svg << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg << "<text x=\"10\" y=\"20\" font-size=\"15\" font-weight=\"bold\">" << xml_escape(title) << "</text>\n";
  for (size_t i = 0; i < panels.size(); ++i) {
    draw_panel(svg, panels[i], static_cast<double>(i % columns) * kPanelWidth,
               30 + static_cast<double>(i / columns) * kPanelHeight);
  }
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace tfm
