#pragma once
// What a gridder needs before it touches a grid, computed once on the host for both
// backends: the kernels and w-plane spacing of an image (WStacking), the grid
// correction per pixel, and the per-channel list of points sorted by w with the
// planes they span (PointLayout). The CPU Gridder and the CUDA gridder share it, so
// both grid the same points into the same planes.
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "spip/imaging/es_kernel.hpp"
#include "spip/imaging/geometry.hpp"

namespace spip::imaging {

struct WStacking {
  EsKernel kernel;       // u and v
  EsKernel w_kernel;     // w, over planes oversampled by 2
  bool enabled = true;   // false: 2-D imaging, one plane, w ignored
  double x0 = 0;         // centre of n - 1 over the image
  double half_range = 0; // half its width
  double dw = 1;         // plane spacing in wavelengths
};

WStacking make_w_stacking(const ImageGeometry& geometry, double accuracy, bool enabled);

// Per pixel: n - 1 - x0, and the grid correction 1 / (psi_u psi_v psi_w) that undoes
// the kernel's taper (psi_w only with w-stacking).
struct GridCorrection {
  std::vector<double> x_shifted;
  std::vector<double> correction;
};

GridCorrection make_grid_correction(const ImageGeometry& geometry, const WStacking& stacking);

// Where a visibility, or its Hermitian mirror (coordinates negated), is gridded.
struct GridPoint {
  double u, v, w;        // wavelengths
  std::uint32_t k;       // visibility index
  std::uint32_t mirror;  // 1 at the mirror point
};

// Points with low <= w <= high reach a w-plane (all points without w-stacking).
struct WPlaneBounds {
  double low, high;
};

struct PointLayout {
  std::vector<GridPoint> direct;     // each visibility on the grid once, sorted by w
  std::vector<GridPoint> hermitian;  // each one and its mirror, sorted by w
  std::vector<char> inside;          // per visibility: on the grid
  std::size_t outside = 0;
  double w_first = 0;                // w of plane 0
  int planes = 1;

  WPlaneBounds plane_bounds(int p, const WStacking& stacking) const;
  // Points of a w-sorted list whose w-kernel reaches plane p: [first, second).
  std::pair<std::size_t, std::size_t> plane_range(const std::vector<GridPoint>& points, int p,
                                                  const WStacking& stacking) const;
};

// uvw_lambda is [count][3]. Planes span +-max|w| so that mirror points fit. Without
// sort_by_w the lists keep the visibilities' order (plane_range() then does not apply;
// the CPU gridder groups the points itself).
PointLayout make_point_layout(const double* uvw_lambda, std::size_t count, const ImageGeometry& geometry,
                              const WStacking& stacking, bool sort_by_w = true);

// A w-sorted point list regrouped by grid tile (tile_of() of the first footprint cell in
// u and v), stably, so that each tile's points stay sorted by w and a w-plane's points
// of a tile are found by the same bounds as plane_range(); then cut into chunks of at
// most `max_chunk` points of one tile, so that a crowded tile (the short baselines) is
// shared by several GPU thread blocks. Chunk c holds points [chunk_start[c],
// chunk_start[c + 1]) of tile chunk_tile[c] = tv * tiles + tu.
struct TiledPoints {
  std::vector<GridPoint> points;
  std::vector<long long> chunk_start;
  std::vector<int> chunk_tile;
  std::size_t chunks() const { return chunk_tile.size(); }
};
TiledPoints tile_points(const std::vector<GridPoint>& points, const ImageGeometry& geometry, const EsKernel& kernel,
                        long long max_chunk);
// The most chunks that `count` points can make: a partial chunk per occupied tile plus
// the full ones.
std::size_t max_chunks(std::size_t count, const ImageGeometry& geometry, long long max_chunk);

}  // namespace spip::imaging
