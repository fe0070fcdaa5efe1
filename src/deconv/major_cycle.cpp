#include "spip/deconv/major_cycle.hpp"

#include <cmath>

namespace spip::deconv {
namespace {

// clean.scales or WSClean's automatic scales, and the bias, from the beam's FWHM in
// pixels: WSClean's (imaging::deconvolution_beam), else the geometric mean of the fitted
// axes, else (no fitted lobe) 2 pixels; never below a pixel, as in WSClean, since
// scales below one would all be points.
MultiscaleSetup multiscale_setup(const CleanConfig& clean, double beam_rad, const std::optional<imaging::Beam>& fitted,
                                 const imaging::ImageGeometry& geometry) {
  if (!clean.multiscale) return {};
  double fwhm = 2.0;
  if (std::isfinite(beam_rad) && beam_rad > 0)
    fwhm = beam_rad / geometry.cell_rad;
  else if (fitted)
    fwhm = std::sqrt(fitted->major_rad * fitted->minor_rad) / geometry.cell_rad;
  fwhm = std::max(fwhm, 1.0);
  return {clean.scales.empty() ? auto_scales(fwhm, geometry.size) : clean.scales, clean.scale_bias, 2 * fwhm};
}

// The stop of a loop that ended without reaching its threshold.
CleanStop unfinished_stop(const ChannelImages& out, const CleanConfig& clean) {
  if (out.iterations >= clean.niter) return CleanStop::niter;
  return out.major_cycles >= clean.max_major ? CleanStop::max_major : CleanStop::no_components;
}

}  // namespace

ChannelImages clean_channel(CleanBackend& backend, const CleanConfig& clean, const imaging::ImageGeometry& geometry,
                            double beam_rad) {
  ChannelImages out;
  out.psf = backend.invert();
  out.fitted_beam = imaging::fit_beam(out.psf.data(), geometry);
  out.degenerate_psf = degenerate_sidelobe(out.psf.data(), geometry.size);
  const MultiscaleSetup multiscale = multiscale_setup(clean, beam_rad, out.fitted_beam, geometry);
  MinorCycleStep kind{clean.peak, clean.gain, 0, 0, 0, false, clean.subminor, clean.multiscale ? &multiscale : nullptr};
  const bool has_whole = backend.has_whole_image_psf(kind);
  kind.whole_image_psf =
      has_whole && (out.degenerate_psf || far_sidelobe(out.psf.data(), geometry.size) >= whole_psf_sidelobe);
  const bool may_clean = !out.degenerate_psf || has_whole;
  if (clean.niter > 0 && !may_clean) out.clean_stop = CleanStop::degenerate_psf;
  bool masked = false;  // clean.auto_mask's second stage
  while (clean.niter > 0 && may_clean) {
    const bool finding_mask = clean.auto_mask > 0 && !masked;
    CleanConfig stage = clean;
    if (finding_mask) stage.auto_threshold = clean.auto_mask;
    const double sigma = clean.auto_threshold > 0 ? backend.noise(clean.peak) : 0.0;
    const double start = backend.peak(clean.peak);
    const MinorCycleLimits limits = minor_cycle_limits(stage, sigma, start);
    out.search_noise = sigma;
    out.clean_threshold = limits.floor;
    out.threshold_reached = !limits.run;
    if (finding_mask && !limits.run) {
      backend.mask_model_pixels();
      masked = true;
      continue;
    }
    if (!limits.run || out.major_cycles == clean.max_major || out.iterations >= clean.niter) break;
    MinorCycleStep step = kind;
    step.stop_level = limits.stop;
    step.max_iterations = clean.niter - out.iterations;
    step.divergence_level = clean.divergence_limit * start;
    backend.keep_model();
    const MinorCycleResult minor = backend.minor_cycles(step);
    out.iterations += minor.iterations;
    ++out.major_cycles;
    if (!minor.diverged) backend.subtract_model();
    const double after = minor.diverged ? minor.peak : backend.peak(clean.peak);
    if (!(after <= step.divergence_level)) {
      out.diverged_peak = after;
      out.clean_stop = CleanStop::diverged;
      out.threshold_reached = false;
      backend.restore_kept_model();
      backend.subtract_model();
      break;
    }
    if (minor.iterations == 0) break;
    if (limits.final_cycle && out.iterations < clean.niter) {
      if (finding_mask) {
        backend.mask_model_pixels();
        masked = true;
        continue;
      }
      out.threshold_reached = true;
      break;
    }
  }
  if (clean.niter > 0 && out.clean_stop == CleanStop::none)
    out.clean_stop = out.threshold_reached ? CleanStop::threshold : unfinished_stop(out, clean);
  backend.fetch(out);
  if (const MultiscaleClean* ran = backend.multiscale()) {
    out.scales = ran->scales();
    out.scale_iterations = ran->iterations_per_scale();
  }
  set_residual_statistics(out);
  return out;
}

}  // namespace spip::deconv
