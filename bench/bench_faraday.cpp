// The Faraday stage's arithmetic on one row group, on this machine's cores: RM synthesis
// (faraday::synthesise, the Faraday cube F = A P) against a bare cblas_cgemm of the
// same shape on the same data, each pixel's noise from its residuals with a thin source
// taken out of every one (faraday::residual_noise, its worst case), and RM-CLEAN with
// the peak fit (faraday::clean_slab) in pixels per second. Prints a table; run by bench/run-faraday-bench.sh.
//   bench_faraday [channels] [depths] [pixels] [repeats]
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "spip/faraday/rm_synthesis.hpp"

namespace {

using cfloat = std::complex<float>;
constexpr double speed_of_light = 299792458.0;

template <class F>
double best_seconds(int repeats, F&& run) {
  double best = 1e300;
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    run();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const int num_chan = argc > 1 ? std::atoi(argv[1]) : 40;
  const int target_phi = argc > 2 ? std::atoi(argv[2]) : 3129;
  const int pixels = argc > 3 ? std::atoi(argv[3]) : 4096;
  const int repeats = argc > 4 ? std::atoi(argv[4]) : 5;

  // The sample's band (120.6 MHz + 1.2 MHz steps), phi_max chosen for target_phi depths.
  std::vector<double> freq;
  for (int c = 0; c < num_chan; ++c) freq.push_back(120.6e6 + 1.2e6 * c);
  spip::FaradayConfig config;
  spip::faraday::SynthesisSetup probe = spip::faraday::make_setup(freq, std::vector<double>(num_chan, 1.0), config);
  config.dphi = probe.axis.dphi;
  config.phi_max = 0.5 * (target_phi - 1) * config.dphi;
  const spip::faraday::SynthesisSetup setup = spip::faraday::make_setup(freq, std::vector<double>(num_chan, 1.0), config);
  const int num_phi = setup.axis.count;
  const std::vector<cfloat> a = spip::faraday::synthesis_matrix(setup, setup.axis);

  // Each pixel: a Faraday-thin source of 0.1-1 Jy at a random depth, and noise.
  std::mt19937 rng(1);
  std::uniform_real_distribution<double> depth(-0.8 * config.phi_max, 0.8 * config.phi_max), flux(0.1, 1.0);
  std::normal_distribution<float> noise(0.0f, 0.01f);
  std::vector<cfloat> p(static_cast<std::size_t>(num_chan) * pixels);
  for (int x = 0; x < pixels; ++x) {
    const double phi = depth(rng), amplitude = flux(rng);
    for (int c = 0; c < num_chan; ++c) {
      const double angle = 2 * phi * std::pow(speed_of_light / freq[c], 2);
      p[static_cast<std::size_t>(c) * pixels + x] = cfloat(static_cast<float>(amplitude * std::cos(angle)) + noise(rng),
                                                          static_cast<float>(amplitude * std::sin(angle)) + noise(rng));
    }
  }

  // The two products are timed alternately, after one warm-up each (OpenBLAS's threads,
  // first touch of the outputs), and the best of each kept: the machine is shared.
  std::vector<cfloat> f(static_cast<std::size_t>(num_phi) * pixels), g(f.size());
  const cfloat one(1.0f, 0.0f), zero(0.0f, 0.0f);
  const auto synthesis = [&] { spip::faraday::synthesise(a, num_phi, num_chan, p.data(), pixels, f.data()); };
  // The bare cgemm gets OpenBLAS's threads, as many as synthesise()'s OpenMP threads
  // (which sets OpenBLAS to one thread for each of its own calls).
  const auto bare = [&] {
    openblas_set_num_threads(omp_get_max_threads());
    cblas_cgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, num_phi, pixels, num_chan, &one, a.data(), num_chan,
                p.data(), pixels, &zero, g.data(), pixels);
  };
  synthesis();
  bare();
  double synth_s = 1e300, bare_s = 1e300;
  for (int r = 0; r < repeats; ++r) {
    synth_s = std::min(synth_s, best_seconds(1, synthesis));
    bare_s = std::min(bare_s, best_seconds(1, bare));
  }

  const double sigma = 0.01 / std::sqrt(num_chan);
  const spip::faraday::SpectrumSettings settings =
      spip::faraday::spectrum_settings(setup, sigma, {0.1, 5 * sigma, 1000, false});
  const std::vector<cfloat> rmsf_double = spip::faraday::rmsf_for_clean(setup);
  long long iterations = 0;
  const double clean_s = best_seconds(std::max(1, repeats / 2), [&] {
    iterations = spip::faraday::clean_slab(f, pixels, rmsf_double, settings).iterations;
  });

  // The spectra as residual planes, each pixel's thin source taken out of its noise.
  std::vector<float> q(p.size()), u(p.size());
  for (std::size_t i = 0; i < p.size(); ++i) {
    q[i] = p[i].real();
    u[i] = p[i].imag();
  }
  const std::vector<double> channel_sigma(num_chan, 0.01);
  const std::vector<float> expected(pixels, static_cast<float>(sigma));
  const double noise_s = best_seconds(repeats, [&] {
    spip::faraday::residual_noise(setup, a, {q.data(), u.data(), pixels, {}}, channel_sigma, expected, 5);
  });

  const double samples = static_cast<double>(num_phi) * pixels;
  std::printf("Faraday row group: %d channels, %d depths, %d pixels (best of %d)\n", num_chan, num_phi, pixels, repeats);
  std::printf("%-34s %10s %16s\n", "step", "time [s]", "rate");
  std::printf("%-34s %10.4f %12.3g samples/s\n", "RM synthesis (faraday::synthesise)", synth_s, samples / synth_s);
  std::printf("%-34s %10.4f %12.3g samples/s\n", "bare cblas_cgemm, same shape", bare_s, samples / bare_s);
  std::printf("%-34s %10s %15.0f %%\n", "synthesis / bare cgemm", "", 100.0 * bare_s / synth_s);
  std::printf("%-34s %10.4f %12.3g samples/s\n", "residual noise (residual_noise)", noise_s, samples / noise_s);
  std::printf("%-34s %10.4f %12.3g pixels/s  (%.1f iterations per pixel)\n", "RM-CLEAN + peak fit (clean_slab)",
              clean_s, pixels / clean_s, static_cast<double>(iterations) / pixels);
  return 0;
}
