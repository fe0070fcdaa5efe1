#pragma once
// Image and grid geometry. Pixel (x, y) of an N x N image, zero-based, sits at
//   l = -(x - N/2) * cell,  m = (y - N/2) * cell
// (RA increases to the left, as FITS CDELT1 < 0), so the phase centre is pixel (N/2, N/2).
#include <cstddef>

namespace spip::imaging {

struct ImageGeometry {
  int size = 0;          // N, image pixels per side
  double cell_rad = 0;   // pixel size
  int grid_size = 0;     // P >= N * padding, good_fft_size(): a multiple of 8

  static ImageGeometry make(int size, double cell_rad, double padding);
  std::size_t pixels() const { return static_cast<std::size_t>(size) * size; }
  double l(int x) const { return -(x - size / 2) * cell_rad; }
  double m(int y) const { return (y - size / 2) * cell_rad; }
  // n - 1 = sqrt(1 - l^2 - m^2) - 1 at pixel (x, y), -1 beyond the horizon: the w-term's
  // factor, which the gridder and the direct predict must take alike.
  double n_minus_1(int x, int y) const;
  double uv_cell() const { return 1.0 / (grid_size * cell_rad); }  // wavelengths per grid cell
};

// Smallest n >= target that is a multiple of 8 and whose only prime factors are 2, 3,
// 5 and 7. Sizes with a single factor 2 transform at half the speed: a whole 2-D FFT
// of 1250^2 took 8.6 ms over 2 threads where 1280^2 took 4.6 ms, 630^2 1.5 ms where
// 640^2 took 0.9 ms (FFTW 3.3.10, AVX2, benchmark machine). A multiple of 8 also keeps
// every lane of a multi-lane grid on the 64-byte boundary that Fft2d's plans assume.
int good_fft_size(int target);

}  // namespace spip::imaging
