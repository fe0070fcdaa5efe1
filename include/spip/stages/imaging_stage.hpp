#pragma once
// The channel-imaging stage on the rank's backend, chosen once (make()): CPU cores
// (imaging::ChannelImager with deconv::HostCleanBackend) or the rank's GPU
// (cuda::DeviceImager with its device backend); deconv::clean_channel drives either.
// Both take a channel in steps: it is written where stage_area() says (on the GPU
// straight into pinned memory), handed over by stage() and made current by next(), so
// that the next channel can be prepared (on the GPU uploaded) while the current one is
// imaged.
#include <memory>
#include <string>
#include <vector>

#include "spip/config/config.hpp"
#include "spip/deconv/major_cycle.hpp"
#include "spip/imaging/channel_view.hpp"
#include "spip/imaging/geometry.hpp"
#include "spip/imaging/weighting.hpp"

namespace spip::pipeline {

class ImagingStage {
 public:
  // gpu_device < 0: CPU. max_visibilities bounds a channel (the GPU memory plan).
  // `group`: the collectives of a group sharing the channels' rows, for the imaging
  // thread; null without a group.
  static std::unique_ptr<ImagingStage> make(const imaging::ImageGeometry& geometry, const ImageConfig& image,
                                              const imaging::WeightingScheme& scheme, int gpu_device,
                                              std::size_t max_visibilities, const imaging::RowGroup* group);
  virtual ~ImagingStage() = default;

  // The weighting the host applies as it writes a channel into stage_area(): the
  // scheme on the CPU; none on a GPU, which makes the imaging weights itself.
  virtual const imaging::WeightingScheme& host_weighting() const = 0;
  // Where the next channel, of `rows` rows, is to be written (its coordinates, weights
  // and visibilities); stage() hands it over. These two may run on another thread than
  // the calls below, while image() runs, never while next() does.
  virtual imaging::ChannelView stage_area(std::size_t rows) = 0;
  void stage(double freq_hz) {
    ++staged_channels_;
    hand_over(freq_hz);
  }
  virtual void next() = 0;
  // Channels handed over by stage() so far: one per channel imaged.
  int staged_channels() const { return staged_channels_; }

  virtual double weight_sum(int stokes) const = 0;
  // deconv::clean_channel on the current channel with the backend's primitives, with the
  // channel's imaging::deconvolution_beam for multiscale's scales (0: the fitted beam):
  // not restored.
  virtual deconv::ChannelImages image(const CleanConfig& clean, double beam_rad) = 0;

  // Kernel support and w-planes of the current channel, for the log.
  virtual std::string describe() const = 0;
  // Upload time and the fraction hidden behind compute (GPU only; empty on the CPU).
  virtual std::string transfer_summary() const { return {}; }

 private:
  virtual void hand_over(double freq_hz) = 0;
  int staged_channels_ = 0;
};

}  // namespace spip::pipeline
