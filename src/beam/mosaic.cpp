#include "spip/beam/mosaic.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>

#include "spip/error.hpp"

namespace spip::beam {
namespace {

ImageGrid about(ImageGrid grid, Direction pointing) {
  grid.pointing = pointing;
  return grid;
}

// sum_p w_p B_p^2 per pixel, from each pointing's response.
std::vector<double> weighted_power(const std::vector<std::vector<float>>& responses, const std::vector<double>& weights) {
  std::vector<double> power(responses.front().size(), 0.0);
  for (std::size_t p = 0; p < responses.size(); ++p)
    for (std::size_t i = 0; i < power.size(); ++i) power[i] += weights[p] * responses[p][i] * responses[p][i];
  return power;
}

std::vector<std::vector<float>> pointing_responses(const PrimaryBeam& beam, const ImageGrid& grid,
                                                   const std::vector<Direction>& centres, double freq_hz,
                                                   int first_row, int rows) {
  std::vector<std::vector<float>> responses;
  for (const Direction& centre : centres)
    responses.push_back(response_rows(beam, about(grid, centre), freq_hz, first_row, rows));
  return responses;
}

// The frequencies where a response can peak over [low_hz, high_hz]: see highest_response.
std::vector<double> peak_frequencies(const PrimaryBeam& beam, double low_hz, double high_hz) {
  std::vector<double> freq_hz{low_hz};
  if (high_hz > low_hz) freq_hz.push_back(high_hz);
  if (beam.cube)
    for (double plane_hz : beam.cube->freq_hz)
      if (plane_hz > low_hz && plane_hz < high_hz) freq_hz.push_back(plane_hz);
  // Just above the midpoint between two fits, where the higher one begins.
  for (std::size_t k = 0; k + 1 < beam.fits.size(); ++k) {
    const double lower = beam.fits[k].freq_hz, upper = beam.fits[k + 1].freq_hz;
    const double begins = 0.5 * (lower + upper) + 1e-6 * (upper - lower);
    if (begins > low_hz && begins < high_hz) freq_hz.push_back(begins);
  }
  return freq_hz;
}

// The image's pixel nearest a direction, (x, y), on the image's edge for one outside it.
std::pair<int, int> nearest_pixel(const ImageGrid& grid, Direction d) {
  const auto [l, m] = direction_cosines(d, grid.centre);
  const int half = grid.size / 2;
  const auto clamped = [&](double pixel) {
    return static_cast<int>(std::clamp(std::lround(pixel), 0L, static_cast<long>(grid.size - 1)));
  };
  return {clamped(half - l / grid.cell_rad), clamped(half + m / grid.cell_rad)};
}

// The best pointing's weight, the mosaic's reference.
double best_weight(const std::vector<Direction>& centres, const std::vector<double>& weights) {
  if (weights.size() != centres.size())
    SPIP_THROW(Error, "mosaic: " + std::to_string(weights.size()) + " weights for " + std::to_string(centres.size()) +
                          " pointings");
  const double best = *std::max_element(weights.begin(), weights.end());
  if (!(best > 0)) SPIP_THROW(Error, "mosaic: no pointing has a weight above 0");
  return best;
}

}  // namespace

std::vector<float> effective_response_rows(const PrimaryBeam& beam, const ImageGrid& grid, const Pointings& pointings,
                                           int channel, double freq_hz, int first_row, int rows) {
  if (pointings.centres.size() == 1)
    return response_rows(beam, about(grid, pointings.centres.front()), freq_hz, first_row, rows);
  const std::vector<double>& weights = pointings.weights.at(static_cast<std::size_t>(channel));
  const double best = best_weight(pointings.centres, weights);
  const std::vector<double> power =
      weighted_power(pointing_responses(beam, grid, pointings.centres, freq_hz, first_row, rows), weights);
  std::vector<float> response(power.size());
  for (std::size_t i = 0; i < power.size(); ++i) response[i] = static_cast<float>(std::sqrt(power[i] / best));
  return response;
}

double highest_response(const PrimaryBeam& beam, const ImageGrid& grid, const std::vector<Direction>& centres,
                        double low_hz, double high_hz, double enough) {
  if (centres.empty()) return 0;
  const std::vector<double> freq_hz = peak_frequencies(beam, low_hz, high_hz);
  double highest = 0;
  // Where any pointing alone reaches it, as at its own pixel for any realistic image, the
  // sum does: the whole image is scanned only for an image the beams barely reach.
  for (double f : freq_hz)
    for (const Direction& centre : centres) {
      const auto [x, y] = nearest_pixel(grid, centre);
      highest = std::max(highest, static_cast<double>(response_rows(beam, about(grid, centre), f, y, 1)[x]));
      if (highest >= enough) return highest;
    }
  const Pointings equal{centres, {std::vector<double>(centres.size(), 1.0)}};
  // The pointings' responses for a block of rows are held at once: about 16 MB of them.
  const std::int64_t row_values = static_cast<std::int64_t>(grid.size) * static_cast<std::int64_t>(centres.size());
  const int block_rows = static_cast<int>(std::max<std::int64_t>(1, (std::int64_t{1} << 22) / row_values));
  for (double f : freq_hz)
    for (int first = 0; first < grid.size; first += block_rows) {
      const std::vector<float> response =
          effective_response_rows(beam, grid, equal, 0, f, first, std::min(block_rows, grid.size - first));
      highest = std::max(highest, static_cast<double>(*std::max_element(response.begin(), response.end())));
      if (highest >= enough) return highest;
    }
  return highest;
}

ChannelMosaic::ChannelMosaic(const PrimaryBeam& beam, const ImageGrid& grid, const std::vector<Direction>& centres,
                             const std::vector<double>& weights, double freq_hz) {
  const double best = best_weight(centres, weights);
  const std::vector<std::vector<float>> responses = pointing_responses(beam, grid, centres, freq_hz, 0, grid.size);
  const std::vector<double> power = weighted_power(responses, weights);
  for (std::size_t p = 0; p < centres.size(); ++p) {
    std::vector<float>& factor = factors_.emplace_back(power.size());
    for (std::size_t i = 0; i < power.size(); ++i)
      factor[i] = power[i] > 0 ? static_cast<float>(weights[p] * responses[p][i] / std::sqrt(power[i] * best)) : 0.0f;
  }
}

void ChannelMosaic::accumulate(std::size_t pointing, const float* plane, float* out) const {
  const std::vector<float>& factor = factors_.at(pointing);
#pragma omp parallel for schedule(static)
  for (std::size_t i = 0; i < factor.size(); ++i) out[i] += factor[i] * plane[i];
}

}  // namespace spip::beam
