#pragma once
// How a channel's points are laid out for an output-stationary gridder, in functions
// that the GPU's preparation kernels (cuda/point_preparation.cu) and the CPU tests both
// run: which w-planes a point reaches, which 32 x 32 grid tiles its footprint touches,
// the radix-sort key of each (point, tile) entry, and the entries of a sorted tile
// segment that reach a plane. A tile's owner adds the footprint cells that fall in its
// tile, so a point crossing a tile edge is entered in each tile it touches.
#include <cstdint>

#include "spip/common/host_device.hpp"
#include "spip/imaging/gridding_math.hpp"

namespace spip::imaging {

// The w-planes that cover |w| <= w_reach for a w-kernel of `w_support` cells: plane p
// at w_first + p dw, and their count.
struct WPlanes {
  double w_first;
  int planes;
};
SPIP_HOST_DEVICE inline WPlanes w_planes(double w_reach, int w_support, double dw) {
  const double support = w_support;
  const double w_first = -w_reach - 0.5 * support * dw;
  return {w_first, static_cast<int>(floor((w_reach - w_first) / dw + 0.5 * support)) + 1};
}

// The first plane a point at w reaches, the smallest p above (w - w_first)/dw - W_w/2;
// it reaches planes first .. first + W_w - 1 (those that exist), where its w-kernel
// weight (w_plane_weight) is nonzero or, at the very edge, vanishingly small.
SPIP_HOST_DEVICE inline int first_w_plane(double w, const WPlanes& planes, double dw, int w_support) {
  const double x = (w - planes.w_first) / dw - 0.5 * w_support;
  const int first = static_cast<int>(ceil(x));
  return first < 0 ? 0 : first > planes.planes - 1 ? planes.planes - 1 : first;
}

// The tiles of one axis that the `support` cells from `first_cell` touch, each once,
// wrapping at the grid's edge: up to three where the last tile is narrower than the
// kernel. (On a grid of two tiles a footprint may wrap back into the tile it began in.)
struct AxisTiles {
  int tile[3];
  int count;
};
SPIP_HOST_DEVICE inline AxisTiles axis_tiles(int first_cell, int support, int grid_size) {
  AxisTiles t{{0, 0, 0}, 0};
  // The cells run through consecutive tiles; only a wrap can come back to the first.
  for (int i = 0; i < support; ++i) {
    const int tile = tile_of(first_cell + i, grid_size);
    if (t.count == 0 || (tile != t.tile[t.count - 1] && tile != t.tile[0])) t.tile[t.count++] = tile;
  }
  return t;
}

// The most tiles of one axis a footprint touches: three only where the grid has three
// tiles or more and its last one is two or more cells narrower than the kernel.
SPIP_HOST_DEVICE inline int max_axis_tiles(int support, int grid_size) {
  const int tiles = tiles_per_side(grid_size), last_width = grid_size - (tiles - 1) * grid_tile;
  return tiles > 2 && support >= last_width + 2 ? 3 : tiles > 1 ? 2 : 1;
}

// The index into a footprint starting at `first_cell` of grid cell `cell` (wrapped);
// the cell is in the footprint when it is below the support.
SPIP_HOST_DEVICE inline int footprint_index(int cell, int first_cell, int grid_size) {
  return wrap_cell(cell - first_cell, grid_size);
}

// Entries sort by tile (tv * tiles + tu), then by first w-plane; a stable radix sort
// keeps the points' own order within a key. The plane takes the key's low bits, so
// that a sort need only look at the bits a grid's tiles and planes use (key_bits).
inline constexpr int key_plane_bits = 16;
inline constexpr int max_key_planes = 1 << key_plane_bits;
SPIP_HOST_DEVICE inline std::uint64_t entry_key(int tile, int first_plane) {
  return static_cast<std::uint64_t>(static_cast<std::uint32_t>(tile)) << key_plane_bits |
         static_cast<std::uint32_t>(first_plane);
}
SPIP_HOST_DEVICE inline int key_tile(std::uint64_t key) { return static_cast<int>(key >> key_plane_bits); }
// The bits a radix sort of a grid's keys must look at, from the lowest.
SPIP_HOST_DEVICE inline int key_bits(int grid_size) {
  const int tiles = tiles_per_side(grid_size);
  int bits = 0;
  while ((1LL << bits) < static_cast<long long>(tiles) * tiles) ++bits;
  return key_plane_bits + bits;
}

// A point's entries, one per tile its footprint touches: their keys into `keys` (at
// most 9), and their count.
SPIP_HOST_DEVICE inline int point_entry_keys(int first_u, int first_v, int first_plane, int support, int grid_size,
                                             std::uint64_t* keys) {
  const AxisTiles tu = axis_tiles(first_u, support, grid_size), tv = axis_tiles(first_v, support, grid_size);
  const int tiles = tiles_per_side(grid_size);
  int count = 0;
  for (int b = 0; b < tv.count; ++b)
    for (int a = 0; a < tu.count; ++a) keys[count++] = entry_key(tv.tile[b] * tiles + tu.tile[a], first_plane);
  return count;
}

// The entries of one tile's sorted segment [lo, hi) that reach plane p: those whose
// first plane is p - W_w + 1 .. p, a contiguous range.
struct EntryRange {
  long long lo, hi;
};
SPIP_HOST_DEVICE inline long long first_key_at_least(const std::uint64_t* keys, long long lo, long long hi,
                                                     std::uint64_t key) {
  while (lo < hi) {
    const long long mid = lo + (hi - lo) / 2;
    if (keys[mid] < key)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}
SPIP_HOST_DEVICE inline EntryRange plane_entries(const std::uint64_t* keys, long long lo, long long hi, int p,
                                                 int w_support) {
  const int tile = key_tile(keys[lo]);
  const int first = p - w_support + 1 < 0 ? 0 : p - w_support + 1;
  const long long from = first_key_at_least(keys, lo, hi, entry_key(tile, first));
  return {from, first_key_at_least(keys, from, hi, entry_key(tile, p + 1))};
}

// A block grids at most this many entries of one (tile, plane); a crowded tile (the
// short baselines) is split over several blocks, which then add to the grid atomically.
inline constexpr long long max_chunk_entries = 4096;
SPIP_HOST_DEVICE inline long long chunks_of(EntryRange range) {
  return (range.hi - range.lo + max_chunk_entries - 1) / max_chunk_entries;
}

}  // namespace spip::imaging
