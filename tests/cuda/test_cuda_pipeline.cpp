// The whole job on the GPU backend against the CPU backend, product by product: the
// dirty and PSF cubes within 1e-5 of each file's peak, what Hogbom CLEAN made and what
// is made from it within 1e-3, and the same Faraday-depth peaks (RM-CLEAN's products by
// the share of values that agree, see below).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "spip/cuda/device.hpp"
#include "spip/fits/fits_image.hpp"
#include "scratch.hpp"

namespace fs = std::filesystem;

namespace {

std::string run(const std::string& device, const fs::path& out) {
  const std::string command = std::string(SPIP_MPIEXEC) + " 2 " + SPIP_BIN + " --config " + SPIP_DEMO_CONFIG +
                              " --input.ms " + SPIP_TEST_DATA + "/oskar_small.ms --output.dir " + out.string() +
                              " --image.size 256 --image.scale 40 --faraday.dphi 1 --clean.subminor false --parallel.device " + device +
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
  const fs::path base = spip::test::scratch_dir();
  ASSERT_EQ(run("cpu", base / "cpu"), "");
  ASSERT_EQ(run("gpu", base / "gpu"), "");

  // The GPU's dirty images differ from the CPU's in their last bits (atomics in no fixed
  // order, FMA), so Hogbom, and RM-CLEAN after it, may take the other of two residual
  // pixels that nearly tie. Hogbom's products and what comes of them are compared to
  // 1e-3 of their peak; RM-CLEAN's by the share of values that agree, and the peak maps
  // where a source is.
  const std::vector<float> pi = spip::fits::read_image((base / "cpu" / "demo-peak-pi.fits").string()).data;
  const double bright = 5 * median(pi);
  int files = 0;
  for (const fs::directory_entry& entry : fs::directory_iterator(base / "cpu")) {
    if (entry.path().extension() != ".fits") continue;
    const std::string name = entry.path().filename().string();
    const std::vector<float> cpu = spip::fits::read_image(entry.path().string()).data;
    const std::vector<float> gpu = spip::fits::read_image((base / "gpu" / name).string()).data;
    ASSERT_EQ(cpu.size(), gpu.size()) << name;
    const bool peak_map = name.find("-peak-") != std::string::npos;
    const bool after_rm_clean = peak_map || name.ends_with("-clean.fits");
    double scale = 0;
    for (float v : cpu)
      if (std::isfinite(v)) scale = std::max(scale, static_cast<double>(std::abs(v)));
    const bool phi = name.ends_with("-peak-phi.fits");
    const bool before_clean = name.starts_with("demo-dirty-") || name == "demo-psf.fits";
    const double tolerance = phi ? 1e-3 : (before_clean ? 1e-5 : 1e-3) * scale;  // rad/m^2 for peak phi
    double worst = 0;
    std::size_t compared = 0, agree = 0;
    for (std::size_t i = 0; i < cpu.size(); ++i) {
      ASSERT_EQ(std::isfinite(cpu[i]), std::isfinite(gpu[i])) << name << " pixel " << i;
      if (!std::isfinite(cpu[i]) || (peak_map && !(pi[i % pi.size()] > bright))) continue;
      const double d = std::abs(static_cast<double>(cpu[i]) - gpu[i]);
      worst = std::max(worst, d);
      ++compared;
      agree += d <= tolerance;
    }
    const double share = compared ? static_cast<double>(agree) / compared : 1.0;
    std::printf("[ measured ] %s: max |GPU - CPU| = %.3g (%.2e of the largest value), %.4f within %.3g\n",
                name.c_str(), worst, scale > 0 ? worst / scale : worst, share, tolerance);
    if (!after_rm_clean) {
      EXPECT_LE(worst, tolerance) << name;
    } else {
      EXPECT_GE(share, 0.99) << name;
      EXPECT_LT(worst, phi ? 0.05 : 1e-2 * scale) << name;  // 0.05 rad/m^2: 4 % of the RMSF's FWHM
    }
    ++files;
  }
  EXPECT_GT(files, 40);

  // Both ranks of this node image on the GPU; with one visible they share it.
  if (spip::cuda::probe_devices().devices.size() == 1) {
    std::ifstream log(base / "gpu.log");
    const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    EXPECT_NE(text.find("shared by 2 rank(s) of this node"), std::string::npos) << text;
  }
}
