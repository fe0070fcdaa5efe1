#pragma once
// How a channel's points are laid out for the GPU's subgrid gridder, in functions that
// the device's preparation and gridding kernels (cuda/) and the CPU tests both run:
// which w-planes a point reaches, the one 32 x 32 grid tile a point belongs to (its
// home tile: the tile of its footprint's first cell), the padded subgrid of that tile
// that holds the whole footprint, the radix-sort key of each point, and the points of
// a sorted tile segment that reach a plane. A block spreads a tile's points into the
// tile's subgrid in shared memory and adds the subgrid to the grid, so every point is
// read once per plane whatever tile edges its footprint crosses.
#include <cstdint>

#include "spip/common/host_device.hpp"
#include "spip/imaging/gridding_math.hpp"

namespace spip::imaging {

// The w-planes that cover |w| <= w_reach for a w-kernel of `w_support` cells: plane p
// at w_first + p dw, and their count, centred on w = 0. A plane W_w/2 planes or more
// from every point would carry only the kernel's edge value (~e^-beta), so the outer
// planes lie more than W_w/2 - 1 and at most W_w/2 - 1/2 planes beyond +-w_reach.
struct WPlanes {
  double w_first;
  int planes;
};
SPIP_HOST_DEVICE inline WPlanes w_planes(double w_reach, int w_support, double dw) {
  const int planes = static_cast<int>(floor(2.0 * w_reach / dw + w_support));
  return {-0.5 * (planes - 1) * dw, planes};
}

// The first plane a point at w reaches, the smallest p above (w - w_first)/dw - W_w/2;
// it reaches planes first .. first + W_w - 1 (those that exist), where its w-kernel
// weight (w_plane_weight) is nonzero or, at the very edge, vanishingly small.
SPIP_HOST_DEVICE inline int first_w_plane(double w, const WPlanes& planes, double dw, int w_support) {
  const double x = (w - planes.w_first) / dw - 0.5 * w_support;
  const int first = static_cast<int>(ceil(x));
  return first < 0 ? 0 : first > planes.planes - 1 ? planes.planes - 1 : first;
}

// A tile's subgrid: the tile's cells and the support - 1 cells beyond its far edges,
// where the footprints of the points whose first cell lies in the tile end.
SPIP_HOST_DEVICE inline int subgrid_side(int support) { return grid_tile + support - 1; }

// A point's home tile (tv * tiles + tu) from its footprint's first cells (wrapped).
SPIP_HOST_DEVICE inline int home_tile(int first_u, int first_v, int grid_size) {
  return tile_of(first_v, grid_size) * tiles_per_side(grid_size) + tile_of(first_u, grid_size);
}

// Where a footprint starting at `first_cell` begins in its home subgrid, along one axis.
SPIP_HOST_DEVICE inline int subgrid_offset(int first_cell, int grid_size) {
  return wrap_cell(first_cell, grid_size) % grid_tile;
}

// A spreading thread of residue r (0 .. W - 1) adds, along one axis, the one cell of
// every footprint whose subgrid position is congruent to r modulo W: for a footprint
// at subgrid offset o, its cell i (position o + i), from o's own residue o % W.
// Threads of different residues never share a cell, so a block spreads into its
// subgrid without atomic adds.
SPIP_HOST_DEVICE inline int residue_cell(int residue, int offset_residue, int support) {
  const int i = residue - offset_residue;
  return i < 0 ? i + support : i;
}

// The grid cell of subgrid cell `x` of tile `tile_index` along one axis: past the
// grid's edge the subgrid wraps, as the grid is periodic.
SPIP_HOST_DEVICE inline int subgrid_to_grid(int tile_index, int x, int grid_size) {
  const int cell = tile_index * grid_tile + x;
  return cell >= grid_size ? cell % grid_size : cell;
}

// Points sort by home tile, then by first w-plane; a stable radix sort keeps the points'
// own order within a key. The plane takes the key's low bits, so that a sort need only
// look at the bits a grid's tiles and planes use (key_bits). Points off the grid take
// the tile after the last (off_grid_key) and sort to the end.
inline constexpr int key_plane_bits = 16;
inline constexpr int max_key_planes = 1 << key_plane_bits;
SPIP_HOST_DEVICE inline std::uint64_t entry_key(int tile, int first_plane) {
  return static_cast<std::uint64_t>(static_cast<std::uint32_t>(tile)) << key_plane_bits |
         static_cast<std::uint32_t>(first_plane);
}
SPIP_HOST_DEVICE inline int key_tile(std::uint64_t key) { return static_cast<int>(key >> key_plane_bits); }
SPIP_HOST_DEVICE inline std::uint64_t off_grid_key(int grid_size) {
  const int tiles = tiles_per_side(grid_size);
  return entry_key(tiles * tiles, 0);
}
// The bits a radix sort of a grid's keys must look at, from the lowest.
SPIP_HOST_DEVICE inline int key_bits(int grid_size) {
  const int tiles = tiles_per_side(grid_size);
  int bits = 0;
  while ((1LL << bits) < static_cast<long long>(tiles) * tiles + 1) ++bits;
  return key_plane_bits + bits;
}

// The points of one tile's sorted segment [lo, hi) that reach plane p: those whose
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

// A block grids at most this many points of one (tile, plane): a crowded tile (the
// short baselines) is split over several blocks, so that no plane waits on one block.
inline constexpr long long max_chunk_entries = 512;
SPIP_HOST_DEVICE inline long long chunks_of(EntryRange range) {
  return (range.hi - range.lo + max_chunk_entries - 1) / max_chunk_entries;
}

}  // namespace spip::imaging
