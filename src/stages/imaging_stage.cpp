#include "spip/stages/imaging_stage.hpp"

#include <algorithm>
#include <complex>

#include "spip/common/constants.hpp"
#include "spip/cuda/device_imager.hpp"
#include "spip/error.hpp"
#include "spip/imaging/channel_imager.hpp"
#include "spip/imaging/w_layout.hpp"
#include "spip/job/log.hpp"
#include "spip/ms/stokes.hpp"

namespace spip::pipeline {
namespace {

using ms::num_stokes;

int kernel_support(const imaging::ImageGeometry& geometry, const ImageConfig& image) {
  return imaging::make_w_stacking(geometry, image.accuracy, image.wstacking).kernel.support;
}

std::string kernel_and_planes(int support, int planes) {
  return "kernel W = " + std::to_string(support) + ", " + std::to_string(planes) + " w-planes";
}

// CPU cores: the channel staged in host memory with its imaging weights, its
// coordinates scaled to wavelengths when it is handed over.
class CpuChannelImaging final : public ImagingStage {
 public:
  CpuChannelImaging(const imaging::ImageGeometry& geometry, const ImageConfig& image,
                    const imaging::WeightingScheme& scheme, const imaging::RowGroup* group)
      : geometry_(geometry), support_(kernel_support(geometry, image)), scheme_(scheme),
        imager_(geometry, image.accuracy, image.wstacking), group_(group) {}

  const imaging::WeightingScheme& host_weighting() const override { return scheme_; }

  imaging::ChannelView stage_area(std::size_t rows) override {
    staged_uvw_.resize(3 * rows);
    staged_weights_.resize(num_stokes * rows);
    staged_vis_.resize(num_stokes * rows);
    return imaging::ChannelView{rows, staged_uvw_.data(), staged_weights_.data(), staged_vis_.data()};
  }

  void next() override {
    imager_.set_data(std::move(staged_uvw_), std::move(staged_weights_), group_);
    staged_uvw_ = {};
    vis_ = std::move(staged_vis_);
    staged_weights_ = {};
    staged_vis_ = {};
  }

  double weight_sum(int stokes) const override { return imager_.weight_sum(stokes); }

  deconv::ChannelImages image(const CleanConfig& clean, double beam_rad) override {
    deconv::HostCleanBackend backend(imager_, vis_, group_);
    return deconv::clean_channel(backend, clean, geometry_, beam_rad);
  }

  std::string describe() const override {
    return kernel_and_planes(support_, imager_.gridder().num_w_planes());
  }

 private:
  // The coordinates to wavelengths, in place.
  void hand_over(double freq_hz) override {
    const double inv_lambda = freq_hz / speed_of_light;
    for (double& x : staged_uvw_) x *= inv_lambda;
  }

  imaging::ImageGeometry geometry_;
  int support_;  // of the gridding kernel
  imaging::WeightingScheme scheme_;
  imaging::ChannelImager imager_;
  const imaging::RowGroup* group_;
  // The channel being written (its coordinates in metres until handed over, then in
  // wavelengths) and the current channel's visibilities.
  std::vector<double> staged_uvw_;
  std::vector<float> staged_weights_;
  std::vector<std::complex<float>> staged_vis_, vis_;
};

// The rank's GPU: the channel staged in pinned memory with its natural weights and
// uploaded; the device makes the imaging weights.
class GpuChannelImaging final : public ImagingStage {
 public:
  GpuChannelImaging(const imaging::ImageGeometry& geometry, const ImageConfig& image,
                    const imaging::WeightingScheme& scheme, int device, std::size_t max_visibilities,
                    const imaging::RowGroup* group)
      : geometry_(geometry), support_(kernel_support(geometry, image)),
        imager_(device, geometry, image.accuracy, image.wstacking, max_visibilities, scheme, group) {}

  const imaging::WeightingScheme& host_weighting() const override { return natural_; }
  imaging::ChannelView stage_area(std::size_t rows) override { return imager_.staging_area(rows); }
  void next() override { imager_.next(); }
  double weight_sum(int stokes) const override { return imager_.weight_sum(stokes); }

  deconv::ChannelImages image(const CleanConfig& clean, double beam_rad) override {
    return deconv::clean_channel(*imager_.clean_backend(), clean, geometry_, beam_rad);
  }

  std::string describe() const override { return kernel_and_planes(support_, imager_.num_w_planes()); }

  std::string transfer_summary() const override {
    const cuda::TransferStats t = imager_.transfer_stats();
    const double hidden = t.upload_ms > 0 ? 100.0 * t.hidden_ms / t.upload_ms : 0.0;
    return "GPU transfers: " + std::to_string(t.channels) + " channel uploads, " + fixed(t.upload_bytes / 1e6, 1) +
           " MB in " + fixed(t.upload_ms, 1) + " ms, " + fixed(hidden, 1) + " % of it hidden behind compute (" +
           fixed(t.compute_ms, 1) + " ms; cudaEvent timings)";
  }

 private:
  void hand_over(double freq_hz) override { imager_.upload(freq_hz); }

  imaging::ImageGeometry geometry_;
  int support_;  // of the gridding kernel
  imaging::WeightingScheme natural_;
  cuda::DeviceImager imager_;
};

}  // namespace

std::unique_ptr<ImagingStage> ImagingStage::make(const imaging::ImageGeometry& geometry, const ImageConfig& image,
                                                     const imaging::WeightingScheme& scheme, int gpu_device,
                                                     std::size_t max_visibilities, const imaging::RowGroup* group) {
  if (gpu_device >= 0) return std::make_unique<GpuChannelImaging>(geometry, image, scheme, gpu_device, max_visibilities, group);
  return std::make_unique<CpuChannelImaging>(geometry, image, scheme, group);
}

}  // namespace spip::pipeline
