#pragma once
// The channel-imaging stage on the rank's backend: imaging::ChannelImager with
// deconv::image_channel on CPU cores, or its peer cuda::ChannelImager on the rank's
// GPU. Both take a channel in two steps, stage() then next(), so that the next
// channel can be prepared (and on the GPU uploaded) while the current one is imaged.
#include <complex>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "spip/config/config.hpp"
#include "spip/cuda/channel_imager.hpp"
#include "spip/deconv/clean.hpp"
#include "spip/imaging/channel_imager.hpp"
#include "spip/pipeline/log.hpp"

namespace spip::pipeline {

class ChannelImaging {
 public:
  // gpu_device < 0: CPU. max_visibilities bounds a channel (the GPU memory plan).
  ChannelImaging(const imaging::ImageGeometry& geometry, const ImageConfig& image, int gpu_device,
                 std::size_t max_visibilities);

  // May run on another thread than the calls below, while they run.
  void stage(cuda::ChannelInput input);
  void next();

  double weight_sum(int stokes) const;
  std::vector<float> psf();
  deconv::ChannelImages image(const CleanConfig& clean, const std::optional<imaging::Beam>& restoring_beam,
                              std::vector<float> psf);

  // Kernel support and w-planes of the current channel, for the log.
  std::string describe() const;
  // Upload time and the fraction hidden behind compute (GPU only; empty on the CPU).
  std::string transfer_summary() const;

 private:
  imaging::ImageGeometry geometry_;
  imaging::EsKernel kernel_;
  std::unique_ptr<imaging::ChannelImager> cpu_;
  std::unique_ptr<cuda::ChannelImager> gpu_;
  cuda::ChannelInput staged_;                  // CPU: the channel given to stage()
  std::vector<std::complex<float>> vis_;       // CPU: the current channel's visibilities
};

}  // namespace spip::pipeline
