// Collectives under mpiexec: results must not depend on the number of ranks.
#include <gtest/gtest.h>

#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <vector>
#include <thread>

#include "mpi_main.hpp"
#include "spip/parallel/mpi_context.hpp"
#include "spip/parallel/rank_group.hpp"

namespace {
const spip::parallel::MpiContext* const& mpi = spip::test::world;
}

TEST(MpiContext, SumAndMaxAgreeOnEveryRank) {
  const int n = mpi->size();
  EXPECT_EQ(mpi->sum(mpi->rank() + 1), static_cast<std::int64_t>(n) * (n + 1) / 2);
  EXPECT_EQ(mpi->max(static_cast<double>(mpi->rank()) * 0.5), (n - 1) * 0.5);
}

TEST(MpiContext, GatherConcatenatesInRankOrderWithUnequalCounts) {
  // Rank r sends r+1 values r*100, r*100+1, ...
  std::vector<double> mine;
  for (int k = 0; k <= mpi->rank(); ++k) mine.push_back(mpi->rank() * 100.0 + k);
  const std::vector<double> all = mpi->gather_to_root(mine);
  if (!mpi->is_root()) {
    EXPECT_TRUE(all.empty());
    return;
  }
  std::vector<double> expected;
  for (int r = 0; r < mpi->size(); ++r)
    for (int k = 0; k <= r; ++k) expected.push_back(r * 100.0 + k);
  EXPECT_EQ(all, expected);
}

TEST(MpiContext, GatherToAllGivesEveryRankTheSameConcatenation) {
  std::vector<double> mine(static_cast<std::size_t>(mpi->rank() % 2 + 1), mpi->rank() + 0.5);
  const std::vector<double> all = mpi->gather_to_all(mine);
  std::vector<double> expected;
  for (int r = 0; r < mpi->size(); ++r) expected.insert(expected.end(), static_cast<std::size_t>(r % 2 + 1), r + 0.5);
  EXPECT_EQ(all, expected);
}

TEST(MpiContext, SumAllAddsElementWiseOnEveryRank) {
  std::vector<std::int64_t> values = {1, mpi->rank()};
  mpi->sum_all(values);
  const std::int64_t n = mpi->size();
  EXPECT_EQ(values, (std::vector<std::int64_t>{n, n * (n - 1) / 2}));
}

// Rank r sends rank d (r + d) % 3 units of 4 floats, each float naming sender,
// receiver and position; an empty share (a rank with no channels) is allowed.
TEST(MpiContext, AllToAllDeliversEachRanksShareInRankOrder) {
  constexpr std::size_t unit = 4;
  const int n = mpi->size(), me = mpi->rank();
  const auto units = [](int from, int to) { return static_cast<std::size_t>((from + to) % 3); };
  const auto value = [](int from, int to, std::size_t k) { return static_cast<float>(from * 10000 + to * 100) + k; };
  std::vector<float> send;
  std::vector<std::size_t> send_units, receive_units;
  for (int d = 0; d < n; ++d) {
    send_units.push_back(units(me, d));
    receive_units.push_back(units(d, me));
    for (std::size_t k = 0; k < units(me, d) * unit; ++k) send.push_back(value(me, d, k));
  }
  const std::vector<float> received = mpi->all_to_all(send, send_units, receive_units, unit);
  std::vector<float> expected;
  for (int s = 0; s < n; ++s)
    for (std::size_t k = 0; k < units(s, me) * unit; ++k) expected.push_back(value(s, me, k));
  EXPECT_EQ(received, expected);
}

TEST(MpiContext, LocalRanksCoverTheNode) {
  // All ranks of a CTest run share one node.
  EXPECT_EQ(mpi->local_size(), mpi->size());
  EXPECT_EQ(mpi->local_rank(), mpi->rank());
}

// Two resources on the node (even and odd local ranks) and ranks that name none: each
// sharer gets the measure of its group's lowest rank, taken after the whole group
// arrived, divided by the group's size.
TEST(MpiContext, RanksNamingOneResourceSplitWhatTheirFirstRankMeasures) {
  const int resource = mpi->local_rank() == 2 ? -1 : mpi->local_rank() % 2;
  int measured_here = 0;
  const auto share = mpi->share_on_node(resource, [&] {
    ++measured_here;
    return static_cast<std::uint64_t>(1000 + mpi->rank());
  });
  int sharers = 0;
  for (int r = 0; r < mpi->size(); ++r) sharers += r != 2 && r % 2 == resource;
  if (resource < 0) {
    EXPECT_EQ(share.ranks, 1);
    EXPECT_EQ(share.amount, 1000u + 2);
    EXPECT_EQ(measured_here, 1);
  } else {
    EXPECT_EQ(share.ranks, sharers);
    EXPECT_EQ(share.amount, 1000u + static_cast<unsigned>(resource));  // the group's lowest rank
    EXPECT_EQ(share.each(), share.amount / static_cast<unsigned>(sharers));
    EXPECT_EQ(measured_here, mpi->rank() == resource ? 1 : 0);
  }
}

TEST(StopNotice, NoAnnouncementMeansNoStop) {
  spip::parallel::StopNotice notice(*mpi);
  EXPECT_FALSE(notice.heard());
  EXPECT_FALSE(notice.agree(false));
}

TEST(StopNotice, OneRanksAnnouncementReachesEveryRankWithoutACollective) {
  spip::parallel::StopNotice notice(*mpi);
  const int announcer = mpi->size() - 1;
  if (mpi->rank() == announcer) {
    notice.announce();
    notice.announce();  // a second signal sends nothing more
  } else {
    // Ranks poll between their own work; here they poll until it arrives (or 10 s).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!notice.heard() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    EXPECT_TRUE(notice.heard());
  }
  EXPECT_TRUE(notice.agree(false));
}

TEST(StopNotice, AgreementAlsoStopsOnALocalReasonOfOneRank) {
  spip::parallel::StopNotice notice(*mpi);
  EXPECT_TRUE(notice.agree(mpi->rank() == 0));
}

// Groups of two consecutive ranks (of all of them where their number is odd): sums
// within each group, the same bits on every member, while a second thread uses the
// group's other communicator at the same time.
TEST(RankGroup, SumsStayInTheGroupAndGiveEveryMemberTheSameBits) {
  const int size = mpi->size() % 2 == 0 ? 2 : mpi->size();
  const spip::parallel::RankGroup group(*mpi, size);
  const int first = mpi->rank() / size * size;
  EXPECT_EQ(group.member(), mpi->rank() - first);
  EXPECT_EQ(group.leads(), group.member() == 0);

  std::vector<float> staged(1000);
  std::thread staging([&] {
    for (std::size_t i = 0; i < staged.size(); ++i) staged[i] = static_cast<float>(mpi->rank() + 1);
    group.staging().sum(staged);
  });
  // Values whose float sum depends on the order of the additions.
  std::vector<float> values(100000);
  for (std::size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<float>(std::sin(0.001 * static_cast<double>(i) * (mpi->rank() + 1)) * 1e3 + 1e-3 * i);
  std::vector<double> exact(values.size(), 0.0);
  for (int r = first; r < first + size; ++r)
    for (std::size_t i = 0; i < values.size(); ++i)
      exact[i] += static_cast<float>(std::sin(0.001 * static_cast<double>(i) * (r + 1)) * 1e3 + 1e-3 * i);
  group.imaging().sum(values);
  staging.join();
  for (std::size_t i = 0; i < values.size(); i += 997) EXPECT_NEAR(values[i], exact[i], 1e-3) << i;
  std::vector<float> leaders = values;
  group.imaging().from_leader(leaders);
  std::size_t differ = 0;
  for (std::size_t i = 0; i < values.size(); ++i)
    differ += std::bit_cast<std::uint32_t>(values[i]) != std::bit_cast<std::uint32_t>(leaders[i]);
  EXPECT_EQ(differ, 0u);
  const float expected_staged = static_cast<float>(size * (2 * first + size + 1) / 2);
  EXPECT_EQ(staged.front(), expected_staged);

  EXPECT_EQ(group.imaging().max(static_cast<double>(mpi->rank())), static_cast<double>(first + size - 1));
  EXPECT_EQ(group.imaging().any(mpi->rank() == first + size - 1), true);
  EXPECT_EQ(group.imaging().any(false), false);
  EXPECT_EQ(group.imaging().from_leader(mpi->rank()), first);
  const std::vector<int> todo = group.imaging().from_leader(group.leads() ? std::vector<int>{3, 5, 8} : std::vector<int>{});
  EXPECT_EQ(todo, (std::vector<int>{3, 5, 8}));
}

