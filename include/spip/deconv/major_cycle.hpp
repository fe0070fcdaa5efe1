#pragma once
// One Cotton-Schwab major-cycle driver for every backend (Radler's shape): the driver
// owns the loop, the thresholds, clean.auto_mask's two stages, the stopping reasons and
// the statistics; a backend supplies the imaging and minor-cycle primitives on images
// it keeps where it computes them (host memory, or a GPU's).
#include <complex>
#include <cstdint>
#include <memory>
#include <vector>

#include "spip/config/config.hpp"
#include "spip/deconv/clean.hpp"
#include "spip/deconv/multiscale.hpp"
#include "spip/imaging/geometry.hpp"
#include "spip/imaging/row_group.hpp"

namespace spip::deconv {

// One major cycle's minor cycles: down to `stop_level` or `max_iterations`.
struct MinorCycleStep {
  PeakSearch search = PeakSearch::stokes_i;
  double gain = 0.1;
  double stop_level = 0;
  int max_iterations = 0;
  double divergence_level = 0;  // stop, diverged, when the search peak rises above this; 0: not watched
  bool whole_image_psf = false;  // subtract the PSF of twice the image's side (MinorPsf), made beforehand
};

// One minor-cycle algorithm on a backend's images (Radler's DeconvolutionAlgorithm):
// Hogbom, the sub-minor loop or multiscale CLEAN. The driver chooses it once per
// channel from the configuration, and runs it on a group's leader alone; a backend
// only makes it (CleanBackend::hogbom and the others) and never branches on which.
class MinorAlgorithm {
 public:
  virtual ~MinorAlgorithm() = default;
  // Minor cycles on the residual within the mask, adding components to the model.
  virtual MinorCycleResult run(const MinorCycleStep& step) = 0;
  // The multiscale CLEAN that ran (its scales and iterations go to the channel's QA);
  // none for point CLEAN, or before a first cycle.
  virtual const MultiscaleClean* multiscale() const { return nullptr; }
};

class CleanBackend {
 public:
  virtual ~CleanBackend() = default;
  // Images the current channel: dirty images (the residual starts as them), the model
  // at zero, and the PSF, returned to the host for the beam fit.
  virtual std::vector<float> invert() = 0;
  // The residual's peak-search value, only where the mask allows once one is set.
  virtual double peak(PeakSearch search) = 0;
  // The noise of the residual's peak-search quantity (search_noise()).
  virtual double noise(PeakSearch search) = 0;
  // The minor-cycle algorithms on this backend's images: point CLEAN (Hogbom, or the
  // sub-minor loop) may subtract the image's PSF or the one of twice its side; multiscale
  // CLEAN the image's.
  virtual std::unique_ptr<MinorAlgorithm> hogbom() = 0;
  virtual std::unique_ptr<MinorAlgorithm> subminor() = 0;
  virtual std::unique_ptr<MinorAlgorithm> multiscale(const MultiscaleSetup& setup) = 0;
  // The PSF of twice the image's side (MinorPsf), before the first minor cycle that
  // subtracts it; collective over the group.
  virtual void make_whole_image_psf() = 0;
  // The ranks sharing this channel's rows (parallel.ranks_per_channel), or none: the
  // driver runs the minor cycles on the leader alone, then model_from_leader() gives
  // every member the leader's model, for its own rows' prediction.
  virtual const imaging::RowGroup* group() const = 0;
  virtual void model_from_leader() = 0;
  // The divergence guard's snapshot of the model, and the model set back to it (the
  // residual is then made again with subtract_model()).
  virtual void keep_model() = 0;
  virtual void restore_kept_model() = 0;
  // Predicts the model's visibilities, subtracts them and images the residual again.
  virtual void subtract_model() = 0;
  // clean.auto_mask: from now on search only the pixels that hold a component.
  virtual void mask_model_pixels() = 0;
  // The dirty, model and residual images, to the host, with the residual's statistics
  // (set_residual_statistics()): the last imaging call on a backend.
  virtual void fetch(ChannelImages& out) = 0;
};

// The CPU backend: imaging::ChannelImager and the host's minor cycles (hogbom(),
// the sub-minor loop, MultiscaleClean) on one channel's visibilities, which must outlive
// it. With a group (parallel.ranks_per_channel), the visibilities are this rank's share
// of the channel's rows: each invert ends in a sum of the members' images.
class HostCleanBackend final : public CleanBackend {
 public:
  HostCleanBackend(const imaging::ChannelImager& imager, const std::vector<std::complex<float>>& vis,
                   const imaging::RowGroup* group = nullptr);
  ~HostCleanBackend() override;
  std::vector<float> invert() override;
  double peak(PeakSearch search) override;
  double noise(PeakSearch search) override;
  std::unique_ptr<MinorAlgorithm> hogbom() override;
  std::unique_ptr<MinorAlgorithm> subminor() override;
  std::unique_ptr<MinorAlgorithm> multiscale(const MultiscaleSetup& setup) override;
  void make_whole_image_psf() override;
  const imaging::RowGroup* group() const override { return group_; }
  void model_from_leader() override;
  void keep_model() override { kept_model_ = model_; }
  void restore_kept_model() override { model_ = kept_model_; }
  void subtract_model() override;
  void mask_model_pixels() override;
  void fetch(ChannelImages& out) override;

 private:
  class Hogbom;
  class Subminor;
  class Multiscale;
  // What the host's minor cycles work on: the residual, the model, the mask, the PSF.
  struct MinorImages {
    float* residual;
    float* model;
    const std::uint8_t* mask;
    MinorPsf psf;
  };
  MinorImages minor_images(const MinorCycleStep& step);
  void image_residual(const std::complex<float>* vis);

  const imaging::ChannelImager& imager_;
  const std::vector<std::complex<float>>& vis_;
  const imaging::RowGroup* group_;
  std::vector<float> dirty_, psf_, model_, residual_, kept_model_;
  std::vector<float> wide_psf_;  // twice the image's side (make_whole_image_psf)
  std::vector<std::uint8_t> mask_;  // empty: no mask
  std::vector<std::complex<float>> residual_vis_;
};

// Dirty images and PSF, then (clean.niter > 0) major cycles: minor cycles (sub-minor ones
// when clean.subminor, multiscale ones when clean.multiscale; on a group's leader alone) down to max(threshold, auto_threshold * search noise,
// (1 - mgain) * the cycle's starting peak), the model predicted and subtracted, the
// residual imaged again; the noise is estimated again on each cycle's residual, as
// Radler does. With clean.auto_mask the cycles first clean everywhere down to
// auto_mask sigma; the pixels holding components then become the mask, and the cycles
// go on inside it down to auto_threshold sigma. CLEAN stops when the peak is at the
// threshold (threshold_reached), at clean.niter or clean.max_major (not reached), or
// when a cycle finds nothing to clean, or auto_mask's first stage nothing above its level
// (the mask would be empty). Not restored (restore_channel).
// The divergence guard: when the exact residual imaged after a cycle has its search peak
// above clean.divergence_limit times the lowest peak a cycle started from (or above the
// cycle's own start, where its minor cycles stopped early at that level), the model
// goes back to what it was before that cycle, the residual is made from it, and CLEAN
// stops (CleanStop::diverged). Where the PSF is degenerate (degenerate_sidelobe)
// or has far sidelobes of whole_psf_sidelobe or more (far_sidelobe), the minor cycles
// subtract the PSF of twice the image's side with point CLEAN; multiscale CLEAN does not
// start on a degenerate channel, which keeps its dirty image (CleanStop::degenerate_psf).
// `beam_rad` (imaging::deconvolution_beam: 1 / the longest kept baseline, or the taper)
// sets multiscale CLEAN's automatic scales and bias as WSClean's beam does; 0 where it
// is not known: the fitted beam then stands in.
ChannelImages clean_channel(CleanBackend& backend, const CleanConfig& clean, const imaging::ImageGeometry& geometry,
                            double beam_rad);

}  // namespace spip::deconv
