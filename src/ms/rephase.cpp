#include "spip/ms/rephase.hpp"

#include <cmath>
#include <complex>
#include <vector>

#include "spip/common/constants.hpp"
#include "spip/ms/ms_reader.hpp"

namespace spip::ms {
namespace {

constexpr double pi = 3.14159265358979323846;  // C++17: no std::numbers

}  // namespace

Rephasing::Rephasing(Direction from, Direction to) {
  const auto old_axes = tangent_axes(from), new_axes = tangent_axes(to);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      double dot = 0;
      for (int k = 0; k < 3; ++k) dot += new_axes[i][k] * old_axes[j][k];
      rotation_[i][j] = dot;
    }
}

void Rephasing::rotate_uvw(double* uvw_m, std::size_t rows) const {
  for (std::size_t r = 0; r < rows; ++r) {
    double* b = uvw_m + 3 * r;
    const double u = b[0], v = b[1], w = b[2];
    for (int i = 0; i < 3; ++i) b[i] = rotation_[i][0] * u + rotation_[i][1] * v + rotation_[i][2] * w;
  }
}

void Rephasing::apply(VisBlock& block) const {
  const std::size_t rows = block.num_rows();
  std::vector<double> old_w(rows);
  for (std::size_t r = 0; r < rows; ++r) old_w[r] = block.uvw_m[3 * r + 2];
  rotate_uvw(block.uvw_m.data(), rows);
  for (int c = 0; c < block.num_channels(); ++c) {
    const double per_metre = 2 * pi * block.freq_hz[static_cast<std::size_t>(c)] / speed_of_light;
#pragma omp parallel for schedule(static)
    for (std::size_t r = 0; r < rows; ++r) {
      const std::complex<double> fringe = std::polar(1.0, per_metre * (old_w[r] - block.uvw_m[3 * r + 2]));
      for (int s = 0; s < 4; ++s) {
        std::complex<float>& vis = block.vis[block.index(r, c, s)];
        vis = std::complex<float>(std::complex<double>(vis) * fringe);
      }
    }
  }
}

}  // namespace spip::ms
