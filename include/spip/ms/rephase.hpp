#pragma once
// Visibilities measured towards one phase centre, turned to another: what imaging at an
// image.centre other than the inputs' (and mosaicking pointings onto one grid) needs.
// The baseline is the same vector in both frames; only its components change,
// (u', v', w') = R (u, v, w) with R from the two centres' east, north and line-of-sight
// axes, and each visibility gains the fringe of the centres' offset along it,
// V' = V exp(2 pi i (w - w') / lambda), in spip's sign (the simulator's, and the DFT
// recipe's, V = sum I exp(+2 pi i (u l + v m + w (n - 1)))). Both centres J2000.
#include <array>
#include <cstddef>

#include "spip/common/celestial.hpp"

namespace spip::ms {

struct VisBlock;

class Rephasing {
 public:
  Rephasing(Direction from, Direction to);

  // Rotates `rows` UVW triples (metres) in place.
  void rotate_uvw(double* uvw_m, std::size_t rows) const;
  // Turns a block: its UVW rotated, each visibility multiplied by its row's fringe at its
  // channel's frequency.
  void apply(VisBlock& block) const;

 private:
  std::array<std::array<double, 3>, 3> rotation_{};  // rows: the new east, north, line of sight in the old frame
};

}  // namespace spip::ms
