#include <gtest/gtest.h>

#include <numeric>

#include "spip/parallel/decomposition.hpp"

using spip::parallel::balance_channels;
using spip::parallel::ChannelBlock;

namespace {

// Every channel owned exactly once, blocks contiguous and in rank order.
void expect_partition(const std::vector<ChannelBlock>& blocks, int num_chan) {
  int next = 0;
  for (const ChannelBlock& block : blocks) {
    EXPECT_EQ(block.begin, next);
    EXPECT_GE(block.end, block.begin);
    next = block.end;
  }
  EXPECT_EQ(next, num_chan);
}

std::int64_t block_cost(const std::vector<std::int64_t>& cost, const ChannelBlock& block) {
  return std::accumulate(cost.begin() + block.begin, cost.begin() + block.end, std::int64_t{0});
}

}  // namespace

TEST(BalanceChannels, EqualCostsGiveEqualBlocks) {
  const auto blocks = balance_channels(std::vector<std::int64_t>(40, 100), 4);
  expect_partition(blocks, 40);
  for (const auto& block : blocks) EXPECT_EQ(block.size(), 10);
}

TEST(BalanceChannels, UnevenCostsAreBalancedWithinOneChannel) {
  std::vector<std::int64_t> cost(64);
  for (int c = 0; c < 64; ++c) cost[c] = 1000 + 37 * ((c * 7919) % 101);  // irregular flagging
  cost[10] = 0;                                                            // a fully flagged channel
  for (int ranks : {1, 2, 3, 5, 7, 16}) {
    const auto blocks = balance_channels(cost, ranks);
    expect_partition(blocks, 64);
    const double share = std::accumulate(cost.begin(), cost.end(), 0.0) / ranks;
    const std::int64_t heaviest = *std::max_element(cost.begin(), cost.end());
    for (const auto& block : blocks) {
      EXPECT_GE(block.size(), 1) << ranks << " ranks";
      EXPECT_LE(std::abs(block_cost(cost, block) - share), heaviest) << ranks << " ranks";
    }
  }
}

TEST(BalanceChannels, ExtraRanksIdle) {
  const auto blocks = balance_channels(std::vector<std::int64_t>(3, 5), 5);
  expect_partition(blocks, 3);
  EXPECT_EQ(blocks[0].size(), 1);
  EXPECT_EQ(blocks[2].size(), 1);
  EXPECT_EQ(blocks[3].size(), 0);
  EXPECT_EQ(blocks[4].size(), 0);
}

TEST(BalanceChannels, OneHeavyChannelGetsARankOfItsOwn) {
  const std::vector<std::int64_t> cost = {1, 1, 1, 1000, 1, 1, 1};
  const auto blocks = balance_channels(cost, 3);
  expect_partition(blocks, 7);
  int owner_size = 0;
  for (const auto& block : blocks)
    if (block.begin <= 3 && 3 < block.end) owner_size = block.size();
  EXPECT_EQ(owner_size, 1);
}

TEST(FixedChannelBlocks, FillRanksInOrderAndRefuseTooFewRanks) {
  const auto blocks = spip::parallel::fixed_channel_blocks(10, 4, 4);
  expect_partition(blocks, 10);
  EXPECT_EQ(blocks[0].size(), 4);
  EXPECT_EQ(blocks[2].size(), 2);
  EXPECT_EQ(blocks[3].size(), 0);
  EXPECT_TRUE(spip::parallel::fixed_channel_blocks(10, 3, 3).empty());
}
