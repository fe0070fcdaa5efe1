#include "spip/parallel/decomposition.hpp"

#include <algorithm>
#include <numeric>

namespace spip::parallel {

std::vector<ChannelBlock> balance_channels(const std::vector<std::int64_t>& cost, int num_ranks) {
  const int num_chan = static_cast<int>(cost.size());
  std::vector<ChannelBlock> blocks(static_cast<std::size_t>(num_ranks));
  // Zero-cost channels (fully flagged) still need an owner, so every channel costs at least 1.
  std::vector<double> cumulative(cost.size() + 1, 0.0);
  for (int c = 0; c < num_chan; ++c)
    cumulative[c + 1] = cumulative[c] + static_cast<double>(std::max<std::int64_t>(cost[c], 1));
  const double total = cumulative.back();
  int begin = 0;
  for (int r = 0; r < num_ranks; ++r) {
    const int ranks_left = num_ranks - r;
    const int chans_left = num_chan - begin;
    int end = num_chan;
    if (ranks_left > 1 && chans_left > 0) {
      // Cut where the cumulative cost is nearest to this rank's share of the total,
      // leaving at least one channel for each later rank while channels remain.
      const double target = total * (r + 1) / num_ranks;
      end = begin + 1;
      while (end < num_chan && std::abs(cumulative[end + 1] - target) <= std::abs(cumulative[end] - target))
        ++end;
      end = std::min(end, num_chan - std::min(ranks_left - 1, chans_left - 1));
    }
    blocks[r] = ChannelBlock{begin, std::max(begin, end)};
    begin = blocks[r].end;
  }
  return blocks;
}

std::vector<ChannelBlock> fixed_channel_blocks(int num_channels, int block_size, int num_ranks) {
  if (static_cast<long long>(block_size) * num_ranks < num_channels) return {};
  std::vector<ChannelBlock> blocks;
  for (int r = 0; r < num_ranks; ++r) {
    const int begin = std::min(num_channels, r * block_size);
    blocks.push_back(ChannelBlock{begin, std::min(num_channels, begin + block_size)});
  }
  return blocks;
}

}  // namespace spip::parallel
