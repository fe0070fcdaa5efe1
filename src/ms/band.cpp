#include "spip/ms/band.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "spip/common/number_text.hpp"
#include "spip/error.hpp"

namespace spip::ms {
namespace {

// Channel centres closer than this are the same channel: the inputs' frequencies are
// written in double precision by different tools.
constexpr double same_hz = 1.0;

struct Stored {
  double freq_hz, width_hz;
  ChannelPart part;
};

std::string hz(double value) { return number_text(value) + " Hz"; }

std::string describe(const std::vector<MsInfo>& inputs, const Stored& c) {
  return input_name(inputs[static_cast<std::size_t>(c.part.input)]) + " channel " + std::to_string(c.part.channel) +
         " (" + hz(c.freq_hz) + ", width " + hz(c.width_hz) + ")";
}

std::vector<Stored> sorted_channels(const std::vector<MsInfo>& inputs, const std::vector<std::vector<int>>& selected) {
  std::vector<Stored> all;
  for (std::size_t i = 0; i < inputs.size(); ++i)
    for (int c : selected[i])
      all.push_back({inputs[i].freq_hz.at(static_cast<std::size_t>(c)),
                     std::abs(inputs[i].chan_width_hz.at(static_cast<std::size_t>(c))),
                     {static_cast<int>(i), c}});
  if (all.empty()) SPIP_THROW(InputError, "no channel of any input is selected");
  std::stable_sort(all.begin(), all.end(), [](const Stored& a, const Stored& b) { return a.freq_hz < b.freq_hz; });
  return all;
}

// Consecutive channels (sorted) that are one image channel, or refused where they overlap.
std::vector<std::vector<Stored>> same_channels(const std::vector<MsInfo>& inputs, const std::vector<Stored>& all) {
  std::vector<std::vector<Stored>> merged;
  for (const Stored& c : all) {
    if (!merged.empty()) {
      const Stored& last = merged.back().front();
      const bool same = c.freq_hz - last.freq_hz <= same_hz;
      if (same && std::abs(c.width_hz - last.width_hz) <= same_hz && c.part.input != last.part.input) {
        merged.back().push_back(c);
        continue;
      }
      if (same || c.freq_hz - last.freq_hz < 0.5 * (c.width_hz + last.width_hz) - same_hz)
        SPIP_THROW(InputError, describe(inputs, c) + " overlaps " + describe(inputs, last) +
                                   "; channels of several inputs must be the same (centre and width within 1 Hz) "
                                   "or apart");
    }
    merged.push_back({c});
  }
  return merged;
}

}  // namespace

std::string input_name(const MsInfo& info) {
  std::string parts;
  if (info.num_fields > 1) parts += "field " + std::to_string(info.field);
  if (info.num_windows > 1) parts += (parts.empty() ? "" : ", ") + std::string("spectral window ") + std::to_string(info.spw);
  return parts.empty() ? info.path : info.path + " (" + parts + ")";
}

std::vector<double> Band::freq_hz() const {
  std::vector<double> freq;
  for (const BandChannel& c : channels) freq.push_back(c.freq_hz);
  return freq;
}

std::vector<double> Band::data_freq_hz() const {
  std::vector<double> freq;
  for (const BandChannel& c : channels) freq.push_back(c.data_freq_hz > 0 ? c.data_freq_hz : c.freq_hz);
  return freq;
}

int Band::off_centre() const {
  return static_cast<int>(std::count_if(channels.begin(), channels.end(),
                                        [](const BandChannel& c) { return c.data_freq_hz > 0; }));
}

int Band::gaps() const {
  return static_cast<int>(std::count_if(channels.begin(), channels.end(),
                                        [](const BandChannel& c) { return c.parts.empty(); }));
}

bool Band::every_channel_has_all(int inputs) const {
  std::vector<char> has(static_cast<std::size_t>(inputs));
  for (const BandChannel& channel : channels) {
    if (channel.parts.empty()) continue;
    std::fill(has.begin(), has.end(), 0);
    for (const ChannelPart& part : channel.parts) has.at(static_cast<std::size_t>(part.input)) = 1;
    if (std::count(has.begin(), has.end(), 1) < inputs) return false;
  }
  return true;
}

std::size_t channel_rows(const BandChannel& channel, const std::vector<std::size_t>& input_rows) {
  std::size_t rows = 0;
  for (const ChannelPart& part : channel.parts) rows += input_rows.at(static_cast<std::size_t>(part.input));
  return rows;
}

std::pair<int, int> Band::stored_range(int input, int begin, int end) const {
  int first = 0, last = 0;
  bool any = false;
  for (int k = begin; k < end; ++k)
    for (const ChannelPart& part : channels.at(static_cast<std::size_t>(k)).parts)
      if (part.input == input) {
        first = any ? std::min(first, part.channel) : part.channel;
        last = any ? std::max(last, part.channel + 1) : part.channel + 1;
        any = true;
      }
  return {first, last};
}

Band merge_band(const std::vector<MsInfo>& inputs, const std::vector<std::vector<int>>& selected) {
  // One FITS axis has one frame: frequencies of two frames differ by up to 1e-4 (LSRK
  // against TOPO), several channels of a fine band.
  for (const MsInfo& info : inputs)
    if (info.spectral_frame != inputs.front().spectral_frame)
      SPIP_THROW(InputError, input_name(info) + "'s frequencies are " + info.spectral_frame + ", " +
                                 input_name(inputs.front()) + "'s " + inputs.front().spectral_frame +
                                 ": expected one frame on one frequency axis (regrid with CASA's mstransform, "
                                 "outframe)");
  const std::vector<std::vector<Stored>> merged = same_channels(inputs, sorted_channels(inputs, selected));
  Band band;
  const Stored& lowest = merged.front().front();
  band.step_hz = merged.size() > 1 ? std::numeric_limits<double>::infinity() : lowest.width_hz;
  for (std::size_t k = 1; k < merged.size(); ++k)
    band.step_hz = std::min(band.step_hz, merged[k].front().freq_hz - merged[k - 1].front().freq_hz);
  for (const std::vector<Stored>& same : merged) {
    const Stored& c = same.front();
    const double offset = (c.freq_hz - lowest.freq_hz) / band.step_hz;
    const auto position = static_cast<std::size_t>(std::llround(offset));
    if (std::abs(offset - static_cast<double>(position)) * band.step_hz > same_hz)
      SPIP_THROW(InputError, describe(inputs, c) + " is not on the regular frequency axis of " +
                                 describe(inputs, lowest) + " with the smallest spacing of the inputs' channels (" +
                                 hz(band.step_hz) + ") that FITS cubes need");
    // Gaps in between: blank planes at their place on the axis.
    while (band.channels.size() < position)
      band.channels.push_back(
          {lowest.freq_hz + static_cast<double>(band.channels.size()) * band.step_hz, band.step_hz, {}});
    BandChannel channel{c.freq_hz, c.width_hz, {}};
    for (const Stored& s : same) channel.parts.push_back(s.part);
    band.channels.push_back(channel);
  }
  return band;
}

Band bin_band(const Band& band, int count, double width_hz) {
  const BandChannel &first = band.channels.front(), &last = band.channels.back();
  const double low = first.freq_hz - 0.5 * first.width_hz, high = last.freq_hz + 0.5 * last.width_hz;
  // In double until checked: a tiny width gives more bins than an int holds.
  const double bins = count > 0 ? count : std::ceil((high - low) / width_hz * (1 - 1e-12));
  if (count > 0) width_hz = (high - low) / count;
  if (!(bins <= band.size()))
    SPIP_THROW(InputError, "binning " + std::to_string(band.size()) + " channels into " + number_text(bins) + " bins" +
                               " of " + hz(width_hz) + " would leave bins between channels; expected at "
                               "most as many bins as channels (image.channels_out, image.channel_width)");
  // A bin wider than the band by more than a channel is labelled where no data are.
  if (width_hz > high - low + band.step_hz)
    SPIP_THROW(InputError, "image.channel_width " + hz(width_hz) + " is wider than the band's " +
                               hz(high - low) + "; its one bin would be labelled at a frequency outside "
                               "the data; use image.channels_out 1");
  count = static_cast<int>(bins);
  Band binned;
  binned.step_hz = width_hz;
  for (int k = 0; k < count; ++k) binned.channels.push_back({low + (k + 0.5) * width_hz, width_hz, {}});
  std::vector<double> freq_sum(static_cast<std::size_t>(count), 0.0);
  std::vector<int> members(static_cast<std::size_t>(count), 0);
  for (const BandChannel& channel : band.channels) {
    const auto k = static_cast<std::size_t>(
        std::clamp(static_cast<int>(std::floor((channel.freq_hz - low) / width_hz)), 0, count - 1));
    std::vector<ChannelPart>& parts = binned.channels[k].parts;
    parts.insert(parts.end(), channel.parts.begin(), channel.parts.end());
    if (channel.parts.empty()) continue;
    freq_sum[k] += channel.freq_hz;
    ++members[k];
  }
  // A full bin's channels lie symmetric about its centre: their mean is the centre but
  // for rounding, and the centre is kept.
  for (std::size_t k = 0; k < binned.channels.size(); ++k) {
    BandChannel& bin = binned.channels[k];
    const double mean = members[k] > 0 ? freq_sum[k] / members[k] : bin.freq_hz;
    if (std::abs(mean - bin.freq_hz) > 1e-6 * width_hz) bin.data_freq_hz = mean;
  }
  return binned;
}

}  // namespace spip::ms
