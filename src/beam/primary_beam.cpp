#include "spip/beam/primary_beam.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <math.h>  // j1
#include <cstdlib>
#include <limits>
#include <numbers>
#include <optional>
#include <sstream>
#include <utility>

#include "spip/common/constants.hpp"
#include "spip/common/number_text.hpp"
#include "spip/error.hpp"

namespace spip::beam {
namespace {

// The field of a uniformly lit aperture at x = pi D sin(theta) / lambda, 1 at x = 0:
// 2 J1(x) / x, the limit 1 taken below x = 1e-8 where the quotient loses its digits.
// glibc's j1 (POSIX) costs 26 ns where libstdc++'s std::cyl_bessel_j(1, x) costs 359
// over the first 20 sidelobes (bench/bench_beam), and the two agree to 1e-14: a mosaic
// evaluates the beam for every pointing, pixel and channel.
double jinc(double x) { return std::abs(x) < 1e-8 ? 1.0 : 2.0 * ::j1(x) / x; }

// The power pattern of a cosine-tapered aperture at rho = theta / FWHM: the voltage
// cos(pi a rho) / (1 - 4 (a rho)^2) squared, where a = 1.18896 puts its half power at
// rho = 1/2 (MeerKAT's model: katbeam's jimbeam.py, Obit's ObitBeamShape.c).
double cosine_taper(double rho) {
  constexpr double a = 1.18896;
  const double ar = a * rho, denominator = 1.0 - 4.0 * ar * ar;
  // At a rho = 1/2 both vanish; the voltage's limit there is pi / 4.
  const double voltage = std::abs(denominator) < 1e-9 ? std::numbers::pi / 4 : std::cos(std::numbers::pi * ar) / denominator;
  return voltage * voltage;
}

const PolynomialFit& nearest_fit(const std::vector<PolynomialFit>& fits, double freq_hz) {
  return *std::ranges::min_element(fits, {}, [&](const PolynomialFit& f) { return std::abs(f.freq_hz - freq_hz); });
}

double polynomial_response(const PolynomialFit& fit, double theta, double freq_hz) {
  const double r = theta * rad_to_deg * 60.0 * freq_hz / 1e9;
  if (r > fit.max_arcmin_ghz) return 0;
  const double sum = fit.polynomial(r);
  return fit.inverse ? 1.0 / sum : std::max(0.0, sum);
}

// The two planes of a cube around freq_hz and the upper one's weight; outside the outer
// planes (within the band they cover), the nearest plane.
struct PlanePair {
  std::size_t lower = 0, upper = 0;
  double upper_weight = 0;
};

PlanePair planes_around(const BeamCube& cube, double freq_hz) {
  const std::vector<double>& f = cube.freq_hz;
  if (freq_hz <= f.front()) return {};
  if (freq_hz >= f.back()) return {f.size() - 1, f.size() - 1, 0};
  const std::size_t upper = static_cast<std::size_t>(std::upper_bound(f.begin(), f.end(), freq_hz) - f.begin());
  return {upper - 1, upper, (freq_hz - f[upper - 1]) / (f[upper] - f[upper - 1])};
}

// A cube's quantity (the response, or one leakage: `planes` at its first plane) at (l, m, nu).
double sample(const BeamCube& cube, const float* planes, double l, double m, double freq_hz) {
  const double x = cube.ref_x + l / cube.dl, y = cube.ref_y + m / cube.dm;
  if (!(x >= 0 && y >= 0 && x <= cube.nx - 1 && y <= cube.ny - 1)) return 0;
  const int x0 = std::min(static_cast<int>(x), cube.nx - 2), y0 = std::min(static_cast<int>(y), cube.ny - 2);
  const double fx = x - x0, fy = y - y0;
  const std::size_t plane_pixels = static_cast<std::size_t>(cube.nx) * cube.ny;
  const auto bilinear = [&](std::size_t plane) {
    const float* p = planes + plane * plane_pixels + static_cast<std::size_t>(y0) * cube.nx + x0;
    return (1 - fy) * ((1 - fx) * p[0] + fx * p[1]) + fy * ((1 - fx) * p[cube.nx] + fx * p[cube.nx + 1]);
  };
  const PlanePair pair = planes_around(cube, freq_hz);
  const double lower = bilinear(pair.lower);
  return pair.upper_weight == 0 ? lower : lower + pair.upper_weight * (bilinear(pair.upper) - lower);
}

}  // namespace

double PolynomialFit::polynomial(double r) const {
  double sum = 0, power = 1;
  for (double c : coefficients) {
    sum += c * power;
    power *= r * r;
  }
  return sum;
}

std::optional<Model> model_named(const std::string& name) {
  if (name == "gaussian") return Model::gaussian;
  if (name == "airy") return Model::airy;
  return std::nullopt;
}

double PrimaryBeam::response(double l, double m, double freq_hz) const {
  if (model == Model::cube) return sample(*cube, cube->response.data(), l, m, freq_hz);
  const double sin_theta = std::min(1.0, std::hypot(l, m));
  const double lambda = speed_of_light / freq_hz;
  const double theta = std::asin(sin_theta);
  if (model == Model::gaussian) {
    const double fwhm = fwhm_factor * lambda / dish_diameter_m;
    return std::exp(-4.0 * std::numbers::ln2 * theta * theta / (fwhm * fwhm));
  }
  if (model == Model::cosine) return cosine_taper(theta / (fwhm_factor * lambda / dish_diameter_m));
  if (model == Model::polynomial) return polynomial_response(nearest_fit(fits, freq_hz), theta, freq_hz);
  // The annulus between the blockage and the rim: the full aperture's field less the
  // blockage's, each weighted by its area, over the annulus's area.
  const double x = std::numbers::pi * dish_diameter_m * sin_theta / lambda;
  const double e = blockage_m / dish_diameter_m;
  const double field = (jinc(x) - e * e * jinc(e * x)) / (1.0 - e * e);
  return field * field;
}

double PrimaryBeam::leakage(int stokes, double l, double m, double freq_hz) const {
  if (!has_leakage()) return 0;
  const std::size_t planes = cube->response.size();
  return sample(*cube, cube->leakage.data() + static_cast<std::size_t>(stokes - 1) * planes, l, m, freq_hz);
}

std::string PrimaryBeam::describe() const {
  std::ostringstream line;
  if (!name.empty()) line << name;
  if (model == Model::cube) return line.str();
  constexpr const char* model_names[] = {"gaussian", "airy", "cosine taper", "polynomial"};
  if (name.empty()) line << model_names[static_cast<int>(model)];
  line << ", dish " << dish_diameter_m << " m";
  if (name.empty() && model == Model::gaussian) line << ", FWHM " << fwhm_factor << " lambda / D";
  if (model == Model::airy && blockage_m > 0) line << ", blockage " << blockage_m << " m";
  return line.str();
}

void PrimaryBeam::check() const {
  if (model == Model::cube) {
    if (!cube) SPIP_THROW(ConfigError, "primary beam: the cube model has no beam cube");
    return;
  }
  if (model == Model::polynomial) {
    if (fits.empty()) SPIP_THROW(ConfigError, "primary beam: the polynomial model has no fits");
    return;
  }
  if (!(dish_diameter_m > 0))
    SPIP_THROW(ConfigError, "primary beam: the dish diameter is " + number_text(dish_diameter_m) +
                                " m; it must be a number > 0");
  if ((model == Model::gaussian || model == Model::cosine) && !(fwhm_factor > 0))
    SPIP_THROW(ConfigError, "primary beam: the FWHM factor is " + number_text(fwhm_factor) +
                                "; it must be a number > 0");
  if (model == Model::airy && !(blockage_m >= 0 && blockage_m < dish_diameter_m))
    SPIP_THROW(ConfigError, "primary beam: the blockage of " + number_text(blockage_m) +
                                " m must be >= 0 and smaller than the dish of " + number_text(dish_diameter_m) +
                                " m");
}

void PrimaryBeam::check_band(double first_hz, double last_hz) const {
  if (highest_hz == 0 || (first_hz >= lowest_hz && last_hz <= highest_hz)) return;
  SPIP_THROW(ConfigError, "primary beam: " + name + " holds from " + number_text(lowest_hz / 1e6) + " to " +
                              number_text(highest_hz / 1e6) + " MHz, but the imaged channels span " + number_text(first_hz / 1e6) +
                              " to " + number_text(last_hz / 1e6) + " MHz");
}

namespace {

// Each pixel's direction cosines about the pointing: the image's own (l, m) where it is
// centred on it; otherwise through the direction the pixel looks at.
class PointingOffsets {
 public:
  explicit PointingOffsets(const ImageGrid& grid)
      : centred_(grid.centred()), image_(tangent_axes(grid.centre)), pointing_(tangent_axes(grid.pointing)) {}

  // Empty on the far side of the sky from the pointing, where no beam sees.
  std::optional<std::pair<double, double>> operator()(double l, double m) const {
    if (centred_) return std::pair{l, m};
    const double n = std::sqrt(std::max(0.0, 1 - l * l - m * m));
    double s[3];
    for (int k = 0; k < 3; ++k) s[k] = l * image_[0][k] + m * image_[1][k] + n * image_[2][k];
    const double lp = s[0] * pointing_[0][0] + s[1] * pointing_[0][1] + s[2] * pointing_[0][2];
    const double mp = s[0] * pointing_[1][0] + s[1] * pointing_[1][1] + s[2] * pointing_[1][2];
    const double np = s[0] * pointing_[2][0] + s[1] * pointing_[2][1] + s[2] * pointing_[2][2];
    if (!(np > 0)) return std::nullopt;
    return std::pair{lp, mp};
  }

 private:
  bool centred_;
  std::array<std::array<double, 3>, 3> image_, pointing_;
};

// `value(l, m)` about the pointing, pixel by pixel: for a cube, which has no symmetry to
// use, and for an image centred away from its pointing.
template <class Value>
std::vector<float> pixel_rows(const ImageGrid& grid, int first_row, int rows, const Value& value) {
  std::vector<float> values(static_cast<std::size_t>(rows) * grid.size);
  const PointingOffsets offsets(grid);
  const int half = grid.size / 2;
#pragma omp parallel for schedule(static)
  for (int y = 0; y < rows; ++y)
    for (int x = 0; x < grid.size; ++x) {
      const auto lm = offsets(-(x - half) * grid.cell_rad, (first_row + y - half) * grid.cell_rad);
      values[static_cast<std::size_t>(y) * grid.size + x] = lm ? static_cast<float>(value(lm->first, lm->second)) : 0.0f;
    }
  return values;
}

}  // namespace

// Centred on the pointing, an analytic response depends on |l| and |m| alone, and |l| =
// |x - N/2| cell exactly: each distance |y - N/2| of the rows gets one profile over
// |x - N/2| = 0 .. N/2, which fills its rows on both sides of the centre, a quarter of
// the evaluations of a pixel-by-pixel loop for a whole plane and the same values to the bit.
std::vector<float> response_rows(const PrimaryBeam& beam, const ImageGrid& grid, double freq_hz, int first_row,
                                 int rows) {
  if (beam.model == Model::cube || !grid.centred())
    return pixel_rows(grid, first_row, rows, [&](double l, double m) { return beam.response(l, m, freq_hz); });
  const int size = grid.size, half = size / 2;
  const double cell_rad = grid.cell_rad;
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

std::vector<float> response_plane(const PrimaryBeam& beam, const ImageGrid& grid, double freq_hz) {
  return response_rows(beam, grid, freq_hz, 0, grid.size);
}

std::vector<float> leakage_rows(const PrimaryBeam& beam, const ImageGrid& grid, double freq_hz, int first_row, int rows) {
  if (!beam.has_leakage()) return {};
  std::vector<float> leakage;
  for (int stokes = 1; stokes <= 3; ++stokes) {
    const std::vector<float> one = pixel_rows(
        grid, first_row, rows, [&](double l, double m) { return beam.leakage(stokes, l, m, freq_hz); });
    leakage.insert(leakage.end(), one.begin(), one.end());
  }
  return leakage;
}

void divide_by_response(float* values, std::size_t count, const std::vector<float>& response, double limit) {
  for (std::size_t i = 0; i < count; ++i) {
    const float b = response[i % response.size()];
    values[i] = b >= limit ? values[i] / b : std::numeric_limits<float>::quiet_NaN();
  }
}

void correct_stokes(float* const stokes[4], const std::vector<float>& response, const std::vector<float>& leakage,
                    double limit) {
  const std::size_t pixels = response.size();
  if (!leakage.empty() && stokes[0])
    for (std::size_t k = 1; k < 4; ++k)
      if (stokes[k])
        for (std::size_t i = 0; i < pixels; ++i) stokes[k][i] -= leakage[(k - 1) * pixels + i] * stokes[0][i];
  for (std::size_t k = 0; k < 4; ++k)
    if (stokes[k]) divide_by_response(stokes[k], pixels, response, limit);
}

}  // namespace spip::beam
