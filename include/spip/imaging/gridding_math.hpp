#pragma once
// The per-element arithmetic of gridding and degridding: where a coordinate lands on
// the grid, the kernel values it spreads over, the w-plane weights and screens, the
// FFT-centring signs and the packing of two Stokes parameters into one complex grid.
// The CPU Gridder and the CUDA kernels both call these functions, so the CPU tests
// exercise exactly the arithmetic the GPU runs.
//
// Conventions (gridder.hpp): pixel x has l = -(x - N/2) cell, so u enters the grid
// negated; a grid of P cells per side holds uv cell (0, 0) at (P/2, P/2).
#include <cmath>

#include "spip/common/host_device.hpp"
#include "spip/imaging/es_kernel.hpp"

namespace spip::imaging {

inline constexpr double two_pi = 6.283185307179586476925286766559;

// Continuous grid positions (in cells) of a coordinate in wavelengths.
SPIP_HOST_DEVICE inline double grid_position_u(double u, double uv_cell, int grid_size) {
  return -u / uv_cell + 0.5 * grid_size;
}
SPIP_HOST_DEVICE inline double grid_position_v(double v, double uv_cell, int grid_size) {
  return v / uv_cell + 0.5 * grid_size;
}

// Beyond half the grid a visibility would alias onto the other side of the uv plane.
SPIP_HOST_DEVICE inline bool on_grid(double u, double v, double uv_cell, int grid_size) {
  const double limit = 0.5 * grid_size - 1.0;
  return fabs(u) / uv_cell <= limit && fabs(v) / uv_cell <= limit;
}

// First of the W cells a kernel centred at position g touches.
SPIP_HOST_DEVICE inline int footprint_first(double g, int support) {
  return static_cast<int>(ceil(g - 0.5 * support));
}

// Kernel value at cell `first + i` for a kernel centred at g, times (-1)^cell: the FFT
// of a centred grid needs the grid multiplied by (-1)^(ju + jv), which costs nothing
// here and a pass over the grid anywhere else.
SPIP_HOST_DEVICE inline float footprint_value(const EsKernel& kernel, int first, int i, double g) {
  const float value = static_cast<float>(kernel(first + i - g));
  return ((first + i) & 1) ? -value : value;
}

// The grid is periodic (it is the DFT's): a kernel crossing an edge wraps around.
SPIP_HOST_DEVICE inline int wrap_cell(int cell, int n) { return ((cell % n) + n) % n; }

// Both gridders work through the grid in square tiles (the GPU's layout is
// tile_plan.hpp); the tile of a cell, wrapped.
inline constexpr int grid_tile = 32;
SPIP_HOST_DEVICE inline int tiles_per_side(int grid_size) { return (grid_size + grid_tile - 1) / grid_tile; }
SPIP_HOST_DEVICE inline int tile_of(int cell, int grid_size) { return wrap_cell(cell, grid_size) / grid_tile; }

// A point's term in a grid cell: its value (weighted, rotated and w-weighted) times its
// footprint's u and v values there, in single precision as the grids are.
SPIP_HOST_DEVICE inline void add_spread_term(float& re, float& im, float value_re, float value_im, float fv, float fu) {
  const float f = fu * fv;
  re += value_re * f;
  im += value_im * f;
}

// Weight of a point at w in w-plane p (planes at w_first + p dw).
SPIP_HOST_DEVICE inline double w_plane_weight(const EsKernel& w_kernel, double w, double w_first, double dw, int p) {
  return w_kernel(w / dw - (w_first / dw + p));
}

// Phase of exp(-2 pi i w x0) that moves the w-screens' reference from n - 1 = 0 to x0.
SPIP_HOST_DEVICE inline double w_rotation_angle(double w, double x0) { return -two_pi * w * x0; }

// Phase of plane p's w-screen at a pixel with n - 1 - x0 = x_shifted.
SPIP_HOST_DEVICE inline double w_screen_angle(double w_plane, double x_shifted) { return -two_pi * w_plane * x_shifted; }

// Cell of pixel (x, y) of an N x N image in the centred P x P grid, and the
// FFT-centring sign (-1)^(xg + yg) there.
struct ImageCell {
  long long cell;
  double sign;
};
SPIP_HOST_DEVICE inline ImageCell image_cell(int x, int y, int size, int grid_size) {
  const int offset = (grid_size - size) / 2;
  const int xg = x + offset, yg = y + offset;
  return {static_cast<long long>(yg) * grid_size + xg, ((xg + yg) & 1) ? -1.0 : 1.0};
}

// A real image needs only the real part of its FFT, so Stokes parameters a and b share
// one grid as a + i b, provided every visibility is also gridded at its Hermitian
// mirror point with both values conjugated. C is std::complex or spip::Complex.
template <class C>
SPIP_HOST_DEVICE inline C packed_lane(C a, C b, bool mirror) {
  const double ai = mirror ? -a.imag() : a.imag(), bi = mirror ? -b.imag() : b.imag();
  return C(a.real() - bi, ai + b.real());
}

// The inverse for degridding: from a packed lane's value d at a point and its value
// m at the mirror point, Stokes a (odd = false) is (d + conj m) / 2 and Stokes b is
// (d - conj m) / 2i.
template <class C>
SPIP_HOST_DEVICE inline C unpacked_stokes(C d, C m, bool odd) {
  const double sr = d.real() + (odd ? -m.real() : m.real());
  const double si = d.imag() + (odd ? m.imag() : -m.imag());
  return odd ? C(0.5 * si, -0.5 * sr) : C(0.5 * sr, 0.5 * si);
}

}  // namespace spip::imaging
