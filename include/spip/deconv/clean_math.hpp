#pragma once
// Per-pixel arithmetic of the Hogbom minor cycle, shared by the CPU loop and the CUDA
// kernels: the peak-search value, the PSF they subtract and the PSF offset of a component.
#include "spip/common/host_device.hpp"
#include "spip/config/config.hpp"

namespace spip::deconv {

// A Gaussian's sigma over its median absolute deviation (mad_sigma), on either backend.
inline constexpr double sigma_per_mad = 1.4826;

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

// A pixel and the square of its peak-search value.
struct PeakCandidate {
  float value;
  long long pixel;
};

// The rule both backends pick a component by: the larger value, and of equal values
// the lower pixel, so that the pick does not depend on the order of the search (OpenMP
// threads, a CUB reduction tree). Associative and commutative for finite values; a NaN
// is never the stronger, as a serial scan's `>` passes it over.
SPIP_HOST_DEVICE inline PeakCandidate stronger_peak(PeakCandidate a, PeakCandidate b) {
  if (a.value != a.value) return b;
  return b.value > a.value || (b.value == a.value && b.pixel < a.pixel) ? b : a;
}
struct StrongerPeak {
  SPIP_HOST_DEVICE PeakCandidate operator()(PeakCandidate a, PeakCandidate b) const { return stronger_peak(a, b); }
};

// The PSF a minor cycle subtracts: `side` x `side` pixels, peak 1 at (side/2, side/2).
// At twice the image's side (minor_psf_side), every component's PSF covers the whole
// image, and Hogbom's iterations cannot diverge (docs/architecture.md, "Why CLEAN
// cannot run away"); at the image's side, a component far from the centre is
// subtracted only where the PSF reaches.
struct MinorPsf {
  const float* data = nullptr;
  int side = 0;
};
inline int minor_psf_side(int image_size) { return 2 * image_size; }

// The pixel of a side x side PSF (peak at (side/2, side/2)) that lands on image pixel
// (x, y) when the PSF is centred on a component at (px, py); -1 where it falls outside
// the PSF (never for a PSF of twice the image's side).
SPIP_HOST_DEVICE inline long long psf_pixel_under(int x, int y, int px, int py, int side) {
  const int sx = x - (px - side / 2), sy = y - (py - side / 2);
  if (sx < 0 || sx >= side || sy < 0 || sy >= side) return -1;
  return static_cast<long long>(sy) * side + sx;
}

}  // namespace spip::deconv
