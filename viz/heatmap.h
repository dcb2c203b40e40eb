#pragma once
#include <string>
#include <utility>
#include <vector>

#include "viz/matrix.h"

namespace tfm {

/// How heat_map() draws a matrix.
struct HeatMapOptions {
  std::string title;
  std::string row_axis, col_axis;                   // axis names ("target", "source", "position"...)
  std::vector<std::string> row_labels, col_labels;  // one per row/column (subwords); empty: numbered ticks
  bool diverging = false;                           // values in [-1, 1] on blue-white-red; else [0, 1] on white-blue
  double cell_width = 18, cell_height = 18;
  bool tooltips = false;  // a <title> with the value on each cell (small matrices only)
};

/// An <svg> element (no XML declaration) drawing the matrix with its labels, title and colour
/// legend; a standalone document is svg_document(heat_map(...)). Cells of one colour (the scale
/// has 64 steps) share one <path>, so a 64 x 512 positional encoding stays a few hundred kB.
std::string heat_map(const Matrix& matrix, const HeatMapOptions& options);

/// The width and height heat_map() gives the matrix, in px.
std::pair<double, double> heat_map_size(const Matrix& matrix, const HeatMapOptions& options);

/// <svg> elements one above the other, left-aligned, in one <svg> (each given with its size):
/// a 64 x 512 encoding is wide, so two of them side by side would not fit a page.
std::string stacked(const std::vector<std::pair<std::string, std::pair<double, double>>>& pictures);

/// `body` (an <svg> element) as a standalone SVG file.
std::string svg_document(const std::string& body);

}  // namespace tfm
