// The layout of the GPU's output-stationary gridder (tile_plan.hpp), built on the CPU
// by the functions the device's preparation and gridding kernels call: every footprint
// cell is owned by exactly one of a point's tile entries, the sorted entries of a tile
// that reach a plane are exactly its points whose w-kernel reaches it, and a plane
// gridded tile by tile, each cell summing its entries in sorted order, equals a direct
// spread of the points in double precision.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "spip/imaging/gridding_math.hpp"
#include "spip/imaging/tile_plan.hpp"
#include "spip/imaging/w_layout.hpp"

namespace spip::imaging {
namespace {

struct Entry {
  std::uint64_t key;
  std::uint32_t point;
};

struct PreparedPoint {
  int first_u, first_v, first_plane;
  float fu[max_support], fv[max_support];
};

class TilePlan : public testing::TestWithParam<int> {  // image size: grids of 320, 250 and 230 cells (last tiles 32, 26, 6 wide)
 protected:
  void SetUp() override {
    geometry = ImageGeometry::make(GetParam(), 30.0 / 206264.806, 1.25);
    stacking = make_w_stacking(geometry, 1e-4, true);
    std::mt19937 rng(11);
    const double reach = 0.5 * geometry.grid_size * geometry.uv_cell();
    std::uniform_real_distribution<double> uv(-reach, reach), w(-3000.0, 3000.0);
    std::vector<double> uvw;
    for (int k = 0; k < 4000; ++k) {
      // Half the points crowd the centre, as short baselines do.
      const double scale = k % 2 ? 1.0 : 0.05;
      uvw.insert(uvw.end(), {scale * uv(rng), scale * uv(rng), w(rng)});
    }
    layout = make_point_layout(uvw.data(), uvw.size() / 3, geometry, stacking);
    planes = WPlanes{layout.w_first, layout.planes};
    const int n = geometry.grid_size, support = stacking.kernel.support;
    for (const GridPoint& q : layout.hermitian) {
      PreparedPoint p{};
      const double gu = grid_position_u(q.u, geometry.uv_cell(), n), gv = grid_position_v(q.v, geometry.uv_cell(), n);
      p.first_u = footprint_first(gu, support);
      p.first_v = footprint_first(gv, support);
      for (int i = 0; i < support; ++i) {
        p.fu[i] = footprint_value(stacking.kernel, p.first_u, i, gu);
        p.fv[i] = footprint_value(stacking.kernel, p.first_v, i, gv);
      }
      p.first_plane = first_w_plane(q.w, planes, stacking.dw, stacking.w_kernel.support);
      points.push_back(p);
    }
    for (std::uint32_t i = 0; i < points.size(); ++i) {
      const AxisTiles tu = axis_tiles(points[i].first_u, support, n), tv = axis_tiles(points[i].first_v, support, n);
      EXPECT_LE(std::max(tu.count, tv.count), max_axis_tiles(support, n));
      std::uint64_t point_keys[9];
      const int count = point_entry_keys(points[i].first_u, points[i].first_v, points[i].first_plane, support, n,
                                         point_keys);
      for (int e = 0; e < count; ++e) {
        EXPECT_LT(point_keys[e], std::uint64_t{1} << key_bits(n));  // the bits the device sorts
        entries.push_back({point_keys[e], i});
      }
    }
    std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.key < b.key; });
    for (const Entry& e : entries) keys.push_back(e.key);
    for (std::size_t i = 0; i < entries.size(); ++i)
      if (i == 0 || key_tile(keys[i]) != key_tile(keys[i - 1])) segment_start.push_back(static_cast<long long>(i));
    segment_start.push_back(static_cast<long long>(entries.size()));
  }

  // Cells [origin, origin + 32) of a tile along one axis, within the grid.
  int tile_width(int tile) const { return std::min(grid_tile, geometry.grid_size - tile * grid_tile); }

  ImageGeometry geometry;
  WStacking stacking;
  PointLayout layout;
  WPlanes planes{};
  std::vector<PreparedPoint> points;
  std::vector<Entry> entries;
  std::vector<std::uint64_t> keys;
  std::vector<long long> segment_start;  // of each occupied tile's entries, then the end
};

TEST_P(TilePlan, EachFootprintCellIsOwnedByExactlyOneTileEntryOfItsPoint) {
  const int n = geometry.grid_size, support = stacking.kernel.support, tiles = tiles_per_side(n);
  std::vector<int> owned(points.size(), 0);
  for (const Entry& e : entries) {
    const int tile = key_tile(e.key), tu = tile % tiles, tv = tile / tiles;
    const PreparedPoint& p = points[e.point];
    for (int y = tv * grid_tile; y < tv * grid_tile + tile_width(tv); ++y)
      for (int x = tu * grid_tile; x < tu * grid_tile + tile_width(tu); ++x)
        owned[e.point] += footprint_index(x, p.first_u, n) < support && footprint_index(y, p.first_v, n) < support;
  }
  for (std::size_t i = 0; i < points.size(); ++i) ASSERT_EQ(owned[i], support * support) << "point " << i;
  EXPECT_GT(entries.size(), points.size());  // some footprints cross tile edges
}

TEST_P(TilePlan, PlaneEntriesOfATileAreItsPointsWhoseWKernelReachesThePlane) {
  const int ws = stacking.w_kernel.support;
  ASSERT_GT(layout.planes, ws);
  long long chunk_total = 0;
  for (std::size_t s = 0; s + 1 < segment_start.size(); ++s) {
    const long long lo = segment_start[s], hi = segment_start[s + 1];
    for (int p = 0; p < layout.planes; ++p) {
      const EntryRange range = plane_entries(keys.data(), lo, hi, p, ws);
      std::vector<std::uint32_t> got, wanted;
      for (long long i = range.lo; i < range.hi; ++i) got.push_back(entries[i].point);
      for (long long i = lo; i < hi; ++i) {
        const int first = points[entries[i].point].first_plane;
        if (first <= p && p < first + ws) wanted.push_back(entries[i].point);
      }
      ASSERT_EQ(got, wanted) << "tile " << key_tile(keys[lo]) << " plane " << p;
      chunk_total += chunks_of(range);
    }
  }
  EXPECT_GT(chunk_total, 0);
}

// Every point's plane span covers every plane its w-kernel reaches: beyond it the
// weight is zero, or the kernel's edge value e^-beta where rounding puts the plane a
// hair inside the support.
TEST_P(TilePlan, FirstPlaneSpansEveryPlaneWithWeight) {
  const double edge = 1.01 * std::exp(-stacking.w_kernel.beta);
  for (const GridPoint& q : layout.hermitian) {
    const int first = first_w_plane(q.w, planes, stacking.dw, stacking.w_kernel.support);
    for (int p = 0; p < layout.planes; ++p) {
      const double weight = w_plane_weight(stacking.w_kernel, q.w, layout.w_first, stacking.dw, p);
      if (p < first || p >= first + stacking.w_kernel.support) {
        ASSERT_LE(std::abs(weight), edge) << "plane " << p;
      }
    }
  }
}

TEST_P(TilePlan, TileByTileGriddingOfAPlaneEqualsADirectSpread) {
  const int n = geometry.grid_size, support = stacking.kernel.support, tiles = tiles_per_side(n);
  const int ws = stacking.w_kernel.support;
  std::vector<float> value_re(points.size()), value_im(points.size());
  for (std::size_t i = 0; i < points.size(); ++i) {
    value_re[i] = std::cos(0.37 * static_cast<double>(i));
    value_im[i] = std::sin(0.91 * static_cast<double>(i));
  }
  for (int p : {layout.planes / 2 - 1, layout.planes / 2, layout.planes / 2 + 1}) {
    std::vector<double> direct(2 * static_cast<std::size_t>(n) * n, 0.0);
    for (std::size_t i = 0; i < points.size(); ++i) {
      const PreparedPoint& q = points[i];
      if (p < q.first_plane || p >= q.first_plane + ws) continue;
      const double weight = w_plane_weight(stacking.w_kernel, layout.hermitian[i].w, layout.w_first, stacking.dw, p);
      for (int j = 0; j < support; ++j)
        for (int c = 0; c < support; ++c) {
          const std::size_t cell = static_cast<std::size_t>(wrap_cell(q.first_v + j, n)) * n + wrap_cell(q.first_u + c, n);
          direct[2 * cell] += value_re[i] * weight * q.fv[j] * q.fu[c];
          direct[2 * cell + 1] += value_im[i] * weight * q.fv[j] * q.fu[c];
        }
    }
    std::vector<float> tiled(direct.size(), 0.0f);
    for (std::size_t s = 0; s + 1 < segment_start.size(); ++s) {
      const EntryRange range = plane_entries(keys.data(), segment_start[s], segment_start[s + 1], p, ws);
      const int tile = key_tile(keys[segment_start[s]]), tu = tile % tiles, tv = tile / tiles;
      for (int y = tv * grid_tile; y < tv * grid_tile + tile_width(tv); ++y)
        for (int x = tu * grid_tile; x < tu * grid_tile + tile_width(tu); ++x) {
          float re = 0, im = 0;
          for (long long e = range.lo; e < range.hi; ++e) {
            const std::uint32_t i = entries[e].point;
            const int iu = footprint_index(x, points[i].first_u, n), jv = footprint_index(y, points[i].first_v, n);
            if (iu >= support || jv >= support) continue;
            const auto weight =
                static_cast<float>(w_plane_weight(stacking.w_kernel, layout.hermitian[i].w, layout.w_first, stacking.dw, p));
            add_spread_term(re, im, value_re[i] * weight, value_im[i] * weight, points[i].fv[jv], points[i].fu[iu]);
          }
          const std::size_t cell = static_cast<std::size_t>(y) * n + x;
          tiled[2 * cell] += re;
          tiled[2 * cell + 1] += im;
        }
    }
    double worst = 0, peak = 0;
    for (std::size_t i = 0; i < direct.size(); ++i) {
      worst = std::max(worst, std::abs(direct[i] - tiled[i]));
      peak = std::max(peak, std::abs(direct[i]));
    }
    EXPECT_GT(peak, 1.0) << "plane " << p;
    EXPECT_LT(worst, 1e-5 * peak) << "plane " << p;
  }
}

// Each tile a footprint touches, once, against the set of its cells' tiles: on grids of
// one, two (where a wide footprint wraps back into the tile it began in) and more
// tiles, with the last tile as wide as a full one or narrower than the kernel.
TEST(AxisTiles, AreTheDistinctTilesOfTheFootprintsCells) {
  int wrapped_back = 0;
  for (int n : {20, 40, 64, 77, 230})
    for (int support = 2; support <= max_support; ++support)
      for (int first = -n; first < n; ++first) {
        std::set<int> cells_tiles;
        for (int i = 0; i < support; ++i) cells_tiles.insert(tile_of(first + i, n));
        const AxisTiles t = axis_tiles(first, support, n);
        ASSERT_EQ(std::set<int>(t.tile, t.tile + t.count), cells_tiles) << n << " " << support << " " << first;
        ASSERT_EQ(t.count, static_cast<int>(cells_tiles.size())) << n << " " << support << " " << first;
        ASSERT_LE(t.count, max_axis_tiles(support, n)) << n << " " << support << " " << first;
        wrapped_back += tile_of(first, n) == tile_of(first + support - 1, n) && cells_tiles.size() > 1;
      }
  EXPECT_GT(wrapped_back, 0);  // the two-tile grid's case is reached
}

INSTANTIATE_TEST_SUITE_P(GridSizes, TilePlan, testing::Values(256, 200, 184));

}  // namespace
}  // namespace spip::imaging
