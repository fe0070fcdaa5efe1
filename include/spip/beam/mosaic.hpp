#pragma once
// A linear mosaic of pointings on one image grid, by the rule of linmos and of CASA:
// per channel M = sum_p B_p w_p X_p / sum_p B_p^2 w_p, with X_p a pointing's apparent
// plane (the sky seen through its beam B_p) and w_p = 1 / sigma_p^2 from its residual
// noise. M's noise is 1 / sqrt(sum_p B_p^2 w_p). spip keeps a mosaic as the apparent
// plane A = M R of the effective response R = sqrt(sum_p w_p B_p^2 / w_max), w_max the
// best pointing's weight: M's noise over the best pointing's, sigma_min / R, as 1 / B is
// for one pointing. For one pointing A = X_p and R = B_p, so that everything after
// imaging (the pb cube, the corrected cubes blank where R < beam.limit, the Faraday
// stage and the catalogue) treats one pointing and many alike; A's noise is flat,
// sigma_min, as one pointing's apparent noise is. Where pointings overlap, R exceeds 1.
#include <vector>

#include "spip/beam/primary_beam.hpp"
#include "spip/common/celestial.hpp"

namespace spip::beam {

// The pointings, and their weights in each channel.
struct Pointings {
  std::vector<Direction> centres;
  std::vector<std::vector<double>> weights;  // [channel][pointing], 1 / sigma^2; unused with one pointing
};

// The effective response over rows [first_row, first_row + rows) of channel `channel`
// (`grid.pointing` unused): with one pointing, exactly response_rows about it.
std::vector<float> effective_response_rows(const PrimaryBeam& beam, const ImageGrid& grid, const Pointings& pointings,
                                           int channel, double freq_hz, int first_row, int rows);

// The largest effective response any pixel of the image can have between low_hz and
// high_hz, whatever the pointings' weights (with each w_p <= w_max, R <= sqrt(sum_p
// B_p^2), which equal weights reach), or the first value found at or above `enough`.
// Below beam.limit, every corrected pixel would be blank. It is sought where it can
// peak: a beam's main lobe shrinks as the frequency rises, so at the band's edges, and
// where the model changes with frequency otherwise (a cube's planes, the frequencies at
// which a polynomial model takes its next fit); a limit below the sidelobes (the Airy
// pattern's first, 0.0175) may find them elsewhere.
double highest_response(const PrimaryBeam& beam, const ImageGrid& grid, const std::vector<Direction>& centres,
                        double low_hz, double high_hz, double enough);

// One channel's mosaic on a whole image: its pointings' beams weighed once, then any
// number of planes added a pointing at a time. (Its response is effective_response_rows().)
class ChannelMosaic {
 public:
  ChannelMosaic(const PrimaryBeam& beam, const ImageGrid& grid, const std::vector<Direction>& centres,
                const std::vector<double>& weights, double freq_hz);

  // out += pointing p's share of `plane`, B_p w_p / sqrt(sum_p B_p^2 w_p w_max) times it
  // (0 where no pointing's beam reaches): summed over the pointings, the apparent mosaic.
  void accumulate(std::size_t pointing, const float* plane, float* out) const;

 private:
  std::vector<std::vector<float>> factors_;  // per pointing: B_p w_p / sqrt(sum B^2 w w_max)
};

}  // namespace spip::beam
