#pragma once
// Per-pixel Faraday-spectrum arithmetic shared by the CPU and CUDA backends: RM-CLEAN
// (Heald 2009), its restoring step, the peak fit, and the moment power sums. A pixel's
// spectrum is seen through a stride: 1 for the CPU's contiguous copy, the slab's pixel
// count for the GPU's [phi][pixel] cube, where neighbouring threads then read
// neighbouring pixels.
#include <cfloat>
#include <cmath>

#include "spip/common/complex_math.hpp"
#include "spip/common/host_device.hpp"

namespace spip::faraday {

struct FaradayAxis {
  double phi_first = 0;  // rad/m^2
  double dphi = 1;
  int count = 1;
  SPIP_HOST_DEVICE double phi(int k) const { return phi_first + k * dphi; }
};

template <class T>
struct Spectrum {
  T* data;
  long long stride;
  SPIP_HOST_DEVICE Spectrum(T* values, long long step = 1) : data(values), stride(step) {}
  template <class U>
  SPIP_HOST_DEVICE Spectrum(const Spectrum<U>& other) : data(other.data), stride(other.stride) {}
  SPIP_HOST_DEVICE T& operator[](int k) const { return data[k * stride]; }
};

using Sample = Complex<float>;

// |F|^2 as the peak search compares it, in float.
SPIP_HOST_DEVICE inline float power(Sample z) { return z.re * z.re + z.im * z.im; }

// |F| in double: the squares of floats are exact in double and sqrt rounds correctly
// on both compilers, so CPU and GPU compare the same amplitudes. (exp and atan2 below
// may differ in their last bit between CUDA and glibc.)
SPIP_HOST_DEVICE inline double squared_amplitude(Sample z) {
  const double re = z.re, im = z.im;
  return re * re + im * im;
}
SPIP_HOST_DEVICE inline double amplitude(Sample z) { return sqrt(squared_amplitude(z)); }

// Polarised intensity P = |Q + iU| of a channel pixel, for the moment images.
SPIP_HOST_DEVICE inline float polarised_intensity(float q, float u) { return static_cast<float>(amplitude({q, u})); }

struct RmCleanControl {
  double gain = 0.1;
  double cutoff = 0;  // stop when the residual peak |F| is not above it
  int max_iterations = 0;
  // Place components at the peak of the residual's cross-correlation with the RMSF (as
  // the MAPS pipeline), which is less drawn to sidelobe sums of blended components.
  bool cross_correlate = false;
};

// Index of the largest |F|, and that |F|^2 in `best_power`.
SPIP_HOST_DEVICE inline int strongest_depth(Spectrum<const Sample> fdf, int num_phi, float& best_power) {
  int peak = 0;
  best_power = -1;
  for (int k = 0; k < num_phi; ++k) {
    const float p = power(fdf[k]);
    if (p > best_power) {
      best_power = p;
      peak = k;
    }
  }
  return peak;
}

// Index of the largest |sum_j F(j) conj(R(j - k))|: the RMSF-shaped feature best matched.
// `rmsf_double` spans twice the range, centred at index num_phi - 1.
SPIP_HOST_DEVICE inline int matched_depth(Spectrum<const Sample> fdf, int num_phi, const Sample* rmsf_double) {
  const int centre = num_phi - 1;
  int best_k = 0;
  float best = -1;
  for (int k = 0; k < num_phi; ++k) {
    Sample sum;
    for (int j = 0; j < num_phi; ++j) sum += fdf[j] * conj(rmsf_double[j - k + centre]);
    if (power(sum) > best) {
      best = power(sum);
      best_k = k;
    }
  }
  return best_k;
}

// Hogbom RM-CLEAN of `residual` in place; components are added to `model`. Returns the
// number of iterations.
SPIP_HOST_DEVICE inline int rm_clean_spectrum(Spectrum<Sample> residual, int num_phi, const Sample* rmsf_double,
                                              const RmCleanControl& control, Spectrum<Sample> model) {
  const int centre = num_phi - 1;
  const float gain = static_cast<float>(control.gain);
  int iterations = 0;
  while (iterations < control.max_iterations) {
    float best = 0;
    int peak = strongest_depth(residual, num_phi, best);
    if (!(sqrt(static_cast<double>(best)) > control.cutoff)) break;
    if (control.cross_correlate) peak = matched_depth(residual, num_phi, rmsf_double);
    const Sample component = residual[peak] * gain;
    model[peak] += component;
    for (int k = 0; k < num_phi; ++k) residual[k] = residual[k] - component * rmsf_double[k - peak + centre];
    ++iterations;
  }
  return iterations;
}

// clean = residual + model convolved with a Gaussian of the RMSF's FWHM, cut at 2.5 FWHM.
SPIP_HOST_DEVICE inline void restore_spectrum(Spectrum<const Sample> residual, Spectrum<const Sample> model,
                                              int num_phi, double dphi, double fwhm, Spectrum<Sample> clean) {
  const double half_power_log = 0.69314718055994531;
  const double factor = 4 * half_power_log / (fwhm * fwhm);
  // Clamped in double: a step far finer than the RMSF would overflow the int.
  const double wide = ceil(2.5 * fwhm / dphi);
  const int reach = wide < num_phi ? static_cast<int>(wide) : num_phi;
  for (int k = 0; k < num_phi; ++k) clean[k] = residual[k];
  for (int j = 0; j < num_phi; ++j) {
    const Sample component = model[j];
    if (component.re == 0 && component.im == 0) continue;
    const int first = j - reach < 0 ? 0 : j - reach, last = j + reach > num_phi - 1 ? num_phi - 1 : j + reach;
    for (int k = first; k <= last; ++k) {
      const double d = (k - j) * dphi;
      clean[k] += component * static_cast<float>(exp(-factor * d * d));
    }
  }
}

// The vertex of the parabola through three neighbouring samples of a maximum: its offset
// from the middle sample, in samples, and its height; the middle sample itself where
// the three do not curve down (or one is NaN). Used for the FDF peak and by the source
// finder for the peak between pixels.
struct Vertex {
  double offset = 0, height = 0;
};
SPIP_HOST_DEVICE inline Vertex parabola_vertex(double before, double at, double after) {
  const double curvature = before - 2 * at + after;
  if (!(curvature < 0)) return {0, at};
  const double offset = 0.5 * (before - after) / curvature;
  return {offset, at - 0.25 * (before - after) * offset};
}

struct PeakFit {
  double phi = 0, pi = 0, chi0 = 0;
  double phi_err = 0, pi_err = 0, chi0_err = 0;
};

// Polarisation angle wrapped to (-pi/2, pi/2].
SPIP_HOST_DEVICE inline double wrap_angle(double chi) {
  const double pi = 3.14159265358979323846;
  while (chi <= -pi / 2) chi += pi;
  while (chi > pi / 2) chi -= pi;
  return chi;
}

// Peak of |F| by parabolic interpolation, its Faraday depth, the bias-corrected
// polarised intensity (George, Stil & Keller 2012: PI_0 = sqrt(PI^2 - 2.3 sigma^2)) and
// the intrinsic angle derotated to lambda^2 = 0, with errors for an FDF noise sigma:
// dphi = FWHM sigma / (2 PI), dchi0 = sigma / (2 PI) sqrt(chi0_lever) (chi0_lever()).
// As RM-Tools' measure_FDF_parms, the peak is sought among the inner samples, whose
// neighbours the parabola needs, and where the parabola puts it past the axis's end
// (an end sample higher still, and no vertex before it) it is not measured: NaN but for
// pi_err, the pixel's noise, which the noise map and the catalogue read everywhere.
SPIP_HOST_DEVICE inline PeakFit fit_spectrum_peak(Spectrum<const Sample> fdf, const FaradayAxis& axis,
                                                  double lambda0_sq, double fwhm, double sigma, double chi0_lever) {
  // The search compares squares, a square root per spectrum instead of per sample.
  const bool inner = axis.count >= 3;
  int k = inner ? 1 : 0;
  double highest = squared_amplitude(fdf[k]);
  for (int j = k + 1; j < (inner ? axis.count - 1 : axis.count); ++j)
    if (const double s = squared_amplitude(fdf[j]); s > highest) {
      highest = s;
      k = j;
    }
  PeakFit fit;
  fit.pi_err = sigma;
  double peak = sqrt(highest), offset = 0;
  bool past_the_end = false;
  if (inner) {
    const double before = amplitude(fdf[k - 1]), after = amplitude(fdf[k + 1]);
    const Vertex vertex = parabola_vertex(before, peak, after);
    // A neighbour above the peak is an end sample: the parabola's vertex lies beyond it,
    // or it does not curve down at all.
    past_the_end = (before > peak || after > peak) && (vertex.offset == 0 || k + vertex.offset < 0 ||
                                                       k + vertex.offset > axis.count - 1);
    offset = vertex.offset;
    peak = vertex.height;
  }
  if (past_the_end) {
    fit.phi = fit.pi = fit.chi0 = fit.phi_err = fit.chi0_err = NAN;
    return fit;
  }
  fit.phi = axis.phi(k) + offset * axis.dphi;
  const double debiased = peak * peak - 2.3 * sigma * sigma;
  fit.pi = debiased > 0 ? sqrt(debiased) : 0.0;
  const double chi_at_lambda0 = 0.5 * atan2(static_cast<double>(fdf[k].im), static_cast<double>(fdf[k].re));
  fit.chi0 = wrap_angle(chi_at_lambda0 - fit.phi * lambda0_sq);
  fit.phi_err = peak > 0 ? fwhm * sigma / (2 * peak) : 0;
  fit.chi0_err = peak > 0 ? sigma / (2 * peak) * sqrt(chi0_lever) : 0;
  return fit;
}

// The second moment of a pixel's RM-CLEAN components' depths, weighted by their
// amplitudes (Anderson et al. 2015): a Faraday-complexity indicator that is near 0 for
// one thin component and half the separation for two equal ones; 0 without components.
SPIP_HOST_DEVICE inline double component_spread(Spectrum<const Sample> model, const FaradayAxis& axis) {
  // Most depths hold no component; they add exact zeros, and are skipped.
  double weight = 0, weighted_phi = 0;
  for (int k = 0; k < axis.count; ++k) {
    if (model[k].re == 0 && model[k].im == 0) continue;
    const double a = amplitude(model[k]);
    weight += a;
    weighted_phi += a * axis.phi(k);
  }
  if (!(weight > 0)) return 0;
  const double mean_phi = weighted_phi / weight;
  double spread = 0;
  for (int k = 0; k < axis.count; ++k) {
    if (model[k].re == 0 && model[k].im == 0) continue;
    const double d = axis.phi(k) - mean_phi;
    spread += amplitude(model[k]) * d * d;
  }
  return sqrt(spread / weight);
}

// The floats of a spectrum's samples, real and imaginary parts in turn: the values the
// measured FDF noise takes its medians of.
struct SampleParts {
  Spectrum<Sample> samples;
  SPIP_HOST_DEVICE float& operator[](int j) const { return j % 2 ? samples[j / 2].im : samples[j / 2].re; }
};

// Reorders values[0, n) so that values[k] is the k-th smallest, none before it larger
// and none after it smaller (Hoare's selection, in place, without recursion, so that a
// GPU thread runs it on its own stretch of a cube).
SPIP_HOST_DEVICE inline float select_kth(SampleParts values, int n, int k) {
  int left = 0, right = n - 1;
  while (left < right) {
    const float pivot = values[left + (right - left) / 2];
    int i = left, j = right;
    while (i <= j) {
      while (values[i] < pivot) ++i;
      while (values[j] > pivot) --j;
      if (i <= j) {
        const float swap = values[i];
        values[i] = values[j];
        values[j] = swap;
        ++i;
        --j;
      }
    }
    if (k <= j) right = j;
    else if (k >= i) left = i;
    else break;
  }
  return values[k];
}

// The median of values[0, n) as numpy takes it (the mean of the middle two where n is
// even); reorders them.
SPIP_HOST_DEVICE inline double median_of(SampleParts values, int n) {
  const double upper = select_kth(values, n, n / 2);
  if (n % 2) return upper;
  float lower = values[0];  // the largest of those before the upper middle
  for (int j = 1; j < n / 2; ++j) lower = values[j] > lower ? values[j] : lower;
  return 0.5 * (lower + upper);
}

// The measured FDF noise, as RM-Tools measures it (dFDFcorMAD of measure_FDF_parms):
// the MAD sigma (MAD / 0.6745) of the real and imaginary parts of the spectrum outside
// twice the RMSF's FWHM either side of its peak (the edge samples excluded from the
// peak search), or of the whole spectrum where that would leave under 30 % of it; NaN
// for a spectrum that is not finite. `scratch` holds axis.count samples, overwritten.
// At every pixel its two selections added half to the Faraday stage's time (64
// channels, 333 depths): pixel_fdf_noise spends them only where a source is.
SPIP_HOST_DEVICE inline double measured_fdf_noise(Spectrum<const Sample> fdf, const FaradayAxis& axis, double fwhm,
                                                  Spectrum<Sample> scratch) {
  const int n = axis.count;
  int peak = n > 2 ? 1 : 0;
  double highest = amplitude(fdf[peak]);
  for (int k = peak + 1; k < n - 1; ++k)
    if (const double a = amplitude(fdf[k]); a > highest) {
      highest = a;
      peak = k;
    }
  const double wide = 2 * ceil(fwhm / axis.dphi);  // clamped in double, as restore_spectrum's
  const int reach = wide < n ? static_cast<int>(wide) : n;
  const int masked_from = peak - reach > 0 ? peak - reach : 0, masked_to = peak + reach < n ? peak + reach : n;
  const bool mask = 10.0 * (n - (masked_to - masked_from)) >= 3.0 * n;
  int kept = 0;
  for (int k = 0; k < n; ++k) {
    if (!(amplitude(fdf[k]) <= DBL_MAX)) return NAN;  // a blanked pixel's spectrum
    if (!mask || k < masked_from || k >= masked_to) scratch[kept++] = fdf[k];
  }
  const SampleParts values{scratch};
  const int count = 2 * kept;
  const double centre = median_of(values, count);
  for (int j = 0; j < count; ++j) values[j] = static_cast<float>(fabs(values[j] - centre));
  return median_of(values, count) / 0.6745;
}

// The FDF noise a pixel is cleaned to and measured against: the field's, or the pixel's
// own (from its residual images, `pixel_sigmas` may be null) where that is higher: near
// bright sources deconvolution errors, not thermal noise, limit the channel images, and
// cleaning a spectrum below them only models those errors.
SPIP_HOST_DEVICE inline double pixel_sigma(double field_sigma, const float* pixel_sigmas, long long x) {
  return pixel_sigmas && pixel_sigmas[x] > field_sigma ? static_cast<double>(pixel_sigmas[x]) : field_sigma;
}

// RM-CLEAN's control for a pixel of noise `sigma`: the cutoff, set for the field's
// noise, scaled to the pixel's.
SPIP_HOST_DEVICE inline RmCleanControl pixel_control(RmCleanControl control, double field_sigma, double sigma) {
  if (field_sigma > 0) control.cutoff *= sigma / field_sigma;
  return control;
}

// The measured FDF noise where the peak fit found at least 5 sigma (as sigma_add is
// measured), NaN elsewhere.
SPIP_HOST_DEVICE inline double pixel_fdf_noise(const PeakFit& fit, Spectrum<const Sample> fdf, const FaradayAxis& axis,
                                               double fwhm, Spectrum<Sample> scratch) {
  return fit.pi >= 5 * fit.pi_err ? measured_fdf_noise(fdf, axis, fwhm, scratch) : NAN;
}

// The per-pixel maps in the order they are stored and written: the six of the peak fit,
// the components' spread m2, the measured FDF noise and the RM-CLEAN iterations (at the
// limit: not converged).
enum PixelMap : int {
  map_phi,
  map_pi,
  map_chi0,
  map_phi_err,
  map_pi_err,
  map_chi0_err,
  map_m2,
  map_fdf_noise,
  map_iterations,
  pixel_map_count
};
SPIP_HOST_DEVICE inline double pixel_map_value(const PeakFit& fit, double m2, double fdf_noise, int iterations,
                                               int map) {
  switch (map) {
    case map_phi: return fit.phi;
    case map_pi: return fit.pi;
    case map_chi0: return fit.chi0;
    case map_phi_err: return fit.phi_err;
    case map_pi_err: return fit.pi_err;
    case map_chi0_err: return fit.chi0_err;
    case map_m2: return m2;
    case map_fdf_noise: return fdf_noise;
    default: return iterations;
  }
}

// Adds a channel's value x with weight w to a pixel's power sums w, w x, ..., w x^4
// (`sums` points at the pixel's order-0 sum; orders are `pixels` apart). Non-finite
// values (blanked pixels) are skipped, so each pixel counts its own channels.
constexpr int power_orders = 5;
SPIP_HOST_DEVICE inline void add_power_terms(double* sums, long long pixels, double x, double weight) {
  if (!(fabs(x) <= DBL_MAX)) return;
  double term = weight;
  for (int k = 0; k < power_orders; ++k) {
    sums[k * pixels] += term;
    term *= x;
  }
}

}  // namespace spip::faraday
