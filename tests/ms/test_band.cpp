// ms::merge_band: the channels of several inputs on one regular axis, against the
// frequencies written out by hand.
#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

#include "spip/error.hpp"
#include "spip/ms/band.hpp"

namespace spip::ms {
namespace {

// The metadata of one input: `n` channels from `first` in steps of `step` (negative:
// stored high to low), each `width` wide.
MsInfo window(const std::string& path, double first, double step, int n, double width, int spw = 0) {
  MsInfo info;
  info.path = path;
  info.spw = spw;
  info.num_windows = spw + 1;
  for (int c = 0; c < n; ++c) {
    info.freq_hz.push_back(first + c * step);
    info.chan_width_hz.push_back(step < 0 ? -width : width);
  }
  return info;
}

std::vector<int> all_of(const MsInfo& info) {
  std::vector<int> channels(info.freq_hz.size());
  std::iota(channels.begin(), channels.end(), 0);
  return channels;
}

Band merge(const std::vector<MsInfo>& inputs) {
  std::vector<std::vector<int>> selected;
  for (const MsInfo& info : inputs) selected.push_back(all_of(info));
  return merge_band(inputs, selected);
}

std::string error_of(const std::vector<MsInfo>& inputs) {
  try {
    merge(inputs);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no InputError";
}

// Sub-bands given in any order, one missing, one stored high to low: sorted low to
// high, the missing one blank at its place, every channel named by its input.
TEST(Band, SubBandsSortedWithAGap) {
  const double step = 195312.5;
  std::vector<MsInfo> inputs;
  for (int sb : {5, 0, 3, 1, 4, 7, 2})  // 6 missing
    inputs.push_back(window("sb" + std::to_string(sb) + ".ms", 120e6 + 2 * sb * step, step, 2, step));
  inputs[2] = window("sb3.ms", 120e6 + 7 * step, -step, 2, step);  // high to low
  const Band band = merge(inputs);
  ASSERT_EQ(band.size(), 16);
  EXPECT_EQ(band.step_hz, step);
  EXPECT_EQ(band.gaps(), 2);
  for (int k = 0; k < 16; ++k) {
    const BandChannel& c = band.channels[static_cast<std::size_t>(k)];
    EXPECT_NEAR(c.freq_hz, 120e6 + k * step, 1e-6) << k;
    const int sb = k / 2;
    if (sb == 6) {
      EXPECT_TRUE(c.parts.empty()) << k;
      continue;
    }
    ASSERT_EQ(c.parts.size(), 1u) << k;
    const MsInfo& from = inputs[static_cast<std::size_t>(c.parts[0].input)];
    EXPECT_EQ(from.path, "sb" + std::to_string(sb) + ".ms");
    EXPECT_EQ(from.freq_hz[static_cast<std::size_t>(c.parts[0].channel)], c.freq_hz);
  }
  // Image channels 6 and 7 come from sb3.ms, stored channels 1 and 0: one read of [0, 2).
  EXPECT_EQ(band.stored_range(2, 6, 8), (std::pair<int, int>{0, 2}));
  EXPECT_EQ(band.stored_range(2, 0, 6), (std::pair<int, int>{0, 0}));
}

// The same band observed twice: one image channel per frequency, with both parts.
TEST(Band, SameChannelsMerge) {
  const Band band = merge({window("a.ms", 1e9, 1e6, 4, 1e6), window("b.ms", 1e9 + 0.4, 1e6, 4, 1e6)});
  ASSERT_EQ(band.size(), 4);
  for (const BandChannel& c : band.channels) EXPECT_EQ(c.parts.size(), 2u);
}

// Overlapping channels and channels off the axis are refused, naming both.
TEST(Band, OverlapsAndIrregularChannelsAreRefused) {
  std::string message = error_of({window("a.ms", 1e9, 1e6, 4, 1e6), window("b.ms", 1e9 + 2.5e6, 1e6, 4, 1e6)});
  for (const char* part : {"a.ms", "b.ms", "overlaps"}) EXPECT_NE(message.find(part), std::string::npos) << message;
  message = error_of({window("a.ms", 1e9, 1e6, 4, 1e6), window("b.ms", 1e9, 1e6, 4, 0.5e6)});
  EXPECT_NE(message.find("overlaps"), std::string::npos) << message;
  message = error_of({window("a.ms", 1e9, 1e6, 4, 1e6), window("b.ms", 1e9 + 10.5e6, 1e6, 4, 1e6, 3)});
  for (const char* part : {"b.ms (spectral window 3)", "regular"})
    EXPECT_NE(message.find(part), std::string::npos) << message;
}

// A selection keeps its channels only, and one channel's axis step is its width.
TEST(Band, SelectionAndALoneChannel) {
  const MsInfo info = window("a.ms", 1e9, 1e6, 10, 0.9e6);
  const Band band = merge_band({info}, {{7, 3, 4}});
  ASSERT_EQ(band.size(), 5);  // 3, 4, gap 5, gap 6, 7
  EXPECT_EQ(band.gaps(), 2);
  EXPECT_EQ(band.channels[0].parts[0].channel, 3);
  const Band lone = merge_band({info}, {{2}});
  ASSERT_EQ(lone.size(), 1);
  EXPECT_EQ(lone.step_hz, 0.9e6);
  EXPECT_THROW(merge_band({info}, {{}}), InputError);
}

// Bins as WSClean's -channels-out: equal widths from the lowest channel's lower edge to
// the highest's upper edge, each bin's channels in it, its frequency its centre.
TEST(Band, BinsOfEqualWidth) {
  const Band band = merge({window("a.ms", 120.6e6, 1.2e6, 40, 1.2e6)});
  const Band ten = bin_band(band, 10, 0);
  ASSERT_EQ(ten.size(), 10);
  EXPECT_DOUBLE_EQ(ten.step_hz, 4.8e6);
  for (int k = 0; k < 10; ++k) {
    const BandChannel& bin = ten.channels[static_cast<std::size_t>(k)];
    EXPECT_NEAR(bin.freq_hz, 122.4e6 + 4.8e6 * k, 1e-3);
    EXPECT_EQ(bin.width_hz, 4.8e6);
    ASSERT_EQ(bin.parts.size(), 4u);
    for (int j = 0; j < 4; ++j) EXPECT_EQ(bin.parts[static_cast<std::size_t>(j)].channel, 4 * k + j);
  }
  // By width: as many bins as cover the band, the last one running past it.
  const Band wide = bin_band(band, 0, 5e6);
  ASSERT_EQ(wide.size(), 10);
  std::size_t parts = 0;
  for (const BandChannel& bin : wide.channels) parts += bin.parts.size();
  EXPECT_EQ(parts, 40u);
  EXPECT_NEAR(wide.channels.front().freq_hz, 122.5e6, 1e-3);
  // More bins than channels would leave bins between them, however many (a width of
  // 1 mHz once overflowed the count and crashed); one bin wider than the band would be
  // labelled outside the data.
  try {
    bin_band(band, 41, 0);
    ADD_FAILURE() << "41 bins of 40 channels were made";
  } catch (const InputError& e) {  // in the user's numbers, 48 MHz / 41, not "41.000000"
    EXPECT_NE(std::string(e.what()).find("40 channels into 41 bins of 1170731.7"), std::string::npos) << e.what();
  }
  EXPECT_THROW(bin_band(band, 0, 1e-3), InputError);
  EXPECT_THROW(bin_band(band, 0, 1e-300), InputError);
  EXPECT_THROW(bin_band(band, 0, 1e9), InputError);
  EXPECT_EQ(bin_band(band, 0, 48e6).size(), 1);
  EXPECT_EQ(bin_band(band, 0, 48.5e6).size(), 1);  // within a channel of the band: as ATCA's 32 channels
  EXPECT_THROW(bin_band(band, 0, 49.3e6), InputError);
}

// Where a bin lacks some of its channels (a gap, or the band's end), its data lie at
// their mean frequency, not at the centre its FITS label gives: RM synthesis takes that.
// Full bins keep their centre to the bit.
TEST(Band, BinsThatLackChannelsHaveTheirDataOffCentre) {
  const Band band = merge({window("a.ms", 120.6e6, 1.2e6, 40, 1.2e6)});
  const Band ten = bin_band(band, 10, 0);
  EXPECT_EQ(ten.off_centre(), 0);
  EXPECT_EQ(ten.data_freq_hz(), ten.freq_hz());
  // 40 channels into 39 bins of 48/39 MHz: bin k holds channels whose centres fall in it.
  const Band odd = bin_band(band, 39, 0);
  ASSERT_EQ(odd.size(), 39);
  EXPECT_GT(odd.off_centre(), 30);
  for (const BandChannel& bin : odd.channels) {
    double sum = 0;
    for (const ChannelPart& part : bin.parts) sum += 120.6e6 + 1.2e6 * part.channel;
    ASSERT_FALSE(bin.parts.empty());
    const double mean = sum / static_cast<double>(bin.parts.size());
    EXPECT_NEAR(bin.data_freq_hz > 0 ? bin.data_freq_hz : bin.freq_hz, mean, 1e-3) << bin.freq_hz;
  }
  // Two windows a channel apart (127.8 MHz missing), in bins of 2.4 MHz: the fourth bin,
  // labelled 128.4 MHz, holds the 129.0 MHz channel alone.
  const Band gap = merge({window("a.ms", 120.6e6, 1.2e6, 6, 1.2e6), window("b.ms", 129.0e6, 1.2e6, 3, 1.2e6)});
  const Band five = bin_band(gap, 5, 0);
  ASSERT_EQ(five.size(), 5);
  EXPECT_EQ(five.off_centre(), 1);
  EXPECT_NEAR(five.channels[3].freq_hz, 128.4e6, 1e-3);
  EXPECT_NEAR(five.data_freq_hz()[3], 129.0e6, 1e-3);
}

// A bin over a gap between sub-bands holds no part: a blank image channel.
TEST(Band, BinsOverAGapAreBlank) {
  const Band band = merge({window("low.ms", 100e6, 1e6, 4, 1e6), window("high.ms", 108e6, 1e6, 4, 1e6)});
  const Band bins = bin_band(band, 6, 0);  // 12 MHz in bins of 2 MHz
  ASSERT_EQ(bins.size(), 6);
  const std::vector<std::size_t> want = {2, 2, 0, 0, 2, 2};
  for (std::size_t k = 0; k < want.size(); ++k) EXPECT_EQ(bins.channels[k].parts.size(), want[k]) << k;
}

}  // namespace
}  // namespace spip::ms
