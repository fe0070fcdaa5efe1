#include "spip/deconv/major_cycle.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

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

// The configured minor-cycle algorithm, chosen once for the channel; none on a group's
// other members, which take the leader's model.
std::unique_ptr<MinorAlgorithm> choose_minor_algorithm(CleanBackend& backend, const CleanConfig& clean,
                                                       const MultiscaleSetup& multiscale) {
  if (backend.group() && !backend.group()->leads()) return nullptr;
  if (clean.multiscale) return backend.multiscale(multiscale);
  return clean.subminor ? backend.subminor() : backend.hogbom();
}

// The leader's minor cycles; its model and result reach a group's other members.
MinorCycleResult run_minor_cycles(CleanBackend& backend, MinorAlgorithm* algorithm, const MinorCycleStep& step) {
  MinorCycleResult result = algorithm ? algorithm->run(step) : MinorCycleResult{};
  const imaging::RowGroup* group = backend.group();
  if (!group) return result;
  backend.model_from_leader();
  result.iterations = group->from_leader(result.iterations);
  result.diverged = group->from_leader(result.diverged ? 1 : 0) != 0;
  std::vector<float> peak{static_cast<float>(result.peak)};
  group->from_leader(peak);
  result.peak = peak[0];
  return result;
}

// CLEAN stops at this fraction of the first cycle's peak whatever its thresholds: below
// about 1e-7 of it the residual of float32 images is rounding, not sky. Noise-free data
// cleaned with no threshold went on into it, where the peaks of such residuals wander,
// and grow, from cycle to cycle, and channels were marked diverged
// (MajorCycle.NoiseFreeDataCleanedWithoutAThresholdDoesNotDiverge). Ten times above it.
constexpr double rounding_floor = 1e-6;

// The major cycles on the backend's images until one of CleanStop's reasons. A cycle
// diverged when the exact residual's search peak is past clean.divergence_limit times
// the lowest starting peak so far, or when its minor cycles stopped at that level and
// left the peak above the cycle's start (their own residual, with the image-sized PSF,
// may rise where the exact one does not).
void major_cycles(CleanBackend& backend, MinorAlgorithm* algorithm, const CleanConfig& clean,
                  const MinorCycleStep& kind, ChannelImages& out) {
  bool masked = false;  // clean.auto_mask's second stage
  bool whole_psf_made = false;
  double lowest_start = std::numeric_limits<double>::infinity();
  std::optional<double> first_start;
  std::optional<double> known_peak;  // the last cycle's exact residual's, while the mask stays
  for (;;) {
    const bool finding_mask = clean.auto_mask > 0 && !masked;
    CleanConfig stage = clean;
    if (finding_mask) stage.auto_threshold = clean.auto_mask;
    out.search_noise = clean.auto_threshold > 0 ? backend.noise(clean.peak) : 0.0;
    const double start = known_peak ? *known_peak : backend.peak(clean.peak);
    known_peak.reset();
    if (!first_start) first_start = start;
    lowest_start = std::min(lowest_start, start);
    stage.threshold_jy = std::max(stage.threshold_jy, rounding_floor * *first_start);
    const MinorCycleLimits limits = minor_cycle_limits(stage, out.search_noise, start);
    out.clean_threshold = limits.floor;
    const CleanStop stop = !limits.run                          ? CleanStop::threshold
                           : out.major_cycles == clean.max_major ? CleanStop::max_major
                           : out.iterations >= clean.niter       ? CleanStop::niter
                                                                 : CleanStop::none;
    if (stop == CleanStop::threshold && finding_mask) {
      if (out.iterations == 0) {  // nothing above auto_mask sigma: the mask would be empty
        out.clean_stop = CleanStop::no_components;
        return;
      }
      backend.mask_model_pixels();
      masked = true;
      continue;
    }
    if (stop != CleanStop::none) {
      out.clean_stop = stop;
      return;
    }
    MinorCycleStep step = kind;
    step.stop_level = limits.stop;
    step.max_iterations = clean.niter - out.iterations;
    step.divergence_level = clean.divergence_limit * lowest_start;
    if (step.whole_image_psf && !whole_psf_made) {
      backend.make_whole_image_psf();
      whole_psf_made = true;
    }
    backend.keep_model();
    const MinorCycleResult minor = run_minor_cycles(backend, algorithm, step);
    out.iterations += minor.iterations;
    ++out.major_cycles;
    backend.subtract_model();
    const double after = backend.peak(clean.peak);
    if (!(after <= step.divergence_level) || (minor.diverged && !(after < start))) {
      out.diverged_peak = std::max(after, minor.peak);
      out.clean_stop = CleanStop::diverged;
      backend.restore_kept_model();
      backend.subtract_model();
      return;
    }
    if (minor.iterations == 0) {
      out.clean_stop = CleanStop::no_components;
      return;
    }
    // Minor cycles cut short at the divergence level, though the exact residual came
    // down, did not reach the floor: another cycle starts from that residual.
    if (limits.final_cycle && !minor.diverged && out.iterations < clean.niter) {
      if (finding_mask) {
        backend.mask_model_pixels();
        masked = true;
        continue;
      }
      out.clean_stop = CleanStop::threshold;
      return;
    }
    known_peak = after;
  }
}

}  // namespace

ChannelImages clean_channel(CleanBackend& backend, const CleanConfig& clean, const imaging::ImageGeometry& geometry,
                            double beam_rad) {
  ChannelImages out;
  out.psf = backend.invert();
  out.fitted_beam = imaging::fit_beam(out.psf.data(), geometry);
  out.degenerate_psf = degenerate_sidelobe(out.psf.data(), geometry.size);
  const MultiscaleSetup multiscale = multiscale_setup(clean, beam_rad, out.fitted_beam, geometry);
  // Point CLEAN subtracts the PSF of twice the image's side where the image's would let it
  // run away; multiscale CLEAN convolves with the image's.
  MinorCycleStep kind{.search = clean.peak, .gain = clean.gain};
  out.far_sidelobe = far_sidelobe(out.psf.data(), geometry.size);
  kind.whole_image_psf = !clean.multiscale && (out.degenerate_psf || out.far_sidelobe >= whole_psf_sidelobe);
  std::unique_ptr<MinorAlgorithm> algorithm;
  if (clean.niter > 0) {
    if (out.degenerate_psf && clean.multiscale) {
      out.clean_stop = CleanStop::degenerate_psf;
    } else {
      algorithm = choose_minor_algorithm(backend, clean, multiscale);
      major_cycles(backend, algorithm.get(), clean, kind, out);
    }
  }
  out.threshold_reached = clean.niter <= 0 || out.clean_stop == CleanStop::threshold;
  backend.fetch(out);
  if (const MultiscaleClean* ran = algorithm ? algorithm->multiscale() : nullptr) {
    out.scales = ran->scales();
    out.scale_iterations = ran->iterations_per_scale();
  }
  return out;
}

}  // namespace spip::deconv
