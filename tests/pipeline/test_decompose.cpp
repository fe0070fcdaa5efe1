// How planning groups the ranks (parallel.ranks_per_channel) and gives each group and
// each rank its channels.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "spip/error.hpp"
#include "spip/planning/planning.hpp"

namespace spip::pipeline {
namespace {

using parallel::ChannelBlock;

Plan cpu_plan() {
  Plan plan;
  plan.geometry = imaging::ImageGeometry::make(256, 1e-4, 1.5);
  return plan;
}

bool same(const ChannelBlock& a, const ChannelBlock& b) { return a.begin == b.begin && a.end == b.end; }

// A rank can image any share of a channel.
bool always(double) { return true; }

TEST(Decompose, OneRankPerChannelWhileTheChannelsSuffice) {
  Plan plan = cpu_plan();
  decompose(Config{}, std::vector<std::int64_t>(8, 1), 4, always, plan);
  EXPECT_EQ(plan.ranks_per_channel, 1);
  EXPECT_EQ(plan.grouping, "one rank per channel");
  for (int r = 0; r < 4; ++r) {
    EXPECT_TRUE(same(plan.imaged[r], ChannelBlock{2 * r, 2 * r + 2}));
    EXPECT_TRUE(same(plan.blocks[r], plan.imaged[r]));
  }
}

// A channel's grid work is done however few of its visibilities are unflagged. Four
// channels 90 % flagged (1,000 visibilities) and four full ones (9,936) at 512^2 (a 640^2
// grid) took 0.18-0.23 s and 0.25-0.28 s each; balanced on visibilities alone the first
// rank got six channels and 2.6 times the second's time, now four each.
TEST(Decompose, ChannelsCountTheirGridWorkBesideTheirVisibilities) {
  Plan plan;
  plan.geometry = imaging::ImageGeometry::make(512, 1e-4, 1.2);
  ASSERT_EQ(plan.geometry.grid_size, 640);
  decompose(Config{}, {1000, 1000, 1000, 1000, 9936, 9936, 9936, 9936}, 2, always, plan);
  EXPECT_TRUE(same(plan.imaged[0], ChannelBlock{0, 4}));
  EXPECT_TRUE(same(plan.imaged[1], ChannelBlock{4, 8}));
  // A fully flagged channel has nothing to image: it weighs as little as before.
  decompose(Config{}, {0, 0, 0, 0, 9936, 9936}, 2, always, plan);
  EXPECT_TRUE(same(plan.imaged[0], ChannelBlock{0, 5}));
  EXPECT_TRUE(same(plan.imaged[1], ChannelBlock{5, 6}));
}

TEST(Decompose, RanksBeyondTheChannelsFormGroupsThatKeepEveryRankBusy) {
  Plan plan = cpu_plan();
  decompose(Config{}, {5}, 2, always, plan);
  EXPECT_EQ(plan.ranks_per_channel, 2);
  EXPECT_EQ(plan.grouping, "2 ranks for 1 channel(s): groups of 2 keep every rank busy");
  EXPECT_TRUE(same(plan.imaged[0], ChannelBlock{0, 1}));
  EXPECT_TRUE(same(plan.imaged[1], ChannelBlock{0, 1}));
  EXPECT_TRUE(same(plan.blocks[0], ChannelBlock{0, 1}));
  EXPECT_EQ(plan.blocks[1].size(), 0);  // the group's first rank keeps and writes

  decompose(Config{}, {1, 1}, 4, always, plan);
  EXPECT_EQ(plan.ranks_per_channel, 2);
  EXPECT_TRUE(same(plan.imaged[2], ChannelBlock{1, 2}));
  EXPECT_TRUE(same(plan.imaged[3], ChannelBlock{1, 2}));
  EXPECT_TRUE(same(plan.blocks[2], ChannelBlock{1, 2}));

  // Three ranks cannot form equal groups for two channels: one rank idles instead.
  decompose(Config{}, {1, 1}, 3, always, plan);
  EXPECT_EQ(plan.ranks_per_channel, 1);
  EXPECT_EQ(plan.imaged[2].size(), 0);
}

TEST(Decompose, AChannelTooLargeForARankIsShared) {
  Plan plan = cpu_plan();
  // A member holds at most largest_row_share(2) = 0.75 of the rows: enough here, not all.
  decompose(Config{}, std::vector<std::int64_t>(8, 1), 4, [](double share) { return share <= 0.8; }, plan);
  EXPECT_EQ(plan.ranks_per_channel, 2);
  EXPECT_NE(plan.grouping.find("does not fit a rank's memory"), std::string::npos) << plan.grouping;
  EXPECT_TRUE(same(plan.imaged[1], ChannelBlock{0, 4}));
  EXPECT_TRUE(same(plan.imaged[2], ChannelBlock{4, 8}));
  plan.max_visibilities = 1000;
  EXPECT_EQ(plan.rank_visibilities(), 750u);
  // Where even the largest group cannot hold a channel, it is the largest there is.
  decompose(Config{}, std::vector<std::int64_t>(8, 1), 4, [](double) { return false; }, plan);
  EXPECT_EQ(plan.ranks_per_channel, 4);
}

TEST(Decompose, AGroupSizeAskedForMustDivideTheRanks) {
  Config config;
  config.parallel.ranks_per_channel = 4;
  Plan plan = cpu_plan();
  decompose(config, std::vector<std::int64_t>(8, 1), 4, always, plan);
  EXPECT_EQ(plan.ranks_per_channel, 4);
  EXPECT_EQ(plan.grouping, "parallel.ranks_per_channel = 4");
  EXPECT_TRUE(same(plan.imaged[3], ChannelBlock{0, 8}));

  config.parallel.ranks_per_channel = 3;
  try {
    decompose(config, std::vector<std::int64_t>(8, 1), 4, always, plan);
    FAIL() << "no exception";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("does not divide the 4 ranks"), std::string::npos) << e.what();
  }
}

TEST(Decompose, LargestRowShare) {
  EXPECT_EQ(largest_row_share(1), 1.0);
  EXPECT_EQ(largest_row_share(2), 0.75);
  EXPECT_EQ(largest_row_share(4), 0.375);
}

// --plan's ranks a node: a 64-core node at 8 threads a rank holds 8; a GPU job's script
// gives each rank a GPU of its own, so a node of 4 GPUs holds 4 (and one of 16 GPUs still
// only the 8 its cores hold); --plan-node-ranks wins; never more than the job's ranks.
TEST(Decompose, RanksANodeHoldsByItsCoresAndItsGpus) {
  EXPECT_EQ(node_ranks(32, 0, 64, 8, 0), 8);
  EXPECT_EQ(node_ranks(32, 0, 64, 8, 4), 4);
  EXPECT_EQ(node_ranks(32, 0, 64, 8, 16), 8);
  EXPECT_EQ(node_ranks(32, 6, 64, 8, 4), 6);
  EXPECT_EQ(node_ranks(3, 0, 64, 8, 4), 3);
  EXPECT_EQ(node_ranks(3, 6, 64, 8, 0), 3);
  EXPECT_EQ(node_ranks(32, 0, 4, 8, 0), 1);
}

}  // namespace
}  // namespace spip::pipeline
