#pragma once
// One channel of the rank's visibility blocks, gathered where the imager takes it (on
// the GPU: its pinned staging memory), with the imaging weights applied. With the
// blocks' channel planes this is two contiguous copies, all the host does with a
// channel's rows before imaging (with natural weights).
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

// The rows of every input, which are the same for every channel: their coordinates
// (metres, [k][3]; MsReader::uvw_m() of each input in turn) and the rows in order of
// decreasing uv distance, so that a channel's longest unflagged baseline is found
// without a pass over its rows.
class RowCoordinates {
 public:
  // `input_rows`: how many of the rows each input holds, in order; empty: one input.
  explicit RowCoordinates(std::vector<double> uvw_m, std::vector<std::size_t> input_rows = {});
  std::size_t rows() const { return uvw_m_.size() / 3; }
  const std::vector<double>& uvw_m() const { return uvw_m_; }
  const std::vector<std::size_t>& input_rows() const { return input_rows_; }
  // The largest uv distance (metres) of a row whose Stokes I weight (weights[4k]) is
  // positive; 0 if none.
  double max_uv_m(const float* weights) const;

 private:
  std::vector<double> uvw_m_;
  std::vector<std::size_t> input_rows_;
  std::vector<std::size_t> by_uv_;
};

// Writes the image channel's weights and visibilities into `out`, which holds
// coordinates.rows() rows, and applies `scheme` to the weights. blocks[i] is input i's
// (of the stored channels the channel's parts name, or none); the rows of an input
// without a part in the channel get weight 0, as flagged data do (on a GPU rank natural
// weighting: none; its imager weights on the device). One thread copies at a fraction
// of the memory's bandwidth; where the cores are free (a GPU rank's), `threads` copy
// together. With a group, the blocks hold this rank's share of the rows; the weighting
// counts its densities over the group, and the numbers returned are the channel's.
ChannelStats gather_channel(const std::vector<ms::VisBlock>& blocks, const ms::BandChannel& channel,
                            const RowCoordinates& coordinates, const imaging::ImageGeometry& geometry,
                            const imaging::WeightingScheme& scheme, const imaging::ChannelView& out, int threads,
                            const imaging::RowGroup* group = nullptr);

}  // namespace spip::pipeline
