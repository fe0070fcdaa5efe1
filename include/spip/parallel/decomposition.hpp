#pragma once
// Which contiguous block of channels each rank owns. Pure arithmetic, no MPI.
#include <cstdint>
#include <vector>

namespace spip::parallel {

struct ChannelBlock {
  int begin = 0;  // first channel (index into the imaged range)
  int end = 0;    // one past the last; begin == end: the rank has nothing to do
  int size() const { return end - begin; }
};

// Splits channels into num_ranks contiguous blocks of about equal cost (e.g. unflagged
// visibilities per channel). Every channel is owned by exactly one rank; with more
// ranks than channels the extra ranks get empty blocks at the end.
std::vector<ChannelBlock> balance_channels(const std::vector<std::int64_t>& cost, int num_ranks);

// Blocks of `block_size` channels in rank order (the last may be shorter); ranks past
// the channels get empty blocks. Returns {} if the ranks cannot hold every channel.
std::vector<ChannelBlock> fixed_channel_blocks(int num_channels, int block_size, int num_ranks);

}  // namespace spip::parallel
