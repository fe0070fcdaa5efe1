#include "spip/stages/pointing_mosaic.hpp"

#include <algorithm>
#include <cmath>

#include "spip/ms/stokes.hpp"

namespace spip::pipeline {
namespace {

using ms::num_stokes;

// Stokes plane s of every pointing's [4][N*N] planes (null where it has none) combined into out.
void combine_stokes(const std::vector<const float*>& planes, const beam::ChannelMosaic& mosaic, std::size_t pixels,
                    float* out) {
  for (int s = 0; s < num_stokes; ++s) {
    std::vector<const float*> one;
    for (const float* plane : planes) one.push_back(plane ? plane + s * pixels : nullptr);
    mosaic.combine(one, out + s * pixels);
  }
}

}  // namespace

std::vector<double> mosaic_weights(const std::vector<std::optional<deconv::ChannelImages>>& pointings) {
  std::vector<double> weights;
  bool noiseless = false;
  for (const auto& images : pointings) {
    const double sigma = images ? images->residual_sigma : 0.0;
    noiseless = noiseless || (images && !(sigma > 0));
    weights.push_back(images && sigma > 0 ? 1.0 / (sigma * sigma) : 0.0);
  }
  if (noiseless)
    for (std::size_t p = 0; p < pointings.size(); ++p) weights[p] = pointings[p] ? 1.0 : 0.0;
  return weights;
}

deconv::ChannelImages combine_pointings(const std::vector<std::optional<deconv::ChannelImages>>& pointings,
                                        const beam::ChannelMosaic& mosaic, std::size_t pixels) {
  deconv::ChannelImages out;
  std::vector<const float*> dirty, residual;
  for (const auto& images : pointings) {
    dirty.push_back(images ? images->dirty.data() : nullptr);
    residual.push_back(images ? images->residual.data() : nullptr);
    if (!images) continue;
    out.iterations += images->iterations;
    out.major_cycles = std::max(out.major_cycles, images->major_cycles);
    if (out.scales.empty()) {
      out.scales = images->scales;
      out.scale_iterations.assign(images->scale_iterations.size(), 0);
    }
    for (std::size_t k = 0; k < std::min(out.scale_iterations.size(), images->scale_iterations.size()); ++k)
      out.scale_iterations[k] += images->scale_iterations[k];
    out.search_noise = std::max(out.search_noise, images->search_noise);
    out.clean_threshold = std::max(out.clean_threshold, images->clean_threshold);
    out.threshold_reached = out.threshold_reached && images->threshold_reached;
    if (out.clean_stop != deconv::CleanStop::diverged && images->clean_stop != deconv::CleanStop::none) {
      out.clean_stop = images->clean_stop;
      out.diverged_peak = images->diverged_peak;
    }
    if (!out.degenerate_psf) out.degenerate_psf = images->degenerate_psf;
  }
  out.dirty.resize(num_stokes * pixels);
  out.residual.resize(num_stokes * pixels);
  combine_stokes(dirty, mosaic, pixels, out.dirty.data());
  combine_stokes(residual, mosaic, pixels, out.residual.data());
  out.residual_sigma = deconv::mad_sigma(out.residual.data(), pixels);
  for (float value : out.residual) out.residual_peak = std::max(out.residual_peak, static_cast<double>(std::abs(value)));
  return out;
}

void add_restored_model(std::size_t pointing, const float* model, const imaging::ImageGeometry& geometry,
                        const imaging::Beam& beam, const beam::ChannelMosaic& mosaic, float* restored) {
  const std::size_t pixels = geometry.pixels();
  std::vector<float> convolved(num_stokes * pixels, 0.0f);
  imaging::restore(model, geometry, beam, convolved.data(), num_stokes);
  for (int s = 0; s < num_stokes; ++s) mosaic.accumulate(pointing, convolved.data() + s * pixels, restored + s * pixels);
}

}  // namespace spip::pipeline
