#pragma once
// Multiscale CLEAN (Cornwell 2008; WSClean's form, Offringa & Smirnov 2017) on joined
// polarisations, for one channel's minor cycles. The model is a sum of scale kernels:
// a component of scale s at a pixel adds flux times the kernel of s there, so the model
// images stay Jy/pixel and restoring, prediction and the Faraday stage are unchanged.
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "spip/config/config.hpp"
#include "spip/deconv/clean.hpp"
#include "spip/deconv/convolver.hpp"

namespace spip::deconv {

struct SubtractionPlanes;

// The tapered quadratic kernel of scale `scale` pixels: the paraboloid 1 - (r/scale)^2
// under a Hann window that reaches zero at r = ceil(scale/2) + 1, sampled on
// (2 ceil(scale/2) + 1)^2 pixels about its centre and normalised to unit sum. Scale 0
// is a single pixel of 1 (a point).
struct ScaleKernel {
  int radius = 0;             // the kernel is (2 radius + 1)^2 pixels
  std::vector<float> values;  // row by row
  float at(int dx, int dy) const { return values[static_cast<std::size_t>(dy + radius) * (2 * radius + 1) + dx + radius]; }
};
ScaleKernel scale_kernel(double scale);
// scale_kernel(scale).radius, without making the kernel.
int scale_radius(double scale);

// WSClean's automatic scales: 0, then four times the beam's FWHM (pixels), doubling
// while a scale's kernel fits in half the image.
std::vector<double> auto_scales(double beam_fwhm_pixels, int image_size);

// clean.scale_bias's factors, as WSClean's -multiscale-scale-bias: bias^-log2(scale /
// reference) with reference twice the beam's FWHM (pixels), as WSClean's; 1 for scale 0.
std::vector<double> scale_bias_factors(const std::vector<double>& scales, double scale_bias, double reference);

// Scales and bias for one channel's multiscale CLEAN: clean.scales, or auto_scales() of
// the beam, made once per channel by the driver.
struct MultiscaleSetup {
  std::vector<double> scales;
  double scale_bias = 0.6;
  double bias_reference = 0;  // pixels: the scale whose bias factor is 1 (scale_bias_factors), > 0
};

// The multiscale minor cycles of one channel, the scale PSFs made once per channel.
// Each pass convolves the residual with every scale's kernel and picks the scale and
// pixel whose joined search value, times the scale's bias factor, is largest (a scale
// searches no pixel nearer the image's edge than its kernel's radius, so its kernel
// always lies wholly in the image); a sub-minor loop then cleans that scale alone, among
// its pixels above max(stop, (1 - subminor_gain) x that peak), with the scale's
// twice-convolved PSF; its components are finally stamped into the model and
// subtracted from the residual with the scale's PSF, through the convolver. Each
// component takes every Stokes parameter's own value at its scale and pixel, so Q and
// U keep their signs.
class MultiscaleClean {
 public:
  // WSClean's -multiscale-gain default: each sub-minor loop cleans its scale's peak down by 20 %.
  static constexpr double subminor_gain = 0.2;

  // A scale whose PSF response at its centre (the PSF convolved with its kernel) is
  // below this is left out: the array hardly measures emission of that size.
  static constexpr float min_psf_response = 0.01f;

  // Makes the convolver for products of filters that reach `reach` pixels beyond the PSF.
  using ConvolverMaker = std::function<std::unique_ptr<Convolver>(int reach)>;

  // `psf` is N x N with its peak (1) at (N/2, N/2); every scale's kernel must fit
  // within N/2 pixels. Scale 0 is always among the scales.
  MultiscaleClean(const float* psf, int n, const MultiscaleSetup& setup, const ConvolverMaker& make_convolver);

  // The most an N x N channel's multiscale CLEAN holds per image pixel, for the memory
  // plan: the PSF, each scale's twice-convolved PSF and search mask, each wider scale's
  // smoothed residual (4 Stokes), the subtraction planes and the sub-minor loop's
  // pixels, and with `host_convolver` the FFT convolver's transforms (the GPU backend's
  // are on its device). No `scales`: automatic ones, as many as a one-pixel beam gives,
  // reaching as far as any kernel may.
  static double bytes_per_pixel(std::vector<double> scales, int n, bool host_convolver);

  // The convolver such a CLEAN makes: its filters (the PSF and every wider kernel) and
  // how far beyond the PSF their products reach, for the same `scales`.
  struct ConvolverShape {
    int filters = 0;
    int reach = 0;
    int smoothing_reach = 0;  // of the smoother, which holds filters - 1 (the kernels)
  };
  static ConvolverShape convolver_shape(std::vector<double> scales, int n);
  ~MultiscaleClean();

  // Minor cycles on the residual planes [4][N^2] down to `stop_level` (a biased search
  // value, Jy/beam) or `max_iterations`, within the mask (or everywhere: null); stopped,
  // diverged, where the residual's own search peak passes `divergence_level` (0: not
  // watched), as a runaway's does long before its values overflow.
  MinorCycleResult run(float* residual, float* model, const std::uint8_t* mask, PeakSearch search_mode, double gain,
                       double stop_level, int max_iterations, double divergence_level = 0);

  int scale_count() const { return static_cast<int>(scales_.size()); }
  double scale(int k) const { return scales_[k].size; }
  // The scales (pixels) cleaned with: clean.scales and 0, less those the array hardly
  // measures (min_psf_response).
  std::vector<double> scales() const;
  // The PSF convolved with kernels j and k (N x N, centred at (N/2, N/2)), through the
  // convolver: for the tests (the passes use j = k only, made once per channel).
  std::vector<float> cross_term(int j, int k);
  // Iterations done at each scale so far.
  const std::vector<int>& iterations_per_scale() const { return iterations_; }

 private:
  struct Scale {
    double size = 0;
    double bias = 1;
    ScaleKernel kernel;
    int filter = -1;             // the kernel's index in the convolver
    int smoothing = -1;          // and in the smoother
    float psf_peak = 1;          // of the PSF convolved with the kernel
    std::vector<float> twice;    // the PSF convolved twice with the kernel, over psf_peak
  };

  int n_;
  std::vector<float> psf_;
  std::unique_ptr<Convolver> convolver_;  // the PSF and the kernels, for the PSF's products
  std::unique_ptr<Convolver> smoother_;   // the kernels alone, for the residual's smoothing
  int psf_filter_ = -1;
  std::vector<Scale> scales_;
  std::vector<int> iterations_;
  std::unique_ptr<SubtractionPlanes> planes_;  // the passes' work planes, kept between them
};

}  // namespace spip::deconv
