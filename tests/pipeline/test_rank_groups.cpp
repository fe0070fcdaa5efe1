// Channels shared by groups of ranks (parallel.ranks_per_channel): each member grids its
// share of every channel's rows, the group sums the images each major cycle, and the
// products must equal those of one rank per channel.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>

#include "product_compare.hpp"
#include "sample_pointing.hpp"
#include "scratch.hpp"

namespace fs = std::filesystem;

namespace {

// The demo's configuration (Briggs weighting, Hogbom CLEAN, RM synthesis) on the
// sample's first eight channels, one thread per rank, without RM-CLEAN: a group sums its
// members' images in another order, and RM-CLEAN's choices are not continuous in the
// last bits (between a noisy spectrum's near-equal peaks, and at its cutoff): with other
// FFTW plans a pixel's iterations, and so its cleaned spectrum, m2 and the maps read off
// it, can change. RM-CLEAN sees only the images the groups make, which are compared.
// Without it the cleaned cubes are the dirty ones and m2 and the iterations are zero.
fs::path run(int ranks, const std::string& extra, const std::string& name, int channels = 8) {
  const fs::path out = spip::test::scratch_path(name);
  const std::string command = "TMPDIR=" + spip::test::scratch_dir().string() + " " + SPIP_MPIEXEC + " " +
                              std::to_string(ranks) + " " + SPIP_BIN + " --config " + SPIP_DEMO_CONFIG +
                              " --input.ms " + SPIP_TEST_DATA + "/oskar_small.ms --output.dir " + out.string() +
                              " --image.size 256 --image.scale 40 --faraday.dphi 1 --faraday.rmclean_niter 0 --parallel.threads 1" +
                              " --input.channel_end " + std::to_string(channels) + " " + extra + " > " +
                              out.string() + ".log 2>&1";
  const int status = std::system(command.c_str());
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << spip::test::file_text(out.string() + ".log");
  return out;
}

}  // namespace

TEST(RankGroups, GroupsOfTwoAndFourMakeTheProductsOfOneRankPerChannel) {
  const fs::path reference = run(1, "", "one_rank");
  const fs::path pairs = run(4, "--parallel.ranks_per_channel 2", "groups_of_2");
  const fs::path four = run(4, "--parallel.ranks_per_channel 4", "group_of_4");
  for (const fs::path& out : {pairs, four}) {
    const std::string log = spip::test::file_text(out.string() + ".log");
    EXPECT_NE(log.find("channels shared by groups of ranks: parallel.ranks_per_channel"), std::string::npos) << log;
    EXPECT_NE(log.find("member 1 of a group of"), std::string::npos) << log;
  }
  // The first rank of each group writes its channels; qa.json says who.
  const auto qa = nlohmann::json::parse(spip::test::file_text(pairs / "demo-qa.json"));
  std::set<int> writers;
  for (const auto& channel : qa.at("channels")) writers.insert(channel.at("rank").get<int>());
  EXPECT_EQ(writers, (std::set<int>{0, 2}));
  EXPECT_GE(spip::test::expect_equal_products(reference, pairs, "groups of 2"), 50);
  EXPECT_GE(spip::test::expect_equal_products(reference, four, "a group of 4"), 50);
}

// More ranks than channels: planning makes one group of the two ranks, so that neither
// idles, and the products are those of one rank.
TEST(RankGroups, OneChannelOnTwoRanksIsImagedByBoth) {
  const fs::path reference = run(1, "--input.channel_begin 3", "one_rank", 4);
  const fs::path shared = run(2, "--input.channel_begin 3", "two_ranks", 4);
  const std::string log = spip::test::file_text(shared.string() + ".log");
  EXPECT_NE(log.find("2 ranks for 1 channel(s): groups of 2 keep every rank busy"), std::string::npos) << log;
  EXPECT_EQ(log.find("idles"), std::string::npos) << log;
  EXPECT_GE(spip::test::expect_equal_products(reference, shared, "one channel on a group of 2"), 20);
}

// A mosaic of the sample and its sky seen from 1 deg east, its first eight channels:
// groups of two ranks image each channel's pointings as one rank per channel does. The
// pointings' weights come from their residuals' noise (a MAD). Where the last bits of a
// group's sums break a near tie between two pixels in CLEAN the other way, the other
// component's sidelobes move that MAD by 1e-3, and the skewness and kurtosis of the
// corrected spectra take 1e-2 of their peaks from it: with FFTW's timed plans, which
// differ from run to run, that happened in one run in three to five. So both runs take
// FFTW's heuristic plans (SPIP_FFTW_PLANNER=estimate) and repeat exactly, and CLEAN
// stops after 300 iterations a pointing, where these plans meet no such tie; the
// products then agree within 2e-4 of their peaks. A change that breaks a tie here shows
// as this test failing on every run, not on one in five.
TEST(RankGroups, AMosaicInGroupsOfTwoMakesTheProductsOfOneRankPerChannel) {
  const fs::path east = spip::test::scratch_path("east.ms");
  ASSERT_EQ(spip::test::simulate_sample_pointing(SPIP_SIMULATE_BIN, SPIP_TEST_DATA, "1", 8, "94", east.string()), 0);
  const auto mosaic = [&](int ranks, const std::string& extra, const std::string& name) {
    const fs::path out = spip::test::scratch_path(name);
    const std::string command =
        "TMPDIR=" + spip::test::scratch_dir().string() + " SPIP_FFTW_PLANNER=estimate " + SPIP_MPIEXEC + " " +
        std::to_string(ranks) + " " + SPIP_BIN + " --config " + SPIP_DEMO_CONFIG + " --input.ms " + SPIP_TEST_DATA +
        "/oskar_small.ms " + east.string() + " --input.freq_max 129.5e6 --beam.model airy --beam.dish_diameter 94 --output.dir " +
        out.string() + " --image.size 256 --image.scale 40 --faraday.dphi 1 --faraday.rmclean_niter 0" +
        " --parallel.threads 1 --clean.niter 300 " + extra + " > " + out.string() + ".log 2>&1";
    const int status = std::system(command.c_str());
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << spip::test::file_text(out.string() + ".log");
    return out;
  };
  const fs::path reference = mosaic(1, "", "mosaic_one_rank");
  const fs::path pairs = mosaic(4, "--parallel.ranks_per_channel 2", "mosaic_groups_of_2");
  const std::string log = spip::test::file_text(pairs.string() + ".log");
  EXPECT_NE(log.find("mosaic of 2 pointings"), std::string::npos) << log;
  EXPECT_NE(log.find("member 1 of a group of"), std::string::npos) << log;
  EXPECT_NE(log.find("FFT plans (FFTW_ESTIMATE)"), std::string::npos) << log;
  EXPECT_GE(spip::test::expect_equal_products(reference, pairs, "a mosaic in groups of 2", 1e-3), 40);
}
