#pragma once
// The primary beam: the power response B(l, m, nu) of a pointing's antennas, through
// which every pointing sees the sky, relative to the pointing centre (1 there). The
// models are the two analytic ones every package offers: a Gaussian of FWHM k lambda / D
// and the Airy power pattern of a uniformly lit circular aperture, optionally with a
// central blockage. Both depend on the angle from the centre only, and on frequency
// through lambda / D.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace spip::beam {

enum class Model { gaussian, airy };

// The model called "gaussian" or "airy"; empty for any other name.
std::optional<Model> model_named(const std::string& name);

struct PrimaryBeam {
  Model model = Model::gaussian;
  double dish_diameter_m = 0;
  double fwhm_factor = 1.02;  // gaussian: FWHM = fwhm_factor lambda / D (1.02: a uniformly lit dish's main lobe)
  double blockage_m = 0;      // airy: diameter of the central blockage (subreflector); 0: none

  // The power response at direction cosines (l, m) from the pointing centre: 1 at the
  // centre; the Airy pattern's nulls are 0.
  double response(double l, double m, double freq_hz) const;

  // Throws ConfigError with one line naming what is wrong (a diameter that is not
  // positive, a blockage not smaller than the dish, a factor that is not positive).
  void check() const;
};

// The response over rows [first_row, first_row + rows) of an N x N image of `cell_rad`
// pixels centred on the pointing, as imaging::ImageGeometry lays pixels out: pixel
// (x, y) at l = -(x - N/2) cell, m = (y - N/2) cell; [y - first_row][x].
std::vector<float> response_rows(const PrimaryBeam& beam, int size, double cell_rad, double freq_hz, int first_row,
                                 int rows);
// All N rows.
std::vector<float> response_plane(const PrimaryBeam& beam, int size, double cell_rad, double freq_hz);

// The correction: each of `count` values divided by the response at its pixel, or blank
// (NaN) where the response is below `limit`; `values` holds whole planes of
// response.size() pixels. (Pointers, not spans: the sim room is C++17.)
void divide_by_response(float* values, std::size_t count, const std::vector<float>& response, double limit);

}  // namespace spip::beam
