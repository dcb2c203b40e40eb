#pragma once
#include <cstdint>
#include <vector>

namespace tfm {

/// A dense row-major matrix of floats: what the pictures draw, free of any tensor library.
struct Matrix {
  int64_t rows = 0, cols = 0;
  std::vector<float> values;  // rows * cols, row after row

  float at(int64_t row, int64_t col) const { return values[static_cast<size_t>(row * cols + col)]; }
};

}  // namespace tfm
