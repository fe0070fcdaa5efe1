#pragma once
// The exponential-of-semicircle gridding kernel (Barnett, Magland & af Klinteberg 2019)
//   phi(t) = exp(beta (sqrt(1 - t^2) - 1)),  |t| <= 1,
// spanning `support` grid cells. Per-element math shared by the CPU and CUDA gridders.
#include <cmath>

#include "spip/common/host_device.hpp"

namespace spip::imaging {

struct EsKernel {
  int support = 0;   // cells covered (W)
  double beta = 0;   // shape parameter

  // phi at offset `cells` from the kernel centre (|cells| <= W/2 inside the support).
  SPIP_HOST_DEVICE double operator()(double cells) const {
    const double t = 2.0 * cells / support;
    const double s = 1.0 - t * t;
    return s > 0.0 ? exp(beta * (sqrt(s) - 1.0)) : 0.0;
  }
};

inline constexpr int max_support = 16;  // the widest kernel choose_kernel() returns

// The kernel of W cells for a grid oversampled by `oversampling`, with FINUFFT's
// beta = 0.97 pi W (1 - 1/(2 sigma)).
EsKernel es_kernel(int support, double oversampling);

// The relative error that aliasing adds along one axis of an image that fills
// 1/oversampling of the grid, at worst: the largest over the image of
//   sum_{0 < |m| <= 3} |psi(f + m)| / psi(f),  f in cycles per grid cell
// (the further aliases add a few per cent; tests/imaging compares it with gridding).
double aliasing_error(const EsKernel& kernel, double oversampling);

// The narrowest kernel whose aliasing_error() is at most `budget`.
EsKernel choose_kernel(double budget, double oversampling);

// Grid oversampling for a requested accuracy: at least `padding`, and more where
// float32 grids cannot reach the accuracy at low oversampling (the grid correction
// amplifies rounding near the image edge by 1/psi(edge)).
double oversampling_for(double accuracy, double padding);

// Fourier transform of the kernel at `k` cycles per grid period of `cells` cells:
//   psi(k) = (W/2) * integral_{-1}^{1} phi(t) cos(pi t W k / cells) dt,
// by Gauss-Legendre quadrature. Dividing an image by it is the exact grid correction.
double kernel_transform(const EsKernel& kernel, double k, double cells);

}  // namespace spip::imaging
