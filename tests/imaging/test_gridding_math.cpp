// The per-element functions the CPU Gridder and the CUDA kernels share, against their
// definitions. (The Gridder tests check them again end to end against a direct DFT.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <numbers>
#include <random>
#include <vector>

#include "spip/common/complex_math.hpp"
#include "spip/deconv/clean_math.hpp"
#include "spip/imaging/es_kernel.hpp"
#include "spip/imaging/gridding_math.hpp"
#include "spip/imaging/tile_plan.hpp"
#include "spip/imaging/w_layout.hpp"

namespace spip::imaging {
namespace {

// One visibility at grid position g, gridded in 1-D onto P = sigma N cells, Fourier
// transformed directly and divided by the kernel's transform: its largest error over
// the N pixels, relative to the exact exp(2 pi i g x / P) of modulus 1.
double gridding_error_1d(const EsKernel& kernel, int image_size, int grid_size, double g) {
  const int first = footprint_first(g, kernel.support);
  double worst = 0;
  for (int x = -image_size / 2; x < image_size / 2; ++x) {
    std::complex<double> sum = 0;
    for (int i = 0; i < kernel.support; ++i)
      sum += kernel(first + i - g) * std::polar(1.0, 2 * std::numbers::pi * (first + i) * x / grid_size);
    sum /= kernel_transform(kernel, x, grid_size);
    worst = std::max(worst, std::abs(sum - std::polar(1.0, 2 * std::numbers::pi * g * x / grid_size)));
  }
  return worst;
}

// aliasing_error() estimates the error that gridding with a kernel makes to within
// 25 % (it sums the first three aliases on each side); choose_kernel() takes the
// narrowest kernel within a budget.
TEST(EsKernel, AliasingErrorEstimatesTheGriddingErrorAndChoosesTheNarrowestKernel) {
  for (double sigma : {1.25, 1.5, 2.0}) {
    const int image_size = 64, grid_size = static_cast<int>(sigma * image_size);
    for (int support = 4; support <= 12; ++support) {
      const EsKernel kernel = es_kernel(support, sigma);
      const double bound = aliasing_error(kernel, sigma);
      double worst = 0;
      for (int trial = 0; trial < 16; ++trial)
        worst = std::max(worst, gridding_error_1d(kernel, image_size, grid_size, 20.0 + trial / 16.0));
      EXPECT_LE(worst, 1.25 * bound) << "sigma " << sigma << ", W = " << support;
      EXPECT_GT(worst, 0.2 * bound) << "sigma " << sigma << ", W = " << support;
    }
    for (double budget : {1e-3, 1e-4, 1e-5, 1e-6}) {
      const EsKernel chosen = choose_kernel(budget, sigma);
      EXPECT_LE(aliasing_error(chosen, sigma), budget) << "sigma " << sigma << ", budget " << budget;
      EXPECT_GT(aliasing_error(es_kernel(chosen.support - 1, sigma), sigma), budget)
          << "sigma " << sigma << ", budget " << budget;
    }
  }
}

TEST(GriddingMath, PackedLanesUnpackToBothStokesFromPointAndMirror) {
  std::mt19937 random(7);
  std::uniform_real_distribution<double> value(-3, 3);
  for (int trial = 0; trial < 100; ++trial) {
    const std::complex<double> a(value(random), value(random)), b(value(random), value(random));
    // Degridding a packed image pair gives a + i b at a point and conj(a) + i conj(b)
    // at its mirror, which is what gridding puts there.
    const std::complex<double> at_point = a + std::complex<double>(0, 1) * b;
    const std::complex<double> at_mirror = std::conj(a) + std::complex<double>(0, 1) * std::conj(b);
    EXPECT_LT(std::abs(packed_lane(a, b, false) - at_point), 1e-14);
    EXPECT_LT(std::abs(packed_lane(a, b, true) - at_mirror), 1e-14);
    EXPECT_LT(std::abs(unpacked_stokes(at_point, at_mirror, false) - a), 1e-14);
    EXPECT_LT(std::abs(unpacked_stokes(at_point, at_mirror, true) - b), 1e-14);
    // The device's complex type gives the same bits.
    const Complex<double> da(a.real(), a.imag()), db(b.real(), b.imag());
    const Complex<double> packed = packed_lane(da, db, true);
    EXPECT_EQ(packed.real(), packed_lane(a, b, true).real());
    EXPECT_EQ(packed.imag(), packed_lane(a, b, true).imag());
  }
}

TEST(GriddingMath, FootprintCoversTheKernelSupportWithCentringSigns) {
  const EsKernel kernel = choose_kernel(1e-5, 2.0);
  for (double g : {10.0, 10.25, 10.5, 10.99, 511.3}) {
    const int first = footprint_first(g, kernel.support);
    EXPECT_LE(std::abs(first - g), 0.5 * kernel.support + 1e-12);
    EXPECT_GT(first + kernel.support - 1 - g, 0.5 * kernel.support - 1 - 1e-12);
    for (int i = 0; i < kernel.support; ++i) {
      const double expected = kernel(first + i - g) * (((first + i) % 2) ? -1.0 : 1.0);
      EXPECT_FLOAT_EQ(footprint_value(kernel, first, i, g), static_cast<float>(expected));
    }
    // The cell before the footprint is outside the support.
    EXPECT_EQ(kernel(first - 1 - g), 0.0);
  }
}

TEST(GriddingMath, UAndVEnterTheGridWithTheImageSigns) {
  const double du = 2.5;
  const int p = 64;
  EXPECT_DOUBLE_EQ(grid_position_u(0, du, p), 32);
  EXPECT_DOUBLE_EQ(grid_position_u(du, du, p), 31);  // l increases to the left
  EXPECT_DOUBLE_EQ(grid_position_v(du, du, p), 33);
  EXPECT_TRUE(on_grid(31 * du, -31 * du, du, p));
  EXPECT_FALSE(on_grid(31.5 * du, 0, du, p));
  EXPECT_EQ(wrap_cell(-1, p), p - 1);
  EXPECT_EQ(wrap_cell(p, p), 0);
}

TEST(GriddingMath, ImageCellsAreCentredWithAlternatingSigns) {
  const ImageCell centre = image_cell(50, 50, 100, 120);
  EXPECT_EQ(centre.cell, 60LL * 120 + 60);
  EXPECT_EQ(centre.sign, 1.0);
  EXPECT_EQ(image_cell(51, 50, 100, 120).sign, -1.0);
  EXPECT_EQ(image_cell(51, 51, 100, 120).sign, 1.0);
}

TEST(GriddingMath, WPlaneWeightPeaksAtItsPlaneAndRotationsAreUnitPhases) {
  const EsKernel w_kernel = choose_kernel(1e-4, 2.0);
  const double w_first = -100, dw = 4;
  EXPECT_DOUBLE_EQ(w_plane_weight(w_kernel, w_first + 7 * dw, w_first, dw, 7), 1.0);
  EXPECT_LT(w_plane_weight(w_kernel, w_first + 7.5 * dw, w_first, dw, 7), 1.0);
  EXPECT_EQ(w_plane_weight(w_kernel, w_first + (7 + w_kernel.support) * dw, w_first, dw, 7), 0.0);
  // Rotation by x0 and the plane's screen at x_shifted add up to the full w-phase.
  const double w = 123.4, x0 = -0.01, x_shifted = -0.004;
  EXPECT_NEAR(w_rotation_angle(w, x0) + w_screen_angle(w, x_shifted), -two_pi * w * (x0 + x_shifted), 1e-12);
}

TEST(GriddingMath, PointLayoutKeepsOrderAndFirstPlanesReachEveryWeightedPlane) {
  const ImageGeometry geometry = ImageGeometry::make(128, 1e-3, 1.5);
  const WStacking stacking = make_w_stacking(geometry, 1e-4, true);
  std::mt19937 random(3);
  std::uniform_real_distribution<double> uv(-40, 40), w(-300, 300);
  std::vector<double> uvw;
  for (int k = 0; k < 500; ++k) uvw.insert(uvw.end(), {uv(random), uv(random), w(random)});
  uvw.insert(uvw.end(), {1e6, 0, 0});  // off the grid
  const PointLayout layout = make_point_layout(uvw.data(), uvw.size() / 3, geometry, stacking);
  EXPECT_EQ(layout.outside, 1u);
  EXPECT_EQ(layout.hermitian.size(), 2 * layout.direct.size());
  // Every plane where a point's w-weight is above the kernel's edge value e^-beta (which
  // rounding can leave a hair inside the support) is one of the W_w planes from its
  // first (first_w_plane, as both gridders group the points).
  const WPlanes planes{layout.w_first, layout.planes};
  const int ws = stacking.w_kernel.support;
  const double edge = 1.01 * std::exp(-stacking.w_kernel.beta);
  for (std::size_t i = 0; i < layout.hermitian.size(); ++i) {
    const double wi = layout.hermitian[i].w;
    const int first = first_w_plane(wi, planes, stacking.dw, ws);
    int weighted = 0;
    for (int p = 0; p < layout.planes; ++p) {
      const bool held = p >= first && p < first + ws;
      const double weight = w_plane_weight(stacking.w_kernel, wi, layout.w_first, stacking.dw, p);
      weighted += weight > edge;
      if (weight > edge) {
        EXPECT_TRUE(held) << "point " << i << ", plane " << p;
      }
    }
    EXPECT_GE(weighted, ws - 1) << "point " << i;
    if (i > 0) {
      EXPECT_LE(layout.hermitian[i - 1].k, layout.hermitian[i].k);  // the visibilities' order
    }
  }
}

}  // namespace
}  // namespace spip::imaging

namespace spip::deconv {
namespace {

TEST(CleanMath, SearchValuesAndShiftedPsfPixels) {
  const float r[4] = {3, -4, 12, 1};  // one pixel of I, Q, U, V
  EXPECT_EQ(squared_search_value(PeakSearch::stokes_i, r, 0, 1), 9.0f);
  EXPECT_EQ(squared_search_value(PeakSearch::linear_pol, r, 0, 1), 160.0f);
  EXPECT_EQ(squared_search_value(PeakSearch::full_stokes, r, 0, 1), 170.0f);
  const int n = 8;
  EXPECT_EQ(psf_pixel_under(4, 4, 4, 4, n), 4 * n + 4);  // a centred component: the PSF itself
  EXPECT_EQ(psf_pixel_under(6, 5, 6, 5, n), 4 * n + 4);  // its peak lands on the component
  EXPECT_EQ(psf_pixel_under(0, 0, 6, 5, n), -1);         // shifted out of the PSF
  EXPECT_EQ(psf_pixel_under(2, 1, 6, 5, n), 0);
}

}  // namespace
}  // namespace spip::deconv
