#pragma once
// The primary beam: the power response B(l, m, nu) of a pointing's antennas, through
// which every pointing sees the sky, relative to the pointing centre (1 there). The
// analytic models are the two every package offers: a Gaussian of FWHM k lambda / D and
// the Airy power pattern of a uniformly lit circular aperture, optionally with a central
// blockage; both depend on the angle from the centre only, and on frequency through
// lambda / D. A measured beam (ASKAP's holography, WSClean's or eidos's beam images)
// comes as a cube on a grid, with the fractions of Stokes I that the antennas turn into
// Q, U and V where it gives them.
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "spip/common/celestial.hpp"

namespace spip::beam {

enum class Model { gaussian, airy, cosine, polynomial, cube };

// The analytic model called "gaussian" or "airy"; empty for any other name.
std::optional<Model> model_named(const std::string& name);

// A fit of a measured beam as AIPS, CASA and Miriad give one: the response is
// sum_k c_k x^k (inverse: its reciprocal) with x = (theta [arcmin] nu [GHz])^2, out to
// max_arcmin_ghz (its main lobe), and 0 beyond.
struct PolynomialFit {
  double freq_hz = 0;  // the frequency it was fitted at
  std::vector<double> coefficients;
  bool inverse = false;
  double max_arcmin_ghz = 0;

  // The polynomial (not its inverse) at theta nu = r [arcmin GHz].
  double polynomial(double r) const;
};

// A beam on a grid: pixel (x, y) of each plane at direction cosines l = (x - ref_x) dl,
// m = (y - ref_y) dm from the pointing (a SIN projection about it), one plane per
// frequency. Between planes the response is linear in frequency, between pixels
// bilinear in (l, m); outside the grid it is 0.
struct BeamCube {
  std::string path;  // where it was read from, for messages
  int nx = 0, ny = 0;
  double ref_x = 0, ref_y = 0, dl = 0, dm = 0;
  std::vector<double> freq_hz;         // ascending, one per plane
  double lowest_hz = 0, highest_hz = 0;  // the band the planes cover: half a plane's spacing beyond the outer ones
  std::vector<float> response;         // [plane][y][x]
  std::vector<float> leakage;          // I -> Q, U, V as fractions of I: [Q, U, V][plane][y][x]; empty: none
};

// Reads a beam cube from FITS: RA---SIN and DEC--SIN axes with the pointing at the
// reference pixel, a FREQ axis, and optionally a STOKES axis of I alone (the response)
// or I, Q, U, V (the response, then the leakages I -> Q, U, V as fractions of I).
// Blank pixels have no response; wholly blank planes (the flagged channels of spip's own
// pb cube) are left out, and their neighbours interpolated across them. Throws
// ConfigError with one line naming what is wrong.
BeamCube read_beam_cube(const std::string& path);

struct PrimaryBeam {
  Model model = Model::gaussian;
  double dish_diameter_m = 0;
  double fwhm_factor = 1.02;  // gaussian, cosine: FWHM = fwhm_factor lambda / D (1.02: a uniformly lit dish's main lobe)
  double blockage_m = 0;      // airy: diameter of the central blockage (subreflector); 0: none
  std::vector<PolynomialFit> fits{};  // polynomial: by ascending frequency; each frequency takes the nearest
  std::shared_ptr<const BeamCube> cube{};  // the cube model's grid
  std::string name{};                    // for messages: the telescope, or the cube's file
  double lowest_hz = 0, highest_hz = 0;  // the band the model holds in; 0: any

  // The power response at direction cosines (l, m) from the pointing centre: 1 at the
  // centre; the Airy pattern's nulls are 0.
  double response(double l, double m, double freq_hz) const;
  // Whether the model has leakage, and the fraction of Stokes I seen as Stokes Q, U or V
  // (stokes 1, 2, 3) at (l, m): 0 without leakage.
  bool has_leakage() const { return cube && !cube->leakage.empty(); }
  double leakage(int stokes, double l, double m, double freq_hz) const;

  // The model in one phrase, for logs and FITS history: "airy, dish 25 m", "the VLA's beam ...".
  std::string describe() const;

  // Throws ConfigError with one line naming what is wrong (a diameter that is not
  // positive, a blockage not smaller than the dish, a factor that is not positive, a
  // cube model without its cube).
  void check() const;
  // Throws ConfigError unless the model holds over the imaged channels [first_hz, last_hz].
  void check_band(double first_hz, double last_hz) const;
};

// The cube model of read_beam_cube(path).
PrimaryBeam cube_beam(const std::string& path);

// The beam of the telescope an MS names (OBSERVATION TELESCOPE_NAME, in any case) as its
// observatory publishes it; empty for a telescope without a model here.
std::optional<PrimaryBeam> telescope_beam(const std::string& telescope);
// The telescopes telescope_beam knows, for messages.
std::string known_telescopes();

// An N x N image of `cell_rad` pixels about its centre (tangent point), laid out as
// imaging::ImageGeometry lays them (pixel (x, y) at l = -(x - N/2) cell, m = (y - N/2)
// cell), and the pointing its beam is centred on (by default the image's centre).
struct ImageGrid {
  int size = 0;
  double cell_rad = 0;
  Direction centre{}, pointing{};

  bool centred() const { return centre.ra_rad == pointing.ra_rad && centre.dec_rad == pointing.dec_rad; }
};

// The response over rows [first_row, first_row + rows) of the image, [y - first_row][x].
std::vector<float> response_rows(const PrimaryBeam& beam, const ImageGrid& grid, double freq_hz, int first_row,
                                 int rows);
// All N rows.
std::vector<float> response_plane(const PrimaryBeam& beam, const ImageGrid& grid, double freq_hz);
// The leakages I -> Q, U, V over the same rows, [Q, U, V][y - first_row][x]; empty without leakage.
std::vector<float> leakage_rows(const PrimaryBeam& beam, const ImageGrid& grid, double freq_hz, int first_row, int rows);

// The correction: each of `count` values divided by the response at its pixel, or blank
// (NaN) where the response is below `limit`; `values` holds whole planes of
// response.size() pixels. (Pointers, not spans: the sim room is C++17.)
void divide_by_response(float* values, std::size_t count, const std::vector<float>& response, double limit);

// One channel's apparent Stokes planes stokes[0..3] = I, Q, U, V (null: not held) made
// true: Q, U and V first less their leaked fractions of the apparent I (`leakage` as
// leakage_rows gives it; empty: none), then every plane divided by the response.
void correct_stokes(float* const stokes[4], const std::vector<float>& response, const std::vector<float>& leakage,
                    double limit);

}  // namespace spip::beam
