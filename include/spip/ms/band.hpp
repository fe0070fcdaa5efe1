#pragma once
// One frequency axis from every input: the selected channels of several Measurement
// Sets and spectral windows, sorted by frequency on the regular axis that FITS cubes
// need. No casacore here: the pipeline plans with it.
#include <string>
#include <utility>
#include <vector>

#include "spip/ms/ms_reader.hpp"

namespace spip::ms {

// A channel of one input (an MsReader: one MS and one spectral window), as stored.
struct ChannelPart {
  int input = 0;
  int channel = 0;
};

// One image channel. Several parts: inputs holding the same channel (the same band
// observed more than once), gridded together. No parts: a gap between windows or
// sub-bands, kept as a blank plane so that the axis stays regular.
struct BandChannel {
  double freq_hz = 0;
  double width_hz = 0;
  std::vector<ChannelPart> parts;
  // Where a bin's data lie, the mean frequency of its channels, where that is not its
  // centre (channels missing from the bin); 0: at freq_hz.
  double data_freq_hz = 0;
};

struct Band {
  std::vector<BandChannel> channels;  // low to high frequency, whatever the storage order
  double step_hz = 0;                 // of the regular axis (a lone channel: its width)

  int size() const { return static_cast<int>(channels.size()); }
  std::vector<double> freq_hz() const;
  // Each channel's data_freq_hz, or its freq_hz where that is 0.
  std::vector<double> data_freq_hz() const;
  // How many channels' data lie off their centre.
  int off_centre() const;
  int gaps() const;
  // Whether every channel but gaps holds parts of all `inputs` inputs.
  bool every_channel_has_all(int inputs) const;
  // The stored channels [first, last) of `input` that image channels [begin, end)
  // take (first == last: none), so that a block of image channels is one read per input.
  std::pair<int, int> stored_range(int input, int begin, int end) const;
};

// The rows an image channel holds: each part's input's (input_rows[input]).
std::size_t channel_rows(const BandChannel& channel, const std::vector<std::size_t>& input_rows);

// Merges the channels `selected[i]` of input `inputs[i]`. Channels within 1 Hz of each
// other and of the same width are one image channel; channels that overlap otherwise,
// or that do not lie on one regular axis, are refused with an InputError naming both
// inputs and channels.
Band merge_band(const std::vector<MsInfo>& inputs, const std::vector<std::vector<int>>& selected);

// The band's channels binned into image channels of equal width, as WSClean's
// -channels-out: `count` of them across the band (from the lowest channel's lower edge
// to the highest's upper edge), or as many as `width_hz` takes. A bin holds the parts of
// every channel centred in it, each to be gridded at its own frequency; its frequency
// is its centre, its width the bin's, and a bin without channels is blank. A bin that
// lacks some channels (a gap, a flagged window, a last bin partly past the band's end)
// has its data at their mean frequency (data_freq_hz), which RM synthesis must take.
Band bin_band(const Band& band, int count, double width_hz);

// "path", or "path (field F, spectral window N)" with either where the MS has several: for
// messages.
std::string input_name(const MsInfo& info);

}  // namespace spip::ms
