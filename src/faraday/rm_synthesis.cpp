#include "spip/faraday/rm_synthesis.hpp"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numbers>
#include <type_traits>

#include "spip/common/constants.hpp"
#include "spip/error.hpp"
#include "spip/faraday/synthesis_math.hpp"

namespace spip::faraday {
namespace {


// std::complex<float> is two floats, real first (the standard guarantees it), and so
// is Sample; the spectra are handed to the shared math as Samples, as FFTW and cuFFT
// take std::complex arrays as their own complex types.
static_assert(sizeof(Sample) == sizeof(std::complex<float>) && alignof(Sample) == alignof(std::complex<float>));
static_assert(std::is_standard_layout_v<Sample> && std::is_trivially_copyable_v<Sample>);
Sample* samples(std::complex<float>* values) { return reinterpret_cast<Sample*>(values); }
const Sample* samples(const std::complex<float>* values) { return reinterpret_cast<const Sample*>(values); }

}  // namespace

SynthesisSetup make_setup(const std::vector<double>& freq_hz, const std::vector<double>& weight,
                          const FaradayConfig& config) {
  if (freq_hz.size() < 2) SPIP_THROW(InputError, "RM synthesis needs at least two channels");
  SynthesisSetup setup;
  setup.weight = weight;
  double weight_sum = 0, lambda_sq_sum = 0;
  for (std::size_t c = 0; c < freq_hz.size(); ++c) {
    const double lambda_sq = std::pow(speed_of_light / freq_hz[c], 2);
    setup.lambda_sq.push_back(lambda_sq);
    weight_sum += weight[c];
    lambda_sq_sum += weight[c] * lambda_sq;
  }
  if (!(weight_sum > 0)) SPIP_THROW(InputError, "RM synthesis: every channel has zero weight");
  setup.lambda0_sq = lambda_sq_sum / weight_sum;
  const auto [lo, hi] = std::minmax_element(setup.lambda_sq.begin(), setup.lambda_sq.end());
  setup.fwhm_theory = 3.8 / (*hi - *lo);
  setup.max_phi_scale = std::numbers::pi / *lo;
  double largest_step = 0;
  for (std::size_t c = 1; c < setup.lambda_sq.size(); ++c)
    largest_step = std::max(largest_step, std::abs(setup.lambda_sq[c] - setup.lambda_sq[c - 1]));
  setup.phi_max_unsmeared = std::sqrt(3.0) / largest_step;

  const double dphi = config.dphi > 0 ? config.dphi : setup.fwhm_theory / config.samples_per_fwhm;
  // Coarser than the RMSF's FWHM, the axis would step over peaks it cannot resolve.
  if (dphi > setup.fwhm_theory) {
    char message[300];
    std::snprintf(message, sizeof message,
                  "faraday.dphi = %g rad/m^2 is coarser than the RMSF's FWHM of these channels, %g rad/m^2 (3.8 / "
                  "their lambda^2 span): expected at most that, or 0 (the FWHM / faraday.samples_per_fwhm)",
                  dphi, setup.fwhm_theory);
    SPIP_THROW(ConfigError, message);
  }
  setup.phi_max = config.phi_max > 0 ? config.phi_max : std::max(setup.phi_max_unsmeared, 10.0 * setup.fwhm_theory);
  setup.axis.dphi = dphi;
  const double half = std::round(setup.phi_max / dphi);
  if (!(2 * half + 1 <= max_depths)) {
    char message[400];
    std::snprintf(message, sizeof message,
                  "faraday.phi_max %g rad/m^2%s in steps of %g rad/m^2 (faraday.dphi%s) makes %.0f Faraday depths, more "
                  "than the %d an axis may have: choose a smaller faraday.phi_max or a larger faraday.dphi%s",
                  setup.phi_max, config.phi_max > 0 ? "" : " (faraday.phi_max 0: the default)", dphi,
                  config.dphi > 0 ? "" : " 0: the RMSF FWHM / faraday.samples_per_fwhm", 2 * half + 1, max_depths,
                  config.dphi > 0 ? "" : " (or fewer faraday.samples_per_fwhm)");
    SPIP_THROW(ConfigError, message);
  }
  setup.axis.count = 2 * static_cast<int>(half) + 1;
  setup.axis.phi_first = -0.5 * (setup.axis.count - 1) * dphi;
  return setup;
}

std::vector<std::complex<float>> synthesis_matrix(const SynthesisSetup& setup, const FaradayAxis& axis) {
  const std::size_t num_chan = setup.lambda_sq.size();
  double weight_sum = 0;
  for (double w : setup.weight) weight_sum += w;
  std::vector<std::complex<float>> a(static_cast<std::size_t>(axis.count) * num_chan);
  for (int k = 0; k < axis.count; ++k)
    for (std::size_t c = 0; c < num_chan; ++c) {
      const SynthesisElement e =
          synthesis_element(axis.phi(k), setup.lambda_sq[c], setup.lambda0_sq, setup.weight[c] / weight_sum);
      a[k * num_chan + c] = std::complex<float>(static_cast<float>(e.re), static_cast<float>(e.im));
    }
  return a;
}

// Each OpenMP thread multiplies its own columns of pixels with a single-threaded cgemm:
// parallel.threads then sets the cores, as everywhere else, and OpenBLAS adds no threads
// of its own (with OPENBLAS_NUM_THREADS=1, as WSClean asks its users to set, the one
// cgemm ran on one core: 7.8 of the Faraday stage's 21 s on issue 46's 128-channel set).
// Only a pthreads OpenBLAS is told to keep to one thread: an OpenMP one runs single-
// threaded inside a parallel region anyway, and its openblas_set_num_threads() would
// also set OpenMP's thread count for the rest of the run.
//
// Every call takes a block of the same number of pixels, the last one padded with zeros:
// OpenBLAS sums a pixel's channels in an order that depends on the shape of the call and
// on where the pixel falls in it (a partial block of columns takes another kernel), so
// calls over each thread's share of a row group, whose sizes follow the ranks, threads
// and memory budget, gave products that differed in their last bits between such runs.
void synthesise(const std::vector<std::complex<float>>& a, int num_phi, int num_chan, const std::complex<float>* p,
                int num_pixels, std::complex<float>* f) {
  const std::complex<float> one(1.0f, 0.0f), zero(0.0f, 0.0f);
  constexpr int block = 256;  // pixels: 32 of 64-byte lines, the A matrix packed once for them
  const int blocks = (num_pixels + block - 1) / block;
  if (openblas_get_parallel() == OPENBLAS_THREAD) openblas_set_num_threads(1);
#pragma omp parallel
  {
    std::vector<std::complex<float>> padded_p, padded_f;
#pragma omp for schedule(static)
    for (int b = 0; b < blocks; ++b) {
      const int first = b * block, count = std::min(block, num_pixels - first);
      if (count == block) {
        cblas_cgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, num_phi, block, num_chan, &one, a.data(), num_chan,
                    p + first, num_pixels, &zero, f + first, num_pixels);
        continue;
      }
      padded_p.assign(static_cast<std::size_t>(num_chan) * block, zero);
      padded_f.resize(static_cast<std::size_t>(num_phi) * block);
      for (int c = 0; c < num_chan; ++c)
        std::copy_n(p + static_cast<std::size_t>(c) * num_pixels + first, count,
                    padded_p.data() + static_cast<std::size_t>(c) * block);
      cblas_cgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, num_phi, block, num_chan, &one, a.data(), num_chan,
                  padded_p.data(), block, &zero, padded_f.data(), block);
      for (int k = 0; k < num_phi; ++k)
        std::copy_n(padded_f.data() + static_cast<std::size_t>(k) * block, count,
                    f + static_cast<std::size_t>(k) * num_pixels + first);
    }
  }
}

namespace {

// |F| of three neighbouring depths -> the peak's offset from the middle one, in samples.
double parabolic_offset(double before, double at, double after) {
  const double curvature = before - 2 * at + after;
  return curvature < 0 ? std::clamp(0.5 * (before - after) / curvature, -0.5, 0.5) : 0.0;
}

// The least-squares amplitude under the weights w^2 of a thin source at `phi` in the
// channels `x` (`stride` apart).
std::complex<double> thin_amplitude(const SynthesisSetup& setup, const std::complex<float>* x, int stride, double phi) {
  std::complex<double> sum;
  double weight_sq_sum = 0;
  for (std::size_t c = 0; c < setup.weight.size(); ++c)
    if (const double w = setup.weight[c]; w > 0) {
      sum += w * w * std::complex<double>(x[c * stride]) * std::polar(1.0, -2 * phi * (setup.lambda_sq[c] - setup.lambda0_sq));
      weight_sq_sum += w * w;
    }
  return sum / weight_sq_sum;
}

// residual_noise() for one pixel: `r` its residual channels, `model` its restored ones
// less those (null without them) and `f` its residual FDF, each `stride` apart, `peak`
// the depth of that FDF's largest amplitude.
double pixel_residual_noise(const SynthesisSetup& setup, const std::complex<float>* r, const std::complex<float>* model,
                            const std::complex<float>* f, int stride, int peak, double expected, double detection,
                            double fitted_part) {
  const std::size_t num_chan = setup.weight.size();
  double weight_sum = 0, weight_sq_sum = 0, power = 0;
  for (std::size_t c = 0; c < num_chan; ++c) {
    const double w = setup.weight[c];
    if (!(w > 0)) continue;
    weight_sum += w;
    weight_sq_sum += w * w;
    power += 0.5 * w * w * std::norm(std::complex<double>(r[c * stride]));
  }
  if (!std::isfinite(power)) return std::numeric_limits<double>::quiet_NaN();
  const FaradayAxis& axis = setup.axis;
  const auto amplitude = [&](int k) { return static_cast<double>(std::abs(f[k * stride])); };
  if (!(amplitude(peak) >= detection * expected)) return std::sqrt(power) / weight_sum;
  const double offset =
      peak > 0 && peak + 1 < axis.count ? parabolic_offset(amplitude(peak - 1), amplitude(peak), amplitude(peak + 1)) : 0;
  const double phi = axis.phi(peak) + offset * axis.dphi;
  const std::complex<double> thin = thin_amplitude(setup, r, stride, phi);
  // Least squares: what is left of the power is the power less the fitted part's.
  const double left = std::sqrt(std::max(0.0, power - 0.5 * std::norm(thin) * weight_sq_sum) / (1 - fitted_part));
  // A thin source and the expected noise must explain the residual: near a bright source
  // CLEAN's errors follow its depth, but change with frequency as the PSF's sidelobes do,
  // and what the fit leaves of them is still well above the noise. At a source CLEAN
  // took at least as much of (its model holds as much at that depth), what it left is
  // the rest of that source, whatever else the residual holds.
  const double effective_channels = weight_sum * weight_sum / weight_sq_sum;
  const double consistent = std::max(2.25, 1 + 5 / std::sqrt(effective_channels));  // in power
  const bool explained = left * left <= consistent * expected * expected * weight_sum * weight_sum;
  const bool taken_out = explained || (model && std::abs(thin_amplitude(setup, model, stride, phi)) >= std::abs(thin));
  return (taken_out ? left : std::sqrt(power)) / weight_sum;
}

// The part of the noise's expected power that fitting a thin source takes with it,
// linearised: the amplitude's two parameters take sum w^4 s^2 / (sum w^2 sum w^2 s^2),
// the depth's one half as much with each channel's share weighted by g^2, g = lambda^2
// less its mean under the weights w^2 (the depth's direction once the amplitude's is out).
double fitted_noise_part(const SynthesisSetup& setup, const std::vector<double>& channel_sigma) {
  double weight_sq_sum = 0, mean_lambda_sq = 0;
  for (std::size_t c = 0; c < setup.weight.size(); ++c)
    if (const double w = setup.weight[c]; w > 0) {
      weight_sq_sum += w * w;
      mean_lambda_sq += w * w * setup.lambda_sq[c];
    }
  if (!(weight_sq_sum > 0)) return 0;
  mean_lambda_sq /= weight_sq_sum;
  double noise = 0, amplitude = 0, depth = 0, lever = 0;
  for (std::size_t c = 0; c < setup.weight.size(); ++c)
    if (const double w = setup.weight[c]; w > 0) {
      const double w2 = w * w, s2 = channel_sigma[c] * channel_sigma[c], g2 = std::pow(setup.lambda_sq[c] - mean_lambda_sq, 2);
      noise += w2 * s2;
      amplitude += w2 * w2 * s2;
      depth += w2 * w2 * s2 * g2;
      lever += w2 * g2;
    }
  if (!(noise > 0)) return 0;
  return amplitude / (weight_sq_sum * noise) + (lever > 0 ? 0.5 * depth / (lever * noise) : 0.0);
}

}  // namespace

std::vector<float> residual_noise(const SynthesisSetup& setup, const std::vector<std::complex<float>>& a,
                                  const ResidualPlanes& residual, const std::vector<double>& channel_sigma,
                                  const std::vector<float>& expected, double detection) {
  const int num_phi = setup.axis.count, num_chan = static_cast<int>(setup.weight.size());
  const int num_pixels = residual.num_pixels;
  const double fitted_part = fitted_noise_part(setup, channel_sigma);
  // A block's FDF is at most 2^18 samples (2 MB) per thread, and its residual and model
  // spectra 2^20 (8 MB) each, outside the memory plan as RM-CLEAN's per-thread spectra
  // are, on axes of up to 2^14 depths and 2^16 channels (timed by hand: 80 pixels a
  // block at 3,129 depths cost what 256 did, 128 at 2,048 channels 8 % more than 256).
  // Bounded by the depths alone, 65,536 channels took 134 MB a buffer. Every call is a
  // whole number of 16-column tiles, as in synthesise(), so that a pixel's FDF has the
  // same bits wherever it falls.
  const int block =
      std::clamp(std::min((1 << 18) / std::max(num_phi, 1), (1 << 20) / std::max(num_chan, 1)) / 16 * 16, 16, 256);
  const int blocks = (num_pixels + block - 1) / block;
  const std::complex<float> one(1.0f, 0.0f), zero(0.0f, 0.0f);
  std::vector<float> sigma(static_cast<std::size_t>(num_pixels));
  if (openblas_get_parallel() == OPENBLAS_THREAD) openblas_set_num_threads(1);
#pragma omp parallel
  {
    std::vector<std::complex<float>> r(static_cast<std::size_t>(num_chan) * block),
        model(residual.restored_q ? r.size() : 0), f(static_cast<std::size_t>(num_phi) * block);
    std::vector<float> largest(static_cast<std::size_t>(block));
    std::vector<int> peak(static_cast<std::size_t>(block));
#pragma omp for schedule(static)
    for (int b = 0; b < blocks; ++b) {
      const int first = b * block, count = std::min(block, num_pixels - first);
      std::fill(r.begin(), r.end(), zero);
      for (int c = 0; c < num_chan; ++c) {
        if (!(setup.weight[c] > 0)) continue;  // blank channels are NaN
        for (int j = 0; j < count; ++j) {
          const std::size_t x = static_cast<std::size_t>(first + j), i = static_cast<std::size_t>(c) * num_pixels + x;
          const float scale = static_cast<float>(residual.flattening.factor(x, static_cast<std::size_t>(c)));
          r[static_cast<std::size_t>(c) * block + j] = std::complex<float>(residual.q[i], residual.u[i]) * scale;
          if (!model.empty())
            model[static_cast<std::size_t>(c) * block + j] =
                std::complex<float>(residual.restored_q[i] - residual.q[i], residual.restored_u[i] - residual.u[i]) *
                scale;
        }
      }
      cblas_cgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, num_phi, block, num_chan, &one, a.data(), num_chan,
                  r.data(), block, &zero, f.data(), block);
      // The peaks a depth at a time, along the FDF's rows.
      std::fill(largest.begin(), largest.end(), -1.0f);
      std::fill(peak.begin(), peak.end(), 0);
      for (int k = 0; k < num_phi; ++k) {
        const std::complex<float>* row = f.data() + static_cast<std::size_t>(k) * block;
        for (int j = 0; j < block; ++j)
          if (const float power = std::norm(row[j]); power > largest[j]) {
            largest[j] = power;
            peak[j] = k;
          }
      }
      for (int j = 0; j < count; ++j)
        sigma[static_cast<std::size_t>(first + j)] = static_cast<float>(
            pixel_residual_noise(setup, r.data() + j, model.empty() ? nullptr : model.data() + j, f.data() + j, block, peak[j],
                                 expected[static_cast<std::size_t>(first + j)], detection, fitted_part));
    }
  }
  return sigma;
}

std::vector<std::complex<double>> rmsf(const SynthesisSetup& setup, const FaradayAxis& axis) {
  double weight_sum = 0;
  for (double w : setup.weight) weight_sum += w;
  std::vector<std::complex<double>> r(static_cast<std::size_t>(axis.count));
  for (int k = 0; k < axis.count; ++k)
    for (std::size_t c = 0; c < setup.lambda_sq.size(); ++c)
      r[k] += setup.weight[c] / weight_sum * std::polar(1.0, -2.0 * axis.phi(k) * (setup.lambda_sq[c] - setup.lambda0_sq));
  return r;
}

double measured_fwhm(const SynthesisSetup& setup) {
  // Walk out from phi = 0 in steps of FWHM/2000 to the half-power crossing.
  const double step = setup.fwhm_theory / 2000;
  double previous = 1.0;
  for (int k = 1; k < 100000; ++k) {
    const FaradayAxis point{k * step, step, 1};
    const double value = std::abs(rmsf(setup, point)[0]);
    if (value < 0.5) {
      const double fraction = (previous - 0.5) / (previous - value);
      return 2 * step * (k - 1 + fraction);
    }
    previous = value;
  }
  SPIP_THROW(Error, "the RMSF has no half-power point");
}

SpectrumSettings spectrum_settings(const SynthesisSetup& setup, double sigma, const RmCleanControl& clean) {
  SpectrumSettings settings;
  settings.axis = setup.axis;
  settings.lambda0_sq = setup.lambda0_sq;
  settings.fwhm = measured_fwhm(setup);
  settings.sigma = sigma;
  settings.chi0_lever = chi0_lever(setup);
  settings.clean = clean;
  return settings;
}

double chi0_lever(const SynthesisSetup& setup) {
  double n = 0, sum = 0, squares = 0;
  for (std::size_t c = 0; c < setup.lambda_sq.size(); ++c)
    if (setup.weight[c] > 0) {
      n += 1;
      sum += setup.lambda_sq[c];
      squares += setup.lambda_sq[c] * setup.lambda_sq[c];
    }
  const double variance = n > 1 ? (squares - sum * sum / n) / (n - 1) : 0;
  if (!(n > 2) || !(variance > 0)) return std::numeric_limits<double>::infinity();
  return ((n - 1) + n * setup.lambda0_sq * setup.lambda0_sq / variance) / (n - 2);
}

std::vector<std::complex<float>> rmsf_for_clean(const SynthesisSetup& setup) {
  const FaradayAxis& axis = setup.axis;
  std::vector<std::complex<float>> r;
  for (const auto& v : rmsf(setup, {2 * axis.phi_first, axis.dphi, 2 * axis.count - 1})) r.emplace_back(v);
  return r;
}

RmCleanResult rm_clean(std::complex<float>* fdf, int num_phi, const std::vector<std::complex<float>>& rmsf_double,
                       double dphi, double gain, double cutoff, int max_iterations, double fwhm,
                       std::complex<float>* model, std::complex<float>* clean, bool cross_correlate) {
  RmCleanResult result;
  if (num_phi <= 0) return result;
  const RmCleanControl control{gain, cutoff, max_iterations, cross_correlate};
  result.iterations = rm_clean_spectrum(samples(fdf), num_phi, samples(rmsf_double.data()), control, samples(model));
  restore_spectrum(samples(fdf), samples(model), num_phi, dphi, fwhm, samples(clean));
  return result;
}

PeakFit fit_peak(const std::complex<float>* fdf, const FaradayAxis& axis, double lambda0_sq, double fwhm,
                 double sigma, double chi0_lever) {
  return fit_spectrum_peak(samples(fdf), axis, lambda0_sq, fwhm, sigma, chi0_lever);
}

SlabSpectra clean_slab(std::vector<std::complex<float>> dirty, int num_pixels,
                       const std::vector<std::complex<float>>& rmsf_double, const SpectrumSettings& settings,
                       const std::vector<float>& pixel_sigmas, SlabCubes kept) {
  const float* sigmas = pixel_sigmas.empty() ? nullptr : pixel_sigmas.data();
  const int num_phi = settings.axis.count;
  SlabSpectra slab;
  slab.dirty = std::move(dirty);
  if (kept.clean) slab.clean.resize(slab.dirty.size());
  slab.maps.resize(static_cast<std::size_t>(pixel_map_count) * num_pixels);
  // Blocks of pixels' spectra are copied out of the [phi][pixel] cube and back a depth
  // at a time, so that the spectrum loops run on contiguous memory and the copies read
  // and write whole cache lines: a pixel at a time, every sample was a cache line (and a
  // page) of its own, and the copies took two thirds of the RM-CLEAN (issue 46). The GPU
  // runs the same functions on the strided cube.
  constexpr int block = 64;
  const int blocks = (num_pixels + block - 1) / block;
  long long iterations = 0;
#pragma omp parallel reduction(+ : iterations)
  {
    std::vector<Sample> residuals(static_cast<std::size_t>(block) * num_phi), model(num_phi),
        cleaned(static_cast<std::size_t>(block) * num_phi);
#pragma omp for schedule(dynamic, 1)
    for (int b = 0; b < blocks; ++b) {
      const int x0 = b * block, count = std::min(block, num_pixels - x0);
      for (int k = 0; k < num_phi; ++k) {
        const Sample* row = samples(slab.dirty.data()) + static_cast<std::size_t>(k) * num_pixels + x0;
        for (int j = 0; j < count; ++j) residuals[static_cast<std::size_t>(j) * num_phi + k] = row[j];
      }
      for (int j = 0; j < count; ++j) {
        const int x = x0 + j;
        Sample* residual = residuals.data() + static_cast<std::size_t>(j) * num_phi;
        Sample* clean = cleaned.data() + static_cast<std::size_t>(j) * num_phi;
        std::fill(model.begin(), model.end(), Sample{});
        const double sigma = pixel_sigma(settings.sigma, sigmas, x);
        const int pixel_iterations = rm_clean_spectrum(residual, num_phi, samples(rmsf_double.data()),
                                                       pixel_control(settings.clean, settings.sigma, sigma), model.data());
        iterations += pixel_iterations;
        restore_spectrum(residual, model.data(), num_phi, settings.axis.dphi, settings.fwhm, clean);
        const PeakFit fit = fit_spectrum_peak(clean, settings.axis, settings.lambda0_sq, settings.fwhm, sigma,
                                                  settings.chi0_lever);
        const double m2 = component_spread(model.data(), settings.axis);
        const double fdf_noise = pixel_fdf_noise(fit, clean, settings.axis, settings.fwhm, residual);
        for (int m = 0; m < pixel_map_count; ++m)
          slab.maps[static_cast<std::size_t>(m) * num_pixels + x] =
              static_cast<float>(pixel_map_value(fit, m2, fdf_noise, pixel_iterations, m));
      }
      if (kept.clean)
        for (int k = 0; k < num_phi; ++k) {
          Sample* row = samples(slab.clean.data()) + static_cast<std::size_t>(k) * num_pixels + x0;
          for (int j = 0; j < count; ++j) row[j] = cleaned[static_cast<std::size_t>(j) * num_phi + k];
        }
    }
  }
  slab.iterations = iterations;
  if (!kept.dirty) slab.dirty = {};
  return slab;
}

SlabSpectra synthesise_slab(const std::vector<std::complex<float>>& a, int num_chan, const std::complex<float>* p,
                            int num_pixels, const std::vector<std::complex<float>>& rmsf_double,
                            const SpectrumSettings& settings, const std::vector<float>& pixel_sigmas,
                            SlabCubes kept) {
  std::vector<std::complex<float>> dirty(static_cast<std::size_t>(settings.axis.count) * num_pixels);
  if (num_pixels > 0) synthesise(a, settings.axis.count, num_chan, p, num_pixels, dirty.data());
  return clean_slab(std::move(dirty), num_pixels, rmsf_double, settings, pixel_sigmas, kept);
}

}  // namespace spip::faraday
