// Collectives under mpiexec: results must not depend on the number of ranks.
#include <gtest/gtest.h>

#include "spip/parallel/mpi_context.hpp"

namespace {
spip::parallel::MpiContext* mpi = nullptr;
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

TEST(MpiContext, SumToRootAddsElementWise) {
  std::vector<double> values = {1.0, static_cast<double>(mpi->rank())};
  mpi->sum_to_root(values);
  if (mpi->is_root()) {
    const int n = mpi->size();
    EXPECT_EQ(values, (std::vector<double>{static_cast<double>(n), n * (n - 1) / 2.0}));
  }
}

TEST(MpiContext, AllToAllDeliversEachRanksBlockInRankOrder) {
  // Rank s sends (s + 1) values s*10 + r + 0.5i to rank r.
  const int n = mpi->size(), me = mpi->rank();
  std::vector<std::complex<float>> send;
  std::vector<int> counts;
  for (int r = 0; r < n; ++r) {
    counts.push_back(me + 1);
    for (int k = 0; k <= me; ++k) send.emplace_back(static_cast<float>(me * 10 + r), 0.5f);
  }
  const auto received = mpi->all_to_all(send, counts);
  std::vector<std::complex<float>> expected;
  for (int s = 0; s < n; ++s)
    for (int k = 0; k <= s; ++k) expected.emplace_back(static_cast<float>(s * 10 + me), 0.5f);
  EXPECT_EQ(received, expected);
  // The same exchange in blocks of 3 values (counts in blocks).
  std::vector<std::complex<float>> tripled;
  for (const auto& v : send) tripled.insert(tripled.end(), {v, v, v});
  std::vector<std::complex<float>> expected_tripled;
  for (const auto& v : expected) expected_tripled.insert(expected_tripled.end(), {v, v, v});
  EXPECT_EQ(mpi->all_to_all(tripled, counts, 3), expected_tripled);
}

TEST(MpiContext, LocalRanksCoverTheNode) {
  // All ranks of a CTest run share one node.
  EXPECT_EQ(mpi->local_size(), mpi->size());
  EXPECT_EQ(mpi->local_rank(), mpi->rank());
}

int main(int argc, char** argv) {
  spip::parallel::MpiContext context(argc, argv);
  mpi = &context;
  testing::InitGoogleTest(&argc, argv);
  const int failed = RUN_ALL_TESTS();
  // Any rank's failure fails the test.
  return context.sum(failed) == 0 ? 0 : 1;
}
