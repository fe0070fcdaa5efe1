#pragma once
// The restoring beam: an elliptical Gaussian fitted to the PSF's main lobe, or, where
// the fit is not a beam, the diffraction limit of the longest baseline.
#include <algorithm>
#include <optional>
#include <vector>

#include "spip/imaging/geometry.hpp"

namespace spip::imaging {

struct Beam {
  double major_rad = 0;  // FWHM
  double minor_rad = 0;  // FWHM
  double pa_rad = 0;     // of the major axis, east of north, in (-pi/2, pi/2]
};

// Least-squares fit of log(psf) = -(a l^2 + b l m + c m^2) over the main lobe (the
// pixels above 35 % of the peak connected to the centre); exact for a Gaussian PSF.
// The PSF has its peak, normalised to 1, at pixel (N/2, N/2). Empty where the lobe is
// not a peak (a snapshot of an east-west array at pixels finer than its line-like PSF).
std::optional<Beam> fit_beam(const float* psf, const ImageGeometry& geometry);

// The circular beam of FWHM 1 / |uv|max (radians, |uv| in wavelengths, the longest
// baseline the weighting keeps), as WSClean's theoretical beam, widened in quadrature by
// a Gaussian uv taper of image-plane FWHM `taper_fwhm_rad`.
Beam theoretical_beam(double max_uv_wavelengths, double taper_fwhm_rad);

// The beam size (FWHM, radians) WSClean gives its deconvolution, from which multiscale
// CLEAN takes its automatic scales and its bias reference: 1 / |uv|max, or the taper's
// FWHM where that is larger.
inline double deconvolution_beam(double max_uv_wavelengths, double taper_fwhm_rad) {
  return std::max(1.0 / max_uv_wavelengths, taper_fwhm_rad);
}

// A fit is taken as a beam when its major axis is at most this many times the
// theoretical FWHM and no wider than the image. Real PSFs stay well inside it (an
// east-west array's beam at declination delta is 1 / sin(delta) times longer north-south,
// 5.8 at 10 degrees), while the line-like PSF of one snapshot of such an array was
// fitted as a beam 3,000 times its width.
inline constexpr double max_beam_elongation = 10.0;

// Where a channel's restoring beam came from.
enum class BeamOrigin { fitted, theoretical, chosen };

struct RestoringBeam {
  Beam beam;
  BeamOrigin origin = BeamOrigin::fitted;
};

// The beam that every one of `beams` fits inside (each one's half-power ellipse within
// its own), as CASA's common beam: the largest by area where it holds the others, else
// widened, beam by beam, to the smallest ellipse holding it and the next (in the frame
// where it is a circle, to the larger of 1 and the next one's extent along that one's
// axes). Beams that narrow as 1 / nu at one angle give the widest; beams at different
// angles (a mosaic's pointings, or sub-bands seen at other hour angles) give one wider
// than each. Empty `beams`: a zero beam.
Beam enclosing_beam(const std::vector<Beam>& beams);

// Whether `outer`'s half-power ellipse holds `inner`'s (to rounding): whether an image at
// resolution `inner` can be convolved to `outer`.
bool holds(const Beam& outer, const Beam& inner);

// Whether two beams are one to a part in 1e-5 of their half-power extent: an image at
// one needs no convolution to the other.
bool alike(const Beam& a, const Beam& b);

// Convolves `count` planes of nx x ny pixels (x = -l, y = m, `cell_rad` square), in
// Jy/beam at resolution `from`, to resolution `to` (which holds() `from`): each with the
// Gaussian whose covariance is the difference of the two beams', scaled by the ratio of
// their areas so that the result is in Jy per `to` beam, as CASA's imsmooth and
// RACS-tools' beamcon_3D make a cube's channels one resolution for RM synthesis. The
// kernel's transform is applied analytically on an FFT grid wide enough that nothing
// wraps around, so a kernel narrower than a pixel in one direction (two beams alike
// along one axis) is exact too. NaN pixels stay NaN; a measured pixel becomes NaN where
// less than 99 % of the kernel's weight falls on measured ones, and elsewhere takes the
// weighted mean of those (normalised convolution), so that a mosaic's edge does not
// pull its neighbours towards zero. `grid`: a smoothing_grid() for these beams.
void convolve_to_beam(float* planes, int count, int nx, int ny, double cell_rad, const Beam& from, const Beam& to,
                      int grid);

// The side of the FFT grid on which convolve_to_beam() takes nx x ny planes from any of
// `from` (a cube's channels) to `to`: one size for them all, so that FFTW plans it once.
int smoothing_grid(int nx, int ny, double cell_rad, const std::vector<Beam>& from, const Beam& to);

// What convolve_to_beam() holds beside the planes on a grid of that side: its complex
// grid, the kernel's transform and the weights on measured pixels.
inline double smoothing_bytes(int grid) { return 16.0 * grid * (grid + 16); }

// The beam to restore every one of `beams` with: the enclosing_beam() of the fitted (or
// chosen) ones, or where there are none of the theoretical ones, with that origin.
RestoringBeam common_restoring_beam(const std::vector<RestoringBeam>& beams);

// `chosen` (image.beam) when given; else the fit where it is a beam (see
// max_beam_elongation); else the theoretical beam.
RestoringBeam restoring_beam(const std::optional<Beam>& fit, double max_uv_wavelengths, double taper_fwhm_rad,
                             const ImageGeometry& geometry, const std::optional<Beam>& chosen);

// Adds each of `planes` model planes (Jy/pixel, N x N each) convolved with the beam
// (peak 1) to the matching image plane, giving Jy/beam. Costs nothing where the model
// is zero: each component adds its beam directly, or, where that would cost more (many
// components, a beam much larger than a pixel), the planes are convolved with FFTs on a
// grid twice the image's side, two planes per complex transform (the beam is real and
// even, so its transform is real). Both give the linear convolution truncated to the
// image. The FFT path holds 2 x 32 bytes per image pixel.
void restore(const float* model, const ImageGeometry& geometry, const Beam& beam, float* image, int planes = 1);

// Plans the restoring FFTs of this geometry now (FFTW_MEASURE), so that a rank can plan
// them where the pipeline shares FFT wisdom between ranks.
void plan_restoring(const ImageGeometry& geometry);

}  // namespace spip::imaging
