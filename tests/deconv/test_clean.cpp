// Hogbom minor cycles on images made of shifted copies of a known PSF: the components
// come back at their positions and fluxes, in every Stokes plane, and the joined
// searches find polarised structure that Stokes I alone would miss.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <numbers>
#include <optional>
#include <random>

#include "spip/deconv/clean.hpp"
#include "spip/deconv/clean_math.hpp"

using namespace spip;
using imaging::ImageGeometry;

namespace {

constexpr int n = 64;
const ImageGeometry geometry = ImageGeometry::make(n, 1e-3, 1.2);
const std::size_t plane = static_cast<std::size_t>(n) * n;

std::vector<float> gaussian_psf(double sigma_x, double sigma_y) {
  std::vector<float> psf(plane);
  for (int y = 0; y < n; ++y)
    for (int x = 0; x < n; ++x) {
      const double dx = x - n / 2, dy = y - n / 2;
      psf[y * n + x] = static_cast<float>(std::exp(-0.5 * (dx * dx / (sigma_x * sigma_x) + dy * dy / (sigma_y * sigma_y))));
    }
  return psf;
}

// residual[s] += flux[s] * the PSF centred on (px, py), in float or in double.
template <class T>
void add_source(std::vector<T>& residual, const std::vector<float>& psf, int px, int py, const float flux[4]) {
  for (int s = 0; s < 4; ++s)
    for (int y = 0; y < n; ++y)
      for (int x = 0; x < n; ++x) {
        const int sx = x - px + n / 2, sy = y - py + n / 2;
        if (sx < 0 || sy < 0 || sx >= n || sy >= n) continue;
        residual[s * plane + y * n + x] += static_cast<T>(flux[s]) * psf[sy * n + sx];
      }
}

}  // namespace

// A PSF with sidelobes down to -60 % of the peak whose transform (the uv weights) is
// still non-negative, as CLEAN needs: a Gaussian envelope times cosines. Subtracting a
// component then lifts pixels outside the sub-minor loop's set over its stop.
std::vector<float> psf_with_sidelobes() {
  std::vector<float> psf(plane);
  for (int y = 0; y < n; ++y)
    for (int x = 0; x < n; ++x) {
      const double dx = x - n / 2, dy = y - n / 2, ring = 2 * std::numbers::pi / 5;
      psf[y * n + x] = static_cast<float>(std::exp(-0.5 * (dx * dx + dy * dy) / 36) *
                                          (0.2 + 0.4 * std::cos(ring * dx) + 0.4 * std::cos(ring * dy)));
    }
  return psf;
}

// dirty - model convolved with the PSF, in double precision, pixel by pixel.
std::vector<double> direct_residual(const std::vector<float>& dirty, const std::vector<float>& model,
                                    const std::vector<float>& psf) {
  std::vector<double> out(dirty.begin(), dirty.end());
  for (std::size_t c = 0; c < plane; ++c) {
    const float negated[4] = {-model[c], -model[plane + c], -model[2 * plane + c], -model[3 * plane + c]};
    if (std::all_of(negated, negated + 4, [](float f) { return f == 0; })) continue;
    add_source(out, psf, static_cast<int>(c % n), static_cast<int>(c / n), negated);
  }
  return out;
}

// Which PSFs make the minor cycles subtract the PSF of twice the image's side: a ridge
// (one line of baselines) and a grating are degenerate, with far sidelobes at the peak;
// a beam is not, however finely sampled, nor are sidelobes that die away within N/4.
TEST(PsfShape, RidgesAndGratingsAreDegenerateAndBeamsAreNot) {
  const auto shape = [](auto value) {
    std::vector<float> psf(plane);
    for (int y = 0; y < n; ++y)
      for (int x = 0; x < n; ++x) psf[y * n + x] = static_cast<float>(value(x - n / 2, y - n / 2));
    return psf;
  };
  for (const std::vector<float>& beam : {gaussian_psf(1.5, 2.0), gaussian_psf(4, 4), psf_with_sidelobes()}) {
    EXPECT_FALSE(deconv::degenerate_sidelobe(beam.data(), n).has_value());
    EXPECT_LT(deconv::far_sidelobe(beam.data(), n), deconv::whole_psf_sidelobe);
  }
  // A beam of 28 pixels (FWHM) is near its peak over many pixels, but is no sidelobe;
  // its lobe still reaches past N/4, so it takes the wide PSF too.
  const std::vector<float> wide_beam = gaussian_psf(12, 12);
  EXPECT_FALSE(deconv::degenerate_sidelobe(wide_beam.data(), n).has_value());
  EXPECT_GT(deconv::far_sidelobe(wide_beam.data(), n), deconv::whole_psf_sidelobe);
  const std::vector<float> ridge = shape([](int dx, int) { return std::exp(-0.5 * dx * dx / 4.0); });
  const auto along = deconv::degenerate_sidelobe(ridge.data(), n);
  ASSERT_TRUE(along.has_value());
  EXPECT_EQ(along->value, 1.0);
  EXPECT_GE(along->distance_px, n / 2 - 1);
  EXPECT_GT(deconv::far_sidelobe(ridge.data(), n), 0.99);
  const double period = 8;
  const std::vector<float> grating = shape([&](int dx, int dy) {
    return std::cos(2 * std::numbers::pi * dx / period) * std::cos(2 * std::numbers::pi * dy / period);
  });
  const auto copy = deconv::degenerate_sidelobe(grating.data(), n);
  ASSERT_TRUE(copy.has_value());
  EXPECT_NEAR(copy->value, 1.0, 1e-6);
  EXPECT_GE(copy->distance_px, period);
}

// The search by rings finds what a scan of every pixel finds: on the PSFs above and on
// random images with sidelobes near the peak, a lobe or none, the same sidelobe, to the
// bit, at the same distance.
TEST(PsfShape, TheSidelobeSearchFindsWhatAScanOfEveryPixelFinds) {
  const auto scan = [](const std::vector<float>& psf) {
    const auto distance = [](int x, int y) { return std::hypot(x - n / 2, y - n / 2); };
    double half_width = std::numeric_limits<double>::infinity();
    for (int y = 0; y < n; ++y)
      for (int x = 0; x < n; ++x)
        if (psf[y * n + x] < 0.5f) half_width = std::min(half_width, distance(x, y));
    const double beyond = std::max(half_width, 1.5);
    const float peak = psf[(n / 2) * n + n / 2];
    std::optional<deconv::PsfSidelobe> found;
    for (int y = 0; y < n; ++y)
      for (int x = 0; x < n; ++x) {
        const double value = psf[y * n + x] / peak;
        if (value >= 1 - 1e-3 && distance(x, y) > beyond && (!found || value > found->value))
          found = deconv::PsfSidelobe{value, distance(x, y)};
      }
    return found;
  };
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> level(0.0f, 1.0f);
  const auto ridge = [] {
    std::vector<float> psf(plane);
    for (int y = 0; y < n; ++y)
      for (int x = 0; x < n; ++x) psf[y * n + x] = static_cast<float>(std::exp(-0.125 * (x - n / 2) * (x - n / 2)));
    return psf;
  };
  std::vector<std::vector<float>> cases = {gaussian_psf(1.5, 2.0), gaussian_psf(12, 12), psf_with_sidelobes(), ridge()};
  for (int k = 0; k < 20; ++k) {
    std::vector<float> psf(plane);
    // Every other image has no pixel below half the peak but, in one case of two, one hole
    // somewhere: the lobe ends there.
    const float floor = k % 2 == 0 ? 0.6f : 0.0f;
    for (float& v : psf) v = floor + (1.0f - floor) * level(rng) * 0.9995f;
    if (k % 4 == 2) psf[std::uniform_int_distribution<std::size_t>(0, plane - 1)(rng)] = 0.3f;
    psf[(n / 2) * n + n / 2] = 1.0f;
    cases.push_back(psf);
  }
  int with_sidelobe = 0;
  for (const std::vector<float>& psf : cases) {
    const auto rings = deconv::degenerate_sidelobe(psf.data(), n), every = scan(psf);
    ASSERT_EQ(rings.has_value(), every.has_value());
    if (!rings) continue;
    ++with_sidelobe;
    EXPECT_EQ(rings->value, every->value);
    EXPECT_NEAR(rings->distance_px, every->distance_px, 1e-12 * every->distance_px);
  }
  EXPECT_GT(with_sidelobe, 5);
}

// Of equal sidelobes in rows that different threads scan, degenerate_sidelobe() reports
// the first in row order, as a serial scan does, whichever thread reports first.
TEST(PsfShape, EqualSidelobesOnOtherThreadsGiveTheFirstInRowOrder) {
  std::vector<float> psf(plane, 0.0f);
  psf[(n / 2) * n + n / 2] = 1.0f;
  psf[1 * n + n / 2 + 8] = 1.0f;   // rows 0-15: the first of four threads
  psf[(n - 2) * n + n / 2] = 1.0f; // rows 48-63: the last
  const int threads = omp_get_max_threads();
  omp_set_num_threads(4);
  for (int run = 0; run < 50; ++run) {
    const auto found = deconv::degenerate_sidelobe(psf.data(), n);
    EXPECT_TRUE(found.has_value());
    if (!found) break;
    EXPECT_EQ(found->value, 1.0);
    EXPECT_DOUBLE_EQ(found->distance_px, std::hypot(8.0, n / 2 - 1.0)) << "run " << run;
    if (HasFailure()) break;  // and the thread count restored below
  }
  omp_set_num_threads(threads);
}

// far_sidelobe() reads exactly the pixels N/4 or more from the centre along either axis:
// a single pixel anywhere in an empty image, of an even and an odd side.
TEST(PsfShape, TheFarSidelobeIsTheHighestPixelAQuarterOfTheSideOut) {
  for (const int side : {64, 33}) {
    std::vector<float> psf(static_cast<std::size_t>(side) * side, 0.0f);
    int far_pixels = 0;
    for (int y = 0; y < side; ++y)
      for (int x = 0; x < side; ++x) {
        const bool far = std::max(std::abs(x - side / 2), std::abs(y - side / 2)) >= side / 4;
        psf[static_cast<std::size_t>(y) * side + x] = -2.0f;
        ASSERT_EQ(deconv::far_sidelobe(psf.data(), side), far ? 2.0 : 0.0) << side << ": " << x << ", " << y;
        psf[static_cast<std::size_t>(y) * side + x] = 0.0f;
        far_pixels += far;
      }
    const int inner = 2 * (side / 4) - 1;
    EXPECT_EQ(far_pixels, side * side - inner * inner);
  }
}

using MinorCycleFunction = decltype(&deconv::hogbom);
class MinorCycles : public testing::TestWithParam<MinorCycleFunction> {};
INSTANTIATE_TEST_SUITE_P(HogbomAndSubminor, MinorCycles, testing::Values(&deconv::hogbom, &deconv::subminor_hogbom),
                         [](const auto& info) { return info.index == 0 ? "Hogbom" : "Subminor"; });

TEST_P(MinorCycles, RecoverComponentsInEveryStokesPlane) {
  const std::vector<float> psf = gaussian_psf(1.5, 2.0);
  std::vector<float> residual(4 * plane, 0.0f), model(4 * plane, 0.0f);
  const float a[4] = {2.0f, 0.3f, -0.2f, 0.05f}, b[4] = {1.0f, -0.1f, 0.4f, 0.0f};
  add_source(residual, psf, 20, 30, a);
  add_source(residual, psf, 45, 12, b);
  const auto result = GetParam()(residual.data(), {psf.data(), n}, geometry, PeakSearch::full_stokes, 0.1, 1e-4, 10000,
                                 model.data(), nullptr, 0.0);
  EXPECT_LT(result.peak, 1e-4);
  for (int s = 0; s < 4; ++s) {
    EXPECT_NEAR(model[s * plane + 30 * n + 20], a[s], 2e-4) << "Stokes " << s;
    EXPECT_NEAR(model[s * plane + 12 * n + 45], b[s], 2e-4) << "Stokes " << s;
  }
  double elsewhere = 0;
  for (std::size_t i = 0; i < 4 * plane; ++i) elsewhere += std::abs(model[i]);
  for (int s = 0; s < 4; ++s) elsewhere -= std::abs(model[s * plane + 30 * n + 20]) + std::abs(model[s * plane + 12 * n + 45]);
  EXPECT_LT(elsewhere, 1e-3);
}

TEST(Hogbom, PolarisedSearchFindsASourceInvisibleInStokesI) {
  const std::vector<float> psf = gaussian_psf(1.5, 1.5);
  std::vector<float> residual(4 * plane, 0.0f), model(4 * plane, 0.0f);
  const float bright_i[4] = {1.0f, 0.0f, 0.0f, 0.0f}, pol_only[4] = {0.0f, 0.3f, 0.4f, 0.0f};
  add_source(residual, psf, 20, 20, bright_i);
  add_source(residual, psf, 40, 40, pol_only);
  std::vector<float> for_i = residual, model_i(4 * plane, 0.0f);
  deconv::hogbom(for_i.data(), {psf.data(), n}, geometry, PeakSearch::stokes_i, 0.1, 1e-3, 2000, model_i.data());
  EXPECT_EQ(model_i[plane + 40 * n + 40], 0.0f) << "an I search never visits the polarised source";
  deconv::hogbom(residual.data(), {psf.data(), n}, geometry, PeakSearch::linear_pol, 0.1, 1e-3, 2000, model.data());
  EXPECT_NEAR(model[plane + 40 * n + 40], 0.3f, 2e-3);
  EXPECT_NEAR(model[2 * plane + 40 * n + 40], 0.4f, 2e-3);
}

TEST_P(MinorCycles, StopAtTheIterationLimitAndTheLevel) {
  const std::vector<float> psf = gaussian_psf(1.5, 1.5);
  std::vector<float> residual(4 * plane, 0.0f), model(4 * plane, 0.0f);
  const float flux[4] = {1.0f, 0, 0, 0};
  add_source(residual, psf, 32, 32, flux);
  auto result = GetParam()(residual.data(), {psf.data(), n}, geometry, PeakSearch::stokes_i, 0.1, 0.0, 7, model.data(), nullptr, 0.0);
  EXPECT_EQ(result.iterations, 7);
  EXPECT_NEAR(model[32 * n + 32], 1.0 - std::pow(0.9, 7), 1e-5);
  result = GetParam()(residual.data(), {psf.data(), n}, geometry, PeakSearch::stokes_i, 0.1, 0.3, 1000, model.data(), nullptr, 0.0);
  EXPECT_LE(result.peak, 0.3);
  EXPECT_GT(result.peak, 0.3 * 0.9 - 1e-6);
}

// A masked search takes components only inside the mask, and cleans the source there.
TEST_P(MinorCycles, SearchOnlyInsideTheMask) {
  const std::vector<float> psf = gaussian_psf(1.5, 1.5);
  std::vector<float> residual(4 * plane, 0.0f), model(4 * plane, 0.0f);
  const float bright[4] = {2.0f, 0, 0, 0}, faint[4] = {0.5f, 0.1f, 0, 0};
  add_source(residual, psf, 10, 10, bright);
  add_source(residual, psf, 50, 40, faint);
  std::vector<std::uint8_t> mask(plane, 0);
  for (int y = 35; y < 45; ++y)
    for (int x = 45; x < 55; ++x) mask[y * n + x] = 1;
  GetParam()(residual.data(), {psf.data(), n}, geometry, PeakSearch::full_stokes, 0.1, 1e-4, 10000, model.data(),
             mask.data(), 0.0);
  for (std::size_t p = 0; p < plane; ++p) {
    if (mask[p]) continue;
    for (int s = 0; s < 4; ++s) ASSERT_EQ(model[s * plane + p], 0.0f) << "component outside the mask at " << p;
  }
  EXPECT_NEAR(model[40 * n + 50], 0.5f, 1e-3);
  EXPECT_NEAR(model[plane + 40 * n + 50], 0.1f, 1e-3);
}

// Extended emission over more pixels than the sub-minor set may hold (N^2/16, at least
// 1024) and points on the image's edges, cleaned deep enough for the FFT path: the
// residual left is exactly the dirty image less the model convolved with the PSF, no
// pixel is above the stop, and the flux found agrees with plain Hogbom's.
TEST(SubminorHogbom, LeavesTheDirtyImageLessTheModelConvolvedWithThePsf) {
  const std::vector<float> psf = psf_with_sidelobes();
  std::vector<float> dirty(4 * plane, 0.0f);
  for (int y = 0; y < n; ++y)
    for (int x = 0; x < n; ++x) {
      const double r2 = (x - 40.0) * (x - 40.0) + (y - 24.0) * (y - 24.0);
      const float blob[4] = {static_cast<float>(0.002 * std::exp(-0.5 * r2 / 100)), 0.0f,
                             static_cast<float>(0.0005 * std::exp(-0.5 * r2 / 100)), 0.0f};
      add_source(dirty, psf, x, y, blob);
    }
  const float edge_a[4] = {1.0f, 0.2f, 0.0f, 0.0f}, edge_b[4] = {0.5f, 0.0f, -0.1f, 0.02f};
  add_source(dirty, psf, 0, 5, edge_a);
  add_source(dirty, psf, 63, 63, edge_b);
  const double stop = 0.01;
  std::vector<float> sub = dirty, sub_model(4 * plane, 0.0f), plain = dirty, plain_model(4 * plane, 0.0f);
  const auto sub_result = deconv::subminor_hogbom(sub.data(), {psf.data(), n}, geometry, PeakSearch::full_stokes, 0.1, stop,
                                                  100000, sub_model.data());
  const auto plain_result = deconv::hogbom(plain.data(), {psf.data(), n}, geometry, PeakSearch::full_stokes, 0.1, stop, 100000,
                                           plain_model.data());
  int above_stop = 0, components = 0;
  for (std::size_t i = 0; i < plane; ++i) {
    above_stop += deconv::squared_search_value(PeakSearch::full_stokes, dirty.data(), i, plane) > stop * stop;
    components += sub_model[i] != 0;
  }
  ASSERT_GT(above_stop, 1024) << "the case must overflow the sub-minor set";
  ASSERT_GT(components, 32) << "the case must take the FFT convolution path";
  EXPECT_LE(sub_result.peak, stop);
  const std::vector<double> exact = direct_residual(dirty, sub_model, psf);
  double worst = 0;
  for (std::size_t i = 0; i < 4 * plane; ++i) worst = std::max(worst, std::abs(sub[i] - exact[i]));
  EXPECT_LT(worst, 1e-5) << "the FFT convolution's error, against a dirty peak of ~1.3";
  for (int s = 0; s < 4; ++s) {
    double sub_flux = 0, plain_flux = 0;
    for (std::size_t i = 0; i < plane; ++i) {
      sub_flux += sub_model[s * plane + i];
      plain_flux += plain_model[s * plane + i];
    }
    EXPECT_NEAR(sub_flux, plain_flux, 0.01 * std::abs(plain_flux) + 1e-3) << "Stokes " << s;
  }
  std::printf("[ measured ] %d pixels above the stop; sub-minor vs plain Hogbom: %d vs %d iterations, %d components, "
              "residual vs direct %.1e\n", above_stop, sub_result.iterations, plain_result.iterations, components, worst);
}

TEST(MadSigma, EstimatesTheSigmaOfGaussianNoiseDespiteOutliers) {
  std::mt19937 rng(4);
  std::normal_distribution<float> noise(0.0f, 0.25f);
  std::vector<float> image(100000);
  for (float& v : image) v = noise(rng);
  for (int k = 0; k < 500; ++k) image[k * 97] = 100.0f;  // bright sources
  EXPECT_NEAR(deconv::mad_sigma(image.data(), image.size()), 0.25, 0.005);
}

// The median and the median absolute deviation exactly as sorting gives them (the
// element at count / 2), on noise, on values that crowd one histogram bin, on ties and
// signed zeros, and on the shortest images.
TEST(MadSigma, IsExactlyTheSortedMedianOfTheDeviations) {
  const auto by_sorting = [](std::vector<float> v) {
    std::sort(v.begin(), v.end());
    const float median = v[v.size() / 2];
    for (float& x : v) x = std::abs(x - median);
    std::sort(v.begin(), v.end());
    return 1.4826 * v[v.size() / 2];
  };
  std::mt19937 rng(8);
  std::normal_distribution<float> noise(0.0f, 3.0f);
  std::uniform_real_distribution<float> crowd(1.0f, 1.0001f);
  std::uniform_int_distribution<int> ties(-3, 3);
  std::vector<std::vector<float>> cases = {{2.0f}, {-1.0f, 4.0f}, {5.0f, -0.0f, 0.0f}, std::vector<float>(1000, 7.0f)};
  for (std::size_t size : {999u, 1000u, 100001u}) {
    std::vector<float> gaussian(size), crowded(size), tied(size);
    for (std::size_t i = 0; i < size; ++i) {
      gaussian[i] = noise(rng);
      crowded[i] = crowd(rng);
      tied[i] = ties(rng) == 0 ? (i % 2 ? 0.0f : -0.0f) : static_cast<float>(ties(rng));
    }
    cases.insert(cases.end(), {gaussian, crowded, tied});
  }
  for (const std::vector<float>& image : cases)
    EXPECT_EQ(deconv::mad_sigma(image.data(), image.size()), by_sorting(image)) << image.size() << " values";
}

TEST(SearchNoise, IsTheRmsOfTheSearchQuantityOnNoise) {
  // Gaussian noise of a different sigma in each Stokes plane; the joined searches'
  // noise is the root sum of squares of the planes they join.
  const double sigma[4] = {1.0, 2.0, 3.0, 0.5};
  std::mt19937 rng(5);
  std::vector<float> residual(4 * plane);
  for (int s = 0; s < 4; ++s) {
    std::normal_distribution<float> noise(0.0f, static_cast<float>(sigma[s]));
    for (std::size_t p = 0; p < plane; ++p) residual[s * plane + p] = noise(rng);
  }
  const double pol = std::sqrt(4.0 + 9.0), full = std::sqrt(1.0 + 4.0 + 9.0 + 0.25);
  EXPECT_NEAR(deconv::search_noise(PeakSearch::stokes_i, residual.data(), plane), 1.0, 0.05);
  EXPECT_NEAR(deconv::search_noise(PeakSearch::linear_pol, residual.data(), plane), pol, 0.05 * pol);
  EXPECT_NEAR(deconv::search_noise(PeakSearch::full_stokes, residual.data(), plane), full, 0.05 * full);
  // It is the RMS of the search image itself.
  double sum = 0;
  for (std::size_t p = 0; p < plane; ++p)
    sum += static_cast<double>(deconv::squared_search_value(PeakSearch::full_stokes, residual.data(), p, plane));
  EXPECT_NEAR(std::sqrt(sum / plane), full, 0.03 * full);
}

TEST(MinorCycleLimits, StopAtTheLargestOfThresholdNoiseAndMajorCycleGain) {
  CleanConfig clean;
  clean.threshold_jy = 0.01;
  clean.auto_threshold = 3;
  clean.mgain = 0.8;
  const auto noise_bound = deconv::minor_cycle_limits(clean, 0.005, 0.05);  // 3 sigma = 0.015
  EXPECT_TRUE(noise_bound.run);
  EXPECT_DOUBLE_EQ(noise_bound.floor, 0.015);
  EXPECT_DOUBLE_EQ(noise_bound.stop, 0.015);
  const auto gain_bound = deconv::minor_cycle_limits(clean, 0.005, 1.0);
  EXPECT_DOUBLE_EQ(gain_bound.stop, 0.2);
  EXPECT_FALSE(deconv::minor_cycle_limits(clean, 0.005, 0.015).run);  // at the floor: done
  EXPECT_DOUBLE_EQ(deconv::minor_cycle_limits(clean, 0.001, 0.5).floor, 0.01);  // threshold above 3 sigma
}

// A NaN residual pixel is passed over as the serial scan's `>` passes it over, in any
// grouping: a NaN that a reduction tree met first would otherwise win every pairing
// after it, and stop the GPU's CLEAN where the CPU's goes on.
TEST(StrongerPeak, NoReductionOrderPicksANan) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> level(0, 5);  // 0: NaN
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<deconv::PeakCandidate> candidates;
    for (long long p = 0; p < 61; ++p) {
      const int l = level(rng);
      candidates.push_back({l == 0 ? nan : static_cast<float>(l), p});
    }
    deconv::PeakCandidate serial{-1.0f, 0};
    for (const deconv::PeakCandidate& c : candidates)
      if (c.value > serial.value) serial = c;
    std::shuffle(candidates.begin(), candidates.end(), rng);
    deconv::PeakCandidate left_to_right{-1.0f, 0}, right_to_left{-1.0f, 0};
    for (const deconv::PeakCandidate& c : candidates) left_to_right = deconv::stronger_peak(left_to_right, c);
    for (const deconv::PeakCandidate& c : candidates) right_to_left = deconv::stronger_peak(c, right_to_left);
    EXPECT_EQ(left_to_right.pixel, serial.pixel);
    EXPECT_EQ(right_to_left.pixel, serial.pixel);
    EXPECT_EQ(right_to_left.value, serial.value);
  }
  // Only NaNs: the reduction's start, no peak.
  const deconv::PeakCandidate none = deconv::stronger_peak(deconv::stronger_peak({-1.0f, 0}, {nan, 3}), {nan, 4});
  EXPECT_EQ(none.value, -1.0f);
}

// The rule the CUB reduction and the OpenMP search share: any grouping of any order of
// candidates, as a reduction tree or threads make, picks the serial scan's first
// maximum, also among exact ties.
TEST(StrongerPeak, AnyReductionOrderPicksTheFirstOfTheLargestValues) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> level(0, 5);  // few distinct values: many ties
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<deconv::PeakCandidate> candidates;
    for (long long p = 0; p < 97; ++p) candidates.push_back({static_cast<float>(level(rng)), p});
    deconv::PeakCandidate serial{-1.0f, 0};
    for (const deconv::PeakCandidate& c : candidates)
      if (c.value > serial.value) serial = c;
    std::vector<deconv::PeakCandidate> shuffled = candidates;
    std::shuffle(shuffled.begin(), shuffled.end(), rng);
    while (shuffled.size() > 1) {  // pairwise, as a tree reduces
      std::vector<deconv::PeakCandidate> next;
      for (std::size_t i = 0; i + 1 < shuffled.size(); i += 2)
        next.push_back(deconv::stronger_peak(shuffled[i], shuffled[i + 1]));
      if (shuffled.size() % 2) next.push_back(shuffled.back());
      shuffled = std::move(next);
    }
    EXPECT_EQ(shuffled[0].pixel, serial.pixel);
    EXPECT_EQ(shuffled[0].value, serial.value);
  }
}
