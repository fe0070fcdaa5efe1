#include "spip/imaging/channel_imager.hpp"

#include "spip/imaging/w_layout.hpp"

namespace spip::imaging {

ChannelImager::ChannelImager(const ImageGeometry& geometry, double accuracy, bool wstacking)
    : gridder_(geometry, accuracy, wstacking), accuracy_(accuracy) {}

void ChannelImager::set_data(std::vector<double> uvw_lambda, std::vector<float> weights, const RowGroup* group) {
  uvw_ = std::move(uvw_lambda);
  weights_ = std::move(weights);
  const double reach = group ? group->max(w_reach(uvw_.data(), num_visibilities(), geometry())) : 0.0;
  gridder_.set_uvw(uvw_.data(), num_visibilities(), reach);
  weight_sum_.fill(0.0);
  // Baselines beyond the grid's reach are not imaged and must not count in the
  // normalisation, or the PSF would not peak at 1.
  for (std::size_t k = 0; k < num_visibilities(); ++k)
    for (int s = 0; s < num_stokes; ++s) {
      float& w = weights_[k * num_stokes + s];
      if (!gridder_.inside(k)) w = 0;
      weight_sum_[s] += w;
    }
  if (group) group->sum(weight_sum_);
}

void ChannelImager::dirty(const std::complex<float>* vis, float* images) const {
  gridder_.grid(vis, weights_.data(), num_stokes, images);
  const std::size_t pixels = geometry().pixels();
  for (int s = 0; s < num_stokes; ++s) {
    const float scale = weight_sum_[s] > 0 ? static_cast<float>(1.0 / weight_sum_[s]) : 0.0f;
    for (std::size_t p = 0; p < pixels; ++p) images[s * pixels + p] *= scale;
  }
}

void ChannelImager::psf(float* image) const { grid_psf(gridder_, image); }

std::vector<float> ChannelImager::psf(int side, const RowGroup* group) const {
  const ImageGeometry& g = geometry();
  const double padding = static_cast<double>(g.grid_size) / g.size;
  Gridder wide(ImageGeometry::make(side, g.cell_rad, padding), accuracy_, false);
  wide.set_uvw(uvw_.data(), num_visibilities());
  std::vector<float> image(wide.geometry().pixels());
  grid_psf(wide, image.data());
  if (group) group->sum(image);
  return image;
}

void ChannelImager::grid_psf(const Gridder& gridder, float* image) const {
  const std::size_t count = num_visibilities();
  std::vector<std::complex<float>> ones(count, {1.0f, 0.0f});
  std::vector<float> weight_i(count);
  for (std::size_t k = 0; k < count; ++k) weight_i[k] = weights_[k * num_stokes];
  gridder.grid(ones.data(), weight_i.data(), 1, image);
  const float scale = weight_sum_[0] > 0 ? static_cast<float>(1.0 / weight_sum_[0]) : 0.0f;
  for (std::size_t p = 0; p < gridder.geometry().pixels(); ++p) image[p] *= scale;
}

void ChannelImager::predict(const float* model, std::complex<float>* vis) const {
  gridder_.degrid(model, num_stokes, vis);
}

}  // namespace spip::imaging
