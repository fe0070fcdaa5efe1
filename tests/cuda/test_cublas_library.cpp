// cuBLAS is opened on first use, not linked: a process that never calls it (every CPU
// rank) does not hold its 150 MB of resident memory. Needs no GPU: opening the library
// and finding its functions does not touch a device.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "detail/cublas_library.hpp"

namespace {

bool cublas_mapped() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line))
    if (line.find("libcublas.so") != std::string::npos) return true;
  return false;
}

}  // namespace

TEST(CublasLibrary, IsOpenedOnFirstUseOnly) {
  EXPECT_FALSE(cublas_mapped()) << "linked rather than opened when needed";
  const spip::cuda::detail::Cublas& cublas = spip::cuda::detail::cublas();
  EXPECT_NE(cublas.create, nullptr);
  EXPECT_NE(cublas.destroy, nullptr);
  EXPECT_NE(cublas.cgemm, nullptr);
  EXPECT_TRUE(cublas_mapped());
  EXPECT_EQ(&spip::cuda::detail::cublas(), &cublas) << "opened once";
}
