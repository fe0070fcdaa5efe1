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

// The factor of the limits and the taper at (u, v): 0 outside the limits.
SPIP_HOST_DEVICE inline double uv_factor(const UvTerms& terms, double u, double v) {
  const double uv_sq = u * u + v * v;
  double factor = uv_sq < terms.uv_min_sq || (terms.uv_max_sq > 0 && uv_sq > terms.uv_max_sq) ? 0.0 : 1.0;
  if (terms.taper > 0) factor *= exp(-terms.taper * uv_sq);
  return factor;
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
