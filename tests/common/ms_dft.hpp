#pragma once
// An independent reference for spip's dirty images: the direct Fourier transform, in
// double precision, of one channel's rows of a Measurement Set, read with casacore
// directly (not through spip's ms room). Weights as the imager uses them with natural
// weighting: WEIGHT_SPECTRUM where present (else WEIGHT); a Stokes parameter from
// correlations a and b weighs 4 wa wb / (wa + wb); rows flagged in either correlation,
// flagged rows and autocorrelations are left out. Stokes rules are IAU's
// (XX = I+Q, XY = U+iV, RR = I+V, RL = Q+iU). Header free of casacore (C++17).
#include <array>
#include <string>
#include <vector>

namespace spip::test {

// The image grid: SIN projection about the phase centre, zero-based pixel (x, y) at
// l = (x + 1 - crpix1) cdelt1, m = (y + 1 - crpix2) cdelt2, all in radians.
struct DftGrid {
  double crpix1 = 0, crpix2 = 0, cdelt1_rad = 0, cdelt2_rad = 0;
};

struct DftPixel {
  int x = 0, y = 0;
};

// I, Q, U, V (the real part of sum w V exp(-2 pi i (u l + v m + w (n - 1))) / sum w,
// with the MS's own UVW) at each pixel; a Stokes parameter the correlations do not
// determine is empty.
std::array<std::vector<double>, 4> direct_dft(const std::string& ms, int channel, const DftGrid& grid,
                                              const std::vector<DftPixel>& pixels);

// The same over several channels gridded together, each sample at its own frequency
// (a binned image channel).
std::array<std::vector<double>, 4> direct_dft(const std::string& ms, const std::vector<int>& channels,
                                              const DftGrid& grid, const std::vector<DftPixel>& pixels);

// The PSF of Stokes I over those channels: the same sum with every visibility 1.
std::vector<double> direct_psf(const std::string& ms, const std::vector<int>& channels, const DftGrid& grid,
                               const std::vector<DftPixel>& pixels);

// The number of channels of the MS's first spectral window.
int channel_count(const std::string& ms);

// The longest projected baseline, sqrt(u^2 + v^2), of the rows not flagged as a whole,
// in wavelengths of the first spectral window's channel.
double longest_baseline_wavelengths(const std::string& ms, int channel);

}  // namespace spip::test
