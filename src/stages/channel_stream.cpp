#include "spip/stages/channel_stream.hpp"

#include <omp.h>

#include <algorithm>

#include "spip/error.hpp"
#include "spip/ms/ionosphere.hpp"

namespace spip::pipeline {

int ChannelSource::next_wanted(int from) const {
  if (wanted_.empty()) return from;
  const auto next = std::lower_bound(wanted_.begin(), wanted_.end(), from);
  return next == wanted_.end() ? mine_.end : *next;
}

const std::vector<ms::VisBlock>& ChannelSource::blocks_for(int channel, double& wait_s) {
  if (blocks_begin_ < 0 || channel < blocks_begin_ || channel >= block_end(blocks_begin_)) {
    const Stopwatch watch;
    if (next_.valid() && next_begin_ == channel) {
      blocks_ = next_.get();
    } else {
      // Neither block held is of use: both are freed before the next is read.
      if (next_.valid()) next_.get();
      blocks_.clear();
      blocks_ = read_block(channel);
    }
    blocks_begin_ = channel;
    wait_s += watch.seconds();
    const int following = next_wanted(block_end(channel));
    if (following < mine_.end) {
      next_begin_ = following;
      next_ = std::async(std::launch::async, [this, following] { return read_block(following); });
    }
  }
  return blocks_;
}

std::vector<ms::VisBlock> ChannelSource::read_block(int first) const {
  std::vector<ms::VisBlock> blocks;
  for (std::size_t i = 0; i < plan_.readers.size(); ++i) {
    const auto [begin, end] = plan_.band.stored_range(static_cast<int>(i), first, block_end(first));
    // An input without channels in the block contributes rows of weight 0.
    if (begin == end) {
      blocks.emplace_back();
      continue;
    }
    blocks.push_back(plan_.readers[i].read(begin, end, shares_.empty() ? std::vector<char>{} : shares_[i]));
    if (plan_.rephasing[i]) plan_.rephasing[i]->apply(blocks.back());
    if (plan_.ionosphere) ms::derotate(blocks.back(), *plan_.ionosphere);
  }
  return blocks;
}

namespace {

// The part of an image channel that the inputs of `pointing` hold: all of it where the
// plan has one pointing.
ms::BandChannel pointing_part(const ms::BandChannel& channel, const Plan& plan, int pointing) {
  if (!plan.mosaic()) return channel;
  ms::BandChannel part = channel;
  std::erase_if(part.parts, [&](const ms::ChannelPart& piece) {
    return plan.input_pointing.at(static_cast<std::size_t>(piece.input)) != pointing;
  });
  return part;
}

}  // namespace

ChannelFeed::ChannelFeed(ChannelSource& source, ImagingStage& imaging, const Plan& plan, const RowCoordinates& coordinates,
                         std::vector<int> channels, const imaging::RowGroup* group)
    : source_(source), imaging_(imaging), plan_(plan), coordinates_(coordinates), group_(group),
      // The CPU backend's cores image the current channel meanwhile; a GPU rank's are
      // free. Asked here: the helper thread does not see the run's OpenMP setting.
      copy_threads_(plan.gpu_device >= 0 ? omp_get_max_threads() : 1) {
  for (int c : channels)
    for (int p = 0; p < static_cast<int>(plan.pointings.size()); ++p) items_.push_back({c, p});
  if (!items_.empty()) pending_ = std::async(std::launch::async, [this] { return prepare(items_[0]); });
}

ChannelStats ChannelFeed::advance(int c, int p) {
  if (next_ >= items_.size() || items_[next_].channel != c || items_[next_].pointing != p)
    SPIP_THROW(Error, "channel feed out of order: channel " + std::to_string(c) + ", pointing " + std::to_string(p) +
                          " asked for, " +
                          (next_ < items_.size() ? std::to_string(items_[next_].channel) + ", pointing " +
                                                       std::to_string(items_[next_].pointing)
                                                 : std::string("none")) +
                          " staged");
  const Stopwatch wait;
  ChannelStats stats = pending_.get();
  // The wait for the reader and the staging thread alone: next() lays the channel out on
  // the grid (tens of ms a channel on the CPU), which is imaging's time.
  stats.wait_s = wait.seconds();
  imaging_.next();
  if (++next_ < items_.size())
    pending_ = std::async(std::launch::async, [this, following = items_[next_]] { return prepare(following); });
  return stats;
}

ChannelStats ChannelFeed::prepare(Item item) {
  double read_wait = 0;
  const std::vector<ms::VisBlock>& blocks = source_.blocks_for(item.channel, read_wait);
  const ms::BandChannel channel =
      pointing_part(plan_.band.channels.at(static_cast<std::size_t>(item.channel)), plan_, item.pointing);
  const ChannelStats stats =
      gather_channel(blocks, channel, coordinates_, plan_.geometry, imaging_.host_weighting(),
                     imaging_.stage_area(channel_rows(channel, coordinates_)), copy_threads_, group_);
  imaging_.stage(stats.freq_hz);
  return stats;
}

}  // namespace spip::pipeline
