#pragma once
// The channel-imaging stage on the rank's backend: imaging::ChannelImager with
// deconv::HostCleanBackend on CPU cores, or its peer cuda::ChannelImager with its device
// backend on the rank's GPU; deconv::clean_channel drives either. Both take a channel in steps: it is written where stage_area() says (on the
// GPU straight into pinned memory), handed over by stage() and made current by next(),
// so that the next channel can be prepared (on the GPU uploaded) while the current one
// is imaged.
#include <complex>
#include <memory>
#include <string>
#include <vector>

#include "spip/config/config.hpp"
#include "spip/cuda/channel_imager.hpp"
#include "spip/deconv/major_cycle.hpp"
#include "spip/imaging/channel_imager.hpp"
#include "spip/imaging/weighting.hpp"
#include "spip/pipeline/log.hpp"

namespace spip::pipeline {

class ChannelImaging {
 public:
  // gpu_device < 0: CPU. max_visibilities bounds a channel (the GPU memory plan).
  ChannelImaging(const imaging::ImageGeometry& geometry, const ImageConfig& image, const imaging::WeightingScheme& scheme,
                 int gpu_device, std::size_t max_visibilities);

  // The weighting the host applies as it writes a channel into stage_area(): the
  // scheme on the CPU; none on a GPU, which makes the imaging weights itself.
  const imaging::WeightingScheme& host_weighting() const { return host_weighting_; }

  // The rows' coordinates in metres [k][3], the same for every channel; once. The CPU
  // backend reads them from `uvw_m`, which must outlive this object's channels.
  void set_uvw(const std::vector<double>& uvw_m);
  // Where the next channel is to be written; stage() hands it over. These two may run
  // on another thread than the calls below, while image() runs, never while next() does.
  cuda::ChannelView stage_area();
  void stage(double freq_hz);
  void next();
  // Channels handed over by stage() so far: one per channel imaged.
  int staged_channels() const { return staged_channels_; }

  double weight_sum(int stokes) const;
  // deconv::clean_channel on the current channel with the backend's primitives: not restored.
  deconv::ChannelImages image(const CleanConfig& clean);

  // Kernel support and w-planes of the current channel, for the log.
  std::string describe() const;
  // Upload time and the fraction hidden behind compute (GPU only; empty on the CPU).
  std::string transfer_summary() const;

 private:
  imaging::ImageGeometry geometry_;
  imaging::EsKernel kernel_;
  imaging::WeightingScheme host_weighting_;
  int staged_channels_ = 0;
  std::unique_ptr<imaging::ChannelImager> cpu_;
  std::unique_ptr<cuda::ChannelImager> gpu_;
  // CPU: the coordinates, the channel being written and the current channel's visibilities.
  const std::vector<double>* uvw_m_ = nullptr;
  std::vector<double> staged_uvw_lambda_;
  std::vector<float> staged_weights_;
  std::vector<std::complex<float>> staged_vis_, vis_;
};

}  // namespace spip::pipeline
