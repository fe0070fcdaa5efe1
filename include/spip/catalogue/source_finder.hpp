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
  // The (sub-)pixel position of a direction; false behind the projection's hemisphere.
  bool pixel(double ra, double dec, double& x, double& y) const;
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
  // The restoring beam's FWHMs (pixels) and PA (east of north): position errors along
  // each axis, and how far apart two components of an island must be.
  double beam_major_pix = 1, beam_minor_pix = 1, beam_pa_rad = 0;
  double rmsf_fwhm = 1;         // rad/m^2
  double complexity = 0.5;      // Faraday-complex when m2 > complexity * RMSF FWHM
  std::vector<Direction> pointings;  // beamdist is the distance from the nearest; none: from the image's centre
  std::string radesys = "FK5";  // the positions' frame, the images' RADESYS: FK5 (J2000) or ICRS
};

struct Source {
  std::string name;             // "SPIP Jhhmmss.s+ddmmss" (truncated, as IAU names are)
  int island = 0, component = 0;  // 1-based; components by falling PI within their island
  double x = 0, y = 0;          // zero-based pixel of the peak, parabolic sub-pixel
  double ra_deg = 0, dec_deg = 0;
  // On the sky, FWHM sigma / (2 PI) along each beam axis (Condon 1997): projected on RA
  // and Dec, and the larger (along the major axis) as one conservative error (RMTable's pos_err).
  double ra_err_deg = 0, dec_err_deg = 0, position_err_deg = 0;
  double phi = 0, phi_err = 0;  // rad/m^2
  double pi = 0, pi_err = 0;    // Jy/beam, bias-corrected with the local sigma
  double chi0_deg = 0, chi0_err_deg = 0;
  double stokes_i = 0;          // Jy/beam
  double stokes_v = std::numeric_limits<double>::quiet_NaN();  // the mean over the channels, Jy/beam; NaN: V not imaged
  double spectral_index = std::numeric_limits<double>::quiet_NaN();  // of Stokes I's power law, with faraday.fractional
  double frac_pol = 0;          // PI / I; NaN where I <= 0
  double sigma = 0;             // local FDF noise, Jy/beam
  // The peak pixel's measured FDF noise (faraday::measured_fdf_noise), Jy/beam; NaN where not measured.
  double fdf_noise_mad = std::numeric_limits<double>::quiet_NaN();
  double snr = 0;               // PI / sigma
  double m2 = 0;                // rad/m^2
  bool faraday_complex = false;
  int pointing = 0;             // the nearest of FinderSettings::pointings (0 without them)
  double beamdist_deg = 0;      // from the nearest pointing (the projection's centre), on the sky
  double beam_response = std::numeric_limits<double>::quiet_NaN();  // the primary beam's there; NaN: no beam
  // faraday::sigma_add of the peak pixel's channels, with its lower and upper errors; NaN where not measured.
  double sigma_add = std::numeric_limits<double>::quiet_NaN();
  double sigma_add_minus = std::numeric_limits<double>::quiet_NaN(), sigma_add_plus = sigma_add_minus;
  // sigma_add is significant: above 3 times its lower error.
  bool complex_sigma_add() const { return sigma_add > 3 * sigma_add_minus; }
};

// Sources sorted by falling PI. A peak at the image's edge or next to a blank pixel is
// not listed (the source may lie beyond it, where its position and flux are not
// measured); `truncated`, where given, counts them.
std::vector<Source> find_sources(const PixelMaps& maps, const SinProjection& projection, const FinderSettings& settings,
                                 int* truncated = nullptr);

// A position another catalogue gives (Stokes I components: Selavy, PyBDSF, Aegean).
struct SourcePosition {
  std::string id;  // its name or id there; empty: named from the position
  double ra_deg = 0, dec_deg = 0;
};
// The Faraday quantities at each position, as POSSUM measures them at its Stokes I
// components: at the nearest pixel, with the local noise, in the list's order, each its
// own island; positions off the image or on unmeasured (blank) pixels are left out, and
// with `left_out` listed there by kind, each by its id or else its RA, Dec.
struct LeftOut {
  std::vector<std::string> off_image, blank;
};
std::vector<Source> sources_at(const PixelMaps& maps, const SinProjection& projection, const FinderSettings& settings,
                               const std::vector<SourcePosition>& positions, LeftOut* left_out = nullptr);
// The positions in a FITS or CSV table (by its name's ending) with RA and Dec columns in
// degrees: ra/dec, ra_deg/dec_deg, ra_deg_cont/dec_deg_cont (Selavy), raj2000/dej2000,
// any case; the id from component_id, source_name, source_id, name or id where there is
// one. InputError in one line where the file or the columns are missing.
std::vector<SourcePosition> read_source_positions(const std::string& path);

// "SPIP J001234.5+601234" for a position in degrees.
std::string source_name(double ra_deg, double dec_deg);

}  // namespace spip::catalogue
