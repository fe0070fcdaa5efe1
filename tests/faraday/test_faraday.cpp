// Faraday moments against two-pass double-precision statistics, RM synthesis against a
// direct double loop and Faraday-thin sources with known RM, angle and amplitude,
// RM-CLEAN and peak fitting against those truths.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <fstream>
#include <iostream>
#include <limits>
#include <numbers>
#include <random>
#include <string>

#include "spip/error.hpp"
#include "spip/faraday/moments.hpp"
#include "spip/faraday/rm_synthesis.hpp"
#include "spip/faraday/spectral_model.hpp"

using namespace spip;
using namespace spip::faraday;
using cdouble = std::complex<double>;

namespace {

constexpr double c_light = 299792458.0;

// The OSKAR sample's band: 40 channels of 1.2 MHz from 120.6 MHz.
std::vector<double> sample_band() {
  std::vector<double> freq;
  for (int c = 0; c < 40; ++c) freq.push_back(120.6e6 + 1.2e6 * c);
  return freq;
}

// Q + iU of Faraday-thin components: p exp(2i (chi0 + rm lambda^2)).
struct Thin {
  double p, chi0, rm;
};
std::vector<std::complex<float>> spectrum(const std::vector<double>& freq, const std::vector<Thin>& sources) {
  std::vector<std::complex<float>> p;
  for (double f : freq) {
    const double lambda_sq = std::pow(c_light / f, 2);
    cdouble sum = 0;
    for (const Thin& s : sources) sum += s.p * std::polar(1.0, 2 * (s.chi0 + s.rm * lambda_sq));
    p.emplace_back(sum);
  }
  return p;
}

FaradayConfig fine_axis(double phi_max = 100, double dphi = 0.1) {
  FaradayConfig config;
  config.phi_max = phi_max;
  config.dphi = dphi;
  return config;
}

}  // namespace

// The weighted moments of each pixel's channels, in double, the two-pass way: [mean,
// std, skewness, excess kurtosis], NaN where they are undefined.
std::array<double, 4> two_pass_moments(const std::vector<std::vector<float>>& planes, int p) {
  double n = 0, mean = 0;
  for (const auto& plane : planes)
    if (std::isfinite(plane[p])) n += 1, mean += plane[p];
  mean /= n;
  double m2 = 0, m3 = 0, m4 = 0;
  for (const auto& plane : planes) {
    if (!std::isfinite(plane[p])) continue;
    const double d = plane[p] - mean;
    m2 += d * d / n, m3 += d * d * d / n, m4 += d * d * d * d / n;
  }
  if (!(m2 > 0)) return {mean, 0.0, NAN, NAN};
  return {mean, std::sqrt(m2), m3 / std::pow(m2, 1.5), m4 / (m2 * m2) - 3};
}

MomentImages moments_of(const std::vector<std::vector<float>>& planes) {
  PowerSums sums(planes.front().size());
  for (const auto& plane : planes) sums.add(plane.data(), 1.0);
  return moments(sums);
}

TEST(Moments, MatchTwoPassStatistics) {
  std::mt19937 rng(5);
  std::gamma_distribution<double> skewed(2.0, 1.5);
  const int channels = 200, pixels = 3;
  std::vector<std::vector<float>> planes(channels, std::vector<float>(pixels));
  for (auto& plane : planes)
    for (auto& v : plane) v = static_cast<float>(skewed(rng));
  planes[17][2] = std::numeric_limits<float>::quiet_NaN();  // a blanked channel of pixel 2
  const MomentImages a = moments_of(planes);
  for (int p = 0; p < pixels; ++p) {
    const std::array<double, 4> truth = two_pass_moments(planes, p);
    EXPECT_NEAR(a.mean[p], truth[0], 1e-5);
    EXPECT_NEAR(a.std[p], truth[1], 1e-5);
    EXPECT_NEAR(a.skew[p], truth[2], 1e-4);
    EXPECT_NEAR(a.kurt[p], truth[3], 1e-4);
  }
  EXPECT_GT(a.skew[0], 0.5) << "a gamma(2) sample is right-skewed";
}

// Spectra whose spread is small beside their mean: a bright, flat Stokes I (1000 Jy with
// noise of 1 mJy), two channels of nearly one value, and a constant. Sums of powers
// about 0 lost their spread to rounding (an excess kurtosis of 4e11 on two channels).
TEST(Moments, ASpreadSmallBesideTheMeanIsKept) {
  std::mt19937 rng(9);
  std::normal_distribution<double> noise(0.0, 1e-3);
  std::vector<std::vector<float>> planes(64, std::vector<float>(3));
  for (std::size_t c = 0; c < planes.size(); ++c) {
    planes[c][0] = static_cast<float>(1000.0 + noise(rng));
    planes[c][1] = c == 0 ? 5.0f : c == 1 ? 5.0001f : NAN;
    planes[c][2] = 2.5f;
  }
  const MomentImages m = moments_of(planes);
  for (int p = 0; p < 2; ++p) {
    const std::array<double, 4> truth = two_pass_moments(planes, p);
    EXPECT_NEAR(m.mean[p], truth[0], 1e-6 * std::abs(truth[0])) << "pixel " << p;
    EXPECT_NEAR(m.std[p], truth[1], 1e-6 * truth[1]) << "pixel " << p;
    EXPECT_NEAR(m.skew[p], truth[2], 1e-6) << "pixel " << p;
    EXPECT_NEAR(m.kurt[p], truth[3], 1e-6) << "pixel " << p;
  }
  EXPECT_NEAR(m.kurt[1], -2.0, 1e-6) << "two values: a kurtosis of 1";
  EXPECT_EQ(m.mean[2], 2.5f);
  EXPECT_EQ(m.std[2], 0.0f);
  EXPECT_TRUE(std::isnan(m.skew[2]) && std::isnan(m.kurt[2])) << "a constant has no shape";
}

TEST(RmSynthesis, DefaultAxisFollowsRmTools) {
  const std::vector<double> freq = sample_band();
  const SynthesisSetup setup = make_setup(freq, std::vector<double>(freq.size(), 1.0), FaradayConfig{});
  const double span = std::pow(c_light / freq.front(), 2) - std::pow(c_light / freq.back(), 2);
  EXPECT_NEAR(setup.fwhm_theory, 3.8 / span, 1e-12);
  EXPECT_NEAR(setup.axis.dphi, setup.fwhm_theory / 10, 1e-12);
  // sqrt(3) / the largest lambda^2 step (between the two lowest channels): ~14 rad/m^2.
  const double step = std::pow(c_light / freq[0], 2) - std::pow(c_light / freq[1], 2);
  EXPECT_NEAR(setup.phi_max_unsmeared, std::sqrt(3.0) / step, 1e-9);
  EXPECT_NEAR(setup.phi_max_unsmeared, 14.0, 0.5);
  EXPECT_EQ(setup.axis.count % 2, 1);
  EXPECT_NEAR(setup.axis.phi((setup.axis.count - 1) / 2), 0.0, 1e-12);
  double mean = 0;
  for (double l : setup.lambda_sq) mean += l / setup.lambda_sq.size();
  EXPECT_NEAR(setup.lambda0_sq, mean, 1e-12);
}

// The axis is counted before it is made: one an int cannot index is refused, naming the
// keys, where it would have wrapped to a negative count (phi_max 1e9 on the sample).
// The peak as RM-Tools 1.5's measure_FDF_parms measures it: sought among the inner
// samples, NaN where an end sample is higher (the peak lies at or past the axis's end),
// and the derotated angle's error from Brentjens & de Bruyn's eq. A.20 as written there,
// over the channels that count.
TEST(RmSynthesis, PeakFitAsRmToolsMeasuresIt) {
  const std::vector<double> freq = sample_band();
  std::vector<double> weight(freq.size(), 1.0);
  weight[3] = weight[17] = 0;  // flagged channels do not count
  const SynthesisSetup setup = make_setup(freq, weight, fine_axis(60, 0.5));
  const FaradayAxis& axis = setup.axis;
  std::vector<std::complex<float>> f(axis.count);
  synthesise(synthesis_matrix(setup, axis), axis.count, static_cast<int>(freq.size()),
             spectrum(freq, {{0.2, 0.4, 12.0}}).data(), 1, f.data());
  const double sigma = 0.002, lever = chi0_lever(setup);
  const PeakFit fit = fit_peak(f.data(), axis, setup.lambda0_sq, 1.0, sigma, lever);
  double n = 0, sum = 0, squares = 0;
  for (std::size_t c = 0; c < freq.size(); ++c)
    if (weight[c] > 0) {
      const double l2 = std::pow(299792458.0 / freq[c], 2);
      n += 1;
      sum += l2;
      squares += l2 * l2;
    }
  const double var = (squares - sum * sum / n) / (n - 1);
  const double peak = std::abs(f[static_cast<std::size_t>(std::lround((fit.phi - axis.phi_first) / axis.dphi))]);
  const double a20 = std::sqrt(sigma * sigma * n / (4 * (n - 2) * peak * peak) *
                               ((n - 1) / n + std::pow(setup.lambda0_sq, 2) / var));
  EXPECT_NEAR(fit.phi, 12.0, 0.01);
  EXPECT_NEAR(fit.chi0_err, a20, 0.01 * a20);  // the peak's parabola lifts PI by under 1 %
  EXPECT_GT(fit.chi0_err, sigma / (2 * 0.2));  // A.20 adds the derotation's lever
  // A spectrum rising straight to the end of the axis: its peak lies past it, not
  // measured; the pixel's noise still is.
  std::vector<std::complex<float>> rising(axis.count);
  for (int k = 0; k < axis.count; ++k) rising[k] = {static_cast<float>(k + 1), 0.0f};
  const PeakFit edge = fit_peak(rising.data(), axis, setup.lambda0_sq, 1.0, sigma, lever);
  EXPECT_TRUE(std::isnan(edge.phi) && std::isnan(edge.pi) && std::isnan(edge.chi0) && std::isnan(edge.chi0_err));
  EXPECT_EQ(edge.pi_err, sigma);
  // The end sample a little higher than the inner peak, the three curving down: the
  // vertex lies before the end (at 0.61 of the last step), and is measured there.
  std::vector<std::complex<float>> bent(axis.count, {0.01f, 0.0f});
  bent[axis.count - 3] = {0.0f, 0.0f};
  bent[axis.count - 2] = {1.0f, 0.0f};
  bent[axis.count - 1] = {1.1f, 0.0f};
  const PeakFit bend = fit_peak(bent.data(), axis, setup.lambda0_sq, 1.0, sigma, lever);
  EXPECT_NEAR(bend.phi, axis.phi(axis.count - 2) + (1.1 / 1.8) * axis.dphi, 1e-6);
  // Highest one sample in from the end: found there, and fitted.
  rising.back() = {0.5f, 0.0f};
  const PeakFit inside = fit_peak(rising.data(), axis, setup.lambda0_sq, 1.0, sigma, lever);
  EXPECT_GT(inside.phi, axis.phi(axis.count - 2) - axis.dphi / 2);
  EXPECT_LT(inside.phi, axis.phi(axis.count - 1));
}

// A depth step coarser than the RMSF's FWHM (1.28 rad/m^2 over the sample's band) would
// step over peaks it cannot resolve: refused, the FWHM itself allowed.
TEST(RmSynthesis, AStepCoarserThanTheRmsfIsRefused) {
  const std::vector<double> freq = sample_band();
  const std::vector<double> weight(freq.size(), 1.0);
  const double fwhm = make_setup(freq, weight, fine_axis()).fwhm_theory;
  EXPECT_NEAR(fwhm, 1.28, 0.01);
  EXPECT_NO_THROW(make_setup(freq, weight, fine_axis(60, fwhm)));
  EXPECT_THROW(make_setup(freq, weight, fine_axis(60, 1.01 * fwhm)), ConfigError);
}

TEST(RmSynthesis, AnAxisBeyondMaxDepthsIsRefused) {
  const std::vector<double> freq = sample_band();
  const std::vector<double> weight(freq.size(), 1.0);
  const int half = (max_depths - 1) / 2;
  EXPECT_EQ(make_setup(freq, weight, fine_axis(half, 1.0)).axis.count, max_depths);
  try {
    make_setup(freq, weight, fine_axis(half + 1, 1.0));
    ADD_FAILURE() << "an axis of max_depths + 2 depths was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("faraday.phi_max 5.36871e+08 rad/m^2 in steps of 1 rad/m^2 (faraday.dphi) "
                                         "makes 1073741825 Faraday depths, more than the 1073741823"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(make_setup(freq, weight, fine_axis(1e9)), ConfigError);
}

TEST(RmSynthesis, GemmMatchesADirectDoubleLoop) {
  const std::vector<double> freq = sample_band();
  std::vector<double> weight(freq.size());
  for (std::size_t c = 0; c < weight.size(); ++c) weight[c] = 1.0 + 0.01 * c;
  const SynthesisSetup setup = make_setup(freq, weight, fine_axis(30, 0.5));
  const int pixels = 37;  // threads' columns split at whole lines of 8, the last one short
  std::mt19937 rng(2);
  std::normal_distribution<float> normal;
  std::vector<std::complex<float>> p(freq.size() * pixels);
  for (auto& v : p) v = {normal(rng), normal(rng)};
  double wsum = 0;
  for (double w : weight) wsum += w;
  const int threads_before = omp_get_max_threads();
  for (int threads : {1, 2, 3, 8}) {  // 8: some threads get no whole line, hence no columns
    omp_set_num_threads(threads);
    std::vector<std::complex<float>> f(static_cast<std::size_t>(setup.axis.count) * pixels);
    synthesise(synthesis_matrix(setup, setup.axis), setup.axis.count, static_cast<int>(freq.size()), p.data(), pixels,
               f.data());
    double worst = 0;
    for (int k = 0; k < setup.axis.count; ++k)
      for (int x = 0; x < pixels; ++x) {
        cdouble sum = 0;
        for (std::size_t c = 0; c < freq.size(); ++c)
          sum += weight[c] / wsum * cdouble(p[c * pixels + x]) *
                 std::polar(1.0, -2 * setup.axis.phi(k) * (setup.lambda_sq[c] - setup.lambda0_sq));
        worst = std::max(worst, std::abs(sum - cdouble(f[k * pixels + x])));
      }
    EXPECT_LT(worst, 1e-5) << threads << " threads";
    EXPECT_EQ(omp_get_max_threads(), threads) << "synthesise must leave OpenMP's thread count alone";
  }
  omp_set_num_threads(threads_before);
}

TEST(RmSynthesis, RmsfPeaksAtOneWithTheExpectedWidth) {
  const std::vector<double> freq = sample_band();
  const SynthesisSetup setup = make_setup(freq, std::vector<double>(freq.size(), 1.0), fine_axis());
  const auto r = rmsf(setup, setup.axis);
  EXPECT_NEAR(std::abs(r[(setup.axis.count - 1) / 2]), 1.0, 1e-12);
  // Uniform lambda^2 coverage would give 2 sqrt(3) / span (Brentjens & de Bruyn 2005);
  // channels uniform in frequency crowd at short lambda^2 and widen it to the 3.8 / span
  // of Dickey et al. (2019).
  const double span = setup.lambda_sq.front() - setup.lambda_sq.back();
  EXPECT_NEAR(measured_fwhm(setup) * span, 3.8, 0.1);
}

TEST(RmSynthesis, ThinSourcesAreRecoveredByCleanAndPeakFit) {
  const std::vector<double> freq = sample_band();
  const SynthesisSetup setup = make_setup(freq, std::vector<double>(freq.size(), 1.0), fine_axis(100, 0.1));
  const FaradayAxis& axis = setup.axis;
  // The sample's S3 (RM -45, chi0 -20 deg, 0.12 Jy) plus a weaker component at +20.
  const Thin bright{0.12, -20 * std::numbers::pi / 180, -45.0}, faint{0.04, 0.6, 20.0};
  const auto p = spectrum(freq, {bright, faint});
  std::vector<std::complex<float>> f(axis.count);
  synthesise(synthesis_matrix(setup, axis), axis.count, static_cast<int>(freq.size()), p.data(), 1, f.data());

  FaradayAxis doubled{2 * axis.phi_first, axis.dphi, 2 * axis.count - 1};
  std::vector<std::complex<float>> rmsf_double;
  for (const cdouble& v : rmsf(setup, doubled)) rmsf_double.emplace_back(v);
  std::vector<std::complex<float>> model(axis.count), clean(axis.count), residual = f;
  const double fwhm = measured_fwhm(setup);
  const RmCleanResult result =
      rm_clean(residual.data(), axis.count, rmsf_double, axis.dphi, 0.1, 1e-3, 5000, fwhm, model.data(), clean.data());
  EXPECT_GT(result.iterations, 10);
  for (const auto& v : residual) EXPECT_LT(std::abs(v), 1.2e-3);
  // Components sit at the sources' depths.
  double near_bright = 0, near_faint = 0, total = 0;
  for (int k = 0; k < axis.count; ++k) {
    total += std::abs(model[k]);
    if (std::abs(axis.phi(k) - bright.rm) < 0.3) near_bright += std::abs(model[k]);
    if (std::abs(axis.phi(k) - faint.rm) < 0.3) near_faint += std::abs(model[k]);
  }
  EXPECT_GT((near_bright + near_faint) / total, 0.97);
  EXPECT_NEAR(near_bright, bright.p, 0.01);
  EXPECT_NEAR(near_faint, faint.p, 0.01);

  const PeakFit fit = fit_peak(clean.data(), axis, setup.lambda0_sq, fwhm, 0.0, chi0_lever(setup));
  EXPECT_NEAR(fit.phi, bright.rm, 0.02);
  EXPECT_NEAR(fit.pi, bright.p, 0.005);
  EXPECT_NEAR(fit.chi0, bright.chi0, 0.02);
  // The dirty FDF of a lone source peaks exactly at its RM, PI and angle.
  const auto lone = spectrum(freq, {bright});
  synthesise(synthesis_matrix(setup, axis), axis.count, static_cast<int>(freq.size()), lone.data(), 1, f.data());
  const PeakFit dirty = fit_peak(f.data(), axis, setup.lambda0_sq, fwhm, 0.001, chi0_lever(setup));
  EXPECT_NEAR(dirty.phi, bright.rm, 0.01);
  EXPECT_NEAR(dirty.pi, std::sqrt(bright.p * bright.p - 2.3e-6), 1e-3);
  // The bias correction sqrt(PI^2 - 2.3 sigma^2), at a noise where it moves PI by 9e-3,
  // nine times the tolerance above.
  const double sigma = 0.03;
  const PeakFit noisy = fit_peak(f.data(), axis, setup.lambda0_sq, fwhm, sigma, chi0_lever(setup));
  const PeakFit bare = fit_peak(f.data(), axis, setup.lambda0_sq, fwhm, 0.0, chi0_lever(setup));
  EXPECT_NEAR(noisy.pi, std::sqrt(bare.pi * bare.pi - 2.3 * sigma * sigma), 1e-6);
  EXPECT_NEAR(bare.pi, bright.p, 1e-3);
  EXPECT_NEAR(dirty.chi0, bright.chi0, 0.01);
  EXPECT_NEAR(dirty.phi_err, fwhm * 0.001 / (2 * bright.p), 1e-3 * fwhm);
}

TEST(RmClean, CrossCorrelationSearchAlsoFindsTheComponents) {
  const std::vector<double> freq = sample_band();
  const SynthesisSetup setup = make_setup(freq, std::vector<double>(freq.size(), 1.0), fine_axis(60, 0.25));
  const FaradayAxis& axis = setup.axis;
  const auto p = spectrum(freq, {{0.3, 0.5, 20.0}, {0.1, -0.2, -7.0}});
  std::vector<std::complex<float>> f(axis.count);
  synthesise(synthesis_matrix(setup, axis), axis.count, static_cast<int>(freq.size()), p.data(), 1, f.data());
  FaradayAxis doubled{2 * axis.phi_first, axis.dphi, 2 * axis.count - 1};
  std::vector<std::complex<float>> rmsf_double;
  for (const cdouble& v : rmsf(setup, doubled)) rmsf_double.emplace_back(v);
  std::vector<std::complex<float>> model(axis.count), clean(axis.count);
  rm_clean(f.data(), axis.count, rmsf_double, axis.dphi, 0.1, 2e-3, 3000, measured_fwhm(setup), model.data(),
           clean.data(), true);
  double at_20 = 0, at_minus_7 = 0;
  for (int k = 0; k < axis.count; ++k) {
    if (std::abs(axis.phi(k) - 20.0) < 0.5) at_20 += std::abs(model[k]);
    if (std::abs(axis.phi(k) + 7.0) < 0.5) at_minus_7 += std::abs(model[k]);
  }
  EXPECT_NEAR(at_20, 0.3, 0.01);
  EXPECT_NEAR(at_minus_7, 0.1, 0.01);
}

// m2 of the components: sqrt(p1 p2) |phi1 - phi2| / (p1 + p2) for two thin components
// (half the separation when equal), near 0 for one.
TEST(RmClean, ComponentSpreadSeparatesOneFromTwoComponents) {
  const std::vector<double> freq = sample_band();
  const SynthesisSetup setup = make_setup(freq, std::vector<double>(freq.size(), 1.0), fine_axis(60, 0.25));
  const FaradayAxis& axis = setup.axis;
  const auto rmsf_double = rmsf_for_clean(setup);
  auto cleaned_m2 = [&](const std::vector<Thin>& sources) {
    const auto p = spectrum(freq, sources);
    std::vector<std::complex<float>> f(axis.count), model(axis.count), clean(axis.count);
    synthesise(synthesis_matrix(setup, axis), axis.count, static_cast<int>(freq.size()), p.data(), 1, f.data());
    rm_clean(f.data(), axis.count, rmsf_double, axis.dphi, 0.1, 1e-3, 3000, measured_fwhm(setup), model.data(),
             clean.data());
    return component_spread(reinterpret_cast<const Sample*>(model.data()), axis);
  };
  EXPECT_LT(cleaned_m2({{0.3, 0.5, 20.0}}), axis.dphi);
  EXPECT_NEAR(cleaned_m2({{0.2, 0.5, -10.0}, {0.2, 1.1, 10.0}}), 10.0, 0.3);
  EXPECT_NEAR(cleaned_m2({{0.3, 0.5, -10.0}, {0.1, 1.1, 10.0}}), std::sqrt(0.03) * 20 / 0.4, 0.3);
  const std::vector<Sample> none(axis.count);
  EXPECT_EQ(component_spread(none.data(), axis), 0.0);
}

namespace {

// A slab of pixels, each with its own Faraday-thin source, and a second, fainter one in
// the odd pixels: P is [channel][pixel] as the transpose delivers it.
struct ThinSlab {
  std::vector<std::complex<float>> p;
  std::vector<Thin> brightest;
};
ThinSlab thin_slab(const std::vector<double>& freq, int pixels) {
  ThinSlab slab;
  slab.p.resize(freq.size() * pixels);
  for (int x = 0; x < pixels; ++x) {
    const Thin bright{0.05 + 0.01 * x, -0.7 + 0.13 * x, -40.0 + 7.0 * x};
    std::vector<Thin> sources{bright};
    if (x % 2) sources.push_back({0.015, 0.3, bright.rm + 15.0});
    const auto column = spectrum(freq, sources);
    for (std::size_t c = 0; c < freq.size(); ++c) slab.p[c * pixels + x] = column[c];
    slab.brightest.push_back(bright);
  }
  return slab;
}

SpectrumSettings settings_for(const SynthesisSetup& setup, int niter) {
  return spectrum_settings(setup, 1e-3, {0.1, 1e-3, niter, false});
}

}  // namespace

// The slab stage runs the per-pixel functions on every column of the [phi][pixel] cube
// (the GPU runs them on the strided cube itself): each pixel's products must be those
// of its own spectrum cleaned and fitted alone, and each must find its own source.
TEST(RmSynthesis, SlabCleansAndFitsEveryPixelAsItsOwnSpectrum) {
  const std::vector<double> freq = sample_band();
  const SynthesisSetup setup = make_setup(freq, std::vector<double>(freq.size(), 1.0), fine_axis(80, 0.25));
  const int pixels = 12, chans = static_cast<int>(freq.size()), num_phi = setup.axis.count;
  const ThinSlab truth = thin_slab(freq, pixels);
  const auto rmsf_double = rmsf_for_clean(setup);
  const SpectrumSettings settings = settings_for(setup, 2000);
  const SlabSpectra slab =
      synthesise_slab(synthesis_matrix(setup, setup.axis), chans, truth.p.data(), pixels, rmsf_double, settings);
  ASSERT_EQ(slab.dirty.size(), static_cast<std::size_t>(num_phi) * pixels);
  ASSERT_EQ(slab.maps.size(), static_cast<std::size_t>(pixel_map_count) * pixels);

  long long iterations = 0;
  for (int x = 0; x < pixels; ++x) {
    std::vector<std::complex<float>> residual(num_phi), model(num_phi), clean(num_phi);
    for (int k = 0; k < num_phi; ++k) residual[k] = slab.dirty[static_cast<std::size_t>(k) * pixels + x];
    const int pixel_iterations = rm_clean(residual.data(), num_phi, rmsf_double, setup.axis.dphi, 0.1, 1e-3, 2000,
                                          settings.fwhm, model.data(), clean.data())
                                     .iterations;
    iterations += pixel_iterations;
    for (int k = 0; k < num_phi; ++k)
      ASSERT_EQ(slab.clean[static_cast<std::size_t>(k) * pixels + x], clean[k]) << "pixel " << x << ", depth " << k;
    const PeakFit fit = fit_peak(clean.data(), setup.axis, setup.lambda0_sq, settings.fwhm, settings.sigma, settings.chi0_lever);
    const double m2 = component_spread(reinterpret_cast<const Sample*>(model.data()), setup.axis);
    const double noise = pixel_fdf_noise(fit, reinterpret_cast<const Sample*>(clean.data()), setup.axis, settings.fwhm,
                                         reinterpret_cast<Sample*>(residual.data()));
    EXPECT_TRUE(std::isfinite(noise)) << "pixel " << x << " holds a bright source";
    for (int m = 0; m < pixel_map_count; ++m)
      EXPECT_EQ(slab.maps[static_cast<std::size_t>(m) * pixels + x],
                static_cast<float>(pixel_map_value(fit, m2, noise, pixel_iterations, m)));

    const Thin& source = truth.brightest[x];
    EXPECT_NEAR(slab.maps[x], source.rm, 0.05) << "pixel " << x;
    EXPECT_NEAR(slab.maps[pixels + x], source.p, 0.004) << "pixel " << x;
    EXPECT_NEAR(slab.maps[2 * pixels + x], source.chi0, 0.03) << "pixel " << x;
  }
  EXPECT_EQ(slab.iterations, iterations);
  EXPECT_GT(slab.iterations, 10 * pixels);
}

// A run that writes no Faraday cubes keeps none: the maps and iterations are those of a
// slab that keeps both.
TEST(RmSynthesis, SlabThatKeepsNoCubesMakesTheSameMaps) {
  const std::vector<double> freq = sample_band();
  const SynthesisSetup setup = make_setup(freq, std::vector<double>(freq.size(), 1.0), fine_axis(80, 0.25));
  const int pixels = 12, chans = static_cast<int>(freq.size());
  const ThinSlab truth = thin_slab(freq, pixels);
  const auto a = synthesis_matrix(setup, setup.axis);
  const auto rmsf_double = rmsf_for_clean(setup);
  const SpectrumSettings settings = settings_for(setup, 2000);
  const SlabSpectra both = synthesise_slab(a, chans, truth.p.data(), pixels, rmsf_double, settings);
  const SlabSpectra none = synthesise_slab(a, chans, truth.p.data(), pixels, rmsf_double, settings, {}, {false, false});
  EXPECT_TRUE(none.dirty.empty());
  EXPECT_TRUE(none.clean.empty());
  EXPECT_FALSE(both.clean.empty());
  EXPECT_EQ(none.maps, both.maps);
  EXPECT_EQ(none.iterations, both.iterations);
  EXPECT_GT(none.iterations, 10 * pixels);
}

TEST(RmSynthesis, SlabWithoutCleanFitsTheDirtySpectrum) {
  const std::vector<double> freq = sample_band();
  const SynthesisSetup setup = make_setup(freq, std::vector<double>(freq.size(), 1.0), fine_axis(80, 0.25));
  const int pixels = 4;
  const ThinSlab truth = thin_slab(freq, pixels);
  const SlabSpectra slab = synthesise_slab(synthesis_matrix(setup, setup.axis), static_cast<int>(freq.size()),
                                           truth.p.data(), pixels, rmsf_for_clean(setup), settings_for(setup, 0));
  EXPECT_EQ(slab.iterations, 0);
  EXPECT_EQ(slab.clean, slab.dirty);
  EXPECT_NEAR(slab.maps[0], truth.brightest[0].rm, 0.01);  // pixel 0 holds one source
}

// |F| in double from float parts: one rounding of the sum and one of the root, so within
// an ulp on both compilers; rounded to float it is the correctly rounded hypot.
TEST(SpectrumMath, AmplitudeIsWithinAnUlpOfTheModulus) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> value(-10, 10);
  for (int n = 0; n < 10000; ++n) {
    const Sample z{value(rng), value(rng)};
    const long double exact = std::sqrt(static_cast<long double>(z.re) * z.re + static_cast<long double>(z.im) * z.im);
    const double nearest = static_cast<double>(exact);
    ASSERT_LE(std::abs(amplitude(z) - nearest), std::nextafter(nearest, 100.0) - nearest);
    ASSERT_EQ(polarised_intensity(z.re, z.im), std::hypot(z.re, z.im));
  }
}

TEST(SpectrumMath, PowerTermsSkipBlankedValuesAndStrideByPixels) {
  std::vector<double> sums(power_orders * 2, 0.0);  // two pixels
  add_power_terms(sums.data() + 1, 2, 2.0, 0.5);
  add_power_terms(sums.data() + 1, 2, std::numeric_limits<double>::quiet_NaN(), 1.0);
  add_power_terms(sums.data() + 1, 2, std::numeric_limits<double>::infinity(), 1.0);
  for (int k = 0; k < power_orders; ++k) {
    EXPECT_EQ(sums[2 * k], 0.0);
    EXPECT_EQ(sums[2 * k + 1], 0.5 * std::pow(2.0, k));
  }
}

// The GPU runs the per-pixel functions on strided views of the [phi][pixel] cubes, the
// CPU on contiguous copies: both ways must give the same bits.
TEST(SpectrumMath, StridedCubeViewsGiveTheContiguousResults) {
  const std::vector<double> freq = sample_band();
  const SynthesisSetup setup = make_setup(freq, std::vector<double>(freq.size(), 1.0), fine_axis(80, 0.25));
  const int pixels = 9, num_phi = setup.axis.count;
  const ThinSlab truth = thin_slab(freq, pixels);
  const auto rmsf_double = rmsf_for_clean(setup);
  const SpectrumSettings settings = settings_for(setup, 500);
  const SlabSpectra slab = synthesise_slab(synthesis_matrix(setup, setup.axis), static_cast<int>(freq.size()),
                                           truth.p.data(), pixels, rmsf_double, settings);

  std::vector<Sample> residual(slab.dirty.size()), model(slab.dirty.size()), clean(slab.dirty.size());
  for (std::size_t i = 0; i < residual.size(); ++i) residual[i] = {slab.dirty[i].real(), slab.dirty[i].imag()};
  std::vector<Sample> rmsf(rmsf_double.size());
  for (std::size_t i = 0; i < rmsf.size(); ++i) rmsf[i] = {rmsf_double[i].real(), rmsf_double[i].imag()};
  long long iterations = 0;
  for (int x = 0; x < pixels; ++x) {
    const Spectrum<Sample> r(residual.data() + x, pixels), m(model.data() + x, pixels), c(clean.data() + x, pixels);
    const int pixel_iterations = rm_clean_spectrum(r, num_phi, rmsf.data(), settings.clean, m);
    iterations += pixel_iterations;
    restore_spectrum(r, m, num_phi, settings.axis.dphi, settings.fwhm, c);
    const PeakFit fit = fit_spectrum_peak(c, settings.axis, settings.lambda0_sq, settings.fwhm, settings.sigma, settings.chi0_lever);
    const double noise = pixel_fdf_noise(fit, c, settings.axis, settings.fwhm, r);  // r is spent, as on the GPU
    for (int k = 0; k < pixel_map_count; ++k)
      EXPECT_EQ(static_cast<float>(pixel_map_value(fit, component_spread(m, settings.axis), noise, pixel_iterations, k)),
                slab.maps[static_cast<std::size_t>(k) * pixels + x]);
  }
  EXPECT_EQ(iterations, slab.iterations);
  for (std::size_t i = 0; i < clean.size(); ++i) {
    ASSERT_EQ(clean[i].re, slab.clean[i].real()) << i;
    ASSERT_EQ(clean[i].im, slab.clean[i].imag()) << i;
  }
}

namespace {

// RM-Tools' dFDFcorMAD written out plainly in double precision: numpy's median of the
// real and imaginary parts outside 2 ceil(FWHM / dphi) samples either side of the
// largest |F| (edges excluded), or of all of them where under 30 % would be left.
double mad_reference(const std::vector<Sample>& fdf, double fwhm, double dphi) {
  const int n = static_cast<int>(fdf.size());
  int peak = 1;
  for (int k = 2; k < n - 1; ++k)
    if (std::abs(std::complex<double>(fdf[k].re, fdf[k].im)) > std::abs(std::complex<double>(fdf[peak].re, fdf[peak].im)))
      peak = k;
  const int reach = 2 * static_cast<int>(std::ceil(fwhm / dphi));
  const int from = std::max(0, peak - reach), to = std::min(n, peak + reach);
  std::vector<double> values;
  for (int k = 0; k < n; ++k)
    if (k < from || k >= to) values.insert(values.end(), {fdf[k].re, fdf[k].im});
  if (static_cast<double>(values.size() / 2) / n < 0.3) {
    values.clear();
    for (const Sample& z : fdf) values.insert(values.end(), {z.re, z.im});
  }
  const auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
  };
  const double centre = median(values);
  for (double& v : values) v = std::abs(v - centre);
  return median(values) / 0.6745;
}

}  // namespace

// The measured FDF noise against the definition, with the peak's mask inside the
// spectrum, clipped at an edge, and dropped where it would leave under 30 %; and against
// the noise put in, which it must find beside a bright peak.
TEST(SpectrumMath, MeasuredFdfNoiseIsRmToolsMadOutsideThePeak) {
  std::mt19937 random(7);
  std::normal_distribution<float> noise(0.0f, 1e-3f);
  struct Case {
    int n, peak;
    double fwhm;
  };
  for (const Case c : {Case{1001, 500, 20.0}, Case{400, 3, 20.0}, Case{50, 25, 10.0}, Case{65, 30, 3.0}}) {
    const double dphi = 1;
    std::vector<Sample> fdf(c.n), scratch(c.n);
    for (int k = 0; k < c.n; ++k) {
      const double d = (k - c.peak) * dphi, shape = 0.05 * std::exp(-4 * std::log(2.0) * d * d / (c.fwhm * c.fwhm));
      fdf[k] = {noise(random) + static_cast<float>(shape * 0.6), noise(random) + static_cast<float>(shape * 0.8)};
    }
    const double measured = measured_fdf_noise(fdf.data(), {-0.5 * c.n, dphi, c.n}, c.fwhm, scratch.data());
    EXPECT_NEAR(measured, mad_reference(fdf, c.fwhm, dphi), 1e-7 * measured) << c.n << " depths, peak at " << c.peak;
    if (c.n == 1001) {
      EXPECT_NEAR(measured, 1e-3, 1e-4) << "the noise put in, beside a peak 50 times brighter";
    }
  }
  std::vector<Sample> blank(50, Sample{NAN, NAN}), scratch(50);
  EXPECT_TRUE(std::isnan(measured_fdf_noise(blank.data(), {0, 1, 50}, 5, scratch.data())));
  // Only where a source is: a peak of at least 5 sigma.
  std::vector<Sample> flat(50, Sample{1e-3f, 0});
  PeakFit fit;
  fit.pi_err = 1e-3;
  fit.pi = 4.9e-3;
  EXPECT_TRUE(std::isnan(pixel_fdf_noise(fit, flat.data(), {0, 1, 50}, 5, scratch.data())));
  fit.pi = 5e-3;
  EXPECT_NEAR(pixel_fdf_noise(fit, flat.data(), {0, 1, 50}, 5, scratch.data()), 0.5e-3 / 0.6745, 1e-9);
}

// A pixel whose own noise is above the field's is cleaned to, and measured against, its
// own; one below keeps the field's.
TEST(RmClean, PixelNoiseRaisesTheCutoffAndTheErrors) {
  const std::vector<double> freq = sample_band();
  const SynthesisSetup setup = make_setup(freq, std::vector<double>(freq.size(), 1.0), fine_axis(60, 0.25));
  const int pixels = 3;
  const ThinSlab truth = thin_slab(freq, pixels);
  const SpectrumSettings settings = spectrum_settings(setup, 1e-4, {0.1, 5e-4, 5000, false});
  const auto a = synthesis_matrix(setup, setup.axis);
  const auto rmsf_double = rmsf_for_clean(setup);
  const int chans = static_cast<int>(freq.size());
  const SlabSpectra field = synthesise_slab(a, chans, truth.p.data(), pixels, rmsf_double, settings);
  const SlabSpectra own = synthesise_slab(a, chans, truth.p.data(), pixels, rmsf_double, settings, {1e-5f, 1e-4f, 1e-2f});
  for (int x : {0, 1})
    for (int m = 0; m < pixel_map_count; ++m)
      EXPECT_EQ(own.maps[m * pixels + x], field.maps[m * pixels + x]) << "pixel " << x << " map " << m;
  EXPECT_FLOAT_EQ(own.maps[4 * pixels + 2], 1e-2f);  // PI error
  EXPECT_FLOAT_EQ(field.maps[4 * pixels + 2], 1e-4f);
  EXPECT_LT(own.iterations, field.iterations);  // cleaned to 5e-2 instead of 5e-4
}

// Residual spectra of unequal channels (weights 1 / sigma_c^2 over a factor of 3 in
// sigma), in three groups of 2,000 pixels: noise alone; a Faraday-thin source of 20
// times the FDF noise besides (one CLEAN left there); and such a source whose amplitude
// swings between 0.2 and 1.8 times that over the band, as a bright source's errors in a
// PSF sidelobe do. They are stored as faraday.fractional finds them, times (nu /
// nu0)^alpha, with the flattening that undoes it. In the first two groups each pixel's
// noise from its residuals is the FDF noise of its noise: the mean of sigma^2 is sigma_F^2
// = K^2 sum w^2 sigma_c^2 within 1 % (measured: 1.0005 and 1.0035). Without the thin
// source taken out, the second group's is 8.4 times that; without the correction for
// what the fit takes of the noise it was 6 % low, and with the amplitude's part of it
// alone 1.3 % low. The first and third keep K sqrt(sum w^2 |r|^2 / 2) to float rounding:
// the first but for pixels whose noise reaches 5 sigma_F (2 here), the third because the
// fit leaves more than 1.5 sigma_F there, but for a few where it leaves just under it.
TEST(ResidualNoise, AThinSourceLeftInTheResidualIsNotItsOwnNoise) {
  const std::vector<double> freq = sample_band();
  const std::size_t chans = freq.size();
  std::vector<double> channel_sigma, weight;
  for (std::size_t c = 0; c < chans; ++c) {
    channel_sigma.push_back(1e-3 * (1 + 2.0 * c / (chans - 1)));
    weight.push_back(1 / (channel_sigma[c] * channel_sigma[c]));
  }
  const SynthesisSetup setup = make_setup(freq, weight, fine_axis(60, 0.5));
  const auto a = synthesis_matrix(setup, setup.axis);
  double weight_sum = 0, noise_power = 0;
  for (std::size_t c = 0; c < chans; ++c) {
    weight_sum += weight[c];
    noise_power += weight[c] * weight[c] * channel_sigma[c] * channel_sigma[c];
  }
  const double sigma_f = std::sqrt(noise_power) / weight_sum;

  const int group = 2000, pixels = 3 * group;
  const double alpha = -0.7, nu0 = 140e6;
  std::vector<double> log_nu_ratio;
  for (double nu : freq) log_nu_ratio.push_back(std::log(nu / nu0));
  std::vector<float> q(chans * pixels), u(chans * pixels), alphas(pixels, static_cast<float>(alpha));
  std::mt19937 random(11);
  std::normal_distribution<double> gauss;
  std::uniform_real_distribution<double> uniform(0, 1);
  std::vector<Thin> sources;
  for (int x = 0; x < pixels; ++x) {
    const Thin& source = sources.emplace_back(
        Thin{x < group ? 0.0 : 20 * sigma_f, std::numbers::pi * uniform(random), -40 + 80 * uniform(random)});
    const std::vector<std::complex<float>> thin = spectrum(freq, {source});
    for (std::size_t c = 0; c < chans; ++c) {
      const double swing = x < 2 * group ? 1.0 : 1 + 0.8 * std::cos(0.5 * static_cast<double>(c));
      const double stored = std::exp(alpha * log_nu_ratio[c]);  // undone by the flattening
      q[c * pixels + x] = static_cast<float>((swing * thin[c].real() + channel_sigma[c] * gauss(random)) * stored);
      u[c * pixels + x] = static_cast<float>((swing * thin[c].imag() + channel_sigma[c] * gauss(random)) * stored);
    }
  }
  const Flattening flattening{&alphas, &log_nu_ratio};
  const std::vector<float> expected(pixels, static_cast<float>(sigma_f));
  const std::vector<float> sigma =
      residual_noise(setup, a, {q.data(), u.data(), pixels, flattening}, channel_sigma, expected, 5);
  const std::vector<float> kept = residual_noise(setup, a, {q.data(), u.data(), pixels, flattening}, channel_sigma,
                                                 expected, std::numeric_limits<double>::infinity());
  // The swinging sources again, as the rest of a source whose model (restored less
  // residual) holds twice as much at its depth: taken out, what is left is the swing; and
  // beside a model holding half as much, or twice as much at another depth: kept. (The swing is largest in the channels of
  // most weight, so that the residual's thin amplitude is up to 1.6 times 20 sigma_F.)
  const auto with_model = [&](double fraction, double depth_offset) {
    std::vector<float> restored_q(q), restored_u(u);
    for (int x = 2 * group; x < pixels; ++x) {
      const Thin& source = sources[static_cast<std::size_t>(x)];
      const std::vector<std::complex<float>> model =
          spectrum(freq, {{fraction * source.p, source.chi0, source.rm + depth_offset}});
      for (std::size_t c = 0; c < chans; ++c) {
        const double stored = std::exp(alpha * log_nu_ratio[c]);
        restored_q[c * pixels + x] += static_cast<float>(model[c].real() * stored);
        restored_u[c * pixels + x] += static_cast<float>(model[c].imag() * stored);
      }
    }
    return residual_noise(setup, a, {q.data(), u.data(), pixels, flattening, restored_q.data(), restored_u.data()},
                          channel_sigma, expected, 5);
  };
  const std::vector<float> cleaned = with_model(2.0, 0.0), beside = with_model(0.5, 0.0),
                           elsewhere = with_model(2.0, 10.0);  // 8 RMSF widths away
  int taken = 0, kept_beside = 0, kept_elsewhere = 0;
  for (int x = 2 * group; x < pixels; ++x) {
    taken += cleaned[x] < kept[x];  // kept: nothing taken out
    kept_beside += beside[x] == sigma[x];
    kept_elsewhere += elsewhere[x] == sigma[x];
  }
  std::cout << "[ measured ] swinging sources taken out beside a model of twice their amplitude: " << taken
            << "; kept beside one of 0.5: " << kept_beside << ", beside one at another depth: " << kept_elsewhere
            << " of " << group << "\n";
  EXPECT_EQ(taken, group);
  EXPECT_EQ(kept_beside, group);
  EXPECT_EQ(kept_elsewhere, group);
  double mean[3] = {0, 0, 0}, mean_kept = 0;
  int differ[3] = {0, 0, 0};
  for (int x = 0; x < pixels; ++x) {
    mean[x / group] += sigma[x] * sigma[x] / (sigma_f * sigma_f) / group;
    if (x / group == 1) mean_kept += kept[x] * kept[x] / (sigma_f * sigma_f) / group;
    double power = 0;
    for (std::size_t c = 0; c < chans; ++c) {
      const double f = flattening.factor(x, c), re = q[c * pixels + x] * f, im = u[c * pixels + x] * f;
      power += 0.5 * weight[c] * weight[c] * (re * re + im * im);
    }
    differ[x / group] += std::abs(sigma[x] - std::sqrt(power) / weight_sum) > 1e-5 * sigma[x];
  }
  std::cout << "[ measured ] mean sigma^2 / sigma_F^2: noise " << mean[0] << ", thin source taken out " << mean[1]
            << ", left in " << mean_kept << ", swinging " << mean[2] << "; pixels changed: noise " << differ[0]
            << ", thin " << differ[1] << ", swinging " << differ[2] << "\n";
  EXPECT_NEAR(mean[0], 1.0, 0.01);
  EXPECT_NEAR(mean[1], 1.0, 0.01);
  EXPECT_GT(mean_kept, 3.0);
  EXPECT_LE(differ[0], 2);  // a 5-sigma noise peak may be taken out
  EXPECT_EQ(differ[1], group);
  EXPECT_LE(differ[2], group / 200);  // where the fit leaves just under 1.5 sigma_F (3 here)

  // The same bits wherever a pixel falls in the slab and whatever the threads: the slab
  // again behind 5 more pixels, on one thread.
  const int shift = 5, shifted_pixels = pixels + shift;
  std::vector<float> q2(chans * shifted_pixels, 1e-3f), u2(chans * shifted_pixels, -1e-3f);
  std::vector<float> alphas2(shifted_pixels, static_cast<float>(alpha));
  for (std::size_t c = 0; c < chans; ++c)
    for (int x = 0; x < pixels; ++x) {
      q2[c * shifted_pixels + shift + x] = q[c * pixels + x];
      u2[c * shifted_pixels + shift + x] = u[c * pixels + x];
    }
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  const std::vector<float> shifted =
      residual_noise(setup, a, {q2.data(), u2.data(), shifted_pixels, {&alphas2, &log_nu_ratio}}, channel_sigma,
                     std::vector<float>(shifted_pixels, static_cast<float>(sigma_f)), 5);
  omp_set_num_threads(threads);
  EXPECT_TRUE(std::equal(sigma.begin(), sigma.end(), shifted.begin() + shift));
}

// Each thread's residual and model spectra for a block of pixels are bounded by the
// channels as well as the depths: at 65,536 channels (an SKA band) and a short depth
// axis they took 134 MB each, outside the memory plan. One pixel of noise on one thread
// must now raise the peak RSS by under 48 MB (its residual noise is still K sqrt(sum
// w^2 |r|^2 / 2)). The peak (VmHWM) is reset to the present RSS just before the call
// (clear_refs 5), so that what setting up the axis freed cannot hide the growth.
TEST(ResidualNoise, AThreadsSpectraStayBoundedAtManyChannels) {
  constexpr int chans = 65536;
  std::vector<double> freq(chans), channel_sigma(chans, 1e-3), weight(chans, 1e6);
  for (int c = 0; c < chans; ++c) freq[c] = 700e6 + 1100e6 * c / chans;
  const SynthesisSetup setup = make_setup(freq, weight, fine_axis(40, 10));
  const auto a = synthesis_matrix(setup, setup.axis);
  std::vector<float> q(chans), u(chans), restored_q(chans), restored_u(chans);
  std::mt19937 random(5);
  std::normal_distribution<float> gauss(0.0f, 1e-3f);
  double power = 0;
  for (int c = 0; c < chans; ++c) {
    q[c] = restored_q[c] = gauss(random);
    u[c] = restored_u[c] = gauss(random);
    power += 0.5 * 1e12 * (double(q[c]) * q[c] + double(u[c]) * u[c]);
  }
  const double sigma_f = 1e-3 / std::sqrt(chans);
  // A field of /proc/self/status in kB: VmHWM the peak RSS, VmRSS the present one.
  const auto status_kb = [](const std::string& key) {
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);)
      if (line.rfind(key + ":", 0) == 0) return std::stod(line.substr(key.size() + 1));
    return -1.0;
  };
  ASSERT_TRUE(std::ofstream("/proc/self/clear_refs") << "5") << "cannot reset the peak RSS";
  const double before = status_kb("VmHWM");
  ASSERT_GT(before, 0);
  // Without the reset the peak would still be the axis set-up's, and hide the growth.
  ASSERT_LT(before - status_kb("VmRSS"), 4096) << "clear_refs did not reset VmHWM to the present RSS";
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  const std::vector<float> sigma = residual_noise(
      setup, a, {q.data(), u.data(), 1, {}, restored_q.data(), restored_u.data()}, channel_sigma,
      std::vector<float>(1, static_cast<float>(sigma_f)), 5);
  const double after = status_kb("VmHWM");
  omp_set_num_threads(threads);
  const double grown_mb = (after - before) / 1024.0;
  std::cout << "[ measured ] peak RSS grew by " << grown_mb << " MB over " << setup.axis.count << " depths\n";
  EXPECT_LT(grown_mb, 48);
  EXPECT_NEAR(sigma[0], std::sqrt(power) / (1e6 * chans), 1e-4 * sigma[0]);
}

// The power law faraday.fractional divides by: exact on a power law, blind to channels
// without weight or with I <= 0, and absent with fewer than two usable channels.
TEST(SpectralModel, PowerLawFitRecoversIndexAndReferenceFlux) {
  const std::vector<double> freq = sample_band();
  const double nu0 = 142e6;
  std::vector<double> log_ratio, weight(freq.size(), 1.0);
  std::vector<float> stokes_i;  // two pixels, the fitted one at odd indices
  for (double f : freq) {
    log_ratio.push_back(std::log(f / nu0));
    stokes_i.push_back(0.0f);
    stokes_i.push_back(static_cast<float>(1.5 * std::pow(f / nu0, -2.0)));
  }
  stokes_i[2 * 3 + 1] = -1.0f;  // a negative channel is skipped
  stokes_i[2 * 7 + 1] = 50.0f;  // as is one of zero weight
  weight[7] = 0;
  const auto law = fit_power_law(stokes_i.data() + 1, 2, log_ratio, weight);
  ASSERT_TRUE(law.has_value());
  EXPECT_NEAR(law->i0, 1.5, 1e-6);
  EXPECT_NEAR(law->alpha, -2.0, 1e-5);
  EXPECT_FALSE(fit_power_law(stokes_i.data(), 2, log_ratio, weight).has_value());
}

// RM-CLEAN's components lie on the depth samples. A bright thin source (600 sigma)
// halfway between two is split over both: measured on the sample's band, its peak PI
// reads 6.2 % low at 2.5 samples per RMSF FWHM (the demo's), 3.6 % at 3, 1.7 % at 4,
// 0.9 % at 5 and 0.1 % at 10 (the default), and its components spread to m2 = 2.7 rad/m^2
// (2.1 FWHM) at 2.5, against 0.06 at 10. spip warns below 5 samples.
TEST(RmClean, AThinSourceBetweenCoarseDepthsReadsLowAndSpreads) {
  const std::vector<double> freq = sample_band();
  const auto peak_pi_and_m2 = [&](double samples_per_fwhm) {
    FaradayConfig config;
    config.samples_per_fwhm = samples_per_fwhm;
    config.phi_max = 60;
    const SynthesisSetup setup = make_setup(freq, std::vector<double>(freq.size(), 1.0), config);
    const double rm = setup.axis.phi(setup.axis.count / 2 + 14) + 0.5 * setup.axis.dphi;
    const auto p = spectrum(freq, {{1.0, 0.3, rm}});
    const double sigma = 1.0 / 600;
    const SpectrumSettings settings = spectrum_settings(setup, sigma, {0.1, 5 * sigma, 1000, false});
    const SlabSpectra slab = synthesise_slab(synthesis_matrix(setup, setup.axis), static_cast<int>(freq.size()),
                                             p.data(), 1, rmsf_for_clean(setup), settings);
    EXPECT_NEAR(slab.maps[map_phi], rm, 1e-3) << samples_per_fwhm;
    return std::pair{static_cast<double>(slab.maps[map_pi]), static_cast<double>(slab.maps[map_m2])};
  };
  const auto [coarse_pi, coarse_m2] = peak_pi_and_m2(2.5);
  const auto [five_pi, five_m2] = peak_pi_and_m2(5);
  const auto [fine_pi, fine_m2] = peak_pi_and_m2(10);
  std::cout << "[ measured ] PI / m2 at 2.5, 5 and 10 samples per FWHM: " << coarse_pi << " / " << coarse_m2 << ", "
            << five_pi << " / " << five_m2 << ", " << fine_pi << " / " << fine_m2 << "\n";
  EXPECT_LT(coarse_pi, 0.95);
  EXPECT_GT(coarse_m2, 1.27);  // beyond the RMSF's FWHM
  EXPECT_GT(five_pi, 0.99);
  EXPECT_LT(five_m2, 0.25);
  EXPECT_GT(fine_pi, 0.998);
  EXPECT_LT(fine_m2, 0.1);
}
