// The whole job on the GPU backend against the CPU backend, product by product:
// images within 1e-5 of each file's peak, and the same Faraday-depth peaks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "spip/fits/fits_image.hpp"

namespace fs = std::filesystem;

namespace {

std::string run(const std::string& device, const fs::path& out) {
  const std::string command = std::string(SPIP_MPIEXEC) + " 2 " + SPIP_BIN + " --config " + SPIP_DEMO_CONFIG +
                              " --input.ms " + SPIP_TEST_DATA + "/oskar_small.ms --output.dir " + out.string() +
                              " --image.size 256 --image.scale 40 --faraday.dphi 1 --parallel.device " + device +
                              " > " + out.string() + ".log 2>&1";
  return std::system(command.c_str()) == 0 ? "" : "spip failed, see " + out.string() + ".log";
}

double median(std::vector<float> values) {
  std::erase_if(values, [](float v) { return !std::isfinite(v); });
  if (values.empty()) return 0;
  std::nth_element(values.begin(), values.begin() + values.size() / 2, values.end());
  return values[values.size() / 2];
}

}  // namespace

TEST(CudaPipeline, EveryProductMatchesTheCpuBackend) {
  const fs::path base = fs::path(testing::TempDir()) / "spip_cuda_pipeline";
  fs::remove_all(base);
  fs::create_directories(base);
  ASSERT_EQ(run("cpu", base / "cpu"), "");
  ASSERT_EQ(run("gpu", base / "gpu"), "");

  const std::vector<float> pi = spip::fits::read_image((base / "cpu" / "demo-peak-pi.fits").string()).data;
  const double bright = 5 * median(pi);  // peak maps are compared where a source is
  int files = 0;
  for (const fs::directory_entry& entry : fs::directory_iterator(base / "cpu")) {
    if (entry.path().extension() != ".fits") continue;
    const std::string name = entry.path().filename().string();
    const std::vector<float> cpu = spip::fits::read_image(entry.path().string()).data;
    const std::vector<float> gpu = spip::fits::read_image((base / "gpu" / name).string()).data;
    ASSERT_EQ(cpu.size(), gpu.size()) << name;
    const bool peak_map = name.find("-peak-") != std::string::npos;
    double worst = 0, scale = 0;
    for (std::size_t i = 0; i < cpu.size(); ++i) {
      ASSERT_EQ(std::isfinite(cpu[i]), std::isfinite(gpu[i])) << name << " pixel " << i;
      if (!std::isfinite(cpu[i]) || (peak_map && !(pi[i % pi.size()] > bright))) continue;
      worst = std::max(worst, static_cast<double>(std::abs(cpu[i] - gpu[i])));
      scale = std::max(scale, static_cast<double>(std::abs(cpu[i])));
    }
    const double relative = scale > 0 ? worst / scale : worst;
    std::printf("[ measured ] %s: max |GPU - CPU| = %.3g (%.2e of the largest value)\n", name.c_str(), worst, relative);
    if (name.ends_with("-peak-phi.fits"))
      EXPECT_LT(worst, 1e-3) << name;  // rad/m^2: the same peak, refined alike
    else
      EXPECT_LT(relative, 1e-5) << name;
    ++files;
  }
  EXPECT_GT(files, 40);
}
