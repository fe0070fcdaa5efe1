#pragma once
// Subtracts many CLEAN components at once: the components' delta images convolved with
// the PSF through FFTs of size >= 3N/2, which is enough for the N x N window of a linear
// convolution with an N x N PSF to see no wrap-around.
#include <array>
#include <complex>
#include <cstddef>
#include <vector>

#include "spip/imaging/fft.hpp"

namespace spip::deconv {

struct Component {
  std::size_t pixel = 0;
  std::array<float, 4> flux{};  // I, Q, U, V (Jy/pixel)
};

class PsfConvolution {
 public:
  // `psf` is N x N with its peak at (N/2, N/2), as the gridder makes it.
  PsfConvolution(const float* psf, int n);

  // residual[s] -= components[s] convolved with the PSF, over the four N x N planes.
  void subtract(const std::vector<Component>& components, float* residual) const;

 private:
  int n_, m_;
  const imaging::Fft2d& fft_;
  std::vector<std::complex<float>> psf_transform_;  // scaled by 1 / m^2
  imaging::FftBuffer work_;
  imaging::Fft2d::Support all_, window_;  // every line; the image's [0, N)
};

}  // namespace spip::deconv
