// The gridder against a direct double-precision DFT: dirty images and predicted
// visibilities within the requested accuracy, with large w and sources far from the
// phase centre, and grid/degrid adjoint to each other.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <complex>
#include <numbers>
#include <random>

#include "spip/imaging/gridder.hpp"

using namespace spip::imaging;
using cdouble = std::complex<double>;
constexpr double two_pi = 2 * std::numbers::pi;

namespace {

struct Problem {
  ImageGeometry geometry;
  std::vector<double> uvw;                 // wavelengths
  std::vector<std::complex<float>> vis;    // [k][2]: two independent "Stokes" sets
  std::vector<float> weight;
};

// Random baselines filling the grid's usable uv range, with |w| up to w_max.
Problem make_problem(int size, double cell_arcsec, double padding, double accuracy, double w_max, std::size_t count,
                     unsigned seed) {
  Problem p;
  p.geometry = ImageGeometry::make(size, cell_arcsec / 206264.80624709636, oversampling_for(accuracy, padding));
  std::mt19937 rng(seed);
  const double uv_max = 0.45 / p.geometry.cell_rad;  // inside the image's Nyquist range
  std::uniform_real_distribution<double> uv(-uv_max, uv_max), w(-w_max, w_max), amp(-1, 1), pos(0.5, 2.0);
  for (std::size_t k = 0; k < count; ++k) {
    p.uvw.insert(p.uvw.end(), {uv(rng), uv(rng), w(rng)});
    for (int s = 0; s < 2; ++s) {
      p.vis.emplace_back(static_cast<float>(amp(rng)), static_cast<float>(amp(rng)));
      p.weight.push_back(static_cast<float>(pos(rng)));
    }
  }
  return p;
}

double n_minus_1(double l, double m) { return std::sqrt(1 - l * l - m * m) - 1; }

std::vector<double> direct_dirty(const Problem& p, int s) {
  const ImageGeometry& g = p.geometry;
  std::vector<double> image(g.pixels());
  for (int y = 0; y < g.size; ++y)
    for (int x = 0; x < g.size; ++x) {
      const double l = g.l(x), m = g.m(y), nm = n_minus_1(l, m);
      cdouble sum = 0;
      for (std::size_t k = 0; k < p.uvw.size() / 3; ++k) {
        const double* c = &p.uvw[3 * k];
        sum += cdouble(p.vis[2 * k + s]) * static_cast<double>(p.weight[2 * k + s]) *
               std::polar(1.0, -two_pi * (c[0] * l + c[1] * m + c[2] * nm));
      }
      image[static_cast<std::size_t>(y) * g.size + x] = sum.real();
    }
  return image;
}

double relative_max_error(const std::vector<double>& reference, const float* got) {
  double worst = 0, peak = 0;
  for (std::size_t i = 0; i < reference.size(); ++i) {
    worst = std::max(worst, std::abs(reference[i] - got[i]));
    peak = std::max(peak, std::abs(reference[i]));
  }
  return worst / peak;
}

struct Case {
  double accuracy;
  double padding;
  double cell_arcsec;  // 64 pixels of this: up to 2.1 deg across
  double w_max;
};

class GridderVsDft : public testing::TestWithParam<Case> {};

}  // namespace

TEST_P(GridderVsDft, DirtyImageMatchesDirectDft) {
  const Case c = GetParam();
  Problem p = make_problem(64, c.cell_arcsec, c.padding, c.accuracy, c.w_max, 1500, 11);
  Gridder gridder(p.geometry, c.accuracy, true);
  gridder.set_uvw(p.uvw.data(), p.uvw.size() / 3);
  ASSERT_EQ(gridder.num_outside(), 0u);
  std::vector<float> images(2 * p.geometry.pixels());
  gridder.grid(p.vis.data(), p.weight.data(), 2, images.data());
  for (int s = 0; s < 2; ++s) {
    const double error = relative_max_error(direct_dirty(p, s), images.data() + s * p.geometry.pixels());
    EXPECT_LT(error, c.accuracy) << "Stokes slot " << s << ", " << gridder.num_w_planes() << " w-planes";
    std::cout << "[ measured ] accuracy " << c.accuracy << " padding " << c.padding << ": dirty max error / peak = "
              << error << " (kernel W = " << gridder.uv_kernel().support << ", " << gridder.num_w_planes()
              << " w-planes)\n";
  }
  // One Stokes parameter alone, as the PSF is made: each visibility gridded once (the
  // direct list), those with w < 0 at their mirror points.
  const std::size_t count = p.uvw.size() / 3;
  std::vector<std::complex<float>> vis(count);
  std::vector<float> weight(count);
  int negative_w = 0;
  for (std::size_t k = 0; k < count; ++k) {
    vis[k] = p.vis[2 * k];
    weight[k] = p.weight[2 * k];
    negative_w += p.uvw[3 * k + 2] < 0;
  }
  ASSERT_GT(negative_w, static_cast<int>(count / 4));
  gridder.grid(vis.data(), weight.data(), 1, images.data());
  const double error = relative_max_error(direct_dirty(p, 0), images.data());
  EXPECT_LT(error, c.accuracy) << "one Stokes parameter";
  std::cout << "[ measured ] accuracy " << c.accuracy << ", one Stokes parameter: dirty max error / peak = " << error
            << "\n";
}

TEST_P(GridderVsDft, PredictMatchesDirectSum) {
  const Case c = GetParam();
  Problem p = make_problem(64, c.cell_arcsec, c.padding, c.accuracy, c.w_max, 400, 5);
  const ImageGeometry& g = p.geometry;
  std::vector<float> images(2 * g.pixels(), 0.0f);
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> pixel(0, g.size - 1);
  for (int s = 0; s < 2; ++s)
    for (int source = 0; source < 12; ++source)  // including the image edges
      images[s * g.pixels() + pixel(rng) * g.size + pixel(rng)] += 1.0f + source;
  Gridder gridder(g, c.accuracy, true);
  gridder.set_uvw(p.uvw.data(), p.uvw.size() / 3);
  std::vector<std::complex<float>> vis(p.vis.size());
  gridder.degrid(images.data(), 2, vis.data());
  double worst = 0, peak = 0;
  for (std::size_t k = 0; k < p.uvw.size() / 3; ++k)
    for (int s = 0; s < 2; ++s) {
      const double* uvw = &p.uvw[3 * k];
      cdouble truth = 0;
      for (int y = 0; y < g.size; ++y)
        for (int x = 0; x < g.size; ++x) {
          const float value = images[s * g.pixels() + y * g.size + x];
          if (value == 0) continue;
          truth += static_cast<double>(value) *
                   std::polar(1.0, two_pi * (uvw[0] * g.l(x) + uvw[1] * g.m(y) + uvw[2] * n_minus_1(g.l(x), g.m(y))));
        }
      worst = std::max(worst, std::abs(truth - cdouble(vis[2 * k + s])));
      peak = std::max(peak, std::abs(truth));
    }
  EXPECT_LT(worst / peak, c.accuracy);
  std::cout << "[ measured ] accuracy " << c.accuracy << ": predict max error / peak = " << worst / peak << "\n";
}

TEST_P(GridderVsDft, GridAndDegridAreAdjoint) {
  const Case c = GetParam();
  Problem p = make_problem(64, c.cell_arcsec, c.padding, c.accuracy, c.w_max, 300, 8);
  const ImageGeometry& g = p.geometry;
  std::vector<float> image(g.pixels());
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  for (float& v : image) v = normal(rng);
  std::vector<std::complex<float>> vis(p.uvw.size() / 3), ones_weight_vis(vis.size());
  std::vector<float> unit(vis.size(), 1.0f);
  for (auto& v : vis) v = {normal(rng), normal(rng)};
  Gridder gridder(g, c.accuracy, true);
  gridder.set_uvw(p.uvw.data(), vis.size());
  std::vector<float> dirty(g.pixels());
  gridder.grid(vis.data(), unit.data(), 1, dirty.data());
  gridder.degrid(image.data(), 1, ones_weight_vis.data());
  double lhs = 0, rhs = 0, scale = 0;
  for (std::size_t i = 0; i < g.pixels(); ++i) lhs += static_cast<double>(image[i]) * dirty[i];
  for (std::size_t k = 0; k < vis.size(); ++k) {
    rhs += (cdouble(vis[k]) * std::conj(cdouble(ones_weight_vis[k]))).real();
    scale += std::abs(cdouble(vis[k])) * std::abs(cdouble(ones_weight_vis[k]));
  }
  EXPECT_NEAR(lhs, rhs, 1e-5 * scale);
}

INSTANTIATE_TEST_SUITE_P(Accuracies, GridderVsDft,
                         testing::Values(Case{1e-3, 1.2, 120, 3000}, Case{1e-4, 1.2, 120, 3000},
                                         Case{1e-5, 1.2, 120, 3000}, Case{1e-5, 2.0, 120, 3000},
                                         Case{1e-4, 1.5, 20, 500}));

TEST(Gridder, TwoDimensionalModeIsExactForCoplanarBaselines) {
  Problem p = make_problem(64, 120, 1.2, 1e-5, 0.0, 800, 21);
  Gridder gridder(p.geometry, 1e-5, false);
  gridder.set_uvw(p.uvw.data(), p.uvw.size() / 3);
  EXPECT_EQ(gridder.num_w_planes(), 1);
  std::vector<float> images(2 * p.geometry.pixels());
  gridder.grid(p.vis.data(), p.weight.data(), 2, images.data());
  EXPECT_LT(relative_max_error(direct_dirty(p, 0), images.data()), 1e-5);
}

// Visibilities within two cells of the grid's edge, whose kernels wrap around it:
// each thread grids the rows of its band, reaching across the edge for the points whose
// footprints wrap into it, for 1 to 4 threads.
TEST(Gridder, KernelsWrappingAroundTheGridEdgeMatchTheDirectDft) {
  Problem p = make_problem(64, 120, 1.2, 1e-4, 3000, 400, 31);
  const double du = p.geometry.uv_cell(), edge = 0.5 * p.geometry.grid_size - 1;
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> near_edge(edge - 2, edge), anywhere(-edge, edge);
  for (std::size_t k = 0; k < p.uvw.size() / 3; ++k) {
    const double sign = k % 2 ? 1.0 : -1.0;
    p.uvw[3 * k + (k % 4 < 2 ? 1 : 0)] = sign * near_edge(rng) * du;  // v near the edge, or u
    p.uvw[3 * k + (k % 4 < 2 ? 0 : 1)] = anywhere(rng) * du;
  }
  const std::vector<double> truth = direct_dirty(p, 0);
  const int threads_before = omp_get_max_threads();
  for (int threads = 1; threads <= 4; ++threads) {
    omp_set_num_threads(threads);
    Gridder gridder(p.geometry, 1e-4, true);
    gridder.set_uvw(p.uvw.data(), p.uvw.size() / 3);
    ASSERT_EQ(gridder.num_outside(), 0u);
    std::vector<float> images(2 * p.geometry.pixels());
    gridder.grid(p.vis.data(), p.weight.data(), 2, images.data());
    const double error = relative_max_error(truth, images.data());
    EXPECT_LT(error, 1e-4) << threads << " thread(s)";
    std::cout << "[ measured ] kernels wrapping around the edge, " << threads << " thread(s): dirty max error / peak = "
              << error << "\n";
  }
  omp_set_num_threads(threads_before);
}

TEST(Gridder, TwoDimensionalModeIsWrongForWideFieldsWithLargeW) {
  // Guards the w-stacking tests themselves: these problems do need w-terms.
  Problem p = make_problem(64, 120, 1.2, 1e-5, 3000, 800, 22);
  Gridder gridder(p.geometry, 1e-5, false);
  gridder.set_uvw(p.uvw.data(), p.uvw.size() / 3);
  std::vector<float> images(2 * p.geometry.pixels());
  gridder.grid(p.vis.data(), p.weight.data(), 2, images.data());
  EXPECT_GT(relative_max_error(direct_dirty(p, 0), images.data()), 1e-2);
}

TEST(Gridder, VisibilitiesBeyondTheGridAreCountedAndSkipped) {
  Problem p = make_problem(64, 120, 1.2, 1e-4, 0.0, 10, 2);
  p.uvw[0] = 10.0 / p.geometry.cell_rad;
  Gridder gridder(p.geometry, 1e-4, true);
  gridder.set_uvw(p.uvw.data(), p.uvw.size() / 3);
  EXPECT_EQ(gridder.num_outside(), 1u);
}

TEST(Geometry, GoodFftSizesAreMultiplesOf8AndSmooth) {
  EXPECT_EQ(good_fft_size(614), 640);
  EXPECT_EQ(good_fft_size(1229), 1280);
  EXPECT_EQ(good_fft_size(1290), 1296);
  EXPECT_EQ(good_fft_size(512), 512);
  EXPECT_EQ(good_fft_size(77), 80);
  const ImageGeometry g = ImageGeometry::make(512, 1e-4, 1.2);
  EXPECT_GE(g.grid_size, 615);
  EXPECT_EQ(g.l(256), 0.0);
  EXPECT_DOUBLE_EQ(g.l(255), 1e-4);  // east is left
  EXPECT_DOUBLE_EQ(g.m(257), 1e-4);
}

TEST(EsKernel, TransformMatchesADirectSumOverCells) {
  const EsKernel kernel = choose_kernel(1e-5, 1.2);
  // Sum over integer cells of phi(j - g) cos(2 pi j k / P) is psi(k) for any offset g.
  const int cells = 600;
  for (double k : {0.0, 50.0, 249.0}) {
    double direct = 0;
    for (int j = -kernel.support; j <= kernel.support; ++j)
      direct += kernel(j - 0.3) * std::cos(two_pi * (j - 0.3) * k / cells);
    EXPECT_NEAR(direct / kernel_transform(kernel, k, cells), 1.0, 2e-5) << "k = " << k;
  }
}
