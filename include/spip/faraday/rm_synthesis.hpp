#pragma once
// RM synthesis (Brentjens & de Bruyn 2005) as one complex matrix product, RM-CLEAN
// (Heald 2009) and peak fitting, per pixel. Pure functions on arrays.
//   F(phi) = K sum_c w_c P_c exp(-2i phi (lambda_c^2 - lambda0^2)),  K = 1 / sum_c w_c
#include <cmath>
#include <complex>
#include <cstddef>
#include <vector>

#include "spip/config/config.hpp"
#include "spip/faraday/spectrum_math.hpp"

namespace spip::faraday {

struct SynthesisSetup {
  std::vector<double> lambda_sq;   // per channel, m^2
  std::vector<double> weight;      // per channel
  double lambda0_sq = 0;           // weighted mean of lambda^2
  double fwhm_theory = 0;          // 3.8 / (lambda^2 span), Dickey et al. (2019)
  double max_phi_scale = 0;        // pi / lambda^2_min: largest Faraday scale seen
  double phi_max_unsmeared = 0;    // sqrt(3) / largest lambda^2 step between channels
  double phi_max = 0;              // asked for: faraday.phi_max or the default; the axis rounds it to whole steps
  FaradayAxis axis;
};

// RM-CLEAN's RMSF has 2 count - 1 samples, indexed by int.
inline constexpr int max_depths = (1 << 30) - 1;

// lambda^2, lambda0^2 and the phi grid with RM-Tools' rmsynth3d defaults: dphi = FWHM /
// samples_per_fwhm, phi_max = max(sqrt(3) / dlambda^2_max, 10 FWHM), N = 2 round(phi_max / dphi) + 1
// centred on 0; faraday.phi_max and faraday.dphi override them. An axis of more than
// max_depths is refused (ConfigError); the memory plan and the disk check usually
// refuse far shorter ones.
SynthesisSetup make_setup(const std::vector<double>& freq_hz, const std::vector<double>& weight,
                          const FaradayConfig& config);

// A[phi][c] = K w_c exp(-2i phi (lambda_c^2 - lambda0^2)), computed in double, stored complex64.
std::vector<std::complex<float>> synthesis_matrix(const SynthesisSetup& setup, const FaradayAxis& axis);

// F[phi][pixel] = A[phi][c] P[c][pixel], a cblas_cgemm per OpenMP thread on its pixels.
void synthesise(const std::vector<std::complex<float>>& a, int num_phi, int num_chan,
                const std::complex<float>* p, int num_pixels, std::complex<float>* f);

// faraday.fractional's scaling of a pixel's channel: (nu_c / nu0)^-alpha where a power
// law was fitted, 1 elsewhere and without one.
struct Flattening {
  const std::vector<float>* alpha = nullptr;          // per pixel, NaN where no law
  const std::vector<double>* log_nu_ratio = nullptr;  // ln(nu_c / nu0)
  double factor(std::size_t pixel, std::size_t channel) const {
    return alpha && !std::isnan((*alpha)[pixel]) ? std::exp(-(*alpha)[pixel] * (*log_nu_ratio)[channel]) : 1.0;
  }
};
// A slab's residual Q and U planes, [channel][pixel], each scaled as the pixel's
// spectrum was, and its restored ones where there are some.
struct ResidualPlanes {
  const float* q = nullptr;
  const float* u = nullptr;
  int num_pixels = 0;
  Flattening flattening;
  const float* restored_q = nullptr;
  const float* restored_u = nullptr;
};
// Each pixel's FDF noise from its residual spectrum r_c (Q + iU over the channels of
// weight > 0): K sqrt(sum_c w_c^2 |r_c - t_c|^2 / 2 / (1 - q)), what RM synthesis makes
// of what CLEAN left, thermal noise and deconvolution errors alike. t is the residual's
// own Faraday-thin peak where its FDF (`a` times r) reaches `detection` times the pixel's
// `expected` noise and the fit leaves at most 1.5 times that noise (or 1 + 5 / sqrt(N)
// times its power, N the channels' effective number, where that is more): a polarised
// source CLEAN left in the residual, one below its threshold, is signal, and without
// this it raised its own pixels' noise with itself. A bright source's errors, which
// follow its depth but swing with frequency as the PSF's sidelobes do, stay noise; but
// where the restored planes are given and the model (restored less residual) holds at
// least as much at the peak's depth as the residual, t is the rest of a source CLEAN
// took, and is taken out whatever the fit leaves.
// t_c = T exp(2i phi (lambda_c^2 - lambda0^2)) at the peak's depth (parabolic
// interpolation of |F|), T its least-squares amplitude under the weights w^2; q, from
// the channels' noise (`channel_sigma`), is the part of the noise's expected power that
// fitting T and the depth takes with it (3 of 2N parameters for N equal channels).
// Elsewhere t = 0 and q = 0. NaN where a residual is. The FDFs are made in
// blocks of a size set by the depths alone, so the result does not depend on threads.
std::vector<float> residual_noise(const SynthesisSetup& setup, const std::vector<std::complex<float>>& a,
                                  const ResidualPlanes& residual, const std::vector<double>& channel_sigma,
                                  const std::vector<float>& expected, double detection);
// The RMSF on `axis` (K sum w exp(-2i phi (lambda^2 - lambda0^2))) and the FWHM of its
// main lobe measured on a fine grid.
std::vector<std::complex<double>> rmsf(const SynthesisSetup& setup, const FaradayAxis& axis);
double measured_fwhm(const SynthesisSetup& setup);

// RM-CLEAN of one pixel's FDF in place: Hogbom on |F| with the RMSF of twice the range
// (`rmsf_double`, centred at index axis.count - 1). Components are added to `model`;
// `clean` receives residual + components restored with a Gaussian of `fwhm`. The
// arithmetic is rm_clean_spectrum() and restore_spectrum() of spectrum_math.hpp.
struct RmCleanResult {
  int iterations = 0;
};
RmCleanResult rm_clean(std::complex<float>* fdf, int num_phi, const std::vector<std::complex<float>>& rmsf_double,
                       double dphi, double gain, double cutoff, int max_iterations, double fwhm,
                       std::complex<float>* model, std::complex<float>* clean, bool cross_correlate = false);

// fit_spectrum_peak() of spectrum_math.hpp on a contiguous FDF.
PeakFit fit_peak(const std::complex<float>* fdf, const FaradayAxis& axis, double lambda0_sq, double fwhm,
                 double sigma, double chi0_lever);

// What the per-pixel stage of a pixel slab needs besides the data. With
// clean.max_iterations = 0 the peak is fitted to the dirty spectrum.
struct SpectrumSettings {
  FaradayAxis axis;
  double lambda0_sq = 0;
  double fwhm = 1;    // of the RMSF's main lobe, rad/m^2
  double sigma = 0;   // FDF noise, for the bias correction and the errors
  double chi0_lever = 1;  // of the derotated angle's error (chi0_lever())
  RmCleanControl clean;
};

// Brentjens & de Bruyn (2005) eq. A.20, as RM-Tools' measure_FDF_parms gives the
// derotated angle's error, dchi0 = sigma / (2 PI) sqrt(lever): lever = ((N - 1) + N
// lambda0^4 / var(lambda^2)) / (N - 2) over the N channels of weight > 0 (var with N - 1,
// unweighted); infinite with two channels.
double chi0_lever(const SynthesisSetup& setup);

// The settings for `setup`'s axis and measured RMSF width.
SpectrumSettings spectrum_settings(const SynthesisSetup& setup, double sigma, const RmCleanControl& clean);

// The RMSF over twice the Faraday range (centred at index axis.count - 1), which
// RM-CLEAN shifts to each component.
std::vector<std::complex<float>> rmsf_for_clean(const SynthesisSetup& setup);

// Which Faraday cubes of a slab its caller keeps (writes): a GPU leaves the others on
// the device, and they come back empty, so that a run that writes no cubes moves only
// the pixel maps back over the link.
struct SlabCubes {
  bool dirty = true, clean = true;
};

// The Faraday products of a slab of pixels.

struct SlabSpectra {
  std::vector<std::complex<float>> dirty, clean;  // [phi][pixel]
  std::vector<float> maps;                         // [map][pixel], in pixel_map_value() order
  long long iterations = 0;                        // RM-CLEAN iterations of all pixels
};

// RM-CLEAN and the peak fit of every pixel's spectrum of a dirty cube [phi][pixel], on
// the CPU's cores; the cube is kept as the slab's dirty spectra. `pixel_sigmas`, if
// given, is each pixel's own FDF noise (pixel_sigma() of spectrum_math.hpp). Cubes not
// `kept` come back empty: the cleaned one is then never made, a cube's worth of memory
// written and faulted in for nothing.
SlabSpectra clean_slab(std::vector<std::complex<float>> dirty, int num_pixels,
                       const std::vector<std::complex<float>>& rmsf_double, const SpectrumSettings& settings,
                       const std::vector<float>& pixel_sigmas = {}, SlabCubes kept = {});

// F = A P (synthesise()), then clean_slab(). cuda::synthesise_slab() is its GPU peer.
// `a` is [phi][channel], `p` [channel][pixel], `rmsf_double` from rmsf_for_clean().
SlabSpectra synthesise_slab(const std::vector<std::complex<float>>& a, int num_chan, const std::complex<float>* p,
                            int num_pixels, const std::vector<std::complex<float>>& rmsf_double,
                            const SpectrumSettings& settings, const std::vector<float>& pixel_sigmas = {},
                            SlabCubes kept = {});

}  // namespace spip::faraday
