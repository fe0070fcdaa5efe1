#pragma once
// What a gridder needs before it touches a grid, computed once on the host for both
// backends: the kernels and w-plane spacing of an image (WStacking), the grid
// correction per pixel, and the per-channel lists of points with the planes they span
// (PointLayout, the CPU gridder's). Both backends share the kernels and planes.
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

// The CPU gridder groups the points by plane and tile itself; the GPU prepares its
// own on the device (tile_plan.hpp).
struct PointLayout {
  // Each visibility on the grid once, at its mirror where w < 0: the real part of an
  // image is the same either way, and w >= 0 spans about half the planes.
  std::vector<GridPoint> direct;
  std::vector<GridPoint> hermitian;  // each one and its mirror
  std::vector<char> inside;          // per visibility: on the grid
  std::size_t outside = 0;
  double w_first = 0;                // w of plane 0
  int planes = 1;
};

// uvw_lambda is [count][3]; the lists keep the visibilities' order. Planes span
// +-max|w| of the visibilities on the grid, or +-w_reach where that is larger: a
// group of ranks sharing a channel's rows lays out the planes of all of them.
PointLayout make_point_layout(const double* uvw_lambda, std::size_t count, const ImageGeometry& geometry,
                              const WStacking& stacking, double w_reach = 0);

// max|w| of the visibilities on the grid (uvw_lambda [count][3]).
double w_reach(const double* uvw_lambda, std::size_t count, const ImageGeometry& geometry);

}  // namespace spip::imaging
