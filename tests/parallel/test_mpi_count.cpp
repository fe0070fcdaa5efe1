#include <gtest/gtest.h>

#include <climits>
#include <cstddef>
#include <stdexcept>

#include "spip/parallel/mpi_count.hpp"

using spip::parallel::mpi_count;

TEST(MpiCount, TheLargestIntPassesUnchanged) {
  EXPECT_EQ(mpi_count(0, "test"), 0);
  EXPECT_EQ(mpi_count(static_cast<std::size_t>(INT_MAX), "test"), INT_MAX);
}

TEST(MpiCount, OneBeyondIntIsRefusedRatherThanWrapped) {
  // Cast to int, 2^32 would become 0 and 2^31 negative.
  EXPECT_THROW(mpi_count(static_cast<std::size_t>(INT_MAX) + 1, "test"), std::length_error);
  EXPECT_THROW(mpi_count(std::size_t{1} << 32, "test"), std::length_error);
}
