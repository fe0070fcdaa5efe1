#pragma once
// The per-visibility arithmetic of the imaging weights: uv limits and taper, the
// density cell a visibility counts in, and the uniform or Briggs factor from its
// cell's density. imaging::apply_weighting and the GPU imager's weighting kernels both
// call these functions, so the CPU tests exercise the arithmetic the GPU runs.
#include <math.h>

#include "spip/common/host_device.hpp"

namespace spip::imaging {

// What the uv limits and the taper need, in wavelengths^2.
struct UvTerms {
  double uv_min_sq = 0;  // 0: no lower limit
  double uv_max_sq = 0;  // 0: no upper limit
  double taper = 0;      // exp(-taper |uv|^2); 0: no taper
};

// 1 within the uv limits at (u, v), 0 outside them.
SPIP_HOST_DEVICE inline double uv_limits(const UvTerms& terms, double u, double v) {
  const double uv_sq = u * u + v * v;
  return uv_sq < terms.uv_min_sq || (terms.uv_max_sq > 0 && uv_sq > terms.uv_max_sq) ? 0.0 : 1.0;
}

// The taper's factor at (u, v), 1 without one. It multiplies the density-weighted
// weights, as in CASA and WSClean: folded in before the densities, it would cancel under
// uniform weighting (t w / (t W) = w / W) and shift Briggs's f^2.
SPIP_HOST_DEVICE inline double uv_taper(const UvTerms& terms, double u, double v) {
  return terms.taper > 0 ? exp(-terms.taper * (u * u + v * v)) : 1.0;
}

// The weight a visibility adds to its density cell: its Stokes I weight within the
// limits, or where I is flagged (one of XX and YY is) the largest of its other Stokes
// weights, so that its Q, U or V still find their cell and are weighted like their
// neighbours' instead of keeping their natural weight.
SPIP_HOST_DEVICE inline double density_weight(const float* stokes_weights, int num_stokes, double limits) {
  double w = stokes_weights[0];
  if (!(w > 0))
    for (int s = 1; s < num_stokes; ++s) w = fmax(w, static_cast<double>(stokes_weights[s]));
  return w * limits;
}

// Density cell of (u, v) on `size` x `size` cells of `cell` wavelengths centred on
// uv = 0, or -1 outside them.
SPIP_HOST_DEVICE inline long long density_cell(int size, double cell, double u, double v) {
  const long long iu = llround(u / cell) + size / 2, iv = llround(v / cell) + size / 2;
  if (iu < 0 || iv < 0 || iu >= size || iv >= size) return -1;
  return iv * size + iu;
}

// Briggs (1995): f^2 = (5 * 10^-R)^2 / (sum_cells W^2 / sum_k w_k); 0 where no weight.
SPIP_HOST_DEVICE inline double briggs_f2(double robust, double sum_w, double sum_w2) {
  return sum_w2 > 0 ? pow(5.0 * pow(10.0, -robust), 2) / (sum_w2 / sum_w) : 0.0;
}

// The divisor a visibility's weight gets from its cell's density: the density itself
// (uniform) or 1 + density f^2 (Briggs).
SPIP_HOST_DEVICE inline double density_divisor(bool uniform, double density, double f2) {
  return uniform ? density : 1.0 + density * f2;
}

}  // namespace spip::imaging
