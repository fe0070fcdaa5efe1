#pragma once
// Polarised sources from the Faraday stage's pixel maps. Islands are the connected
// pixels whose peak PI is above `threshold` times the local FDF noise; each island's
// components are its local PI maxima, at least a beam apart. Pure functions on images.
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "spip/common/celestial.hpp"

namespace spip::catalogue {

// An image [y][x], x fastest; NaN where nothing was measured.
struct Map {
  int nx = 0, ny = 0;
  std::vector<float> values;
  float at(int x, int y) const { return values[static_cast<std::size_t>(y) * nx + x]; }
};

// The products' orthographic (SIN) projection: zero-based pixel (ref_x, ref_y) looks at
// (ra_rad, dec_rad) (the phase centre, at (nx/2, ny/2) in spip's own images), RA
// increases to lower x.
struct SinProjection {
  double ref_x = 0, ref_y = 0;
  double ra_rad = 0, dec_rad = 0, cell_rad = 0;
  // RA in [0, 2 pi) and Dec of a (sub-)pixel position.
  void world(double x, double y, double& ra, double& dec) const;
};

// The local noise: the rms of `noise` (each pixel's own noise) in boxes of `box` pixels
// centred on a mesh of half a box's spacing, interpolated bilinearly between the mesh
// points. It follows noise that varies over the field, and near a bright source it
// includes the deconvolution errors that raise the pixels' noise around it.
Map local_noise(const Map& noise, int box);

// The Faraday stage's pixel maps, all of one shape.
struct PixelMaps {
  Map phi, pi, chi0;        // clean FDF peak: rad/m^2, Jy/beam (bias-corrected), rad
  Map phi_err, pi_err, chi0_err;  // pi_err: the pixel's FDF noise
  Map m2;                   // second moment of the RM-CLEAN components, rad/m^2
  Map stokes_i;             // mean-I moment, or I at nu0 with faraday.fractional; Jy/beam
};

struct FinderSettings {
  double threshold = 8;         // island pixels: PI above this many local sigma
  int box = 0;                  // side of the local-noise boxes, pixels
  double beam_fwhm_pix = 1;     // geometric mean of the restoring beam's axes
  double rmsf_fwhm = 1;         // rad/m^2
  double complexity = 0.5;      // Faraday-complex when m2 > complexity * RMSF FWHM
  std::vector<Direction> pointings;  // beamdist is the distance from the nearest; none: from the image's centre
};

struct Source {
  std::string name;             // "SPIP Jhhmmss.s+ddmmss" (truncated, as IAU names are)
  int island = 0, component = 0;  // 1-based; components by falling PI within their island
  double x = 0, y = 0;          // zero-based pixel of the peak, parabolic sub-pixel
  double ra_deg = 0, dec_deg = 0;
  double position_err_deg = 0;  // on the sky, per coordinate: beam FWHM sigma / (2 PI)
  double phi = 0, phi_err = 0;  // rad/m^2
  double pi = 0, pi_err = 0;    // Jy/beam, bias-corrected with the local sigma
  double chi0_deg = 0, chi0_err_deg = 0;
  double stokes_i = 0;          // Jy/beam
  double frac_pol = 0;          // PI / I; NaN where I <= 0
  double sigma = 0;             // local FDF noise, Jy/beam
  double snr = 0;               // PI / sigma
  double m2 = 0;                // rad/m^2
  bool faraday_complex = false;
  double beamdist_deg = 0;      // from the nearest pointing (the projection's centre), on the sky
  double beam_response = std::numeric_limits<double>::quiet_NaN();  // the primary beam's there; NaN: no beam
};

// Sources sorted by falling PI.
std::vector<Source> find_sources(const PixelMaps& maps, const SinProjection& projection, const FinderSettings& settings);

// "SPIP J001234.5+601234" for a position in degrees.
std::string source_name(double ra_deg, double dec_deg);

}  // namespace spip::catalogue
