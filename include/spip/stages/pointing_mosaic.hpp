#pragma once
// A mosaic's channel: each pointing imaged and cleaned on its own, with its own PSF,
// then made one linear mosaic (beam::ChannelMosaic) of apparent planes, which the later
// stages take as they take one pointing's.
#include <optional>
#include <vector>

#include "spip/beam/mosaic.hpp"
#include "spip/deconv/clean.hpp"
#include "spip/imaging/beam.hpp"
#include "spip/imaging/geometry.hpp"

namespace spip::pipeline {

// Each pointing's weight 1 / sigma^2 from its residual's Stokes I noise; 0 where the
// pointing has no data in the channel. Equal weights where an imaged pointing has no
// noise at all (a noiseless simulation), which no weighting by noise can rank.
std::vector<double> mosaic_weights(const std::vector<std::optional<deconv::ChannelImages>>& pointings);

// The channel's images as one pointing's would be: the dirty and residual planes
// combined, the CLEAN figures added up (iterations, scale iterations), or the worst
// taken (major cycles, threshold, stop); no PSF or model, which are each pointing's own.
deconv::ChannelImages combine_pointings(const std::vector<std::optional<deconv::ChannelImages>>& pointings,
                                        const beam::ChannelMosaic& mosaic, std::size_t pixels);

// Restoring a mosaic, a pointing at a time: pointing p's model ([4][N*N]) convolved
// with `beam` and added into `restored` ([4][N*N], which starts as the mosaic's
// residual) with the pointing's mosaic factor.
void add_restored_model(std::size_t pointing, const float* model, const imaging::ImageGeometry& geometry,
                        const imaging::Beam& beam, const beam::ChannelMosaic& mosaic, float* restored);

}  // namespace spip::pipeline
