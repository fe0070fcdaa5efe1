// The primary-beam models against independent truth: the Gaussian against its closed
// form, the Airy pattern against SciPy's j1 (values recorded below) and against the
// zeros and half-power point of 2 J1(x) / x, and both against the scaling with lambda / D
// that makes the beam shrink as 1 / nu.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <numbers>
#include <utility>
#include <vector>

#include "spip/beam/mosaic.hpp"
#include "spip/beam/primary_beam.hpp"
#include "spip/common/constants.hpp"
#include "spip/error.hpp"

namespace spip::beam {
namespace {

constexpr double freq = 1.4e9, dish = 25.0;
const double lambda = speed_of_light / freq;

// The direction cosine l at which the Airy argument pi D sin(theta) / lambda is x.
double l_at(double x, double diameter = dish) { return x * lambda / (std::numbers::pi * diameter); }

TEST(GaussianBeam, IsHalfPowerAtHalfItsFwhmAndOneAtTheCentre) {
  const PrimaryBeam beam{.model = Model::gaussian, .dish_diameter_m = dish, .fwhm_factor = 1.02, .blockage_m = 0};
  const double fwhm = 1.02 * lambda / dish;
  EXPECT_EQ(beam.response(0, 0, freq), 1.0);
  EXPECT_NEAR(beam.response(std::sin(0.5 * fwhm), 0, freq), 0.5, 1e-12);
  EXPECT_NEAR(beam.response(0, std::sin(0.5 * fwhm), freq), 0.5, 1e-12);
  // Off the axes too, and at a full FWHM: exp(-4 ln 2) = 1/16.
  const double s = std::sin(fwhm) / std::sqrt(2.0);
  EXPECT_NEAR(beam.response(s, -s, freq), 1.0 / 16.0, 1e-12);
}

TEST(GaussianBeam, ShrinksAsOneOverFrequency) {
  const PrimaryBeam beam{.model = Model::gaussian, .dish_diameter_m = dish, .fwhm_factor = 1.09, .blockage_m = 0};
  for (double theta : {0.001, 0.005, 0.01})
    EXPECT_NEAR(beam.response(std::sin(theta), 0, 2 * freq), beam.response(std::sin(2 * theta), 0, freq), 1e-12);
}

// SciPy 1.17.1: float((2 * j1(x) / x)**2), and with a blockage of a tenth of the
// diameter, ((2 j1(x)/x - 0.01 * 2 j1(0.1 x)/(0.1 x)) / 0.99)**2.
TEST(AiryBeam, EqualsScipysBesselPattern) {
  const PrimaryBeam open{.model = Model::airy, .dish_diameter_m = dish};
  const struct {
    double x, power;
  } scipy[] = {{0.5, 0.9391040893465944},  {1.0, 0.7745780720578365},  {2.5, 0.15814562989104777},
               {5.0, 0.017169294621626904}, {9.0, 0.0029717467966319357}};
  for (const auto& [x, power] : scipy) EXPECT_NEAR(open.response(l_at(x), 0, freq), power, 1e-12 * power) << x;
  const PrimaryBeam blocked{.model = Model::airy, .dish_diameter_m = dish, .blockage_m = 0.1 * dish};
  const struct {
    double x, power;
  } scipy_blocked[] = {{1.0, 0.7724699441401697}, {3.0, 0.04767005516182142}, {6.0, 0.010570467754449659}};
  for (const auto& [x, power] : scipy_blocked)
    EXPECT_NEAR(blocked.response(0, l_at(x), freq), power, 1e-12 * power) << x;
}

TEST(AiryBeam, HasItsNullsAndHalfPowerWhereJ1Says) {
  const PrimaryBeam beam{.model = Model::airy, .dish_diameter_m = dish, .fwhm_factor = 1.02, .blockage_m = 0};
  EXPECT_EQ(beam.response(0, 0, freq), 1.0);
  // The first two zeros of J1, and 2 J1(x) / x = 1 / sqrt(2).
  EXPECT_LT(beam.response(l_at(3.8317059702075123), 0, freq), 1e-18);
  EXPECT_LT(beam.response(l_at(7.015586669815619), 0, freq), 1e-18);
  EXPECT_NEAR(beam.response(l_at(1.616339948310703), 0, freq), 0.5, 1e-12);
  // Half power at the FWHM of 1.029 lambda / D of a uniformly lit dish.
  EXPECT_NEAR(beam.response(std::sin(0.5 * 1.029 * lambda / dish), 0, freq), 0.5, 2e-3);
}

// The plane from one profile per row distance equals the response pixel by pixel, to
// the bit, for even and odd sides and for rows that do and do not hold the centre.
TEST(PrimaryBeam, ResponseRowsEqualThePixelByPixelResponse) {
  const PrimaryBeam beam{.model = Model::airy, .dish_diameter_m = dish, .fwhm_factor = 1.02, .blockage_m = 2.0};
  const double cell = 30.0 / 206264.806;
  for (int size : {64, 63})
    for (const auto& [first, rows] : {std::pair{0, size}, std::pair{5, 9}, std::pair{size / 2 - 3, 7}}) {
      const std::vector<float> plane = response_rows(beam, {size, cell}, freq, first, rows);
      ASSERT_EQ(plane.size(), static_cast<std::size_t>(rows) * size);
      for (int y = 0; y < rows; ++y)
        for (int x = 0; x < size; ++x)
          ASSERT_EQ(plane[static_cast<std::size_t>(y) * size + x],
                    static_cast<float>(beam.response(-(x - size / 2) * cell, (first + y - size / 2) * cell, freq)))
              << size << " " << first << " " << x << " " << y;
    }
  EXPECT_EQ(response_plane(beam, {64, cell}, freq), response_rows(beam, {64, cell}, freq, 0, 64));
}

// An image centred 1 deg from the pointing: each pixel's response is the beam's at the
// direction the pixel looks at (the SIN projection's inverse about the image's centre),
// taken about the pointing.
TEST(PrimaryBeam, FollowsItsPointingOnAnImageCentredElsewhere) {
  const PrimaryBeam beam{.model = Model::airy, .dish_diameter_m = dish};
  const double cell = 30.0 / 206264.806, deg = std::numbers::pi / 180;
  const Direction pointing{10 * deg, 50 * deg}, centre{11.2 * deg, 50.6 * deg};
  const ImageGrid grid{64, cell, centre, pointing};
  const std::vector<float> plane = response_plane(beam, grid, freq);
  double strongest = 0;
  for (int y = 0; y < 64; y += 3)
    for (int x = 0; x < 64; x += 3) {
      const double l = -(x - 32) * cell, m = (y - 32) * cell, n = std::sqrt(1 - l * l - m * m);
      const Direction pixel{centre.ra_rad + std::atan2(l, n * std::cos(centre.dec_rad) - m * std::sin(centre.dec_rad)),
                            std::asin(m * std::cos(centre.dec_rad) + n * std::sin(centre.dec_rad))};
      // The pixel's direction cosines about the pointing, written out here rather than
      // taken from spip's celestial helpers.
      const double dra = pixel.ra_rad - pointing.ra_rad;
      const double lp = std::cos(pixel.dec_rad) * std::sin(dra);
      const double mp = std::sin(pixel.dec_rad) * std::cos(pointing.dec_rad) -
                        std::cos(pixel.dec_rad) * std::sin(pointing.dec_rad) * std::cos(dra);
      EXPECT_NEAR(plane[static_cast<std::size_t>(y) * 64 + x], beam.response(lp, mp, freq), 1e-6) << x << " " << y;
      strongest = std::max(strongest, static_cast<double>(plane[static_cast<std::size_t>(y) * 64 + x]));
    }
  // The beam's half-power radius is 0.3 deg at 1.4 GHz; its centre 0.9 deg west of the image's.
  EXPECT_LT(strongest, 0.5);
  EXPECT_GT(plane[32 * 64 + 63], plane[32 * 64 + 0]);  // x grows to the west, towards the pointing
}

TEST(PrimaryBeam, RefusesDishesBlockagesAndFactorsThatCannotBe) {
  EXPECT_THROW((PrimaryBeam{.model = Model::gaussian, .dish_diameter_m = 0, .fwhm_factor = 1.02, .blockage_m = 0}.check()), ConfigError);
  EXPECT_THROW((PrimaryBeam{.model = Model::gaussian, .dish_diameter_m = 25, .fwhm_factor = -1, .blockage_m = 0}.check()), ConfigError);
  EXPECT_THROW((PrimaryBeam{.model = Model::airy, .dish_diameter_m = 25, .fwhm_factor = 1.02, .blockage_m = 25}.check()), ConfigError);
  EXPECT_THROW((PrimaryBeam{.model = Model::airy, .dish_diameter_m = 25, .fwhm_factor = 1.02, .blockage_m = -1}.check()), ConfigError);
  EXPECT_NO_THROW((PrimaryBeam{.model = Model::airy, .dish_diameter_m = 25, .fwhm_factor = 1.02, .blockage_m = 2}.check()));
  EXPECT_EQ(model_named("airy"), Model::airy);
  EXPECT_EQ(model_named("gaussian"), Model::gaussian);
  EXPECT_FALSE(model_named("cosine").has_value());
}

// The most any pixel's effective response can be, for the planner's refusal of an image
// no beam reaches, from the Gaussian's closed form: one pointing 0.2 FWHM beyond the
// image's top edge (on its meridian, the pixel there lies asin(m) north of the centre)
// reaches that edge with exp(-4 ln 2 0.2^2); two pointings 0.15 FWHM either side of the
// centre, closer than their power patterns' sigma (0.3 FWHM), peak between them, at the
// centre pixel, with sqrt(2) exp(-4 ln 2 0.15^2), more than either beam alone.
TEST(Mosaic, HighestResponseIsTheNearestPixelsOrThePointingsTogether) {
  const PrimaryBeam beam{.model = Model::gaussian, .dish_diameter_m = dish, .fwhm_factor = 1.02};
  const double fwhm = 1.02 * lambda / dish, cell = fwhm / 100;
  constexpr int size = 64;
  const Direction centre{0, 0};
  const double top_edge = std::asin((size - 1 - size / 2) * cell);
  const ImageGrid grid{size, cell, centre, centre};
  const auto highest = [&](const std::vector<Direction>& pointings, double enough) {
    return highest_response(beam, grid, pointings, freq, freq, enough);
  };
  EXPECT_NEAR(highest({{0, top_edge + 0.2 * fwhm}}, 2), std::exp(-4 * std::log(2.0) * 0.04), 1e-6);
  EXPECT_NEAR(highest({{0, 0.15 * fwhm}, {0, -0.15 * fwhm}}, 2), std::sqrt(2.0) * std::exp(-4 * std::log(2.0) * 0.0225),
              1e-6);
  // Asked only whether 0.5 is reached, it stops at the first value that is: the first
  // pointing's own pixel, 1 (the two together reach 1.33 between them).
  const double first = highest({{0, 0.15 * fwhm}, {0, -0.15 * fwhm}}, 0.5);
  EXPECT_GE(first, 0.5);
  EXPECT_LT(first, 1.2);
  // Over a band, the lowest frequency's wider beam: at half the frequency, 0.2 FWHM is 0.1.
  EXPECT_NEAR(highest_response(beam, grid, {{0, top_edge + 0.2 * fwhm}}, 0.5 * freq, freq, 2),
              std::exp(-4 * std::log(2.0) * 0.01), 1e-6);
}

// Where the response peaks inside the band, it is found there: a cube whose middle plane
// is widest (uniform planes of 0.1, 0.5 and 0.1, which interpolate exactly), and a
// polynomial model whose second fit, from the midpoint 1.5 GHz on, is 1 - a (theta nu)^2
// where the first is a flat 0.1: just above 1.5 GHz it gives 0.6 at the nearest pixel,
// 0.42 at 1.8 GHz, the band's top.
TEST(Mosaic, HighestResponseIsFoundWhereTheModelPeaksInsideTheBand) {
  auto cube = std::make_shared<BeamCube>();
  cube->nx = cube->ny = 41;
  cube->ref_x = cube->ref_y = 20;
  const double cell = 1e-4;
  cube->dl = -cell;
  cube->dm = cell;
  cube->freq_hz = {1.0e9, 1.1e9, 1.2e9};
  cube->lowest_hz = 0.95e9;
  cube->highest_hz = 1.25e9;
  for (float value : {0.1f, 0.5f, 0.1f}) cube->response.insert(cube->response.end(), 41 * 41, value);
  const PrimaryBeam cube_model{.model = Model::cube, .cube = cube};
  const Direction centre{0, 0};
  const ImageGrid grid{16, cell, centre, centre};
  EXPECT_FLOAT_EQ(highest_response(cube_model, grid, {centre}, 1.0e9, 1.2e9, 2), 0.5f);
  EXPECT_FLOAT_EQ(highest_response(cube_model, grid, {centre}, 1.0e9, 1.05e9, 2), 0.3f);  // the edge, halfway

  const double arcmin_ghz = 180 / std::numbers::pi * 60 * 1e-9;  // theta nu in arcmin GHz per rad Hz
  const int size = 64;
  const double theta = 0.01, top_edge = std::asin((size - 1 - size / 2) * cell);
  const double r = theta * 1.5e9 * arcmin_ghz;  // at the nearest pixel, just above 1.5 GHz
  const double a = 0.4 / (r * r);
  const PrimaryBeam polynomial{.model = Model::polynomial,
                               .fits = {{.freq_hz = 1.0e9, .coefficients = {0.1}, .max_arcmin_ghz = 1e6},
                                        {.freq_hz = 2.0e9, .coefficients = {1.0, -a}, .max_arcmin_ghz = 1e6}}};
  const ImageGrid wide{size, cell, centre, centre};
  const double found = highest_response(polynomial, wide, {{0, top_edge + theta}}, 1.2e9, 1.8e9, 2);
  EXPECT_NEAR(found, 0.6, 1e-4);
  EXPECT_NEAR(polynomial.response(0, std::sin(theta), 1.8e9), 1 - a * std::pow(theta * 1.8e9 * arcmin_ghz, 2), 1e-9);
}

}  // namespace
}  // namespace spip::beam
