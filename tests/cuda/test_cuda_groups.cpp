// Channels shared by a group of GPU ranks (parallel.ranks_per_channel): two ranks on the
// device, each gridding its share of every channel's rows, against one rank with all of
// them, product by product (tests/common/product_compare.hpp), without RM-CLEAN, whose
// choices are not continuous in the last bits a group's sums change (as
// tests/pipeline/test_rank_groups).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "product_compare.hpp"
#include "scratch.hpp"

namespace fs = std::filesystem;

namespace {

fs::path run(int ranks, const std::string& extra, const std::string& name) {
  const fs::path out = spip::test::scratch_path(name);
  const std::string command = std::string(SPIP_MPIEXEC) + " " + std::to_string(ranks) + " " + SPIP_BIN + " --config " +
                              SPIP_DEMO_CONFIG + " --input.ms " + SPIP_TEST_DATA + "/oskar_small.ms --output.dir " +
                              out.string() + " --image.size 256 --image.scale 40 --faraday.dphi 1 --faraday.rmclean_niter 0" +
                              " --clean.subminor false" +
                              " --input.channel_end 8 --parallel.device gpu " + extra + " > " + out.string() + ".log 2>&1";
  EXPECT_EQ(std::system(command.c_str()), 0) << spip::test::file_text(out.string() + ".log");
  return out;
}

}  // namespace

TEST(CudaGroups, AGroupOfTwoGpuRanksMakesTheProductsOfOne) {
  const fs::path one = run(1, "", "one_rank");
  const fs::path two = run(2, "--parallel.ranks_per_channel 2", "group_of_2");
  const std::string log = spip::test::file_text(two.string() + ".log");
  EXPECT_NE(log.find("member 1 of a group of 2"), std::string::npos) << log;
  EXPECT_NE(log.find("on gpu"), std::string::npos) << log;
  EXPECT_GE(spip::test::expect_equal_products(one, two, "GPU group of 2"), 50);
}
