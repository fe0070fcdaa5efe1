#pragma once
// One image channel of the rank's visibility blocks, gathered where the imager takes it
// (on the GPU: its pinned staging memory), with the imaging weights applied. With the
// blocks' channel planes this is, per part, two contiguous copies and one scaled copy
// of the coordinates: all the host does with a channel's rows before imaging (with
// natural weights).
#include <cstddef>
#include <vector>

#include "spip/imaging/channel_view.hpp"
#include "spip/imaging/geometry.hpp"
#include "spip/imaging/weighting.hpp"
#include "spip/ms/band.hpp"
#include "spip/ms/ms_reader.hpp"

namespace spip::pipeline {

// What the QA records of a channel's data.
struct ChannelStats {
  double freq_hz = 0, visibilities = 0, samples = 0, weight_sum = 0, max_uv = 0;
  double nonfinite_samples = 0;  // NaN or Inf correlation samples, treated as flagged
  double wait_s = 0;  // time the imaging waited for this channel
};

// The rows of every input, which are the same for every channel of that input: their
// coordinates (metres, [k][3]; MsReader::uvw_m() of each input in turn) and, per input,
// its rows in order of decreasing uv distance, so that a channel's longest unflagged
// baseline is found without a pass over its rows.
class RowCoordinates {
 public:
  // `input_rows`: how many of the rows each input holds, in order; empty: one input.
  explicit RowCoordinates(std::vector<double> uvw_m, std::vector<std::size_t> input_rows = {});
  std::size_t rows() const { return uvw_m_.size() / 3; }
  std::size_t input_rows(int input) const { return input_rows_.at(static_cast<std::size_t>(input)); }
  const std::vector<std::size_t>& rows_per_input() const { return input_rows_; }
  std::size_t inputs() const { return input_rows_.size(); }
  const double* input_uvw_m(int input) const { return uvw_m_.data() + 3 * first_.at(static_cast<std::size_t>(input)); }
  // The largest uv distance (metres) of a row of `input` whose Stokes I weight
  // (weights[4k], k counted within the input) is positive; 0 if none.
  double max_uv_m(int input, const float* weights) const;

 private:
  std::vector<double> uvw_m_;
  std::vector<std::size_t> input_rows_, first_;
  std::vector<std::vector<std::size_t>> by_uv_;
};

// The rows an image channel stages: those of each input it has a part of, part after
// part (one for a gap, weight 0, so that both backends blank it as a flagged channel).
std::size_t channel_rows(const ms::BandChannel& channel, const RowCoordinates& coordinates);

// Writes the image channel into `out`, which holds channel_rows() rows: part after part,
// the input's rows with their coordinates scaled from the part's frequency to the
// channel's (a binned channel grids each visibility at its own frequency), weights and
// visibilities; then applies `scheme` to the weights. blocks[i] is input i's (of the
// stored channels that the parts name). On a GPU rank `scheme` is natural weighting:
// none; its imager weights on the device. One thread copies at a fraction of the
// memory's bandwidth; where the cores are free (a GPU rank's), `threads` copy
// together. With a group, the blocks hold this rank's share of the rows; the weighting
// counts its densities over the group, and the numbers returned are the channel's.
ChannelStats gather_channel(const std::vector<ms::VisBlock>& blocks, const ms::BandChannel& channel,
                            const RowCoordinates& coordinates, const imaging::ImageGeometry& geometry,
                            const imaging::WeightingScheme& scheme, const imaging::ChannelView& out, int threads,
                            const imaging::RowGroup* group = nullptr);

}  // namespace spip::pipeline
