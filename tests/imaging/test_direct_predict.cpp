// The direct predict against a double-precision sum of the same components, with
// phases of thousands of cycles; and the channel imager choosing it for a sparse model
// (exact, where the gridder is good to its accuracy) and the gridder for a dense one.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <numbers>
#include <random>

#include "spip/imaging/channel_imager.hpp"
#include "spip/imaging/direct_predict.hpp"
#include "spip/imaging/es_kernel.hpp"

using namespace spip::imaging;
using cdouble = std::complex<double>;

namespace {

constexpr double two_pi = 2 * std::numbers::pi;
constexpr double arcsec = std::numbers::pi / (180 * 3600);

// Coordinates [count][3] in wavelengths: |u|, |v| up to uv_max, |w| up to w_max.
std::vector<double> random_uvw(std::size_t count, double uv_max, double w_max, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> uv(-uv_max, uv_max), w(-w_max, w_max);
  std::vector<double> uvw;
  for (std::size_t k = 0; k < count; ++k) uvw.insert(uvw.end(), {uv(rng), uv(rng), w(rng)});
  return uvw;
}

// `sources` pixels of random I, Q, U, V fluxes (signs included), edges included.
std::vector<float> random_model(const ImageGeometry& g, int sources, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> pixel(0, g.size - 1);
  std::uniform_real_distribution<float> flux(-2.0f, 2.0f);
  std::vector<float> model(4 * g.pixels(), 0.0f);
  for (int c = 0; c < sources; ++c) {
    const std::size_t at = static_cast<std::size_t>(pixel(rng)) * g.size + pixel(rng);
    for (int s = 0; s < 4; ++s) model[s * g.pixels() + at] = flux(rng);
  }
  return model;
}

// max |V - V_true| / max |V_true| over the four Stokes parameters, V_true summed in double
// over every pixel of the model, with w ignored where `wstacking` is false.
double relative_error(const ImageGeometry& g, const std::vector<float>& model, const std::vector<double>& uvw,
                      bool wstacking, const std::vector<std::complex<float>>& vis) {
  double worst = 0, peak = 0;
  for (std::size_t k = 0; k < uvw.size() / 3; ++k)
    for (int s = 0; s < 4; ++s) {
      cdouble truth = 0;
      for (int y = 0; y < g.size; ++y)
        for (int x = 0; x < g.size; ++x) {
          const float value = model[s * g.pixels() + static_cast<std::size_t>(y) * g.size + x];
          if (value == 0) continue;
          const double l = g.l(x), m = g.m(y), n_minus_1 = wstacking ? std::sqrt(1 - l * l - m * m) - 1 : 0.0;
          truth += static_cast<double>(value) *
                   std::polar(1.0, two_pi * (uvw[3 * k] * l + uvw[3 * k + 1] * m + uvw[3 * k + 2] * n_minus_1));
        }
      worst = std::max(worst, std::abs(truth - cdouble(vis[4 * k + s])));
      peak = std::max(peak, std::abs(truth));
    }
  return worst / peak;
}

}  // namespace

// 64 pixels of 2 arcmin (2.1 deg across), baselines to 2e4 wavelengths and w to 5e3:
// phases of up to ~1e3 cycles, which a single-precision phase would get wrong by 1e-4.
TEST(DirectPredict, MatchesADoublePrecisionSumToSinglePrecision) {
  const ImageGeometry g = ImageGeometry::make(64, 120 * arcsec, 1.5);
  const std::vector<float> model = random_model(g, 25, 7);
  const std::vector<double> uvw = random_uvw(1000, 2e4, 5e3, 3);  // not a whole number of blocks
  for (const bool wstacking : {true, false}) {
    const std::vector<ModelComponent> components = model_components(model.data(), 4, g, wstacking);
    ASSERT_EQ(components.size(), 25u);
    ASSERT_EQ(model_components(model.data(), 4, g, wstacking, 10).size(), 11u) << "the scan stops past its limit";
    std::vector<std::complex<float>> vis(4 * 1000);
    predict_direct(components, 4, uvw.data(), 1000, vis.data());
    const double error = relative_error(g, model, uvw, wstacking, vis);
    EXPECT_LT(error, 2e-6) << (wstacking ? "with" : "without") << " w";
    std::cout << "[ measured ] direct predict, " << (wstacking ? "with" : "without")
              << " w: max error / peak = " << error << "\n";
  }
}

// At accuracy 1e-3 the gridder's predict errs by 1e-4 of the peak; a sparse model's
// visibilities exact to single precision show that the imager evaluated it directly,
// and a model of every pixel (degridding is cheaper) is within the gridder's accuracy.
TEST(DirectPredict, TheImagerEvaluatesSparseModelsDirectlyAndDegridsDenseOnes) {
  const ImageGeometry g = ImageGeometry::make(64, 120 * arcsec, oversampling_for(1e-3, 1.2));
  const std::size_t count = 2000;
  std::vector<double> uvw = random_uvw(count, 0.45 / g.cell_rad, 500, 5);
  ChannelImager imager(g, 1e-3, true);
  imager.set_data(uvw, std::vector<float>(4 * count, 1.0f));
  const int planes = imager.gridder().num_w_planes();
  const std::size_t cells = static_cast<std::size_t>(g.grid_size) * g.grid_size;

  const std::vector<float> sparse = random_model(g, 12, 11);
  ASSERT_GE(direct_predict_limit(count, planes, cells), 12u);
  std::vector<std::complex<float>> vis(4 * count);
  imager.predict(sparse.data(), vis.data());
  EXPECT_LT(relative_error(g, sparse, uvw, true, vis), 2e-6);

  std::vector<float> dense(4 * g.pixels());
  std::mt19937 rng(13);
  std::uniform_real_distribution<float> flux(-1.0f, 1.0f);
  for (float& value : dense) value = flux(rng);
  ASSERT_LT(direct_predict_limit(count, planes, cells), g.pixels());
  imager.predict(dense.data(), vis.data());
  const double error = relative_error(g, dense, uvw, true, vis);
  EXPECT_LT(error, 1e-3);
  EXPECT_GT(error, 2e-6) << "the dense model went through the direct evaluation too";
}

// The rule on issue 46's channel (88,704 rows, 13 w-planes of 1536^2), where
// bench_imaging measured the direct evaluation at 2.7 ms (1.4 ms with AVX2) against
// 172 ms degridded at 16 components, 161 ms (70 ms) against 194 ms at 1024, and so
// about 7 (3) times the degridding's time at 8192.
TEST(DirectPredict, TheCostRuleFollowsTheMeasuredCrossover) {
  const std::size_t cells = 1536 * 1536;
  EXPECT_GE(direct_predict_limit(88704, 13, cells), 1024u);
  EXPECT_LT(direct_predict_limit(88704, 13, cells), 8192u);
}
