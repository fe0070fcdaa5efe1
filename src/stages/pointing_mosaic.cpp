#include "spip/stages/pointing_mosaic.hpp"

#include <algorithm>
#include <cmath>

#include "spip/ms/stokes.hpp"

namespace spip::pipeline {
namespace {

using ms::num_stokes;

// out += factor * plane, Stokes plane by Stokes plane.
void add_weighted(const std::vector<float>& factor, const float* planes, float* out) {
  const std::size_t pixels = factor.size();
  for (int s = 0; s < num_stokes; ++s) {
#pragma omp parallel for schedule(static)
    for (std::size_t i = 0; i < pixels; ++i) out[s * pixels + i] += factor[i] * planes[s * pixels + i];
  }
}

void add_figures(const deconv::ChannelImages& pointing, deconv::ChannelImages& out) {
  out.iterations += pointing.iterations;
  out.major_cycles = std::max(out.major_cycles, pointing.major_cycles);
  if (out.scales.empty()) {
    out.scales = pointing.scales;
    out.scale_iterations.assign(pointing.scale_iterations.size(), 0);
  }
  for (std::size_t k = 0; k < std::min(out.scale_iterations.size(), pointing.scale_iterations.size()); ++k)
    out.scale_iterations[k] += pointing.scale_iterations[k];
  out.search_noise = std::max(out.search_noise, pointing.search_noise);
  out.clean_threshold = std::max(out.clean_threshold, pointing.clean_threshold);
  out.threshold_reached = out.threshold_reached && pointing.threshold_reached;
  if (out.clean_stop != deconv::CleanStop::diverged && pointing.clean_stop != deconv::CleanStop::none) {
    out.clean_stop = pointing.clean_stop;
    out.diverged_peak = pointing.diverged_peak;
  }
  if (!out.degenerate_psf) out.degenerate_psf = pointing.degenerate_psf;
}

}  // namespace

MosaicSum::MosaicSum(const beam::PrimaryBeam& beam, const beam::ImageGrid& grid, const std::vector<Direction>& pointings,
                     double freq_hz, const imaging::ImageGeometry& geometry, std::optional<imaging::Beam> restoring)
    : beam_(beam), grid_(grid), pointings_(pointings), freq_hz_(freq_hz), geometry_(geometry),
      restoring_(restoring), power_(geometry.pixels(), 0.0) {
  const std::size_t planes = num_stokes * geometry.pixels();
  sum_.images.dirty.assign(planes, 0.0f);
  sum_.images.residual.assign(planes, 0.0f);
  if (restoring_) sum_.restored.assign(planes, 0.0f);
  sum_.weights.assign(pointings.size(), 0.0);
}

void MosaicSum::add(std::size_t pointing, const deconv::ChannelImages& images) {
  const double sigma = images.residual_sigma;
  const double weight = sigma > 0 ? 1.0 / (sigma * sigma) : 1.0;
  sum_.weights.at(pointing) = weight;
  beam::ImageGrid about = grid_;
  about.pointing = pointings_.at(pointing);
  std::vector<float> factor = beam::response_plane(beam_, about, freq_hz_);
  for (std::size_t i = 0; i < factor.size(); ++i) {
    power_[i] += weight * factor[i] * factor[i];
    factor[i] = static_cast<float>(weight * factor[i]);  // B_p w_p
  }
  add_weighted(factor, images.dirty.data(), sum_.images.dirty.data());
  add_weighted(factor, images.residual.data(), sum_.images.residual.data());
  if (restoring_) {
    std::vector<float> convolved(num_stokes * geometry_.pixels(), 0.0f);
    imaging::restore(images.model.data(), geometry_, *restoring_, convolved.data(), num_stokes);
    add_weighted(factor, convolved.data(), sum_.restored.data());
  }
  add_figures(images, sum_.images);
}

// Each sum over sqrt(sum_p B_p^2 w_p w_max): the apparent planes of beam::ChannelMosaic.
MosaicSum::Channel MosaicSum::finish() {
  const double best = *std::max_element(sum_.weights.begin(), sum_.weights.end());
  const std::size_t pixels = geometry_.pixels();
  std::vector<float> scale(pixels);
  for (std::size_t i = 0; i < pixels; ++i)
    scale[i] = power_[i] > 0 ? static_cast<float>(1.0 / std::sqrt(power_[i] * best)) : 0.0f;
  for (std::vector<float>* planes : {&sum_.images.dirty, &sum_.images.residual, &sum_.restored}) {
    if (planes->empty()) continue;
    for (int s = 0; s < num_stokes; ++s)
      for (std::size_t i = 0; i < pixels; ++i) (*planes)[s * pixels + i] *= scale[i];
  }
  if (!sum_.restored.empty())
    for (std::size_t i = 0; i < sum_.restored.size(); ++i) sum_.restored[i] += sum_.images.residual[i];
  sum_.images.residual_sigma = deconv::mad_sigma(sum_.images.residual.data(), pixels);
  for (float value : sum_.images.residual)
    sum_.images.residual_peak = std::max(sum_.images.residual_peak, static_cast<double>(std::abs(value)));
  return std::move(sum_);
}

void add_restored_model(std::size_t pointing, const float* model, const imaging::ImageGeometry& geometry,
                        const imaging::Beam& beam, const beam::ChannelMosaic& mosaic, float* restored) {
  const std::size_t pixels = geometry.pixels();
  std::vector<float> convolved(num_stokes * pixels, 0.0f);
  imaging::restore(model, geometry, beam, convolved.data(), num_stokes);
  for (int s = 0; s < num_stokes; ++s) mosaic.accumulate(pointing, convolved.data() + s * pixels, restored + s * pixels);
}

}  // namespace spip::pipeline
