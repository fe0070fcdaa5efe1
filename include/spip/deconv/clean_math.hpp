#pragma once
// Per-pixel arithmetic of the Hogbom minor cycle, shared by the CPU loop and the CUDA
// kernels: the peak-search value and the PSF offset of a component.
#include "spip/common/host_device.hpp"
#include "spip/config/config.hpp"

namespace spip::deconv {

// The square of a pixel's peak-search value (no square root in the hot loop), from
// residual planes I, Q, U, V of `plane` pixels each.
SPIP_HOST_DEVICE inline float squared_search_value(PeakSearch search, const float* r, long long pixel,
                                                   long long plane) {
  const float i = r[pixel], q = r[plane + pixel], u = r[2 * plane + pixel], v = r[3 * plane + pixel];
  switch (search) {
    case PeakSearch::stokes_i: return i * i;
    case PeakSearch::linear_pol: return q * q + u * u;
    case PeakSearch::full_stokes: return i * i + q * q + u * u + v * v;
  }
  return 0;
}

// The PSF pixel (peak at (N/2, N/2)) that lands on image pixel (x, y) when the PSF is
// centred on a component at (px, py); -1 where it falls outside the PSF.
SPIP_HOST_DEVICE inline long long psf_pixel_under(int x, int y, int px, int py, int n) {
  const int sx = x - (px - n / 2), sy = y - (py - n / 2);
  if (sx < 0 || sx >= n || sy < 0 || sy >= n) return -1;
  return static_cast<long long>(sy) * n + sx;
}

}  // namespace spip::deconv
