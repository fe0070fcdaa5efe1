// Multiscale CLEAN's pieces against independent references: the scale kernels, the
// scale PSFs and their cross-terms against a direct double-precision convolution, and
// the minor cycles on a noiseless extended source against its known flux.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <cstdint>
#include <numeric>
#include <vector>

#include "spip/deconv/clean.hpp"
#include "spip/deconv/convolver.hpp"
#include "spip/deconv/multiscale.hpp"
#include "spip/imaging/geometry.hpp"

namespace {

using spip::deconv::MultiscaleClean;
using spip::deconv::scale_kernel;
using spip::deconv::ScaleKernel;

// A PSF with a main lobe and sidelobes, not symmetric: a Gaussian of FWHM 4 pixels
// times a cosine ripple along a tilted direction, peak 1 at (N/2, N/2).
std::vector<float> lumpy_psf(int n) {
  std::vector<float> psf(static_cast<std::size_t>(n) * n);
  for (int y = 0; y < n; ++y)
    for (int x = 0; x < n; ++x) {
      const double dx = x - n / 2, dy = y - n / 2;
      const double r2 = dx * dx + dy * dy;
      psf[static_cast<std::size_t>(y) * n + x] = static_cast<float>(
          std::exp(-r2 / (2 * 1.7 * 1.7)) + 0.1 * std::exp(-r2 / 400.0) * std::cos(0.9 * dx + 0.4 * dy) *
                                                (r2 > 0 ? 1.0 : 0.0));
    }
  return psf;
}

// The N x N window about (N/2, N/2) of image convolved with the kernel, in double precision.
std::vector<double> direct(const std::vector<double>& image, int n, const ScaleKernel& kernel) {
  std::vector<double> out(image.size(), 0.0);
  for (int y = 0; y < n; ++y)
    for (int x = 0; x < n; ++x) {
      double sum = 0;
      for (int dy = -kernel.radius; dy <= kernel.radius; ++dy)
        for (int dx = -kernel.radius; dx <= kernel.radius; ++dx) {
          const int sx = x - dx, sy = y - dy;
          if (sx >= 0 && sx < n && sy >= 0 && sy < n) sum += kernel.at(dx, dy) * image[static_cast<std::size_t>(sy) * n + sx];
        }
      out[static_cast<std::size_t>(y) * n + x] = sum;
    }
  return out;
}

MultiscaleClean::ConvolverMaker host(int n) {
  return [n](int reach) { return spip::deconv::make_host_convolver(n, reach); };
}

}  // namespace

TEST(ScaleKernel, TaperedQuadraticOfUnitSumAndItsSupport) {
  EXPECT_EQ(scale_kernel(0).radius, 0);
  EXPECT_EQ(scale_kernel(0).values, std::vector<float>{1.0f});
  for (double scale : {3.0, 8.0, 21.0}) {
    const ScaleKernel k = scale_kernel(scale);
    EXPECT_EQ(k.radius, static_cast<int>(std::ceil(scale / 2)));
    EXPECT_NEAR(std::accumulate(k.values.begin(), k.values.end(), 0.0), 1.0, 1e-6) << scale;
    // The paraboloid under the Hann window, relative to the centre, at a few radii.
    for (int dx = 0; dx <= k.radius; ++dx) {
      const double window = k.radius + 1;
      const double want = std::pow(std::cos(M_PI * dx / (2 * window)), 2) * (1 - (dx / scale) * (dx / scale));
      EXPECT_NEAR(k.at(dx, 0) / k.at(0, 0), want, 1e-6) << scale << " " << dx;
      EXPECT_EQ(k.at(dx, 0), k.at(0, dx));
      EXPECT_EQ(k.at(dx, 0), k.at(-dx, 0));
    }
  }
}

TEST(ScaleKernel, AutomaticScalesAndBiasFollowWsclean) {
  // WSClean 3.1 (multiscalealgorithm.cpp) and Radler start at four times the beam.
  EXPECT_EQ(spip::deconv::auto_scales(3.0, 200), (std::vector<double>{0, 12, 24, 48, 96}));
  // Below half the image, but its 33-pixel kernel would not fit in 32: left out.
  EXPECT_EQ(spip::deconv::auto_scales(1.95, 64), (std::vector<double>{0, 7.8, 15.6}));
  const std::vector<double> bias = spip::deconv::scale_bias_factors({0, 6, 12, 24}, 0.6, 6.0);
  EXPECT_DOUBLE_EQ(bias[0], 1.0);
  EXPECT_DOUBLE_EQ(bias[1], 1.0);
  EXPECT_NEAR(bias[2], 1 / 0.6, 1e-12);
  EXPECT_NEAR(bias[3], 1 / 0.36, 1e-12);
  // The factors WSClean 3.1 logged for -multiscale-scales 0,8,16,32,64 at 30" pixels
  // with a theoretical beam of 97.42" (bench/diffuse.sky.txt, 16 channels): 1, 1.2, 1.9,
  // 3.2, 5.4 to its one decimal. Its reference is twice that beam, not the first scale.
  const std::vector<double> wsclean = spip::deconv::scale_bias_factors({0, 8, 16, 32, 64}, 0.6, 2 * 97.42 / 30);
  const std::vector<double> logged{1.0, 1.2, 1.9, 3.2, 5.4};
  for (std::size_t k = 0; k < logged.size(); ++k) EXPECT_NEAR(wsclean[k], logged[k], 0.05) << k;
}

// B_jk = PSF * kernel_j * kernel_k, made once per channel through FFTs of (3N/2)^2,
// against the same convolutions done directly in double precision.
TEST(MultiscaleClean, ScalePsfsAndCrossTermsEqualADirectConvolution) {
  constexpr int n = 64;
  const std::vector<float> psf = lumpy_psf(n);
  const std::vector<double> scales{0, 4, 9};
  MultiscaleClean clean(psf.data(), n, {scales, 0.6, 4.0}, host(n));
  ASSERT_EQ(clean.scale_count(), 3);
  const std::vector<double> psf_double(psf.begin(), psf.end());
  double worst = 0;
  for (int j = 0; j < 3; ++j)
    for (int k = j; k < 3; ++k) {
      const std::vector<double> want = direct(direct(psf_double, n, scale_kernel(scales[j])), n, scale_kernel(scales[k]));
      const std::vector<float> got = clean.cross_term(j, k);
      // Near the window's edge the direct double convolution of the truncated PSF is
      // itself truncated: compare the central half, where the kernels see the whole PSF.
      for (int y = n / 4; y < 3 * n / 4; ++y)
        for (int x = n / 4; x < 3 * n / 4; ++x) {
          const std::size_t p = static_cast<std::size_t>(y) * n + x;
          worst = std::max(worst, std::abs(got[p] - want[p]));
        }
    }
  std::cout << "[ measured ] scale PSFs and cross-terms against a direct convolution: " << worst << " of the PSF peak\n";
  EXPECT_LT(worst, 1e-6);
}

// The residual's smoothing goes through FFTs of only N + the kernel's radius
// (kernel_reach): emission on the image's edges, which wrap-around would carry to the
// opposite side, is smoothed as a direct convolution smooths it, over the whole image.
TEST(MultiscaleClean, TheSmoothingsShortFftsAgreeWithADirectConvolutionToTheEdges) {
  constexpr int n = 64;
  for (const double scale : {9.0, 16.0, 31.0}) {
    const ScaleKernel kernel = scale_kernel(scale);
    const int side = 2 * kernel.radius + 1;
    const int reach = spip::deconv::kernel_reach(n, kernel.radius);
    ASSERT_LT(spip::deconv::convolution_size(n, reach), spip::deconv::convolution_size(n, 0)) << scale;
    auto convolver = spip::deconv::make_host_convolver(n, reach);
    const int filter = convolver->add_filter(kernel.values.data(), side);
    // Four planes, as the residual's Stokes: lines along every edge, a corner, noise.
    std::vector<float> image(4 * n * n, 0.0f);
    for (int s = 0; s < 4; ++s)
      for (int i = 0; i < n; ++i) {
        float* plane = image.data() + static_cast<std::size_t>(s) * n * n;
        plane[i] += 1.0f + s;                                   // the first row
        plane[static_cast<std::size_t>(n - 1) * n + i] -= 2.0f;  // the last row
        plane[static_cast<std::size_t>(i) * n] += 0.5f;          // the first column
        plane[static_cast<std::size_t>(i) * n + n - 1] += 3.0f;  // the last column
        plane[static_cast<std::size_t>(i) * n + (7 * i + s) % n] += 0.25f;
      }
    std::vector<float> smoothed(image.size());
    convolver->convolve(image.data(), 4, {{filter}}, {smoothed.data()});
    double worst = 0;
    for (int s = 0; s < 4; ++s) {
      const std::size_t offset = static_cast<std::size_t>(s) * n * n;
      const std::vector<double> want = direct({image.begin() + offset, image.begin() + offset + n * n}, n, kernel);
      for (std::size_t p = 0; p < want.size(); ++p) worst = std::max(worst, std::abs(smoothed[offset + p] - want[p]));
    }
    EXPECT_LT(worst, 1e-5) << "scale " << scale;
  }
}

// A pass subtracts its components convolved with the PSF and their scale's kernel
// through FFTs of 3N/2 plus the widest kernel's radius (convolver_shape's reach): the
// product's reach, which components at the image's corners test. The reference is the
// direct double-precision convolution of the PSF's copies (each N x N, as the filter's)
// with the kernel, on a canvas that holds all the kernel reaches into the image.
TEST(MultiscaleClean, TheComponentsSubtractionAgreesWithADirectConvolutionToTheCorners) {
  constexpr int n = 64;
  const std::vector<float> psf = lumpy_psf(n);
  const ScaleKernel kernel = scale_kernel(29.0);  // radius 15: the widest whose kernel fits in N/2
  ASSERT_EQ(MultiscaleClean::convolver_shape({0, 29.0}, n).reach, kernel.radius);
  std::vector<int> reaches;  // those MultiscaleClean asks of its convolver maker
  MultiscaleClean clean(psf.data(), n, {{0, 29.0}, 0.6, 4.0}, [&reaches](int reach) {
    reaches.push_back(reach);
    return spip::deconv::make_host_convolver(n, reach);
  });
  EXPECT_EQ(reaches, (std::vector<int>{kernel.radius, spip::deconv::kernel_reach(n, kernel.radius)}));
  auto convolver = spip::deconv::make_host_convolver(n, kernel.radius);
  const int psf_filter = convolver->add_filter(psf.data(), n);
  const int kernel_filter = convolver->add_filter(kernel.values.data(), 2 * kernel.radius + 1);
  const struct {
    int x, y;
    float flux;
  } components[] = {{0, 0, 1.0f}, {n - 1, 0, -0.5f}, {0, n - 1, 2.0f}, {n - 1, n - 1, 0.7f}, {20, 41, 1.3f}};
  std::vector<float> deltas(n * n, 0.0f);
  for (const auto& c : components) deltas[static_cast<std::size_t>(c.y) * n + c.x] = c.flux;
  std::vector<float> got(n * n);
  convolver->convolve(deltas.data(), 1, {{psf_filter, kernel_filter}}, {got.data()});
  const int margin = kernel.radius, side = n + 2 * margin;
  std::vector<double> canvas(static_cast<std::size_t>(side) * side, 0.0);
  for (const auto& c : components)
    for (int sy = 0; sy < n; ++sy)
      for (int sx = 0; sx < n; ++sx) {
        const int x = c.x + sx - n / 2 + margin, y = c.y + sy - n / 2 + margin;
        if (x >= 0 && x < side && y >= 0 && y < side)
          canvas[static_cast<std::size_t>(y) * side + x] += c.flux * psf[static_cast<std::size_t>(sy) * n + sx];
      }
  const std::vector<double> want = direct(canvas, side, kernel);
  double worst = 0;
  for (int y = 0; y < n; ++y)
    for (int x = 0; x < n; ++x)
      worst = std::max(worst, std::abs(got[static_cast<std::size_t>(y) * n + x] -
                                       want[static_cast<std::size_t>(y + margin) * side + x + margin]));
  EXPECT_LT(worst, 1e-5);
}

// Scale 0 is always cleaned, as in WSClean; a scale the PSF hardly responds to (here a
// PSF whose integral is zero, as without short spacings) is left out.
TEST(MultiscaleClean, KeepsScaleZeroAndLeavesOutScalesThePsfDoesNotMeasure) {
  constexpr int n = 128;
  std::vector<float> psf(static_cast<std::size_t>(n) * n);
  for (int y = 0; y < n; ++y)
    for (int x = 0; x < n; ++x) {
      const double r2 = (x - n / 2) * (x - n / 2) + (y - n / 2) * (y - n / 2);
      psf[static_cast<std::size_t>(y) * n + x] =
          static_cast<float>(std::exp(-r2 / (2 * 2.0 * 2.0)) - 0.0625 * std::exp(-r2 / (2 * 8.0 * 8.0)));
    }
  psf[static_cast<std::size_t>(n / 2) * n + n / 2] = 1.0f;
  MultiscaleClean clean(psf.data(), n, {{4, 60}, 0.6, 4.0}, host(n));
  ASSERT_EQ(clean.scale_count(), 2);
  EXPECT_EQ(clean.scale(0), 0);
  EXPECT_EQ(clean.scale(1), 4);
}

// A noiseless elliptical Gaussian at 10 % linear polarisation, seen through a Gaussian
// PSF of FWHM 4 pixels on a 128^2 image: the dirty image is its exact (direct)
// convolution, so the minor cycles alone must recover the source.
struct ExtendedSource {
  static constexpr int n = 128;
  static constexpr std::size_t pixels = static_cast<std::size_t>(n) * n;
  static constexpr double total = 10.0;  // Jy, in a Gaussian of FWHM 24 x 14 pixels at PA 30 deg
  const double q_frac = 0.1 * std::cos(0.8), u_frac = 0.1 * std::sin(0.8);  // Q + iU = 0.1 I e^{2 i 0.4}
  std::vector<float> psf, dirty;

  ExtendedSource() : psf(pixels), dirty(4 * pixels, 0.0f) {
    constexpr double sigma_psf = 4.0 / 2.3548;
    for (int y = 0; y < n; ++y)
      for (int x = 0; x < n; ++x)
        psf[static_cast<std::size_t>(y) * n + x] = static_cast<float>(
            std::exp(-((x - n / 2) * (x - n / 2) + (y - n / 2) * (y - n / 2)) / (2 * sigma_psf * sigma_psf)));
    std::vector<double> sky(pixels);
    double sum = 0;
    for (int y = 0; y < n; ++y)
      for (int x = 0; x < n; ++x) {
        const double dx = x - 60.0, dy = y - 66.0, c = std::cos(0.52), s = std::sin(0.52);
        const double a = (c * dx + s * dy) / (24 / 2.3548), b = (-s * dx + c * dy) / (14 / 2.3548);
        sum += sky[static_cast<std::size_t>(y) * n + x] = std::exp(-0.5 * (a * a + b * b));
      }
    for (double& v : sky) v *= total / sum;
    const int reach = 14;  // the PSF is below 1e-20 beyond
    for (int y = 0; y < n; ++y)
      for (int x = 0; x < n; ++x) {
        double value = 0;
        for (int sy = std::max(0, y - reach); sy <= std::min(n - 1, y + reach); ++sy)
          for (int sx = std::max(0, x - reach); sx <= std::min(n - 1, x + reach); ++sx)
            value += sky[static_cast<std::size_t>(sy) * n + sx] *
                     psf[static_cast<std::size_t>(y - sy + n / 2) * n + x - sx + n / 2];
        const std::size_t p = static_cast<std::size_t>(y) * n + x;
        dirty[p] = static_cast<float>(value);
        dirty[pixels + p] = static_cast<float>(q_frac * value);
        dirty[2 * pixels + p] = static_cast<float>(u_frac * value);
      }
  }
  double peak() const { return *std::max_element(dirty.begin(), dirty.begin() + pixels); }
};

// Cleaned to 0.2 % of the peak, multiscale finds the extended source's integrated I, Q
// and U within 1 % in fewer than half the components of the point CLEAN (sub-minor
// Hogbom), whose model falls further short of the flux.
TEST(MultiscaleClean, RecoversAnExtendedSourcesFluxInFewerThanHalfHogbomsComponents) {
  const ExtendedSource source;
  constexpr int n = ExtendedSource::n;
  constexpr std::size_t pixels = ExtendedSource::pixels;
  const double total = source.total, q_frac = source.q_frac, u_frac = source.u_frac;
  const std::vector<float>& psf = source.psf;
  const std::vector<float>& dirty = source.dirty;
  const double stop = 2e-3 * source.peak();

  std::vector<float> residual = dirty, model(4 * pixels, 0.0f);
  MultiscaleClean multiscale(psf.data(), n, {spip::deconv::auto_scales(4.0, n), 0.6, 8.0},
                             host(n));
  const int ms_components =
      multiscale.run(residual.data(), model.data(), nullptr, spip::PeakSearch::full_stokes, 0.1, stop, 100000).iterations;
  auto flux = [&](const std::vector<float>& m, int stokes) {
    return std::accumulate(m.begin() + stokes * pixels, m.begin() + (stokes + 1) * pixels, 0.0);
  };

  std::vector<float> hogbom_residual = dirty, hogbom_model(4 * pixels, 0.0f);
  const spip::imaging::ImageGeometry geometry = spip::imaging::ImageGeometry::make(n, 1e-4, 1.5);
  const int hogbom_components =
      spip::deconv::subminor_hogbom(hogbom_residual.data(), {psf.data(), n}, geometry, spip::PeakSearch::full_stokes, 0.1,
                                    stop, 1000000, hogbom_model.data())
          .iterations;

  std::cout << "[ measured ] extended source: multiscale " << ms_components << " components (per scale";
  for (int c : multiscale.iterations_per_scale()) std::cout << " " << c;
  std::cout << "), I " << flux(model, 0) << " Q " << flux(model, 1) << " U " << flux(model, 2) << " of " << total
            << ", " << total * q_frac << ", " << total * u_frac << "; Hogbom " << hogbom_components << " components, I "
            << flux(hogbom_model, 0) << "\n";
  EXPECT_NEAR(flux(model, 0), total, 0.01 * total);
  EXPECT_NEAR(flux(model, 1), total * q_frac, 0.01 * std::abs(total * q_frac));
  EXPECT_NEAR(flux(model, 2), total * u_frac, 0.01 * std::abs(total * u_frac));
  EXPECT_LT(2 * ms_components, hogbom_components);
  EXPECT_GT(std::abs(flux(hogbom_model, 0) - total), 2 * std::abs(flux(model, 0) - total));
  EXPECT_GT(multiscale.iterations_per_scale()[1] + multiscale.iterations_per_scale()[2], 0);
}

// With a mask (clean.auto_mask's second stage) the search stays inside it, and each
// component adds its kernel to the model: the model, and so the next mask, reaches past
// the masked pixels, by the kernel's radius at most.
TEST(MultiscaleClean, TheSearchStaysInTheMaskAndTheModelGrowsByTheKernels) {
  const ExtendedSource source;
  constexpr int n = ExtendedSource::n;
  std::vector<std::uint8_t> mask(ExtendedSource::pixels, 0);
  for (int y = 61; y < 71; ++y)
    for (int x = 55; x < 65; ++x) mask[static_cast<std::size_t>(y) * n + x] = 1;
  std::vector<float> residual = source.dirty, model(4 * ExtendedSource::pixels, 0.0f);
  MultiscaleClean clean(source.psf.data(), n, {{0, 16}, 0.6, 16.0}, host(n));
  clean.run(residual.data(), model.data(), mask.data(), spip::PeakSearch::full_stokes, 0.1, 0.05 * source.peak(), 10000);
  ASSERT_GT(clean.iterations_per_scale()[1], 0);
  const int radius = scale_kernel(16).radius;
  int outside_mask = 0, beyond_reach = 0;
  for (int y = 0; y < n; ++y)
    for (int x = 0; x < n; ++x) {
      if (model[static_cast<std::size_t>(y) * n + x] == 0) continue;
      outside_mask += !mask[static_cast<std::size_t>(y) * n + x];
      beyond_reach += x < 55 - radius || x >= 65 + radius || y < 61 - radius || y >= 71 + radius;
    }
  EXPECT_GT(outside_mask, 0);
  EXPECT_EQ(beyond_reach, 0);
}
