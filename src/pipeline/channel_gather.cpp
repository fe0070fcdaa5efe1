#include "channel_gather.hpp"

#include <omp.h>

#include <algorithm>
#include <array>
#include <complex>
#include <cmath>
#include <numeric>
#include <string>

#include "spip/common/constants.hpp"
#include "spip/error.hpp"
#include "spip/ms/stokes.hpp"

namespace spip::pipeline {

namespace {

// Rows are copied in a fixed number of pieces, whatever the number of threads, and
// the pieces' weight sums added in order: the same sums on every run and backend.
constexpr std::size_t pieces = 64;

struct PieceSums {
  double visibilities = 0, weight_sum = 0;
};

// Copies rows [begin, end) of one channel plane's weights and adds up their Stokes I
// weights in the same pass.
PieceSums copy_weights(const float* in, std::size_t begin, std::size_t end, float* out) {
  constexpr std::size_t stokes = ms::num_stokes;
  PieceSums sums;
  for (std::size_t i = stokes * begin; i < stokes * end; i += stokes) {
    std::copy_n(in + i, stokes, out + i);
    const float w = in[i + ms::stokes_i];
    if (w > 0) {
      sums.visibilities += 1;
      sums.weight_sum += w;
    }
  }
  return sums;
}

}  // namespace

RowCoordinates::RowCoordinates(std::vector<double> uvw_m) : uvw_m_(std::move(uvw_m)), by_uv_(rows()) {
  std::vector<double> uv_sq(rows());
  for (std::size_t k = 0; k < rows(); ++k) uv_sq[k] = uvw_m_[3 * k] * uvw_m_[3 * k] + uvw_m_[3 * k + 1] * uvw_m_[3 * k + 1];
  std::iota(by_uv_.begin(), by_uv_.end(), std::size_t{0});
  std::stable_sort(by_uv_.begin(), by_uv_.end(), [&](std::size_t a, std::size_t b) { return uv_sq[a] > uv_sq[b]; });
}

double RowCoordinates::max_uv_m(const float* weights) const {
  for (std::size_t k : by_uv_)
    if (weights[ms::num_stokes * k + ms::stokes_i] > 0) return std::hypot(uvw_m_[3 * k], uvw_m_[3 * k + 1]);
  return 0.0;
}

ChannelStats gather_channel(const std::vector<ms::VisBlock>& blocks, int absolute_channel,
                            const RowCoordinates& coordinates, const imaging::ImageGeometry& geometry,
                            const imaging::WeightingScheme& scheme, const imaging::ChannelView& out, int threads,
                            const imaging::RowGroup* group) {
  constexpr int stokes = ms::num_stokes;
  std::size_t rows = 0;
  for (const ms::VisBlock& block : blocks) rows += block.num_rows();
  if (rows != coordinates.rows() || out.rows != rows)
    SPIP_THROW(Error, "channel " + std::to_string(absolute_channel) + " has " + std::to_string(rows) +
                          " rows, but the inputs' coordinates " + std::to_string(coordinates.rows()) +
                          " and the room made for it " + std::to_string(out.rows));
  ChannelStats stats;
  std::size_t first = 0;  // of the block, in the channel
  for (const ms::VisBlock& block : blocks) {
    const std::size_t plane = block.index(0, absolute_channel - block.chan_begin, 0), n = block.num_rows();
    float* weights = out.weights + stokes * first;
    std::complex<float>* vis = out.vis + stokes * first;
    std::array<PieceSums, pieces> sums;
#pragma omp parallel num_threads(threads)
    {
      // Each thread a run of pieces; its visibilities in one copy, the fastest there is.
      const std::size_t team = omp_get_num_threads(), t = omp_get_thread_num();
      const std::size_t p_begin = pieces * t / team, p_end = pieces * (t + 1) / team;
      for (std::size_t p = p_begin; p < p_end; ++p)
        sums[p] = copy_weights(block.weight.data() + plane, n * p / pieces, n * (p + 1) / pieces, weights);
      const std::size_t begin = stokes * (n * p_begin / pieces), end = stokes * (n * p_end / pieces);
      std::copy(block.vis.begin() + plane + begin, block.vis.begin() + plane + end, vis + begin);
    }
    for (const PieceSums& piece : sums) {
      stats.visibilities += piece.visibilities;
      stats.weight_sum += piece.weight_sum;
    }
    stats.nonfinite_samples += static_cast<double>(block.nonfinite_samples.at(absolute_channel - block.chan_begin));
    first += n;
  }
  // The first input's frequency: the inputs' channels agree to 1 Hz (require_same_channels).
  stats.freq_hz = blocks.front().freq_hz[absolute_channel - blocks.front().chan_begin];
  stats.samples = static_cast<double>(rows);
  const double inv_lambda = stats.freq_hz / speed_of_light;
  stats.max_uv = coordinates.max_uv_m(out.weights) * inv_lambda;
  imaging::apply_weighting(geometry, scheme, coordinates.uvw_m().data(), inv_lambda, rows, stokes, out.weights, group);
  if (group) {
    std::array<double, 4> sums{stats.visibilities, stats.samples, stats.weight_sum, stats.nonfinite_samples};
    group->sum(sums);
    stats.visibilities = sums[0];
    stats.samples = sums[1];
    stats.weight_sum = sums[2];
    stats.nonfinite_samples = sums[3];
    stats.max_uv = group->max(stats.max_uv);
  }
  return stats;
}

}  // namespace spip::pipeline
