#include "spip/imaging/geometry.hpp"

#include <algorithm>
#include <cmath>
#include <initializer_list>

namespace spip::imaging {

int good_fft_size(int target) {
  for (int n = (std::max(target, 1) + 7) / 8 * 8;; n += 8) {
    int rest = n;
    for (int p : {2, 3, 5, 7})
      while (rest % p == 0) rest /= p;
    if (rest == 1) return n;
  }
}

double ImageGeometry::n_minus_1(int x, int y) const {
  const double l_x = l(x), m_y = m(y);
  return std::sqrt(std::max(0.0, 1.0 - l_x * l_x - m_y * m_y)) - 1.0;
}

ImageGeometry ImageGeometry::make(int size, double cell_rad, double padding) {
  ImageGeometry g;
  g.size = size;
  g.cell_rad = cell_rad;
  g.grid_size = good_fft_size(static_cast<int>(std::ceil(size * padding)));
  return g;
}

}  // namespace spip::imaging
