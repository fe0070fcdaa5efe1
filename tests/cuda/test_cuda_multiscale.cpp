// Multiscale CLEAN on the GPU backend: its scale convolutions (cuFFT) against the CPU's
// (FFTW), and a whole multiscale run on the device against the same run on the CPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "backend_products.hpp"
#include "gpu_test_main.hpp"
#include "scratch.hpp"
#include "spip/cuda/scale_convolver.hpp"
#include "spip/deconv/multiscale.hpp"

namespace fs = std::filesystem;

namespace {

fs::path run(const std::string& device, const std::string& ms, const std::string& name) {
  const fs::path out = spip::test::scratch_path(name);
  const std::string command = std::string(SPIP_MPIEXEC) + " 1 " + SPIP_BIN + " --config " + SPIP_DEMO_CONFIG +
                              " --input.ms " + ms + " --output.dir " + out.string() +
                              " --image.size 256 --image.scale 40 --faraday.dphi 1 --input.channel_end 8" +
                              " --clean.multiscale true --clean.scales 0,6,12,24 --parallel.device " + device +
                              " > " + out.string() + ".log 2>&1";
  EXPECT_EQ(std::system(command.c_str()), 0) << spip::test::file_text(out.string() + ".log");
  return out;
}

}  // namespace

TEST(CudaMultiscale, ScalePsfsAndCrossTermsEqualTheCpus) {
  constexpr int n = 96;
  std::vector<float> psf(n * n);
  for (int y = 0; y < n; ++y)
    for (int x = 0; x < n; ++x) {
      const double dx = x - n / 2, dy = y - n / 2, r2 = dx * dx + dy * dy;
      psf[y * n + x] = static_cast<float>(std::exp(-r2 / 6.0) + (r2 > 0 ? 0.1 * std::cos(0.7 * dx - 0.3 * dy) * std::exp(-r2 / 500) : 0));
    }
  const std::vector<double> scales{0, 5, 11, 22};
  spip::deconv::MultiscaleClean cpu(psf.data(), n, {scales, 0.6, 5.0},
                                    [](int reach) { return spip::deconv::make_host_convolver(n, reach); });
  spip::deconv::MultiscaleClean gpu(psf.data(), n, {scales, 0.6, 5.0}, [](int reach) {
    return spip::cuda::make_scale_convolver(spip::test::gpu_device, n, reach);
  });
  ASSERT_EQ(cpu.scale_count(), 4);
  ASSERT_EQ(gpu.scale_count(), 4);
  double worst = 0;
  for (int j = 0; j < 4; ++j)
    for (int k = j; k < 4; ++k) {
      const std::vector<float> a = cpu.cross_term(j, k), b = gpu.cross_term(j, k);
      for (std::size_t p = 0; p < a.size(); ++p) worst = std::max(worst, static_cast<double>(std::abs(a[p] - b[p])));
    }
  std::cout << "[ measured ] GPU scale PSFs and cross-terms against the CPU's: " << worst << " of the PSF peak\n";
  EXPECT_LT(worst, 1e-6);
}

// Multiscale CLEAN's choices between near-equal scales and pixels follow the last bits
// as Hogbom's do, and its models spread wider: on the sample, whose only noise is
// CLEAN's own error, the models differed by 2.3e-4 of their peak (this test's [ measured ]
// lines at 1f830aa, H200, 2026-11-30) and the noise maps by up to 3 times (by hand, on
// maps a one-off script brought back), so the comparison is the pipeline's, on the noisy
// sample (backend_products.hpp).
TEST(CudaMultiscale, AMultiscaleRunOnTheGpuMakesTheCpusProducts) {
  const std::string ms = spip::test::noisy_sample_ms();
  const fs::path cpu = run("cpu", ms, "multiscale_cpu");
  const fs::path gpu = run("gpu", ms, "multiscale_gpu");
  EXPECT_NE(spip::test::file_text(gpu.string() + ".log").find("on gpu"), std::string::npos);
  EXPECT_GE(spip::test::expect_backends_agree(cpu, gpu), 50);
}
