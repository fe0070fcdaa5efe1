#include "channel_stream.hpp"

#include <omp.h>

#include <algorithm>

#include "spip/error.hpp"
#include "spip/ms/ionosphere.hpp"

namespace spip::pipeline {

const std::vector<ms::VisBlock>& ChannelSource::blocks_for(int channel, double& wait_s) {
  const int absolute = plan_.chan_begin + channel;
  if (blocks_.empty() || absolute < blocks_.front().chan_begin || absolute >= blocks_.front().chan_end) {
    const Stopwatch watch;
    if (next_.valid() && next_begin_ == absolute) {
      blocks_ = next_.get();
    } else {
      if (next_.valid()) next_.wait();
      blocks_ = read_block(absolute);
    }
    wait_s += watch.seconds();
    const int following = blocks_.front().chan_end;
    if (following < plan_.chan_begin + mine_.end) {
      next_begin_ = following;
      next_ = std::async(std::launch::async, [this, following] { return read_block(following); });
    }
  }
  return blocks_;
}

std::vector<ms::VisBlock> ChannelSource::read_block(int absolute) const {
  const int end = std::min(plan_.chan_begin + mine_.end, absolute + block_channels_);
  std::vector<ms::VisBlock> blocks;
  for (std::size_t i = 0; i < plan_.readers.size(); ++i) {
    blocks.push_back(plan_.readers[i].read(absolute, end, shares_.empty() ? std::vector<char>{} : shares_[i]));
    if (plan_.ionosphere) ms::derotate(blocks.back(), *plan_.ionosphere);
  }
  return blocks;
}

ChannelFeed::ChannelFeed(ChannelSource& source, ChannelImaging& imaging, const Plan& plan, const RowCoordinates& coordinates,
                         std::vector<int> channels, const imaging::RowGroup* group)
    : source_(source), imaging_(imaging), plan_(plan), coordinates_(coordinates), channels_(std::move(channels)),
      group_(group),
      // The CPU backend's cores image the current channel meanwhile; a GPU rank's are
      // free. Asked here: the helper thread does not see the run's OpenMP setting.
      copy_threads_(plan.gpu_device >= 0 ? omp_get_max_threads() : 1) {
  if (!channels_.empty()) pending_ = std::async(std::launch::async, [this] { return prepare(channels_[0]); });
}

ChannelStats ChannelFeed::advance(int c) {
  if (next_ >= channels_.size() || channels_[next_] != c)
    SPIP_THROW(Error, "channel feed out of order: channel " + std::to_string(c) + " asked for, " +
                          (next_ < channels_.size() ? std::to_string(channels_[next_]) : std::string("none")) +
                          " staged");
  const Stopwatch wait;
  ChannelStats stats = pending_.get();
  imaging_.next();
  stats.wait_s = wait.seconds();
  if (++next_ < channels_.size())
    pending_ = std::async(std::launch::async, [this, following = channels_[next_]] { return prepare(following); });
  return stats;
}

ChannelStats ChannelFeed::prepare(int c) {
  double read_wait = 0;
  const std::vector<ms::VisBlock>& blocks = source_.blocks_for(c, read_wait);
  const ChannelStats stats = gather_channel(blocks, plan_.chan_begin + c, coordinates_, plan_.geometry,
                                            imaging_.host_weighting(), imaging_.stage_area(), copy_threads_, group_);
  imaging_.stage(stats.freq_hz);
  return stats;
}

}  // namespace spip::pipeline
