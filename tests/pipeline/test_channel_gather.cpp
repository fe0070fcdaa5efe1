// pipeline::gather_channel, the host's whole work per channel before imaging, on real
// tables: the sample with 30 % of its correlations flagged, read as two inputs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <complex>
#include <filesystem>
#include <vector>

#include "scratch.hpp"
#include "spip/common/constants.hpp"
#include "spip/error.hpp"
#include "spip/ms/ms_reader.hpp"
#include "spip/sim/ms_writer.hpp"
#include "spip/sim/sky_model.hpp"
#include "spip/stages/channel_gather.hpp"

namespace spip::pipeline {
namespace {

namespace fs = std::filesystem;
const std::string data_dir = SPIP_TEST_DATA;

class ChannelGather : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    path_ = spip::test::scratch_path("flagged.ms").string();
    sim::Corruption corruption;
    corruption.flag_fraction = 0.3;
    sim::simulate_from_template(data_dir + "/oskar_small.ms", path_,
                                sim::read_sky_model(data_dir + "/oskar_small.sky.txt"), corruption);
  }

  // Channels [8, 12) of the flagged set and, with `two`, of the sample: two inputs, as
  // a run reads them.
  std::vector<ms::VisBlock> blocks(bool two = true) const {
    std::vector<ms::VisBlock> out{ms::MsReader(path_, ms::Selection{}).read(8, 12)};
    if (two) out.push_back(ms::MsReader(data_dir + "/oskar_small.ms", ms::Selection{}).read(8, 12));
    return out;
  }
  static std::vector<double> uvw_of(const std::vector<ms::VisBlock>& blocks) {
    std::vector<double> uvw;
    for (const ms::VisBlock& b : blocks) uvw.insert(uvw.end(), b.uvw_m.begin(), b.uvw_m.end());
    return uvw;
  }
  static RowCoordinates coordinates_of(const std::vector<ms::VisBlock>& blocks) {
    std::vector<std::size_t> rows;
    for (const ms::VisBlock& b : blocks) rows.push_back(b.num_rows());
    return RowCoordinates(uvw_of(blocks), rows);
  }

  static std::string path_;
};
std::string ChannelGather::path_;

struct Gathered {
  ChannelStats stats;
  std::vector<double> uvw_m;
  std::vector<float> weights;
  std::vector<std::complex<float>> vis;
};

Gathered gather(const std::vector<ms::VisBlock>& blocks, const RowCoordinates& coordinates, int channel,
                const imaging::WeightingScheme& scheme, int threads) {
  const auto geometry = imaging::ImageGeometry::make(256, 40.0 / 206264.806, 1.2);
  Gathered out;
  out.weights.assign(4 * coordinates.rows(), -1.0f);
  out.vis.assign(4 * coordinates.rows(), {-1.0f, -1.0f});
  out.uvw_m.assign(3 * coordinates.rows(), -1.0);
  const imaging::ChannelView view{coordinates.rows(), out.uvw_m.data(), out.weights.data(), out.vis.data()};
  // The channel of every input, as the band merges inputs that share their channels.
  ms::BandChannel merged{blocks.front().freq_hz[static_cast<std::size_t>(channel - blocks.front().chan_begin)], 0, {}};
  for (std::size_t i = 0; i < blocks.size(); ++i) merged.parts.push_back({static_cast<int>(i), channel});
  out.stats = gather_channel(blocks, merged, coordinates, geometry, scheme, view, threads);
  return out;
}

// Natural weights and visibilities come out row by row as the blocks hold them, input
// after input; the QA numbers equal a direct double-precision loop over the rows.
TEST_F(ChannelGather, CopiesTheChannelAndCountsItAsADirectLoopDoes) {
  int longest_flagged = 0;  // channels whose longest baseline is flagged
  for (bool two : {false, true}) {
    const std::vector<ms::VisBlock> in = blocks(two);
    const RowCoordinates coordinates = coordinates_of(in);
    for (int channel = 8; channel < 12; ++channel) {
      const Gathered out = gather(in, coordinates, channel, {}, 1);
      double visibilities = 0, weight_sum = 0, max_uv_sq = 0;
      std::size_t k = 0;
      for (const ms::VisBlock& block : in)
        for (std::size_t r = 0; r < block.num_rows(); ++r, ++k) {
          for (int s = 0; s < 4; ++s) {
            ASSERT_EQ(out.weights[4 * k + s], block.weight[block.index(r, channel - 8, s)]);
            ASSERT_EQ(out.vis[4 * k + s], block.vis[block.index(r, channel - 8, s)]);
          }
          const double w = block.weight[block.index(r, channel - 8, 0)];
          if (w > 0) {
            visibilities += 1;
            weight_sum += w;
            max_uv_sq = std::max(max_uv_sq, std::pow(block.uvw_m[3 * r], 2) + std::pow(block.uvw_m[3 * r + 1], 2));
          }
        }
      EXPECT_EQ(out.uvw_m, uvw_of(in));  // each part at the channel's own frequency
      EXPECT_EQ(out.stats.freq_hz, in.front().freq_hz[channel - 8]);
      EXPECT_EQ(out.stats.samples, static_cast<double>(k));
      EXPECT_EQ(out.stats.visibilities, visibilities);
      EXPECT_LT(visibilities, 0.9 * static_cast<double>(k));  // the flags are there
      EXPECT_NEAR(out.stats.weight_sum, weight_sum, 1e-12 * weight_sum);
      EXPECT_NEAR(out.stats.max_uv, std::sqrt(max_uv_sq) * out.stats.freq_hz / speed_of_light, 1e-9);
      const std::vector<float> unflagged(out.weights.size(), 1.0f);
      longest_flagged += coordinates.max_uv_m(0, out.weights.data()) < coordinates.max_uv_m(0, unflagged.data());
    }
  }
  EXPECT_GT(longest_flagged, 0);  // the flags decide max_uv somewhere
}

// More threads copy the same bytes and add the same sums in the same order.
TEST_F(ChannelGather, ThreadsDoNotChangeABit) {
  const std::vector<ms::VisBlock> in = blocks();
  const RowCoordinates coordinates = coordinates_of(in);
  imaging::WeightingScheme briggs;
  briggs.mode = Weighting::briggs;
  const Gathered one = gather(in, coordinates, 10, briggs, 1);
  for (int threads : {2, 3, 7}) {
    const Gathered many = gather(in, coordinates, 10, briggs, threads);
    EXPECT_EQ(many.weights, one.weights);
    EXPECT_EQ(many.vis, one.vis);
    EXPECT_EQ(many.stats.weight_sum, one.stats.weight_sum);
    EXPECT_EQ(many.stats.visibilities, one.stats.visibilities);
  }
}

// The imaging weights are those of apply_weighting on the coordinates in wavelengths,
// and the QA numbers are of the natural weights.
TEST_F(ChannelGather, WeightsAsApplyWeighting) {
  const std::vector<ms::VisBlock> in = blocks();
  const RowCoordinates coordinates = coordinates_of(in);
  imaging::WeightingScheme briggs;
  briggs.mode = Weighting::briggs;
  const Gathered natural = gather(in, coordinates, 9, {}, 1);
  const Gathered weighted = gather(in, coordinates, 9, briggs, 2);
  EXPECT_EQ(weighted.vis, natural.vis);
  const double inv_lambda = natural.stats.freq_hz / speed_of_light;
  std::vector<double> uvw_lambda = uvw_of(in);
  for (double& x : uvw_lambda) x *= inv_lambda;
  std::vector<float> expected = natural.weights;
  const auto geometry = imaging::ImageGeometry::make(256, 40.0 / 206264.806, 1.2);
  imaging::apply_weighting(geometry, briggs, uvw_lambda.data(), 1.0, coordinates.rows(), 4, expected.data());
  EXPECT_EQ(weighted.weights, expected);
  EXPECT_NE(weighted.weights, natural.weights);
  EXPECT_EQ(weighted.stats.weight_sum, natural.stats.weight_sum);
}

// A binned channel holds one part per stored channel: each part's rows with their
// coordinates scaled from its own frequency to the channel's, so that the imager's
// u = uvw_m nu / c puts every visibility where its own frequency does.
TEST_F(ChannelGather, ABinnedChannelGridsEachPartAtItsOwnFrequency) {
  const std::vector<ms::VisBlock> in = blocks(false);
  const RowCoordinates coordinates = coordinates_of(in);
  const ms::VisBlock& block = in.front();
  const std::size_t n = block.num_rows();
  const ms::BandChannel bin{0.5 * (block.freq_hz[1] + block.freq_hz[2]), 0, {{0, 9}, {0, 10}}};
  ASSERT_EQ(channel_rows(bin, coordinates), 2 * n);
  std::vector<float> weights(8 * n);
  std::vector<std::complex<float>> vis(8 * n);
  std::vector<double> uvw(6 * n);
  const imaging::ChannelView view{2 * n, uvw.data(), weights.data(), vis.data()};
  const auto geometry = imaging::ImageGeometry::make(256, 40.0 / 206264.806, 1.2);
  const ChannelStats stats = gather_channel(in, bin, coordinates, geometry, {}, view, 2);
  double visibilities = 0;
  for (int part = 0; part < 2; ++part) {
    const double ratio = block.freq_hz[static_cast<std::size_t>(1 + part)] / bin.freq_hz;
    for (std::size_t r = 0; r < n; ++r) {
      for (int k = 0; k < 3; ++k) ASSERT_EQ(uvw[3 * (part * n + r) + k], block.uvw_m[3 * r + k] * ratio);
      for (int s = 0; s < 4; ++s) ASSERT_EQ(weights[4 * (part * n + r) + s], block.weight[block.index(r, 1 + part, s)]);
      visibilities += block.weight[block.index(r, 1 + part, 0)] > 0;
    }
  }
  EXPECT_EQ(stats.visibilities, visibilities);
  EXPECT_EQ(stats.samples, static_cast<double>(2 * n));
}

TEST_F(ChannelGather, RowsOtherThanTheCoordinatesAreAnError) {
  const std::vector<ms::VisBlock> in = blocks();
  const RowCoordinates coordinates(in.front().uvw_m);
  EXPECT_THROW(gather(in, coordinates, 8, {}, 1), Error);
}

}  // namespace
}  // namespace spip::pipeline
