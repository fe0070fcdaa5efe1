// The pruned 2-D transforms (Fft2d): right wherever the output's rows and columns meet,
// against a direct double-precision DFT, and clear() leaves a grid that forward() or
// backward() wrote zero again, for supports that straddle FFTW's blocks of lines.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "spip/error.hpp"
#include "spip/imaging/fft.hpp"

namespace spip::imaging {
namespace {

using cdouble = std::complex<double>;

// From the page tables (smaps_rollup), not VmRSS, whose per-thread counters lag.
long resident_kib() {
  std::ifstream rollup("/proc/self/smaps_rollup");
  std::string line;
  while (std::getline(rollup, line))
    if (line.starts_with("Rss:")) return std::stol(line.substr(4));
  return -1;
}

// First in this binary, before any large block is freed for the heap to reuse: a grid
// of 2 MiB and 4 KiB, all of it written, makes the process hold its own bytes (a huge
// page and a small one), not two huge pages. Where transparent huge pages are off
// there is nothing to tell apart.
TEST(FftBuffer, AGridJustOverHugePagesHoldsItsOwnBytes) {
  std::ifstream enabled("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string modes((std::istreambuf_iterator<char>(enabled)), std::istreambuf_iterator<char>());
  if (modes.empty() || modes.find("[never]") != std::string::npos) GTEST_SKIP() << "no transparent huge pages here";
  const std::size_t cells = ((std::size_t{2} << 20) + 4096) / sizeof(std::complex<float>);
  const long before = resident_kib();
  FftBuffer grid(cells);
  std::fill(grid.data(), grid.data() + cells, std::complex<float>(1, 0));
  const long held = resident_kib() - before;
  std::printf("[ measured ] a grid of 2052 KiB, written: %ld KiB more resident\n", held);
  EXPECT_LT(held, 3 * 1024);
}

// Flags on `count` lines from `first`, wrapped as a uv support wraps around the grid.
std::vector<std::uint8_t> band(int n, int first, int count) {
  std::vector<std::uint8_t> flags(n, 0);
  for (int i = 0; i < count; ++i) flags[(first + i) % n] = 1;
  return flags;
}

struct Case {
  Fft2d::Support input, output;
};

std::vector<Case> cases(int n) {
  return {
      {{band(n, n - 7, 19), band(n, n - 5, 11)}, {band(n, 9, 50), band(n, 9, 50)}},  // a uv band, an image window
      {{band(n, 3, 2), band(n, 40, 3)}, {band(n, n - 11, 23), band(n, 0, n)}},       // a sparse model, every column
      {{band(n, 0, n), band(n, 0, n)}, {band(n, 0, n), band(n, 0, n)}},             // everything
  };
}

TEST(Fft2d, PrunedTransformsMatchADirectDftWhereTheOutputsMeet) {
  const int n = 72;  // 9 blocks of 8 rows, 2 blocks of 32 columns and a last one of 8
  const Fft2d& fft = Fft2d::shared(n);
  std::mt19937 random(5);
  std::normal_distribution<float> normal;
  for (int sign : {-1, +1})
    for (const Case& c : cases(n)) {
      FftBuffer grid(fft.cells());
      const std::complex<float> sentinel(99.0f, -99.0f);  // past n in each row: never touched
      std::fill(grid.data(), grid.data() + grid.size(), sentinel);
      std::vector<cdouble> input(static_cast<std::size_t>(n) * n);
      for (int y = 0; y < n; ++y)
        for (int x = 0; x < n; ++x) {
          const std::size_t pixel = static_cast<std::size_t>(y) * n + x;
          const bool held = c.input.rows[y] && c.input.columns[x];
          input[pixel] = held ? cdouble(normal(random), normal(random)) : cdouble{};
          grid.data()[static_cast<std::size_t>(y) * fft.pitch() + x] = std::complex<float>(input[pixel]);
        }
      if (sign < 0)
        fft.forward(grid.data(), c.input, c.output);
      else
        fft.backward(grid.data(), c.input, c.output);
      double worst = 0, peak = 0;
      for (int ky = 0; ky < n; ++ky)
        for (int kx = 0; kx < n; ++kx) {
          if (!c.output.rows[ky] || !c.output.columns[kx]) continue;
          cdouble sum = 0;
          for (int y = 0; y < n; ++y)
            for (int x = 0; x < n; ++x)
              sum += input[static_cast<std::size_t>(y) * n + x] *
                     std::polar(1.0, sign * 2 * M_PI * (static_cast<double>(ky) * y + static_cast<double>(kx) * x) / n);
          worst = std::max(worst, std::abs(sum - cdouble(grid.data()[static_cast<std::size_t>(ky) * fft.pitch() + kx])));
          peak = std::max(peak, std::abs(sum));
        }
      EXPECT_LT(worst, 1e-5 * peak) << "sign " << sign;
      std::size_t touched = 0;
      for (int y = 0; y < n; ++y)
        for (int x = n; x < fft.pitch(); ++x) touched += grid.data()[static_cast<std::size_t>(y) * fft.pitch() + x] != sentinel;
      EXPECT_EQ(touched, 0u);
    }
}

TEST(Fft2d, ClearZeroesEveryCellATransformWrote) {
  const int n = 72;
  const Fft2d& fft = Fft2d::shared(n);
  for (int backward = 0; backward < 2; ++backward)
    for (const Case& c : cases(n)) {
      FftBuffer grid(fft.cells());
      std::fill(grid.data(), grid.data() + grid.size(), std::complex<float>{});
      for (int y = 0; y < n; ++y)
        for (int x = 0; x < n; ++x)
          grid.data()[static_cast<std::size_t>(y) * fft.pitch() + x] =
              c.input.rows[y] && c.input.columns[x] ? std::complex<float>(1.0f + x, 2.0f - y) : std::complex<float>{};
      if (backward)
        fft.backward(grid.data(), c.input, c.output);
      else
        fft.forward(grid.data(), c.input, c.output);
      std::size_t written = 0;
      for (std::size_t i = 0; i < grid.size(); ++i) written += grid.data()[i] != std::complex<float>{};
      ASSERT_GT(written, 0u);
      fft.clear(grid.data(), c.input, c.output);
      std::size_t left = 0;
      for (std::size_t i = 0; i < grid.size(); ++i) left += grid.data()[i] != std::complex<float>{};
      EXPECT_EQ(left, 0u) << "of " << written << " cells written, " << (backward ? "backward" : "forward");
    }
}

// The plans take FFTW's aligned codelets, which would read a grid off its 64-byte
// boundary wrongly; such a grid is refused instead.
TEST(Fft2d, AGridOffA64ByteBoundaryIsRefused) {
  const int n = 72;
  const Fft2d& fft = Fft2d::shared(n);
  FftBuffer grid(fft.cells() + 4);
  std::fill(grid.data(), grid.data() + grid.size(), std::complex<float>{});
  EXPECT_THROW(fft.forward(grid.data() + 4, Fft2d::full(n), Fft2d::full(n)), Error);
  EXPECT_THROW(fft.backward(grid.data() + 2, Fft2d::full(n), Fft2d::full(n)), Error);
  EXPECT_NO_THROW(fft.forward(grid.data(), Fft2d::full(n), Fft2d::full(n)));
}

}  // namespace
}  // namespace spip::imaging
