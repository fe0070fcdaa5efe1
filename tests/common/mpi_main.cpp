#include "mpi_main.hpp"

#include <gtest/gtest.h>

const spip::parallel::MpiContext* spip::test::world = nullptr;

int main(int argc, char** argv) {
  spip::parallel::MpiContext mpi(argc, argv);
  spip::test::world = &mpi;
  testing::InitGoogleTest(&argc, argv);
  const int failed = RUN_ALL_TESTS();
  return mpi.sum(failed) == 0 ? 0 : 1;
}
