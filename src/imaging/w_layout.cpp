#include "spip/imaging/w_layout.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "spip/error.hpp"
#include "spip/imaging/gridding_math.hpp"
#include "spip/imaging/tile_plan.hpp"

namespace spip::imaging {

WStacking make_w_stacking(const ImageGeometry& geometry, double accuracy, bool enabled) {
  if (geometry.grid_size % 2 || geometry.grid_size < geometry.size)
    SPIP_THROW(Error, "grid size must be even and at least the image size");
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
      const double l = geometry.l(x), m = geometry.m(y);
      const std::size_t pixel = static_cast<std::size_t>(y) * n + x;
      g.x_shifted[pixel] = std::sqrt(std::max(0.0, 1.0 - l * l - m * m)) - 1.0 - stacking.x0;
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

WPlaneBounds PointLayout::plane_bounds(int p, const WStacking& stacking) const {
  if (!stacking.enabled) return {-std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity()};
  const double reach = 0.5 * stacking.w_kernel.support * stacking.dw;
  const double w_plane = w_first + p * stacking.dw;
  return {w_plane - reach, w_plane + reach};
}

std::pair<std::size_t, std::size_t> PointLayout::plane_range(const std::vector<GridPoint>& points, int p,
                                                             const WStacking& stacking) const {
  if (!stacking.enabled) return {0, points.size()};
  const WPlaneBounds bounds = plane_bounds(p, stacking);
  const auto lo = std::partition_point(points.begin(), points.end(),
                                       [&](const GridPoint& q) { return q.w < bounds.low; });
  const auto hi = std::partition_point(lo, points.end(), [&](const GridPoint& q) { return q.w <= bounds.high; });
  return {static_cast<std::size_t>(lo - points.begin()), static_cast<std::size_t>(hi - points.begin())};
}

PointLayout make_point_layout(const double* uvw_lambda, std::size_t count, const ImageGeometry& geometry,
                              const WStacking& stacking, bool sort_by_w) {
  PointLayout layout;
  layout.inside.assign(count, 1);
  layout.direct.reserve(count);
  layout.hermitian.reserve(2 * count);
  double w_reach = 0;
  for (std::size_t k = 0; k < count; ++k) {
    const double* c = uvw_lambda + 3 * k;
    if (!on_grid(c[0], c[1], geometry.uv_cell(), geometry.grid_size)) {
      layout.inside[k] = 0;
      ++layout.outside;
      continue;
    }
    const auto k32 = static_cast<std::uint32_t>(k);
    layout.direct.push_back(GridPoint{c[0], c[1], c[2], k32, 0});
    layout.hermitian.push_back(GridPoint{c[0], c[1], c[2], k32, 0});
    layout.hermitian.push_back(GridPoint{-c[0], -c[1], -c[2], k32, 1});
    w_reach = std::max(w_reach, std::abs(c[2]));
  }
  if (!stacking.enabled) return layout;
  if (sort_by_w) {
    const auto by_w = [](const GridPoint& a, const GridPoint& b) { return a.w < b.w; };
    std::sort(layout.direct.begin(), layout.direct.end(), by_w);
    std::sort(layout.hermitian.begin(), layout.hermitian.end(), by_w);
  }
  const WPlanes planes = w_planes(w_reach, stacking.w_kernel.support, stacking.dw);
  layout.w_first = planes.w_first;
  layout.planes = planes.planes;
  return layout;
}

TiledPoints tile_points(const std::vector<GridPoint>& points, const ImageGeometry& geometry, const EsKernel& kernel,
                        long long max_chunk) {
  const int n = geometry.grid_size, tiles = tiles_per_side(n);
  const double uv_cell = geometry.uv_cell();
  std::vector<int> tile(points.size());
  std::vector<long long> tile_start(static_cast<std::size_t>(tiles) * tiles + 1, 0);
  for (std::size_t i = 0; i < points.size(); ++i) {
    const int first_u = footprint_first(grid_position_u(points[i].u, uv_cell, n), kernel.support);
    const int first_v = footprint_first(grid_position_v(points[i].v, uv_cell, n), kernel.support);
    tile[i] = tile_of(first_v, n) * tiles + tile_of(first_u, n);
    ++tile_start[tile[i] + 1];
  }
  for (std::size_t t = 1; t < tile_start.size(); ++t) tile_start[t] += tile_start[t - 1];
  // A counting sort: stable, so w order survives within each tile.
  TiledPoints tiled;
  std::vector<long long> next(tile_start.begin(), tile_start.end() - 1);
  tiled.points.resize(points.size());
  for (std::size_t i = 0; i < points.size(); ++i) tiled.points[next[tile[i]]++] = points[i];
  for (int t = 0; t < tiles * tiles; ++t)
    for (long long at = tile_start[t]; at < tile_start[t + 1]; at += max_chunk) {
      tiled.chunk_start.push_back(at);
      tiled.chunk_tile.push_back(t);
    }
  tiled.chunk_start.push_back(static_cast<long long>(points.size()));
  return tiled;
}

std::size_t max_chunks(std::size_t count, const ImageGeometry& geometry, long long max_chunk) {
  const std::size_t tiles = tiles_per_side(geometry.grid_size);
  return count / static_cast<std::size_t>(max_chunk) + std::min(count, tiles * tiles);
}

}  // namespace spip::imaging
