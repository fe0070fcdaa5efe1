#include "spip/stages/channel_gather.hpp"

#include <omp.h>

#include <algorithm>
#include <array>
#include <complex>
#include <cmath>
#include <numeric>
#include <string>

#include "spip/common/constants.hpp"
#include "spip/common/number_text.hpp"
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

RowCoordinates::RowCoordinates(std::vector<double> uvw_m, std::vector<std::size_t> input_rows)
    : uvw_m_(std::move(uvw_m)), input_rows_(std::move(input_rows)) {
  if (input_rows_.empty()) input_rows_.push_back(rows());
  if (std::accumulate(input_rows_.begin(), input_rows_.end(), std::size_t{0}) != rows())
    SPIP_THROW(Error, "row coordinates: the inputs' rows do not add up to the " + std::to_string(rows()) + " given");
  std::size_t first = 0;
  for (std::size_t n : input_rows_) {
    first_.push_back(first);
    const double* uvw = uvw_m_.data() + 3 * first;
    const auto uv_sq = [&](std::size_t k) { return uvw[3 * k] * uvw[3 * k] + uvw[3 * k + 1] * uvw[3 * k + 1]; };
    std::vector<std::size_t>& order = by_uv_.emplace_back(n);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return uv_sq(a) > uv_sq(b); });
    first += n;
  }
}

double RowCoordinates::max_uv_m(int input, const float* weights) const {
  const double* uvw = input_uvw_m(input);
  for (std::size_t k : by_uv_.at(static_cast<std::size_t>(input)))
    if (weights[ms::num_stokes * k + ms::stokes_i] > 0) return std::hypot(uvw[3 * k], uvw[3 * k + 1]);
  return 0.0;
}

std::size_t channel_rows(const ms::BandChannel& channel, const RowCoordinates& coordinates) {
  return std::max<std::size_t>(ms::channel_rows(channel, coordinates.rows_per_input()), 1);
}

namespace {

// Copies rows [0, n) of a channel plane into `weights` and `vis` with `threads`,
// adding up their Stokes I weights piece by piece in order.
void copy_plane(const float* plane_weights, const std::complex<float>* plane_vis, std::size_t n, int threads,
                float* weights, std::complex<float>* vis, ChannelStats& stats) {
  constexpr int stokes = ms::num_stokes;
  std::array<PieceSums, pieces> sums;
#pragma omp parallel num_threads(threads)
  {
    // Each thread a run of pieces; its visibilities in one copy, the fastest there is.
    const std::size_t team = omp_get_num_threads(), t = omp_get_thread_num();
    const std::size_t p_begin = pieces * t / team, p_end = pieces * (t + 1) / team;
    for (std::size_t p = p_begin; p < p_end; ++p)
      sums[p] = copy_weights(plane_weights, n * p / pieces, n * (p + 1) / pieces, weights);
    const std::size_t begin = stokes * (n * p_begin / pieces), end = stokes * (n * p_end / pieces);
    std::copy(plane_vis + begin, plane_vis + end, vis + begin);
  }
  for (const PieceSums& piece : sums) {
    stats.visibilities += piece.visibilities;
    stats.weight_sum += piece.weight_sum;
  }
}

}  // namespace

ChannelStats gather_channel(const std::vector<ms::VisBlock>& blocks, const ms::BandChannel& channel,
                            const RowCoordinates& coordinates, const imaging::ImageGeometry& geometry,
                            const imaging::WeightingScheme& scheme, const imaging::ChannelView& out, int threads,
                            const imaging::RowGroup* group) {
  constexpr int stokes = ms::num_stokes;
  if (blocks.size() != coordinates.inputs())
    SPIP_THROW(Error, "the channel at " + number_text(channel.freq_hz) + " Hz comes from " +
                          std::to_string(blocks.size()) + " inputs, but the coordinates are of " +
                          std::to_string(coordinates.inputs()));
  const std::size_t rows = channel_rows(channel, coordinates);
  if (out.rows != rows)
    SPIP_THROW(Error, "the channel at " + number_text(channel.freq_hz) + " Hz has " + std::to_string(rows) +
                          " rows, but the room made for it " + std::to_string(out.rows));
  ChannelStats stats;
  stats.freq_hz = channel.freq_hz;
  double max_uv_m = 0;  // at the channel's frequency
  std::size_t first = 0;  // of the part, in the channel
  for (const ms::ChannelPart& part : channel.parts) {
    const ms::VisBlock& block = blocks.at(static_cast<std::size_t>(part.input));
    const std::size_t n = coordinates.input_rows(part.input);
    if (block.num_rows() != n)
      SPIP_THROW(Error, "input " + std::to_string(part.input) + " has " + std::to_string(block.num_rows()) +
                            " rows, but its coordinates " + std::to_string(n));
    const int stored = part.channel - block.chan_begin;
    // 1 exactly where the part is at the channel's frequency: the same coordinates then.
    const double ratio = block.freq_hz.at(static_cast<std::size_t>(stored)) / channel.freq_hz;
    const double* uvw = coordinates.input_uvw_m(part.input);
    std::transform(uvw, uvw + 3 * n, out.uvw_m + 3 * first, [ratio](double x) { return x * ratio; });
    const std::size_t plane = block.index(0, stored, 0);
    float* weights = out.weights + stokes * first;
    copy_plane(block.weight.data() + plane, block.vis.data() + plane, n, threads, weights, out.vis + stokes * first,
               stats);
    stats.nonfinite_samples += static_cast<double>(block.nonfinite_samples.at(static_cast<std::size_t>(stored)));
    stats.samples += static_cast<double>(n);
    // Each member's block counts every FLAG_ROW row; the group's sum takes them once.
    if (!group || group->leads()) stats.samples += static_cast<double>(block.flagged_rows);
    max_uv_m = std::max(max_uv_m, coordinates.max_uv_m(part.input, weights) * ratio);
    first += n;
  }
  // The one row of a channel without rows here (a gap, or none of this group member's
  // share): weight 0, not what the staging area held from the channel before.
  if (first == 0) {
    std::fill(out.uvw_m, out.uvw_m + 3, 0.0);
    std::fill(out.weights, out.weights + stokes, 0.0f);
    std::fill(out.vis, out.vis + stokes, std::complex<float>{});
  }
  const double inv_lambda = stats.freq_hz / speed_of_light;
  stats.max_uv = max_uv_m * inv_lambda;
  imaging::apply_weighting(geometry, scheme, out.uvw_m, inv_lambda, rows, stokes, out.weights, group);
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
