#include "channel_imaging.hpp"

#include <algorithm>

#include "spip/common/constants.hpp"
#include "spip/error.hpp"
#include "spip/imaging/w_layout.hpp"
#include "spip/ms/stokes.hpp"

namespace spip::pipeline {

using ms::num_stokes;

ChannelImaging::ChannelImaging(const imaging::ImageGeometry& geometry, const ImageConfig& image,
                               const imaging::WeightingScheme& scheme, int gpu_device, std::size_t max_visibilities)
    : geometry_(geometry),
      kernel_(imaging::make_w_stacking(geometry, image.accuracy, image.wstacking).kernel),
      host_weighting_(gpu_device >= 0 ? imaging::WeightingScheme{} : scheme) {
  if (gpu_device >= 0)
    gpu_ = std::make_unique<cuda::ChannelImager>(gpu_device, geometry, image.accuracy, image.wstacking,
                                                 max_visibilities, scheme);
  else
    cpu_ = std::make_unique<imaging::ChannelImager>(geometry, image.accuracy, image.wstacking);
}

void ChannelImaging::set_uvw(const std::vector<double>& uvw_m) {
  if (gpu_)
    gpu_->set_uvw(uvw_m);
  else
    uvw_m_ = &uvw_m;
}

cuda::ChannelView ChannelImaging::stage_area() {
  if (gpu_) return gpu_->staging_area();
  if (!uvw_m_) SPIP_THROW(Error, "channel imaging: stage_area() before set_uvw()");
  const std::size_t rows = uvw_m_->size() / 3;
  staged_weights_.resize(num_stokes * rows);
  staged_vis_.resize(num_stokes * rows);
  return cuda::ChannelView{rows, staged_weights_.data(), staged_vis_.data()};
}

void ChannelImaging::stage(double freq_hz) {
  ++staged_channels_;
  if (gpu_) {
    gpu_->upload(freq_hz);
    return;
  }
  const double inv_lambda = freq_hz / speed_of_light;
  staged_uvw_lambda_.resize(uvw_m_->size());
  std::transform(uvw_m_->begin(), uvw_m_->end(), staged_uvw_lambda_.begin(),
                 [&](double metres) { return metres * inv_lambda; });
}

void ChannelImaging::next() {
  if (gpu_) {
    gpu_->next();
    return;
  }
  cpu_->set_data(std::move(staged_uvw_lambda_), std::move(staged_weights_));
  staged_uvw_lambda_ = {};
  vis_ = std::move(staged_vis_);
  staged_weights_ = {};
  staged_vis_ = {};
}

double ChannelImaging::weight_sum(int stokes) const {
  return gpu_ ? gpu_->weight_sum(stokes) : cpu_->weight_sum(stokes);
}

deconv::ChannelImages ChannelImaging::image(const CleanConfig& clean) {
  const std::unique_ptr<deconv::CleanBackend> backend =
      gpu_ ? gpu_->clean_backend() : std::make_unique<deconv::HostCleanBackend>(*cpu_, vis_);
  return deconv::clean_channel(*backend, clean, geometry_);
}

std::string ChannelImaging::describe() const {
  const int planes = gpu_ ? gpu_->num_w_planes() : cpu_->gridder().num_w_planes();
  return "kernel W = " + std::to_string(kernel_.support) + ", " + std::to_string(planes) + " w-planes";
}

std::string ChannelImaging::transfer_summary() const {
  if (!gpu_) return {};
  const cuda::TransferStats t = gpu_->transfer_stats();
  const double hidden = t.upload_ms > 0 ? 100.0 * t.hidden_ms / t.upload_ms : 0.0;
  return "GPU transfers: " + std::to_string(t.channels) + " channel uploads, " + fixed(t.upload_bytes / 1e6, 1) +
         " MB in " + fixed(t.upload_ms, 1) + " ms, " + fixed(hidden, 1) + " % of it hidden behind compute (" +
         fixed(t.compute_ms, 1) + " ms; cudaEvent timings)";
}

}  // namespace spip::pipeline
