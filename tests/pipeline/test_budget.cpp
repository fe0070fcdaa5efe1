// The memory plan's share for CLEAN against what CLEAN allocates: this binary replaces
// operator new and delete with ones that count the bytes live and their peak, so the
// test measures the minor cycles' buffers instead of trusting the plan's arithmetic.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <new>
#include <vector>

#include "budget.hpp"
#include "spip/config/config.hpp"
#include "spip/deconv/convolver.hpp"
#include "spip/deconv/multiscale.hpp"

namespace {

std::atomic<std::size_t> live_bytes{0}, peak_bytes{0};
// Each block carries its size in front, so that delete can subtract it.
constexpr std::size_t header = alignof(std::max_align_t);

void* counted_new(std::size_t size) {
  void* block = std::malloc(size + header);
  if (!block) throw std::bad_alloc();
  *static_cast<std::size_t*>(block) = size;
  const std::size_t now = live_bytes += size;
  std::size_t seen = peak_bytes.load();
  while (now > seen && !peak_bytes.compare_exchange_weak(seen, now)) {
  }
  return static_cast<char*>(block) + header;
}

void counted_delete(void* p) noexcept {
  if (!p) return;
  void* block = static_cast<char*>(p) - header;
  live_bytes -= *static_cast<std::size_t*>(block);
  std::free(block);
}

// A Gaussian of FWHM `fwhm` pixels and peak `peak` at the image's centre.
std::vector<float> gaussian(int n, double fwhm, double peak) {
  std::vector<float> image(static_cast<std::size_t>(n) * n);
  for (int y = 0; y < n; ++y)
    for (int x = 0; x < n; ++x) {
      const double r2 = (x - n / 2) * (x - n / 2) + (y - n / 2) * (y - n / 2);
      image[static_cast<std::size_t>(y) * n + x] = static_cast<float>(peak * std::exp(-4 * std::log(2.0) * r2 / (fwhm * fwhm)));
    }
  return image;
}

}  // namespace

void* operator new(std::size_t size) { return counted_new(size); }
void* operator new[](std::size_t size) { return counted_new(size); }
void operator delete(void* p) noexcept { counted_delete(p); }
void operator delete[](void* p) noexcept { counted_delete(p); }
void operator delete(void* p, std::size_t) noexcept { counted_delete(p); }
void operator delete[](void* p, std::size_t) noexcept { counted_delete(p); }

// Multiscale CLEAN on an extended source: the most its construction and minor cycles
// hold at once (counted here, plus the convolver's two FFTW work planes, which FFTW
// allocates) is within the plan's clean_bytes_per_pixel, and the plan does not ask
// for much more than that.
TEST(MemoryBudget, CountsWhatMultiscaleCleanHolds) {
  constexpr int n = 256;
  const std::size_t pixels = static_cast<std::size_t>(n) * n;
  spip::CleanConfig clean;
  clean.niter = 1000;
  clean.multiscale = true;
  clean.scales = {0, 8, 16, 32};
  const std::vector<float> psf = gaussian(n, 3, 1);
  std::vector<float> residual(4 * pixels, 0.0f), model(4 * pixels, 0.0f);
  const std::vector<float> source = gaussian(n, 20, 1);
  for (int s = 0; s < 3; ++s)
    for (std::size_t p = 0; p < pixels; ++p) residual[s * pixels + p] = source[p] * (s == 0 ? 1.0f : 0.1f);

  const std::size_t before = live_bytes.load();
  peak_bytes = before;
  {
    spip::deconv::MultiscaleClean multiscale(psf.data(), n, {clean.scales, 0.6, 6.0}, [](int reach) {
      return spip::deconv::make_host_convolver(n, reach);
    });
    const spip::deconv::MinorCycleResult result = multiscale.run(
        residual.data(), model.data(), nullptr, spip::PeakSearch::full_stokes, 0.1, 0.05, clean.niter);
    ASSERT_GT(result.iterations, 0);
    ASSERT_GT(multiscale.iterations_per_scale()[2], 0) << "the source is cleaned at its own scales";
  }
  const double m = spip::deconv::convolution_size(n, 2 * spip::deconv::scale_kernel(32).radius);
  const double held = static_cast<double>(peak_bytes.load() - before) + 2 * 8 * m * m;
  const double planned = spip::pipeline::clean_bytes_per_pixel(clean, n) * static_cast<double>(pixels);
  std::cout << "multiscale CLEAN held " << held / 1e6 << " MB at most; the plan counts " << planned / 1e6 << " MB\n";
  EXPECT_LE(held, planned);
  EXPECT_GE(held, 0.9 * planned);
}

// The point CLEAN's sub-minor loop may hold a convolver (it subtracts many components
// at once by FFT); plain Hogbom and no CLEAN hold nothing beside the images.
TEST(MemoryBudget, PointCleanCountsTheSubminorConvolverOnly) {
  spip::CleanConfig clean;
  clean.niter = 1000;
  clean.subminor = true;
  const double m = spip::deconv::convolution_size(256, 0);
  EXPECT_GE(spip::pipeline::clean_bytes_per_pixel(clean, 256) * 256 * 256, 3 * 8 * m * m);
  clean.subminor = false;
  EXPECT_EQ(spip::pipeline::clean_bytes_per_pixel(clean, 256), 0.0) << "plain Hogbom works in place";
  clean.multiscale = true;
  clean.niter = 0;
  EXPECT_EQ(spip::pipeline::clean_bytes_per_pixel(clean, 256), 0.0);
}
