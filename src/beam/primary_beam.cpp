#include "spip/beam/primary_beam.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <numbers>
#include <sstream>

#include "spip/common/constants.hpp"
#include "spip/error.hpp"

namespace spip::beam {
namespace {

// The field of a uniformly lit aperture at x = pi D sin(theta) / lambda, 1 at x = 0:
// 2 J1(x) / x, the limit 1 taken below x = 1e-8 where the quotient loses its digits.
double jinc(double x) { return std::abs(x) < 1e-8 ? 1.0 : 2.0 * std::cyl_bessel_j(1.0, x) / x; }

std::string text(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

}  // namespace

std::optional<Model> model_named(const std::string& name) {
  if (name == "gaussian") return Model::gaussian;
  if (name == "airy") return Model::airy;
  return std::nullopt;
}

double PrimaryBeam::response(double l, double m, double freq_hz) const {
  const double sin_theta = std::min(1.0, std::hypot(l, m));
  const double lambda = speed_of_light / freq_hz;
  if (model == Model::gaussian) {
    const double theta = std::asin(sin_theta), fwhm = fwhm_factor * lambda / dish_diameter_m;
    return std::exp(-4.0 * std::numbers::ln2 * theta * theta / (fwhm * fwhm));
  }
  // The annulus between the blockage and the rim: the full aperture's field less the
  // blockage's, each weighted by its area, over the annulus's area.
  const double x = std::numbers::pi * dish_diameter_m * sin_theta / lambda;
  const double e = blockage_m / dish_diameter_m;
  const double field = (jinc(x) - e * e * jinc(e * x)) / (1.0 - e * e);
  return field * field;
}

void PrimaryBeam::check() const {
  if (!(dish_diameter_m > 0))
    SPIP_THROW(ConfigError, "primary beam: the dish diameter is " + text(dish_diameter_m) +
                                " m; it must be a number > 0");
  if (model == Model::gaussian && !(fwhm_factor > 0))
    SPIP_THROW(ConfigError, "primary beam: the FWHM factor is " + text(fwhm_factor) +
                                "; it must be a number > 0");
  if (model == Model::airy && !(blockage_m >= 0 && blockage_m < dish_diameter_m))
    SPIP_THROW(ConfigError, "primary beam: the blockage of " + text(blockage_m) +
                                " m must be >= 0 and smaller than the dish of " + text(dish_diameter_m) +
                                " m");
}

// The response depends on |l| and |m| alone, and |l| = |x - N/2| cell exactly: each
// distance |y - N/2| of the rows gets one profile over |x - N/2| = 0 .. N/2, which fills
// its rows on both sides of the centre, a quarter of the evaluations of a pixel-by-pixel
// loop for a whole plane (the Bessel function of the Airy pattern costs ~70 ns) and the
// same values to the bit.
std::vector<float> response_rows(const PrimaryBeam& beam, int size, double cell_rad, double freq_hz, int first_row,
                                 int rows) {
  const int half = size / 2;
  int nearest = std::numeric_limits<int>::max(), farthest = 0;
  for (int y = first_row; y < first_row + rows; ++y) {
    nearest = std::min(nearest, std::abs(y - half));
    farthest = std::max(farthest, std::abs(y - half));
  }
  const int columns = std::max(half, size - 1 - half) + 1;
  std::vector<float> profiles(static_cast<std::size_t>(std::max(0, farthest - nearest + 1)) * columns);
#pragma omp parallel for schedule(dynamic, 4)
  for (int a = nearest; a <= farthest; ++a)
    for (int b = 0; b < columns; ++b)
      profiles[static_cast<std::size_t>(a - nearest) * columns + b] =
          static_cast<float>(beam.response(b * cell_rad, a * cell_rad, freq_hz));
  std::vector<float> plane(static_cast<std::size_t>(rows) * size);
  for (int y = 0; y < rows; ++y) {
    const float* profile = profiles.data() + static_cast<std::size_t>(std::abs(first_row + y - half) - nearest) * columns;
    for (int x = 0; x < size; ++x) plane[static_cast<std::size_t>(y) * size + x] = profile[std::abs(x - half)];
  }
  return plane;
}

std::vector<float> response_plane(const PrimaryBeam& beam, int size, double cell_rad, double freq_hz) {
  return response_rows(beam, size, cell_rad, freq_hz, 0, size);
}

void divide_by_response(float* values, std::size_t count, const std::vector<float>& response, double limit) {
  for (std::size_t i = 0; i < count; ++i) {
    const float b = response[i % response.size()];
    values[i] = b >= limit ? values[i] / b : std::numeric_limits<float>::quiet_NaN();
  }
}

}  // namespace spip::beam
