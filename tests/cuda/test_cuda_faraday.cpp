// The Faraday stage on the GPU against the CPU backend on the same data: the cuBLAS
// product against cblas_cgemm, RM-CLEAN and the peak maps of a slab of simulated
// Faraday-thin pixels.
#include <gtest/gtest.h>

#include <complex>
#include <cstdio>
#include <random>

#include "gpu_test_main.hpp"
#include "spip/cuda/rm_synthesis.hpp"
#include "spip/faraday/rm_synthesis.hpp"

namespace {

std::vector<double> sample_band() {
  std::vector<double> freq;
  for (int c = 0; c < 40; ++c) freq.push_back(120.6e6 + 1.2e6 * c);
  return freq;
}

spip::faraday::SynthesisSetup sample_setup(double phi_max, double dphi) {
  const std::vector<double> freq = sample_band();
  spip::FaradayConfig config;
  config.phi_max = phi_max;
  config.dphi = dphi;
  return spip::faraday::make_setup(freq, std::vector<double>(freq.size(), 1.0), config);
}

double max_abs(const std::vector<std::complex<float>>& values) {
  double peak = 0;
  for (const auto& v : values) peak = std::max(peak, static_cast<double>(std::abs(v)));
  return peak;
}

double max_difference(const std::vector<std::complex<float>>& a, const std::vector<std::complex<float>>& b) {
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, static_cast<double>(std::abs(a[i] - b[i])));
  return worst;
}


// Q + iU of pixels with 1 to 3 Faraday-thin sources each, plus noise: [channel][pixel].
std::vector<std::complex<float>> noisy_thin_slab(const spip::faraday::SynthesisSetup& setup, int pixels, double noise_sigma) {
  const int chans = static_cast<int>(setup.lambda_sq.size());
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> rm(-60, 60), angle(-1.5, 1.5), flux(0.01, 0.2);
  std::normal_distribution<double> noise(0, noise_sigma);
  std::vector<std::complex<float>> p(static_cast<std::size_t>(chans) * pixels);
  for (int x = 0; x < pixels; ++x) {
    const int sources = 1 + x % 3;
    std::vector<double> f(sources), chi(sources), phi(sources);
    for (int s = 0; s < sources; ++s) f[s] = flux(rng), chi[s] = angle(rng), phi[s] = rm(rng);
    for (int c = 0; c < chans; ++c) {
      std::complex<double> sum(noise(rng), noise(rng));
      for (int s = 0; s < sources; ++s) sum += f[s] * std::polar(1.0, 2 * (chi[s] + phi[s] * setup.lambda_sq[c]));
      p[static_cast<std::size_t>(c) * pixels + x] = std::complex<float>(sum);
    }
  }
  return p;
}

constexpr int slab_pixels = 3000;
constexpr double channel_noise = 2e-3;

// The slab both RM tests use, with what the per-pixel stage needs.
struct NoisySlab {
  spip::faraday::SynthesisSetup setup = sample_setup(80, 0.25);
  int chans = static_cast<int>(setup.lambda_sq.size());
  std::vector<std::complex<float>> p = noisy_thin_slab(setup, slab_pixels, channel_noise);
  double sigma = channel_noise / std::sqrt(static_cast<double>(chans));
  spip::faraday::SpectrumSettings settings = spip::faraday::spectrum_settings(setup, sigma, {0.1, 3 * sigma, 1000, false});
  std::vector<std::complex<float>> rmsf_double = spip::faraday::rmsf_for_clean(setup);
  std::vector<std::complex<float>> a = spip::faraday::synthesis_matrix(setup, setup.axis);
};

}  // namespace

TEST(CudaRmSynthesis, MatchesTheCpuProductTo1e5) {
  const auto setup = sample_setup(60, 0.5);
  const auto a = spip::faraday::synthesis_matrix(setup, setup.axis);
  const int pixels = 4096, phi = setup.axis.count, chans = static_cast<int>(setup.lambda_sq.size());
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  std::vector<std::complex<float>> p(static_cast<std::size_t>(chans) * pixels);
  for (auto& v : p) v = {normal(rng), normal(rng)};
  std::vector<std::complex<float>> cpu(static_cast<std::size_t>(phi) * pixels), gpu(cpu.size());
  spip::faraday::synthesise(a, phi, chans, p.data(), pixels, cpu.data());
  spip::cuda::synthesise(spip::test::gpu_device, a.data(), phi, chans, p.data(), pixels, gpu.data());
  const double difference = max_difference(cpu, gpu) / max_abs(cpu);
  EXPECT_LT(difference, 1e-5);
  std::printf("[ measured ] GPU vs CPU RM synthesis: max |dF| / max |F| = %.2e\n", difference);
}


// On the same dirty cube, RM-CLEAN must take the same components (same iteration
// counts), and the spectra and all six maps may differ only by the last bits of exp
// and atan2, which CUDA does not round exactly as glibc.
TEST(CudaRmClean, SameDirtyCubeGivesTheCpuComponentsSpectraAndMaps) {
  const NoisySlab in;
  const auto cpu = spip::faraday::synthesise_slab(in.a, in.chans, in.p.data(), slab_pixels, in.rmsf_double, in.settings);
  const auto gpu = spip::cuda::clean_slab(spip::test::gpu_device, cpu.dirty, slab_pixels, in.rmsf_double, in.settings);

  EXPECT_EQ(gpu.iterations, cpu.iterations);
  const double clean = max_difference(cpu.clean, gpu.clean) / max_abs(cpu.clean);
  EXPECT_LT(clean, 1e-6);
  double worst_map = 0;
  for (std::size_t i = 0; i < cpu.maps.size(); ++i)
    worst_map = std::max(worst_map, std::abs(static_cast<double>(cpu.maps[i]) - gpu.maps[i]) /
                                        std::max(1.0, std::abs(static_cast<double>(cpu.maps[i]))));
  EXPECT_LT(worst_map, 1e-5);
  std::printf("[ measured ] GPU vs CPU RM-CLEAN of one dirty cube (%d pixels): %lld vs %lld iterations, clean %.2e of "
              "peak, maps %.2e\n",
              slab_pixels, gpu.iterations, cpu.iterations, clean, worst_map);
}

// From P: the cuBLAS and OpenBLAS cubes differ in their last bits, so RM-CLEAN may take
// a different component where two residual samples nearly tie; the peak depth of every
// clearly polarised pixel must still agree.
TEST(CudaRmSynthesis, SlabGivesTheCpuPeakDepthsWhereTheSignalIsClear) {
  const NoisySlab in;
  const auto cpu = spip::faraday::synthesise_slab(in.a, in.chans, in.p.data(), slab_pixels, in.rmsf_double, in.settings);
  const auto gpu = spip::cuda::synthesise_slab(spip::test::gpu_device, in.a, in.chans, in.p.data(), slab_pixels,
                                               in.rmsf_double, in.settings);

  const double dirty = max_difference(cpu.dirty, gpu.dirty) / max_abs(cpu.dirty);
  EXPECT_LT(dirty, 1e-5);
  // Cubes left on the device come back empty, and the maps are the same.
  const auto maps_only = spip::cuda::synthesise_slab(spip::test::gpu_device, in.a, in.chans, in.p.data(), slab_pixels,
                                                     in.rmsf_double, in.settings, {}, {false, false});
  EXPECT_TRUE(maps_only.dirty.empty());
  EXPECT_TRUE(maps_only.clean.empty());
  EXPECT_EQ(maps_only.maps, gpu.maps);
  EXPECT_EQ(maps_only.iterations, gpu.iterations);
  int clear = 0, within_1e3 = 0;
  double worst_phi = 0;
  for (int x = 0; x < slab_pixels; ++x) {
    if (!(cpu.maps[slab_pixels + x] > 10 * in.sigma)) continue;  // peak PI
    const double d = std::abs(cpu.maps[x] - gpu.maps[x]);
    ++clear;
    within_1e3 += d <= 1e-3;
    worst_phi = std::max(worst_phi, d);
  }
  EXPECT_GT(clear, slab_pixels / 2);
  EXPECT_GE(within_1e3, 0.99 * clear);
  EXPECT_LT(worst_phi, 0.05 * in.settings.fwhm);
  std::printf("[ measured ] GPU vs CPU slab of %d pixels: dirty %.2e of peak; peak phi within 1e-3 rad/m^2 in %d of "
              "%d clear pixels, worst %.2e; %lld vs %lld iterations\n",
              slab_pixels, dirty, within_1e3, clear, worst_phi, gpu.iterations, cpu.iterations);
}
