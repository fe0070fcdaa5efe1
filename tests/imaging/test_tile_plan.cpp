// The layout of the GPU's subgrid gridder (tile_plan.hpp), built on the CPU by the
// functions the device's preparation and gridding kernels call: every footprint lies in
// its home tile's subgrid and lands there on its own grid cells, the spreading threads'
// residues give each footprint cell to exactly one thread, the sorted points of a tile
// that reach a plane are exactly those whose w-kernel reaches it, and a plane gridded
// subgrid by subgrid as the kernel does (each residue's thread summing its cells over
// the points in order, in single precision), each subgrid then added to the grid,
// equals a direct spread of the points in double precision.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
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
      const std::uint64_t key = entry_key(home_tile(points[i].first_u, points[i].first_v, n), points[i].first_plane);
      EXPECT_LT(key, off_grid_key(n));
      entries.push_back({key, i});
    }
    EXPECT_LT(off_grid_key(n), std::uint64_t{1} << key_bits(n));  // the bits the device sorts
    std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.key < b.key; });
    for (const Entry& e : entries) keys.push_back(e.key);
    for (std::size_t i = 0; i < entries.size(); ++i)
      if (i == 0 || key_tile(keys[i]) != key_tile(keys[i - 1])) segment_start.push_back(static_cast<long long>(i));
    segment_start.push_back(static_cast<long long>(entries.size()));
  }

  ImageGeometry geometry;
  WStacking stacking;
  PointLayout layout;
  WPlanes planes{};
  std::vector<PreparedPoint> points;
  std::vector<Entry> entries;
  std::vector<std::uint64_t> keys;
  std::vector<long long> segment_start;  // of each occupied tile's entries, then the end
};

TEST_P(TilePlan, EachFootprintLiesInItsHomeSubgridOnItsOwnCells) {
  const int n = geometry.grid_size, support = stacking.kernel.support, tiles = tiles_per_side(n);
  int crossing = 0;
  for (const Entry& e : entries) {
    const int tile = key_tile(e.key), tu = tile % tiles, tv = tile / tiles;
    const PreparedPoint& p = points[e.point];
    const int du = subgrid_offset(p.first_u, n), dv = subgrid_offset(p.first_v, n);
    ASSERT_LT(du + support - 1, subgrid_side(support));
    ASSERT_LT(dv + support - 1, subgrid_side(support));
    for (int i = 0; i < support; ++i) {
      ASSERT_EQ(subgrid_to_grid(tu, du + i, n), wrap_cell(p.first_u + i, n)) << "point " << e.point;
      ASSERT_EQ(subgrid_to_grid(tv, dv + i, n), wrap_cell(p.first_v + i, n)) << "point " << e.point;
    }
    crossing += du + support > grid_tile || dv + support > grid_tile;
  }
  EXPECT_GT(crossing, 0);  // some footprints cross tile edges, and stay in one subgrid
}

// Along one axis, the W residues give each of a footprint's W cells to one thread,
// whose residue the cell's subgrid position has, wherever the footprint begins.
TEST(ResidueCell, GivesEachFootprintCellToTheThreadOfItsResidue) {
  for (int support = 2; support <= max_support; ++support)
    for (int offset = 0; offset < grid_tile; ++offset) {
      std::vector<int> taken(support, 0);
      for (int residue = 0; residue < support; ++residue) {
        const int i = residue_cell(residue, offset % support, support);
        ASSERT_GE(i, 0);
        ASSERT_LT(i, support);
        ASSERT_EQ((offset + i) % support, residue) << support << " " << offset;
        ++taken[i];
      }
      ASSERT_EQ(taken, std::vector<int>(support, 1)) << support << " " << offset;
    }
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

TEST_P(TilePlan, SubgridBySubgridGriddingOfAPlaneEqualsADirectSpread) {
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
    const int side = subgrid_side(support);
    for (std::size_t s = 0; s + 1 < segment_start.size(); ++s) {
      const EntryRange range = plane_entries(keys.data(), segment_start[s], segment_start[s + 1], p, ws);
      const int tile = key_tile(keys[segment_start[s]]), tu = tile % tiles, tv = tile / tiles;
      std::vector<float> subgrid(2 * static_cast<std::size_t>(side) * side, 0.0f);
      for (int row = 0; row < support; ++row)
        for (int column = 0; column < support; ++column)
          for (long long e = range.lo; e < range.hi; ++e) {
            const std::uint32_t k = entries[e].point;
            const auto weight = static_cast<float>(
                w_plane_weight(stacking.w_kernel, layout.hermitian[k].w, layout.w_first, stacking.dw, p));
            const int du = subgrid_offset(points[k].first_u, n), dv = subgrid_offset(points[k].first_v, n);
            const int i = residue_cell(column, du % support, support), j = residue_cell(row, dv % support, support);
            const std::size_t at = static_cast<std::size_t>(dv + j) * side + du + i;
            add_spread_term(subgrid[2 * at], subgrid[2 * at + 1], value_re[k] * weight, value_im[k] * weight,
                            points[k].fv[j], points[k].fu[i]);
          }
      for (int y = 0; y < side; ++y)
        for (int x = 0; x < side; ++x) {
          const std::size_t at = static_cast<std::size_t>(y) * side + x;
          const std::size_t cell = static_cast<std::size_t>(subgrid_to_grid(tv, y, n)) * n + subgrid_to_grid(tu, x, n);
          tiled[2 * cell] += subgrid[2 * at];
          tiled[2 * cell + 1] += subgrid[2 * at + 1];
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

INSTANTIATE_TEST_SUITE_P(GridSizes, TilePlan, testing::Values(256, 200, 184));

}  // namespace
}  // namespace spip::imaging
