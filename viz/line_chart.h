#pragma once
#include <string>
#include <vector>

namespace tfm {

/// One line of a chart: points (x[i], y[i]); non-finite points are skipped.
struct Series {
  std::string label;
  std::vector<double> x, y;
  int colour = 0;       // index into the palette (one colour per run)
  bool dashed = false;  // validation curves: dashed with dots at the points
};

/// One chart: axes with ticks and grid, its series and a legend.
struct ChartPanel {
  std::string title, x_axis, y_axis;
  std::vector<Series> series;
  bool log_y = false;  // perplexity falls by orders of magnitude
};

/// Panels in a grid of `columns`, under `title`: an <svg> element (svg_document() makes a file).
std::string line_charts(const std::vector<ChartPanel>& panels, int columns, const std::string& title);

/// "Nice" tick values covering [low, high] (steps of 1, 2 or 5 times a power of ten), about `count`.
std::vector<double> nice_ticks(double low, double high, int count = 5);

}  // namespace tfm
