#pragma once
// The restoring beam: an elliptical Gaussian fitted to the PSF's main lobe.
#include "spip/imaging/geometry.hpp"

namespace spip::imaging {

struct Beam {
  double major_rad = 0;  // FWHM
  double minor_rad = 0;  // FWHM
  double pa_rad = 0;     // of the major axis, east of north, in (-pi/2, pi/2]
};

// Least-squares fit of log(psf) = -(a l^2 + b l m + c m^2) over the main lobe (the
// pixels above 35 % of the peak connected to the centre); exact for a Gaussian PSF.
// The PSF has its peak, normalised to 1, at pixel (N/2, N/2).
Beam fit_beam(const float* psf, const ImageGeometry& geometry);

// Adds the model (Jy/pixel) convolved with the beam (peak 1) to `image`, giving Jy/beam.
void restore(const float* model, const ImageGeometry& geometry, const Beam& beam, float* image);

}  // namespace spip::imaging
