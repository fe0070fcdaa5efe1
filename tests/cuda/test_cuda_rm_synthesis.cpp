// cuBLAS RM synthesis against the CPU's cblas_cgemm on the same A and P.
#include <gtest/gtest.h>

#include <complex>
#include <cstdio>
#include <random>

#include "gpu_test_main.hpp"
#include "spip/cuda/rm_synthesis.hpp"
#include "spip/faraday/rm_synthesis.hpp"


TEST(CudaRmSynthesis, MatchesTheCpuProductTo1e5) {
  std::vector<double> freq;
  for (int c = 0; c < 40; ++c) freq.push_back(120.6e6 + 1.2e6 * c);
  spip::FaradayConfig config;
  config.phi_max = 60;
  config.dphi = 0.5;
  const auto setup = spip::faraday::make_setup(freq, std::vector<double>(freq.size(), 1.0), config);
  const auto a = spip::faraday::synthesis_matrix(setup, setup.axis);
  const int pixels = 4096, phi = setup.axis.count, chans = static_cast<int>(freq.size());
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  std::vector<std::complex<float>> p(static_cast<std::size_t>(chans) * pixels);
  for (auto& v : p) v = {normal(rng), normal(rng)};
  std::vector<std::complex<float>> cpu(static_cast<std::size_t>(phi) * pixels), gpu(cpu.size());
  spip::faraday::synthesise(a, phi, chans, p.data(), pixels, cpu.data());
  spip::cuda::synthesise(spip::test::gpu_device, a.data(), phi, chans, p.data(), pixels, gpu.data());
  double worst = 0, peak = 0;
  for (std::size_t i = 0; i < cpu.size(); ++i) {
    worst = std::max(worst, static_cast<double>(std::abs(cpu[i] - gpu[i])));
    peak = std::max(peak, static_cast<double>(std::abs(cpu[i])));
  }
  EXPECT_LT(worst / peak, 1e-5);
  std::printf("[ measured ] GPU vs CPU RM synthesis: max |dF| / max |F| = %.2e\n", worst / peak);
}
