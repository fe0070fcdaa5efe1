#pragma once
// Image and grid geometry. Pixel (x, y) of an N x N image, zero-based, sits at
//   l = -(x - N/2) * cell,  m = (y - N/2) * cell
// (RA increases to the left, as FITS CDELT1 < 0), so the phase centre is pixel (N/2, N/2).
#include <cstddef>

namespace spip::imaging {

struct ImageGeometry {
  int size = 0;          // N, image pixels per side
  double cell_rad = 0;   // pixel size
  int grid_size = 0;     // P >= N * padding, even and FFT-friendly

  static ImageGeometry make(int size, double cell_rad, double padding);
  std::size_t pixels() const { return static_cast<std::size_t>(size) * size; }
  double l(int x) const { return -(x - size / 2) * cell_rad; }
  double m(int y) const { return (y - size / 2) * cell_rad; }
  // n - 1 = sqrt(1 - l^2 - m^2) - 1 at pixel (x, y), -1 beyond the horizon: the w-term's
  // factor, which the gridder and the direct predict must take alike.
  double n_minus_1(int x, int y) const;
  double uv_cell() const { return 1.0 / (grid_size * cell_rad); }  // wavelengths per grid cell
};

// Smallest even n >= target whose only prime factors are 2, 3, 5 and 7.
int good_fft_size(int target);

}  // namespace spip::imaging
