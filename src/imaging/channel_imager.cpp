#include "spip/imaging/channel_imager.hpp"

#include "spip/imaging/direct_predict.hpp"
#include "spip/imaging/w_layout.hpp"

namespace spip::imaging {

ChannelImager::ChannelImager(const ImageGeometry& geometry, double accuracy, bool wstacking)
    : gridder_(geometry, accuracy, wstacking), accuracy_(accuracy), wstacking_(wstacking) {}

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

namespace {

// The Stokes I PSF on `gridder`'s image from weights [k][4], normalised by `weight_sum`.
void grid_psf(const Gridder& gridder, const float* weights, std::size_t count, double weight_sum, float* image) {
  std::vector<std::complex<float>> ones(count, {1.0f, 0.0f});
  std::vector<float> weight_i(count);
  for (std::size_t k = 0; k < count; ++k) weight_i[k] = weights[k * num_stokes];
  gridder.grid(ones.data(), weight_i.data(), 1, image);
  const float scale = weight_sum > 0 ? static_cast<float>(1.0 / weight_sum) : 0.0f;
  for (std::size_t p = 0; p < gridder.geometry().pixels(); ++p) image[p] *= scale;
}

}  // namespace

std::vector<float> wide_psf(const ImageGeometry& geometry, int side, double accuracy, const double* uvw_lambda,
                            const float* weights, std::size_t count, double weight_sum) {
  const double padding = static_cast<double>(geometry.grid_size) / geometry.size;
  Gridder wide(ImageGeometry::make(side, geometry.cell_rad, padding), accuracy, false);
  wide.set_uvw(uvw_lambda, count);
  std::vector<float> image(wide.geometry().pixels());
  grid_psf(wide, weights, count, weight_sum, image.data());
  return image;
}

void ChannelImager::psf(float* image) const {
  grid_psf(gridder_, weights_.data(), num_visibilities(), weight_sum_[0], image);
}

std::vector<float> ChannelImager::psf(int side, const RowGroup* group) const {
  std::vector<float> image =
      wide_psf(geometry(), side, accuracy_, uvw_.data(), weights_.data(), num_visibilities(), weight_sum_[0]);
  if (group) group->sum(image);
  return image;
}

void ChannelImager::predict(const float* model, std::complex<float>* vis) const {
  const std::size_t grid_cells = static_cast<std::size_t>(geometry().grid_size) * geometry().grid_size;
  const std::size_t limit = direct_predict_limit(num_visibilities(), gridder_.num_w_planes(), grid_cells);
  const std::vector<ModelComponent> components = model_components(model, num_stokes, geometry(), wstacking_, limit);
  if (components.size() <= limit)
    predict_direct(components, num_stokes, uvw_.data(), num_visibilities(), vis);
  else
    gridder_.degrid(model, num_stokes, vis);
}

}  // namespace spip::imaging
