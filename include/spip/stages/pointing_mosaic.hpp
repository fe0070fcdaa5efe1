#pragma once
// A mosaic's channel: each pointing imaged and cleaned on its own, with its own PSF,
// then made one linear mosaic (beam::ChannelMosaic's rule) of apparent planes, which the
// later stages take as they take one pointing's. The pointings are added as they are
// imaged: a pointing's weight 1 / sigma_p^2 is known once it is cleaned, and only the
// normalisation waits for the last, so a channel holds the sums and not every
// pointing's images.
#include <optional>
#include <vector>

#include "spip/beam/mosaic.hpp"
#include "spip/deconv/clean.hpp"
#include "spip/imaging/beam.hpp"
#include "spip/imaging/geometry.hpp"

namespace spip::pipeline {

class MosaicSum {
 public:
  // The channel at `freq_hz` on `geometry`'s grid about `grid.centre`; with `restoring`
  // (image.beam, known before any pointing is imaged) each pointing's model is restored
  // as it is added.
  MosaicSum(const beam::PrimaryBeam& beam, const beam::ImageGrid& grid, const std::vector<Direction>& pointings,
            double freq_hz, const imaging::ImageGeometry& geometry, std::optional<imaging::Beam> restoring);

  // Pointing p's images, weighted 1 / sigma^2 by its residual's Stokes I noise (MAD; 1
  // where it has none, as in a noiseless simulation).
  void add(std::size_t pointing, const deconv::ChannelImages& images);

  struct Channel {
    // The dirty and residual planes combined, the CLEAN figures added up (iterations,
    // scale iterations) or the worst taken (major cycles, threshold, stop); no PSF or
    // model, which are each pointing's own.
    deconv::ChannelImages images;
    std::vector<float> restored;  // with `restoring`; else empty
    std::vector<double> weights;  // per pointing; 0 where it has no data in the channel
  };
  Channel finish();

 private:
  const beam::PrimaryBeam& beam_;
  beam::ImageGrid grid_;
  std::vector<Direction> pointings_;
  double freq_hz_;
  imaging::ImageGeometry geometry_;
  std::optional<imaging::Beam> restoring_;
  Channel sum_;                         // sum_p B_p w_p X_p until finish()
  std::vector<double> power_;           // sum_p B_p^2 w_p per pixel
};

// Restoring a mosaic, a pointing at a time: pointing p's model ([4][N*N]) convolved
// with `beam` and added into `restored` ([4][N*N], which starts as the mosaic's
// residual) with the pointing's mosaic factor.
void add_restored_model(std::size_t pointing, const float* model, const imaging::ImageGeometry& geometry,
                        const imaging::Beam& beam, const beam::ChannelMosaic& mosaic, float* restored);

}  // namespace spip::pipeline
