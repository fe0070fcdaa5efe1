// Beam fitting against analytic Gaussians, restoring against flux conservation, and
// the weighting schemes against their defining properties and their definition.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numbers>
#include <random>
#include <tuple>

#include "spip/imaging/beam.hpp"
#include "spip/imaging/weighting.hpp"

using namespace spip;
using namespace spip::imaging;

namespace {

// An elliptical Gaussian PSF of the given FWHMs (pixels) and PA, built from the
// geometry's (l, m) so it follows the same east-left convention as the images.
std::vector<float> elliptical_psf(const ImageGeometry& g, double major_px, double minor_px, double pa) {
  std::vector<float> psf(g.pixels());
  const double major = major_px * g.cell_rad, minor = minor_px * g.cell_rad;
  for (int y = 0; y < g.size; ++y)
    for (int x = 0; x < g.size; ++x) {
      const double l = g.l(x), m = g.m(y);
      const double along = l * std::sin(pa) + m * std::cos(pa), across = l * std::cos(pa) - m * std::sin(pa);
      psf[y * g.size + x] = static_cast<float>(
          std::exp(-4 * std::log(2.0) * (along * along / (major * major) + across * across / (minor * minor))));
    }
  return psf;
}

}  // namespace

class BeamFit : public testing::TestWithParam<double> {};

TEST_P(BeamFit, RecoversAnAnalyticGaussian) {
  const ImageGeometry g = ImageGeometry::make(128, 1e-4, 1.2);
  const double pa = GetParam() * std::numbers::pi / 180;
  const std::optional<Beam> fit = fit_beam(elliptical_psf(g, 9.0, 5.0, pa).data(), g);
  ASSERT_TRUE(fit);
  const Beam beam = *fit;
  EXPECT_NEAR(beam.major_rad / g.cell_rad, 9.0, 1e-3);
  EXPECT_NEAR(beam.minor_rad / g.cell_rad, 5.0, 1e-3);
  double expected = pa;
  while (expected > std::numbers::pi / 2) expected -= std::numbers::pi;
  EXPECT_NEAR(beam.pa_rad, expected, 1e-4) << "PA " << GetParam() << " deg";
}

INSTANTIATE_TEST_SUITE_P(PositionAngles, BeamFit, testing::Values(0.0, 30.0, 60.0, 89.0, 120.0, 170.0));

// Beams of two pixels or so, as a wide band's top channels have at a cell chosen for the
// bottom: the lobe above 0.35 is the centre and two pairs about it, whose equations
// leave the ellipse undetermined. They once took the theoretical beam; the 3 x 3
// neighbourhood determines them (exact for a sampled Gaussian).
TEST(BeamFit, BeamsOfTwoPixelsAreFittedNotReplaced) {
  const ImageGeometry g = ImageGeometry::make(64, 1e-4, 1.2);
  for (const auto& [major, minor, pa_deg] : {std::tuple{2.0, 2.0, 0.0}, std::tuple{1.8, 1.8, 0.0},
                                             std::tuple{2.2, 1.8, 45.0}, std::tuple{4.5, 1.5, 0.0}}) {
    const std::optional<Beam> fit = fit_beam(elliptical_psf(g, major, minor, pa_deg * std::numbers::pi / 180).data(), g);
    ASSERT_TRUE(fit) << major << " x " << minor;
    EXPECT_NEAR(fit->major_rad / g.cell_rad, major, 1e-3) << major << " x " << minor;
    EXPECT_NEAR(fit->minor_rad / g.cell_rad, minor, 1e-3) << major << " x " << minor;
  }
}

TEST(Restore, APointComponentPeaksAtItsFluxWithTheBeamShape) {
  const ImageGeometry g = ImageGeometry::make(64, 1e-4, 1.2);
  const Beam beam{6e-4, 4e-4, 0.5};
  std::vector<float> model(g.pixels(), 0.0f), image(g.pixels(), 0.0f);
  model[40 * 64 + 20] = 1.5f;
  restore(model.data(), g, beam, image.data());
  EXPECT_FLOAT_EQ(image[40 * 64 + 20], 1.5f);
  const std::vector<float> shape = elliptical_psf(g, 6.0, 4.0, 0.5);
  for (int dy = -3; dy <= 3; ++dy)
    for (int dx = -3; dx <= 3; ++dx)
      EXPECT_NEAR(image[(40 + dy) * 64 + 20 + dx], 1.5f * shape[(32 + dy) * 64 + 32 + dx], 1e-5);
}

// The model convolved with the beam in double precision, summed over every component
// and pixel: what restore() must give by either of its two methods.
std::vector<double> restored_in_double(const std::vector<float>& model, const ImageGeometry& g, const Beam& beam) {
  const int n = g.size;
  const double s = std::sin(beam.pa_rad), c = std::cos(beam.pa_rad), k = 4 * std::log(2.0);
  std::vector<double> image(g.pixels(), 0.0);
  for (int y = 0; y < n; ++y)
    for (int x = 0; x < n; ++x) {
      const double flux = model[y * n + x];
      if (flux == 0) continue;
      for (int yy = 0; yy < n; ++yy)
        for (int xx = 0; xx < n; ++xx) {
          const double dl = -(xx - x) * g.cell_rad, dm = (yy - y) * g.cell_rad;
          const double along = dl * s + dm * c, across = dl * c - dm * s;
          image[yy * n + xx] += flux * std::exp(-k * (along * along / (beam.major_rad * beam.major_rad) +
                                                      across * across / (beam.minor_rad * beam.minor_rad)));
        }
    }
  return image;
}

// (major, minor in pixels, components): few components take the direct sum, many the
// FFT convolution; a beam of 10^5 pixels, as fitted to the line-like PSF of an east-west
// snapshot, must cost no more than one the size of the image.
struct RestoreCase {
  double major_px, minor_px;
  int components;
};

class RestoreMethods : public testing::TestWithParam<RestoreCase> {};

// Three planes: the FFT path transforms them as a pair and a single plane.
TEST_P(RestoreMethods, EqualTheConvolutionInDoublePrecision) {
  const RestoreCase& param = GetParam();
  const ImageGeometry g = ImageGeometry::make(96, 1e-5, 1.2);
  const Beam beam{param.major_px * g.cell_rad, param.minor_px * g.cell_rad, 0.4};
  constexpr int planes = 3;
  std::vector<float> model(planes * g.pixels(), 0.0f);
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> pixel(0, static_cast<int>(model.size()) - 1);
  std::normal_distribution<float> flux(0.0f, 1.0f);
  for (int k = 0; k < param.components; ++k) model[pixel(rng)] += flux(rng);
  std::vector<float> image(model.size(), 0.5f);
  restore(model.data(), g, beam, image.data(), planes);
  for (int plane = 0; plane < planes; ++plane) {
    const std::vector<float> one(model.begin() + plane * g.pixels(), model.begin() + (plane + 1) * g.pixels());
    const std::vector<double> expected = restored_in_double(one, g, beam);
    double peak = 0, worst = 0;
    for (std::size_t k = 0; k < expected.size(); ++k) {
      const float value = image[plane * g.pixels() + k];
      ASSERT_TRUE(std::isfinite(value)) << "plane " << plane << " pixel " << k;
      peak = std::max(peak, std::abs(expected[k]));
      worst = std::max(worst, std::abs(value - 0.5 - expected[k]));
    }
    ASSERT_GT(peak, 0) << "plane " << plane;
    EXPECT_LE(worst, 2e-6 * peak) << "plane " << plane << ", peak " << peak;
  }
}

INSTANTIATE_TEST_SUITE_P(SmallAndHugeBeams, RestoreMethods,
                         testing::Values(RestoreCase{6, 4, 15}, RestoreCase{30, 12, 1800}, RestoreCase{1e5, 3, 12},
                                         RestoreCase{1e5, 3, 1800}));

// The common beam holds every channel's: each point of a beam's half-power ellipse lies
// within the common beam's (its Gaussian is at least half there), checked point by
// point around each ellipse, independently of the matrices enclosing_beam() works with.
TEST(RestoringBeam, TheCommonBeamHoldsEveryChannelsBeam) {
  const double arcsec = std::numbers::pi / (180 * 3600);
  const auto gaussian = [](const Beam& b, double east, double north) {
    const double along = east * std::sin(b.pa_rad) + north * std::cos(b.pa_rad);
    const double across = east * std::cos(b.pa_rad) - north * std::sin(b.pa_rad);
    return std::exp(-4 * std::log(2.0) * (std::pow(along / b.major_rad, 2) + std::pow(across / b.minor_rad, 2)));
  };
  const auto expect_holds = [&](const Beam& common, const std::vector<Beam>& beams) {
    for (const Beam& b : beams)
      for (int k = 0; k < 360; ++k) {
        const double t = k * std::numbers::pi / 180;  // around b's half-power ellipse
        const double along = 0.5 * b.major_rad * std::cos(t), across = 0.5 * b.minor_rad * std::sin(t);
        const double east = along * std::sin(b.pa_rad) + across * std::cos(b.pa_rad);
        const double north = along * std::cos(b.pa_rad) - across * std::sin(b.pa_rad);
        ASSERT_GE(gaussian(common, east, north), 0.5 - 1e-9) << b.major_rad / arcsec << " at " << k << " deg";
      }
  };
  // Beams that narrow as 1 / nu at one angle: the widest, exactly.
  const std::vector<Beam> band{{30 * arcsec, 20 * arcsec, 0.3}, {25 * arcsec, 16.7 * arcsec, 0.3}};
  const Beam widest = enclosing_beam(band);
  EXPECT_NEAR(widest.major_rad, 30 * arcsec, 1e-12);
  EXPECT_NEAR(widest.minor_rad, 20 * arcsec, 1e-12);
  EXPECT_NEAR(widest.pa_rad, 0.3, 1e-9);
  // At other angles the largest by area (20" x 16" east-west) does not hold the 30" x 10"
  // north-south beam; the common beam holds both, and is no wider than 30" either way.
  const std::vector<Beam> crossed{{30 * arcsec, 10 * arcsec, 0.0}, {20 * arcsec, 16 * arcsec, std::numbers::pi / 2}};
  const Beam common = enclosing_beam(crossed);
  expect_holds(common, crossed);
  EXPECT_NEAR(common.major_rad, 30 * arcsec, 1e-9);
  EXPECT_NEAR(common.minor_rad, 20 * arcsec, 1e-9);
  EXPECT_NEAR(common.pa_rad, 0.0, 1e-9);
  // Three beams at three angles, none holding the others.
  const std::vector<Beam> three{{40 * arcsec, 12 * arcsec, 0.2}, {35 * arcsec, 15 * arcsec, -0.9},
                                {30 * arcsec, 18 * arcsec, 1.3}};
  const Beam held = enclosing_beam(three);
  expect_holds(held, three);
  EXPECT_LT(held.major_rad * held.minor_rad, 40.0 * 40.0 * arcsec * arcsec);  // less than the circle of 40"
  // Three 2" x 1" beams at 0 and +-60 deg: the least ellipse that holds them is the
  // circle of 2" (radio_beam's), not one widened pair by pair.
  const std::vector<Beam> star{{2 * arcsec, 1 * arcsec, 0.0},
                               {2 * arcsec, 1 * arcsec, std::numbers::pi / 3},
                               {2 * arcsec, 1 * arcsec, -std::numbers::pi / 3}};
  const Beam least = enclosing_beam(star);
  expect_holds(least, star);
  EXPECT_NEAR(least.major_rad / arcsec, 2.0, 2e-3);
  EXPECT_NEAR(least.minor_rad / arcsec, 2.0, 2e-3);
  // Many channels' beams: held, and at most 0.1 % longer than the longest of them.
  std::vector<Beam> many;
  for (int k = 0; k < 2000; ++k)
    many.push_back({(20 + 10 * std::sin(0.37 * k)) * arcsec, (12 + 3 * std::cos(0.11 * k)) * arcsec, 0.05 * k});
  for (Beam& b : many) b.minor_rad = std::min(b.minor_rad, b.major_rad);
  const Beam all = enclosing_beam(many);
  expect_holds(all, many);
  EXPECT_LE(all.major_rad, 30.0 * arcsec * 1.001);
  // A circular beam that holds the others comes back as given, its angle too.
  const Beam circle{40 * arcsec, 40 * arcsec, 0.0};
  const Beam as_given = enclosing_beam({circle, {30 * arcsec, 20 * arcsec, 0.7}});
  EXPECT_EQ(as_given.major_rad, circle.major_rad);
  EXPECT_EQ(as_given.pa_rad, 0.0);
  // Fitted beams count before theoretical ones.
  const RestoringBeam chosen = common_restoring_beam(
      {{{50 * arcsec, 50 * arcsec, 0}, BeamOrigin::theoretical}, {{30 * arcsec, 20 * arcsec, 0.3}, BeamOrigin::fitted}});
  EXPECT_EQ(chosen.origin, BeamOrigin::fitted);
  EXPECT_NEAR(chosen.beam.major_rad, 30 * arcsec, 1e-12);
}

namespace {

// A Jy/beam image of nx x ny pixels of `cell` (x = -l, y = m): a point source of
// `flux` at pixel (x0, y0) seen at resolution `beam`, in double precision.
std::vector<float> point_at_resolution(int nx, int ny, double cell, double x0, double y0, double flux, const Beam& beam) {
  std::vector<float> image(static_cast<std::size_t>(nx) * ny);
  for (int y = 0; y < ny; ++y)
    for (int x = 0; x < nx; ++x) {
      const double east = -(x - x0) * cell, north = (y - y0) * cell;
      const double along = east * std::sin(beam.pa_rad) + north * std::cos(beam.pa_rad);
      const double across = east * std::cos(beam.pa_rad) - north * std::sin(beam.pa_rad);
      image[static_cast<std::size_t>(y) * nx + x] = static_cast<float>(
          flux * std::exp(-4 * std::log(2.0) * (std::pow(along / beam.major_rad, 2) + std::pow(across / beam.minor_rad, 2))));
    }
  return image;
}

}  // namespace

// A point source at one resolution, convolved to another, is the same point source at
// that one: Gaussians convolve to the Gaussian of the summed covariances, and in Jy/beam
// its peak stays its flux. Of beams alike along one axis (the kernel then has no width
// there), at other angles, and of several planes at once (in pairs, one left over).
TEST(ConvolveToBeam, APointSourceTakesTheTargetBeamAndKeepsItsFlux) {
  const double arcsec = std::numbers::pi / (180 * 3600), cell = 2 * arcsec;
  const int nx = 72, ny = 60;
  const struct {
    Beam from, to;
  } cases[] = {
      {{20 * arcsec, 10 * arcsec, 0.0}, {20 * arcsec, 19 * arcsec, 0.0}},
      {{15 * arcsec, 12 * arcsec, 0.5}, {25 * arcsec, 20 * arcsec, -0.7}},
      {{12 * arcsec, 12 * arcsec, 0.0}, {12 * arcsec, 12 * arcsec, 0.0}},
  };
  for (const auto& [from, to] : cases) {
    ASSERT_TRUE(holds(to, from));
    std::vector<float> planes;
    for (double flux : {1.0, -0.4, 2.5}) {
      const std::vector<float> plane = point_at_resolution(nx, ny, cell, 34, 29, flux, from);
      planes.insert(planes.end(), plane.begin(), plane.end());
    }
    convolve_to_beam(planes.data(), 3, nx, ny, cell, from, to, smoothing_grid(nx, ny, cell, {from}, to));
    double worst = 0;
    int k = 0;
    for (double flux : {1.0, -0.4, 2.5}) {
      const std::vector<float> truth = point_at_resolution(nx, ny, cell, 34, 29, flux, to);
      for (std::size_t i = 0; i < truth.size(); ++i) {
        const float got = planes[k * truth.size() + i];
        const int x = static_cast<int>(i) % nx, y = static_cast<int>(i) / nx;
        if (x >= 12 && x < nx - 12 && y >= 12 && y < ny - 12) {
          ASSERT_TRUE(std::isfinite(got)) << x << ", " << y;
          worst = std::max(worst, std::abs(got - truth[i]) / std::abs(flux));
        }
      }
      ++k;
    }
    EXPECT_LT(worst, 1e-5) << "from " << from.major_rad / arcsec << "\" x " << from.minor_rad / arcsec << "\"";
  }
  EXPECT_FALSE(holds({20 * arcsec, 10 * arcsec, 0.0}, {20 * arcsec, 10 * arcsec, 0.3}));
}

// Blanks stay blank; a pixel that the kernel sees mostly over blanks (a mosaic's edge, or
// the image's own) is blanked; one that sees few of them takes the mean of the measured
// pixels, so it is not pulled towards zero: a flat field stays flat up to the edge.
TEST(ConvolveToBeam, BlanksStayBlankAndEdgesAreNotPulledToZero) {
  const double arcsec = std::numbers::pi / (180 * 3600), cell = 2 * arcsec;
  const int nx = 64, ny = 64;
  const Beam from{10 * arcsec, 10 * arcsec, 0}, to{20 * arcsec, 16 * arcsec, 0.4};
  std::vector<float> planes(2 * static_cast<std::size_t>(nx) * ny, 0.7f);
  for (int y = 0; y < ny; ++y)
    for (int x = 0; x < 20; ++x) planes[static_cast<std::size_t>(y) * nx + x] = NAN;  // plane 0's blank edge
  convolve_to_beam(planes.data(), 2, nx, ny, cell, from, to, smoothing_grid(nx, ny, cell, {from}, to));
  const float gain = static_cast<float>((20.0 * 16.0) / (10.0 * 10.0));
  int kept = 0, blanked = 0;
  for (int k = 0; k < 2; ++k)
    for (int y = 0; y < ny; ++y)
      for (int x = 0; x < nx; ++x) {
        const float value = planes[(k * static_cast<std::size_t>(ny) + y) * nx + x];
        const int from_blank = std::min({k == 0 ? x - 20 : x, nx - 1 - x, y, ny - 1 - y});
        if (k == 0 && x < 20) {
          ASSERT_TRUE(std::isnan(value)) << x << ", " << y;
        } else if (from_blank >= 14) {  // beyond the kernel's reach: as before, in Jy per larger beam
          ASSERT_NEAR(value, 0.7f * gain, 1e-5) << k << ": " << x << ", " << y;
        } else if (std::isfinite(value)) {
          ASSERT_NEAR(value, 0.7f * gain, 1e-4) << k << ": " << x << ", " << y;
          ++kept;
        } else {
          ASSERT_LE(from_blank, 9) << k << ": " << x << ", " << y;
          ++blanked;
        }
      }
  EXPECT_GT(kept, 0);
  EXPECT_GT(blanked, 0);
  for (int k = 0; k < 2; ++k) EXPECT_TRUE(std::isnan(planes[(k * static_cast<std::size_t>(ny) + 32) * nx + 63]));
}

// A plane's mask travels beside it through the transforms: with a tilted kernel on a
// grid of a Nyquist row (every even side), the mask must not leak into the values. Of a
// zero plane with a hole, of odd width, every kept pixel stays zero.
TEST(ConvolveToBeam, ATiltedKernelKeepsAPlanesMaskOutOfItsValues) {
  const double arcsec = std::numbers::pi / (180 * 3600), cell = 2.5 * arcsec;
  const int nx = 101, ny = 101;
  const Beam from{12 * arcsec, 10 * arcsec, 40 * std::numbers::pi / 180},
      to{12.4 * arcsec, 10.3 * arcsec, 45 * std::numbers::pi / 180};
  ASSERT_TRUE(holds(to, from));
  std::vector<float> plane(static_cast<std::size_t>(nx) * ny, 0.0f);
  for (int y = 47; y < 54; ++y)
    for (int x = 47; x < 54; ++x) plane[static_cast<std::size_t>(y) * nx + x] = NAN;
  convolve_to_beam(plane.data(), 1, nx, ny, cell, from, to, smoothing_grid(nx, ny, cell, {from}, to));
  float worst = 0;
  int kept = 0;
  for (float v : plane)
    if (std::isfinite(v)) {
      worst = std::max(worst, std::abs(v));
      ++kept;
    }
  EXPECT_GT(kept, nx * ny / 2);
  EXPECT_LT(worst, 1e-6f);
}

TEST(RestoringBeam, IsTheFitOnlyWhereTheFitIsABeam) {
  const ImageGeometry g = ImageGeometry::make(128, 1e-5, 1.2);
  const double max_uv = 2e4;  // theoretical FWHM 5e-5 rad = 5 pixels
  const Beam theoretical = theoretical_beam(max_uv, 0.0);
  EXPECT_DOUBLE_EQ(theoretical.major_rad, 5e-5);
  EXPECT_DOUBLE_EQ(theoretical.minor_rad, 5e-5);
  EXPECT_NEAR(theoretical_beam(max_uv, 1.2e-4).major_rad, 1.3e-4, 1e-15);  // a taper widens it in quadrature
  const Beam good{9e-5, 6e-5, 0.2}, elongated{5.1e-4, 5e-5, 0.0}, wide{1.3e-3, 1.2e-3, 0.0};
  const Beam user{2e-4, 1e-4, 0.3};
  EXPECT_EQ(restoring_beam(good, max_uv, 0.0, g, std::nullopt).origin, BeamOrigin::fitted);
  EXPECT_EQ(restoring_beam(elongated, max_uv, 0.0, g, std::nullopt).origin, BeamOrigin::theoretical);
  EXPECT_EQ(restoring_beam(elongated, max_uv, 1.2e-4, g, std::nullopt).origin, BeamOrigin::fitted);  // tapered
  EXPECT_EQ(restoring_beam(wide, max_uv / 100, 0.0, g, std::nullopt).origin,
            BeamOrigin::theoretical);  // 10x allowed, not the image
  EXPECT_EQ(restoring_beam(std::nullopt, max_uv, 0.0, g, std::nullopt).origin, BeamOrigin::theoretical);
  EXPECT_DOUBLE_EQ(restoring_beam(std::nullopt, max_uv, 0.0, g, std::nullopt).beam.major_rad, 5e-5);
  const RestoringBeam chosen = restoring_beam(std::nullopt, max_uv, 0.0, g, user);
  EXPECT_EQ(chosen.origin, BeamOrigin::chosen);
  EXPECT_DOUBLE_EQ(chosen.beam.pa_rad, 0.3);
}

// A snapshot of an east-west array: its PSF is a line (here a Gaussian in l only), whose
// fit is no beam at all, whether the line is 3 pixels wide or only one column is in
// its main lobe.
class LinePsf : public testing::TestWithParam<double> {};

TEST_P(LinePsf, IsRestoredWithTheTheoreticalBeam) {
  const ImageGeometry g = ImageGeometry::make(128, 1e-5, 1.2);
  const double width = GetParam() * g.cell_rad;
  std::vector<float> psf(g.pixels());
  for (int y = 0; y < g.size; ++y)
    for (int x = 0; x < g.size; ++x)
      psf[y * g.size + x] = static_cast<float>(std::exp(-4 * std::log(2.0) * std::pow(g.l(x) / width, 2)));
  const std::optional<Beam> fit = fit_beam(psf.data(), g);
  EXPECT_EQ(restoring_beam(fit, 1 / width, 0.0, g, std::nullopt).origin, BeamOrigin::theoretical)
      << (fit ? std::to_string(fit->major_rad / g.cell_rad) + " x " + std::to_string(fit->minor_rad / g.cell_rad) +
                    " pixels fitted"
              : "no fit");
}

INSTANTIATE_TEST_SUITE_P(Widths, LinePsf, testing::Values(3.0, 0.6));

namespace {

struct Coverage {
  std::vector<double> uvw;
  std::vector<float> weight;  // [k][4]
};

// A dense core and sparse long baselines, as real arrays have.
Coverage coverage(const ImageGeometry& g) {
  Coverage c;
  std::mt19937 rng(9);
  const double cell = 1.0 / (g.size * g.cell_rad);
  std::normal_distribution<double> core(0.0, 3 * cell);
  std::uniform_real_distribution<double> outer(-25 * cell, 25 * cell);
  for (int k = 0; k < 4000; ++k) {
    const bool in_core = k % 4 != 0;
    c.uvw.insert(c.uvw.end(), {in_core ? core(rng) : outer(rng), in_core ? core(rng) : outer(rng), 0.0});
    c.weight.insert(c.weight.end(), {1.0f, 1.0f, 1.0f, 1.0f});
  }
  return c;
}

// The density cells of a 64-pixel image: WSClean's padded grid, ceil(64 x 1.2) = 77
// pixels up to a multiple of 4.
constexpr int density_cells = 80;

std::map<long, double> cell_sums(const ImageGeometry& g, const Coverage& c) {
  const double cell = 1.0 / (density_cells * g.cell_rad);
  std::map<long, double> sums;
  for (std::size_t k = 0; k < c.weight.size() / 4; ++k)
    sums[std::lround(c.uvw[3 * k] / cell) * 100000 + std::lround(c.uvw[3 * k + 1] / cell)] += c.weight[4 * k];
  return sums;
}

}  // namespace

TEST(Weighting, UniformGivesEveryOccupiedCellTheSameTotal) {
  const ImageGeometry g = ImageGeometry::make(64, 1e-3, 1.2);
  Coverage c = coverage(g);
  apply_weighting(g, WeightingScheme{Weighting::uniform}, c.uvw.data(), 1.0, c.weight.size() / 4, 4, c.weight.data());
  // Each cell's density counts the visibility and its conjugate's cell; for cells
  // not hit by conjugates the total is exactly 1.
  int ones = 0;
  for (const auto& [cell, total] : cell_sums(g, c)) ones += std::abs(total - 1.0) < 1e-6;
  EXPECT_GT(ones, 100);
  for (std::size_t k = 0; k < c.weight.size(); k += 4) {
    EXPECT_EQ(c.weight[k], c.weight[k + 1]);
    EXPECT_EQ(c.weight[k], c.weight[k + 3]);
  }
}

TEST(Weighting, BriggsSpansUniformToNatural) {
  const ImageGeometry g = ImageGeometry::make(64, 1e-3, 1.2);
  const Coverage original = coverage(g);
  auto ratio_core_to_outer = [&](WeightingScheme scheme) {
    Coverage c = original;
    apply_weighting(g, scheme, c.uvw.data(), 1.0, c.weight.size() / 4, 4, c.weight.data());
    double core = 0, outer = 0;
    for (std::size_t k = 0; k < c.weight.size() / 4; ++k) (k % 4 ? core : outer) += c.weight[4 * k];
    return core / outer;
  };
  const double natural = ratio_core_to_outer({Weighting::natural});
  const double uniform = ratio_core_to_outer({Weighting::uniform});
  EXPECT_NEAR(natural, 3.0, 1e-9);
  EXPECT_LT(uniform, natural / 3);
  EXPECT_NEAR(ratio_core_to_outer({Weighting::briggs, 2.0}), natural, 0.1 * natural);
  EXPECT_NEAR(ratio_core_to_outer({Weighting::briggs, -2.0}), uniform, 0.1 * uniform);
  const double middle = ratio_core_to_outer({Weighting::briggs, 0.0});
  EXPECT_GT(middle, uniform);
  EXPECT_LT(middle, natural);
}

// WSClean 3.1 counts image-weight densities on its padded image (-padding 1.2, then up
// to a multiple of 4): 616 cells for a 512-pixel image, whatever the pixel size.
TEST(Weighting, CountsDensitiesOnWscleansPaddedGrid) {
  for (const auto& [size, cells] : {std::pair{64, 80}, {100, 120}, {512, 616}, {1024, 1232}}) {
    const ImageGeometry g = ImageGeometry::make(size, 2e-4, 1.2);
    EXPECT_EQ(density_grid_size(g), cells) << size;
    EXPECT_DOUBLE_EQ(density_cell_size(g), 1.0 / (cells * 2e-4)) << size;
  }
}

TEST(Weighting, UvRangeAndTaper) {
  const ImageGeometry g = ImageGeometry::make(64, 1e-3, 1.2);
  Coverage c = coverage(g);
  WeightingScheme scheme{Weighting::natural};
  scheme.uv_min = 2.0 / (64 * 1e-3);
  scheme.uv_max = 20.0 / (64 * 1e-3);
  scheme.taper_fwhm_rad = 5e-3;
  apply_weighting(g, scheme, c.uvw.data(), 1.0, c.weight.size() / 4, 4, c.weight.data());
  const double taper = std::pow(std::numbers::pi * 5e-3, 2) / (4 * std::log(2.0));
  for (std::size_t k = 0; k < c.weight.size() / 4; ++k) {
    const double u = c.uvw[3 * k], v = c.uvw[3 * k + 1], r = std::hypot(u, v);
    const double expected = (r < scheme.uv_min || r > scheme.uv_max) ? 0.0 : std::exp(-taper * r * r);
    ASSERT_NEAR(c.weight[4 * k], expected, 1e-6);
  }
}

// Briggs and uniform weights with a taper, a uv range and rows whose Stokes I is flagged
// (XX flagged: I and Q weigh 0, U and V do not), from the definition written out here in
// double precision (Briggs 1995, each visibility counted with its conjugate; the taper
// after the densities, as CASA and WSClean apply it): the arithmetic of
// weighting_math.hpp, which the GPU imager's kernels run too.
TEST(Weighting, DensityWeightsWithTaperAndFlaggedStokesIEqualTheirDefinition) {
  for (const Weighting mode : {Weighting::briggs, Weighting::uniform}) {
    const ImageGeometry g = ImageGeometry::make(64, 1e-3, 1.2);
    const double cell = 1.0 / (density_cells * 1e-3);
    Coverage c = coverage(g);
    std::mt19937 rng(4);
    std::uniform_real_distribution<float> natural(0.5f, 2.0f);
    for (std::size_t k = 0; k < c.weight.size(); k += 4) {
      std::fill_n(&c.weight[k], 4, natural(rng));
      if (k % 28 == 0) c.weight[k] = c.weight[k + 1] = 0;  // one row in seven has XX flagged
    }
    const std::vector<float> before = c.weight;
    WeightingScheme scheme{mode, 0.5};
    scheme.uv_max = 50 * cell;
    scheme.taper_fwhm_rad = 4e-3;
    const double uv_scale = 1.5;  // coordinates in metres at 1.5 wavelengths per metre
    const std::size_t rows = c.weight.size() / 4;
    apply_weighting(g, scheme, c.uvw.data(), uv_scale, rows, 4, c.weight.data());

    const double taper = std::pow(std::numbers::pi * 4e-3, 2) / (4 * std::log(2.0));
    std::vector<double> counted(rows);
    std::map<std::pair<long, long>, double> density;
    auto cell_of = [&](double u, double v) { return std::pair{std::lround(u / cell), std::lround(v / cell)}; };
    auto on_image = [](std::pair<long, long> iuv) {
      return iuv.first >= -40 && iuv.first < 40 && iuv.second >= -40 && iuv.second < 40;
    };
    for (std::size_t k = 0; k < rows; ++k) {
      const double u = c.uvw[3 * k] * uv_scale, v = c.uvw[3 * k + 1] * uv_scale, r = std::hypot(u, v);
      const double w = before[4 * k] > 0 ? before[4 * k] : before[4 * k + 2];
      counted[k] = r > scheme.uv_max ? 0.0 : w;
      if (counted[k] <= 0) continue;
      for (const auto& iuv : {cell_of(u, v), cell_of(-u, -v)})
        if (on_image(iuv)) density[iuv] += counted[k];
    }
    double sum = 0, squares = 0;
    for (const auto& [iuv, d] : density) {
      sum += d;
      squares += d * d;
    }
    const double f2 = std::pow(5 * std::pow(10.0, -0.5), 2) * sum / squares;
    int cut = 0, off_image = 0, flagged_i = 0;
    for (std::size_t k = 0; k < rows; ++k) {
      const double u = c.uvw[3 * k] * uv_scale, v = c.uvw[3 * k + 1] * uv_scale, r = std::hypot(u, v);
      double factor = counted[k] > 0 ? std::exp(-taper * r * r) : 0.0;
      if (factor > 0 && on_image(cell_of(u, v)))
        factor /= mode == Weighting::uniform ? density[cell_of(u, v)] : 1 + density[cell_of(u, v)] * f2;
      cut += factor == 0;
      off_image += factor > 0 && !on_image(cell_of(u, v));
      flagged_i += factor > 0 && before[4 * k] == 0;
      for (int s = 0; s < 4; ++s)
        ASSERT_NEAR(c.weight[4 * k + s], before[4 * k + s] * factor, 1e-6 * before[4 * k + 2]) << k << " " << s;
    }
    EXPECT_GT(cut, 50);         // the uv range takes some rows out
    EXPECT_GT(off_image, 100);  // and some beyond the image's uv cells keep their tapered weight
    EXPECT_GT(flagged_i, 100);  // rows with Stokes I flagged have U and V weighted in their cells
  }
}

// Under uniform weighting every occupied cell's weights add up to the same total, and a
// Gaussian taper then shapes those totals: it is not divided out by the densities.
TEST(Weighting, UniformWeightsKeepTheTaper) {
  const ImageGeometry g = ImageGeometry::make(64, 1e-3, 1.2);
  Coverage plain = coverage(g), tapered = coverage(g);
  const std::size_t rows = plain.weight.size() / 4;
  WeightingScheme scheme{Weighting::uniform};
  apply_weighting(g, scheme, plain.uvw.data(), 1.0, rows, 4, plain.weight.data());
  scheme.taper_fwhm_rad = 4e-3;
  apply_weighting(g, scheme, tapered.uvw.data(), 1.0, rows, 4, tapered.weight.data());
  const double taper = std::pow(std::numbers::pi * 4e-3, 2) / (4 * std::log(2.0));
  double smallest = 1;
  for (std::size_t k = 0; k < rows; ++k) {
    const double r = std::hypot(plain.uvw[3 * k], plain.uvw[3 * k + 1]), t = std::exp(-taper * r * r);
    ASSERT_NEAR(tapered.weight[4 * k], plain.weight[4 * k] * t, 1e-6 * plain.weight[4 * k]) << k;
    smallest = std::min(smallest, t);
  }
  EXPECT_LT(smallest, 0.5);  // the taper reaches the outer baselines
}
