#include "spip/faraday/rm_synthesis.hpp"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <numbers>

#include "spip/error.hpp"
#include "spip/faraday/synthesis_math.hpp"

namespace spip::faraday {
namespace {

constexpr double speed_of_light = 299792458.0;
constexpr double half_power_log = 0.69314718055994531;

double wrap_angle(double chi) {  // to (-pi/2, pi/2]
  while (chi <= -std::numbers::pi / 2) chi += std::numbers::pi;
  while (chi > std::numbers::pi / 2) chi -= std::numbers::pi;
  return chi;
}

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
  const double phi_max =
      config.phi_max > 0 ? config.phi_max : std::max(setup.phi_max_unsmeared, 10.0 * setup.fwhm_theory);
  setup.axis.dphi = dphi;
  setup.axis.count = 2 * static_cast<int>(std::lround(phi_max / dphi)) + 1;
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

void synthesise(const std::vector<std::complex<float>>& a, int num_phi, int num_chan, const std::complex<float>* p,
                int num_pixels, std::complex<float>* f) {
  const std::complex<float> one(1.0f, 0.0f), zero(0.0f, 0.0f);
  cblas_cgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, num_phi, num_pixels, num_chan, &one, a.data(), num_chan, p,
              num_pixels, &zero, f, num_pixels);
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

namespace {

// Index of the largest |sum_j F(j) conj(R(j - k))|: the RMSF-shaped feature best matched.
int cross_correlation_peak(const std::complex<float>* fdf, int num_phi,
                           const std::vector<std::complex<float>>& rmsf_double) {
  const int centre = num_phi - 1;
  int best_k = 0;
  float best = -1;
  for (int k = 0; k < num_phi; ++k) {
    std::complex<float> sum{};
    for (int j = 0; j < num_phi; ++j) sum += fdf[j] * std::conj(rmsf_double[j - k + centre]);
    if (std::norm(sum) > best) {
      best = std::norm(sum);
      best_k = k;
    }
  }
  return best_k;
}

}  // namespace

RmCleanResult rm_clean(std::complex<float>* fdf, int num_phi, const std::vector<std::complex<float>>& rmsf_double,
                       double dphi, double gain, double cutoff, int max_iterations, double fwhm,
                       std::complex<float>* model, std::complex<float>* clean, bool cross_correlate) {
  RmCleanResult result;
  if (num_phi <= 0) return result;
  const int centre = num_phi - 1;
  while (result.iterations < max_iterations) {
    int peak = 0;
    float best = -1;
    for (int k = 0; k < num_phi; ++k)
      if (std::norm(fdf[k]) > best) {
        best = std::norm(fdf[k]);
        peak = k;
      }
    if (!(std::sqrt(best) > cutoff)) break;
    if (cross_correlate) peak = cross_correlation_peak(fdf, num_phi, rmsf_double);
    const std::complex<float> component = static_cast<float>(gain) * fdf[peak];
    model[peak] += component;
    for (int k = 0; k < num_phi; ++k) fdf[k] -= component * rmsf_double[k - peak + centre];
    ++result.iterations;
  }
  // Restore: residual plus components convolved with a Gaussian of the RMSF's FWHM.
  const double factor = 4 * half_power_log / (fwhm * fwhm);
  const int reach = static_cast<int>(std::ceil(2.5 * fwhm / dphi));
  std::copy_n(fdf, static_cast<std::size_t>(num_phi), clean);
  for (int j = 0; j < num_phi; ++j) {
    if (model[j] == std::complex<float>{}) continue;
    for (int k = std::max(0, j - reach); k <= std::min(num_phi - 1, j + reach); ++k) {
      const double d = (k - j) * dphi;
      clean[k] += model[j] * static_cast<float>(std::exp(-factor * d * d));
    }
  }
  return result;
}

PeakFit fit_peak(const std::complex<float>* fdf, const FaradayAxis& axis, double lambda0_sq, double fwhm,
                 double sigma) {
  int k = 0;
  for (int j = 1; j < axis.count; ++j)
    if (std::abs(fdf[j]) > std::abs(fdf[k])) k = j;
  double offset = 0, peak = std::abs(fdf[k]);
  if (k > 0 && k + 1 < axis.count) {
    const double y0 = std::abs(fdf[k - 1]), y1 = peak, y2 = std::abs(fdf[k + 1]);
    const double curvature = y0 - 2 * y1 + y2;
    if (curvature < 0) {
      offset = 0.5 * (y0 - y2) / curvature;
      peak = y1 - 0.25 * (y0 - y2) * offset;
    }
  }
  PeakFit fit;
  fit.phi = axis.phi(k) + offset * axis.dphi;
  // George, Stil & Keller (2012): PI_0 = sqrt(PI^2 - 2.3 sigma^2).
  fit.pi = std::sqrt(std::max(0.0, peak * peak - 2.3 * sigma * sigma));
  const double chi_at_lambda0 = 0.5 * std::arg(std::complex<double>(fdf[k]));
  fit.chi0 = wrap_angle(chi_at_lambda0 - fit.phi * lambda0_sq);
  fit.pi_err = sigma;
  fit.phi_err = peak > 0 ? fwhm * sigma / (2 * peak) : 0;
  const double chi_err = peak > 0 ? sigma / (2 * peak) : 0;
  fit.chi0_err = std::sqrt(chi_err * chi_err + std::pow(lambda0_sq * fit.phi_err, 2));
  return fit;
}

}  // namespace spip::faraday
