#include "spip/imaging/w_layout.hpp"

#include <algorithm>
#include <cmath>

#include "spip/error.hpp"
#include "spip/imaging/gridding_math.hpp"
#include "spip/imaging/tile_plan.hpp"

namespace spip::imaging {

WStacking make_w_stacking(const ImageGeometry& geometry, double accuracy, bool enabled) {
  // A multiple of 8 keeps every lane of a multi-lane grid on Fft2d's 64-byte boundary.
  if (geometry.grid_size % 8 || geometry.grid_size < geometry.size)
    SPIP_THROW(Error, "grid size must be a multiple of 8 and at least the image size");
  WStacking s;
  s.enabled = enabled;
  // The aliasing bounds along u, v and w add up to at most the accuracy: u and v take
  // 40 % each, w what they leave (its planes are oversampled by 2, so it is cheap).
  const double oversampling = static_cast<double>(geometry.grid_size) / geometry.size;
  s.kernel = choose_kernel(0.4 * accuracy, oversampling);
  s.w_kernel = choose_kernel(accuracy - 2.0 * aliasing_error(s.kernel, oversampling), 2.0);
  // n - 1 over the image runs from its value at the farthest corner to 0 at the centre.
  const double l_max = (geometry.size / 2) * geometry.cell_rad;
  const double r2 = std::min(1.0, 2.0 * l_max * l_max);
  const double x_min = std::sqrt(1.0 - r2) - 1.0;
  s.x0 = 0.5 * x_min;
  s.half_range = -0.5 * x_min;
  s.dw = 0.25 / std::max(s.half_range, 1e-12);
  return s;
}

GridCorrection make_grid_correction(const ImageGeometry& geometry, const WStacking& stacking) {
  const int n = geometry.size;
  std::vector<double> psi(static_cast<std::size_t>(n));
  for (int x = 0; x < n; ++x) psi[x] = kernel_transform(stacking.kernel, x - n / 2, geometry.grid_size);
  GridCorrection g;
  g.x_shifted.resize(geometry.pixels());
  g.correction.resize(geometry.pixels());
  for (int y = 0; y < n; ++y)
    for (int x = 0; x < n; ++x) {
      const std::size_t pixel = static_cast<std::size_t>(y) * n + x;
      g.x_shifted[pixel] = geometry.n_minus_1(x, y) - stacking.x0;
      g.correction[pixel] = 1.0 / (psi[x] * psi[y]);
    }
  if (!stacking.enabled) return g;
  // psi_w is smooth in n - 1: a fine table with cubic interpolation is exact to ~1e-12.
  constexpr int table_size = 4096;
  const double half = stacking.half_range;
  const double step = std::max(2.0 * half, 1e-300) / (table_size - 1);
  std::vector<double> table(table_size + 2);
  for (int i = 0; i < table_size + 2; ++i)
    table[i] = kernel_transform(stacking.w_kernel, (-half + (i - 1) * step) * stacking.dw, 1.0);
  for (std::size_t pixel = 0; pixel < geometry.pixels(); ++pixel) {
    const double t = std::clamp((g.x_shifted[pixel] + half) / step, 0.0, table_size - 1.0);
    const int i = std::min(static_cast<int>(t), table_size - 2);
    const double f = t - i;
    const double* p = &table[i];  // p[0..3] at table positions i-1 .. i+2
    const double psi_w = p[1] + 0.5 * f * (p[2] - p[0] + f * (2 * p[0] - 5 * p[1] + 4 * p[2] - p[3] +
                                                             f * (3 * (p[1] - p[2]) + p[3] - p[0])));
    g.correction[pixel] /= psi_w;
  }
  return g;
}

double w_reach(const double* uvw_lambda, std::size_t count, const ImageGeometry& geometry) {
  double reach = 0;
  for (std::size_t k = 0; k < count; ++k) {
    const double* c = uvw_lambda + 3 * k;
    if (on_grid(c[0], c[1], geometry.uv_cell(), geometry.grid_size)) reach = std::max(reach, std::abs(c[2]));
  }
  return reach;
}

PointLayout make_point_layout(const double* uvw_lambda, std::size_t count, const ImageGeometry& geometry,
                              const WStacking& stacking, double w_reach) {
  PointLayout layout;
  layout.inside.assign(count, 1);
  layout.direct.reserve(count);
  layout.hermitian.reserve(2 * count);
  for (std::size_t k = 0; k < count; ++k) {
    const double* c = uvw_lambda + 3 * k;
    if (!on_grid(c[0], c[1], geometry.uv_cell(), geometry.grid_size)) {
      layout.inside[k] = 0;
      ++layout.outside;
      continue;
    }
    const auto k32 = static_cast<std::uint32_t>(k);
    const bool flip = c[2] < 0;
    const double sign = flip ? -1.0 : 1.0;
    layout.direct.push_back(GridPoint{sign * c[0], sign * c[1], sign * c[2], k32, flip ? 1u : 0u});
    layout.hermitian.push_back(GridPoint{c[0], c[1], c[2], k32, 0});
    layout.hermitian.push_back(GridPoint{-c[0], -c[1], -c[2], k32, 1});
    w_reach = std::max(w_reach, std::abs(c[2]));
  }
  if (!stacking.enabled) return layout;
  const WPlanes planes = w_planes(w_reach, stacking.w_kernel.support, stacking.dw);
  layout.w_first = planes.w_first;
  layout.planes = planes.planes;
  return layout;
}

}  // namespace spip::imaging
