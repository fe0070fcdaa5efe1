// The merged frequency axis on the GPU: every image channel uploads its own rows with
// their coordinates, so that split inputs, gaps and binned channels (several parts per
// channel, each at its own frequency) image as on one MS and as on the CPU backend.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "product_compare.hpp"
#include "scratch.hpp"
#include "split_ms.hpp"
#include "spip/fits/fits_image.hpp"

namespace fs = std::filesystem;

namespace {

const std::string sample = std::string(SPIP_TEST_DATA) + "/oskar_small.ms";

void shell(const std::string& command, const fs::path& log) {
  ASSERT_EQ(std::system((command + " > " + log.string() + " 2>&1").c_str()), 0) << spip::test::file_text(log);
}

std::vector<std::string> split(const std::vector<std::string>& windows, const std::string& name) {
  return spip::test::split_ms(SPIP_SIMULATE_BIN, sample, windows, name);
}

fs::path run(const std::vector<std::string>& inputs, const std::string& extra, const std::string& name) {
  const fs::path out = spip::test::scratch_path(name);
  std::string command = std::string(SPIP_MPIEXEC) + " 1 " + SPIP_BIN + " --config " + SPIP_DEMO_CONFIG +
                        " --output.dir " + out.string() + " --image.size 256 --image.scale 40 --faraday.dphi 1 " + extra;
  for (const std::string& ms : inputs) command += " --input.ms " + ms;
  shell(command, out.string() + ".log");
  return out;
}

}  // namespace

// Four MSs of two channels in shuffled order on the GPU: the products of the one MS, up
// to the rounding of the gridder's atomic adds, which come in no fixed order: the images
// agree to about 1e-7 of their peaks, and the skewness and kurtosis maps, ratios of
// moments, to 5.6e-6 (H200, 2026-11-27). The residuals' noise, which sets RM-CLEAN's
// cutoff, is measured on the residuals a threshold selects, and a last bit can move one
// across it: peak-pi-err then moved by 1.9e-5 of its peak and a faint pixel's clean FDF
// by 2.3e-5 and 2.6e-5 of the cube's in two runs (H200, 2026-11-30).
TEST(CudaBand, SplitInputsImageAsOneMs) {
  const fs::path one = run({sample}, "--input.channel_end 8 --parallel.device gpu", "one_ms");
  const fs::path four = run(split({"4-5", "0-1", "6-7", "2-3"}, "part"), "--parallel.device gpu", "four_ms");
  EXPECT_GE(spip::test::expect_equal_products(one, four, "GPU: 4 MSs in shuffled order", 5e-5), 50);
}

// Sub-bands with a gap, binned by two (each bin two parts at their own frequencies, one
// bin blank), without CLEAN: the GPU's dirty cubes are the CPU's.
TEST(CudaBand, GapsAndBinsImageAsOnTheCpu) {
  const std::vector<std::string> bands = split({"0-1", "2-3", "6-7", "8-9", "14-15"}, "sb");
  const std::string common = "--clean.niter 0 --image.channels_out 8 ";
  const fs::path gpu = run(bands, common + "--parallel.device gpu", "gpu");
  const fs::path cpu = run(bands, common + "--parallel.device cpu", "cpu");
  EXPECT_NE(spip::test::file_text(gpu.string() + ".log").find("on gpu"), std::string::npos);
  double worst = 0;
  for (const char* stokes : {"I", "Q", "U", "V"}) {
    const double difference = spip::test::image_difference(cpu, gpu, std::string("demo-dirty-") + stokes + ".fits");
    EXPECT_LT(difference, 1e-5) << stokes;
    worst = std::max(worst, difference);
  }
  std::cout << "[ measured ] binned sub-bands with gaps, GPU against CPU dirty cubes: " << worst << " of the peak\n";
  // Bins 2, 5 and 6 (channels 4-5, 10-11, 12-13) hold no channel: NaN throughout, the others not at all.
  const auto cube = spip::fits::read_image((gpu / "demo-dirty-I.fits").string()).data;
  const std::size_t plane = 256 * 256;
  ASSERT_EQ(cube.size(), 8 * plane);
  for (std::size_t k = 0; k < 8; ++k) {
    std::size_t nan = 0;
    for (std::size_t i = 0; i < plane; ++i) nan += std::isnan(cube[k * plane + i]);
    EXPECT_EQ(nan, k == 2 || k == 5 || k == 6 ? plane : 0u) << "bin " << k;
  }
}
