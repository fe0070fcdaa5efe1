#include "spip/imaging/direct_predict.hpp"

#include <algorithm>
#include <cmath>

namespace spip::imaging {
namespace {

// Rows per block: their coordinates, phasors and sums stay in L1 across the components.
constexpr std::size_t block_rows = 128;

// round(x) for |x| < 2^51 by the binary point's shift: unlike std::nearbyint it
// vectorises without SSE4.1, the build's baseline being SSE2.
inline double round_double(double x) {
  constexpr double shifter = 0x1.8p52;
  return (x + shifter) - shifter;
}

inline float round_float(float x) {
  constexpr float shifter = 0x1.8p23f;
  return (x + shifter) - shifter;
}

// cos and sin of 2 pi t for t in cycles. The whole cycles go in double (t reaches 1e4
// and more); the quadrant's rest r, |r| <= 1/8, goes through Taylor series to theta^7
// and theta^8, whose truncation errors at pi/4 are 3e-7 and 3e-8: single precision.
[[gnu::always_inline]] inline void cis_cycles(double t, float& cos_out, float& sin_out) {
  const auto turn = static_cast<float>(t - round_double(t));  // [-1/2, 1/2]
  const float quadrant = round_float(4.0f * turn);            // -2 .. 2
  const float theta = 6.28318530717958648f * (turn - 0.25f * quadrant);
  const float t2 = theta * theta;
  const float s = theta * (1.0f + t2 * (-1.0f / 6 + t2 * (1.0f / 120 + t2 * (-1.0f / 5040))));
  const float c = 1.0f + t2 * (-0.5f + t2 * (1.0f / 24 + t2 * (-1.0f / 720 + t2 * (1.0f / 40320))));
  // Rotated by quadrant quarter turns: cos and sin of quadrant pi/2, exact as polynomials
  // in the quadrant (q^2 in {0, 1, 4}), so that the loop has no branch to keep it
  // from vectorising.
  const float q2 = quadrant * quadrant;
  const float cos_q = (q2 - 1.0f) * (q2 - 6.0f) / 6.0f;
  const float sin_q = quadrant * (4.0f - q2) / 3.0f;
  cos_out = c * cos_q - s * sin_q;
  sin_out = s * cos_q + c * sin_q;
}

// The rows [first, first + rows) of vis; inlined into a baseline (SSE2) and an AVX2
// copy, each vectorised for its own instructions.
[[gnu::always_inline]] inline void predict_block(const std::vector<ModelComponent>& components, int num_stokes, const double* uvw_lambda,
                          std::size_t first, std::size_t rows, std::complex<float>* vis) {
  double u[block_rows], v[block_rows], w[block_rows];
  float cos_phase[block_rows], sin_phase[block_rows];
  float re[4][block_rows] = {}, im[4][block_rows] = {};
  for (std::size_t k = 0; k < rows; ++k) {
    u[k] = uvw_lambda[3 * (first + k)];
    v[k] = uvw_lambda[3 * (first + k) + 1];
    w[k] = uvw_lambda[3 * (first + k) + 2];
  }
  for (const ModelComponent& c : components) {
#pragma omp simd
    for (std::size_t k = 0; k < rows; ++k)
      cis_cycles(u[k] * c.l + v[k] * c.m + w[k] * c.n_minus_1, cos_phase[k], sin_phase[k]);
    for (int s = 0; s < num_stokes; ++s) {
      const float flux = c.flux[s];
      float* re_s = re[s];
      float* im_s = im[s];
#pragma omp simd
      for (std::size_t k = 0; k < rows; ++k) {
        re_s[k] += flux * cos_phase[k];
        im_s[k] += flux * sin_phase[k];
      }
    }
  }
  for (std::size_t k = 0; k < rows; ++k)
    for (int s = 0; s < num_stokes; ++s) vis[(first + k) * num_stokes + s] = {re[s][k], im[s][k]};
}

// AVX2 and FMA, where the CPU has them, more than double the loop's rate (docs/
// benchmarks.md, issue 46); the build's baseline is SSE2, so the AVX2 copy is chosen
// at run time.
using BlockPredict = void (*)(const std::vector<ModelComponent>&, int, const double*, std::size_t, std::size_t,
                              std::complex<float>*);

void predict_block_baseline(const std::vector<ModelComponent>& components, int num_stokes, const double* uvw_lambda,
                            std::size_t first, std::size_t rows, std::complex<float>* vis) {
  predict_block(components, num_stokes, uvw_lambda, first, rows, vis);
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2,fma"))) void predict_block_avx2(const std::vector<ModelComponent>& components,
                                                            int num_stokes, const double* uvw_lambda,
                                                            std::size_t first, std::size_t rows,
                                                            std::complex<float>* vis) {
  predict_block(components, num_stokes, uvw_lambda, first, rows, vis);
}

bool has_avx2() {
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return avx2;
}

BlockPredict block_predict() { return has_avx2() ? predict_block_avx2 : predict_block_baseline; }
#else
bool has_avx2() { return false; }

BlockPredict block_predict() { return predict_block_baseline; }
#endif

// The cost of one component at one visibility, in grid cells of one plane's FFT, from
// bench_imaging's predict figures on issue 46's channel (docs/benchmarks.md): 1.8 ns
// (SSE2) or 0.77 ns (AVX2) a component and visibility against a degridding that takes
// 6.3-6.5 ns a grid cell and plane.
double component_cost_in_fft_cells() { return has_avx2() ? 0.12 : 0.3; }

// The component list stays below 2.6 MB, which the memory plan leaves out, whatever the
// rule allows (a rank with few rows would allow every pixel of a dense model).
constexpr std::size_t max_direct_components = 65536;

}  // namespace

std::vector<ModelComponent> model_components(const float* images, int num_stokes, const ImageGeometry& geometry,
                                             bool wstacking, std::size_t limit) {
  std::vector<ModelComponent> components;
  const std::size_t pixels = geometry.pixels();
  for (int y = 0; y < geometry.size; ++y)
    for (int x = 0; x < geometry.size; ++x) {
      const std::size_t pixel = static_cast<std::size_t>(y) * geometry.size + x;
      ModelComponent c{geometry.l(x), geometry.m(y), 0.0, {}};
      bool any = false;
      for (int s = 0; s < num_stokes; ++s) {
        c.flux[s] = images[s * pixels + pixel];
        any = any || c.flux[s] != 0.0f;
      }
      if (!any) continue;
      if (wstacking) c.n_minus_1 = geometry.n_minus_1(x, y);
      components.push_back(c);
      if (components.size() > limit) return components;
    }
  return components;
}

void predict_direct(const std::vector<ModelComponent>& components, int num_stokes, const double* uvw_lambda,
                    std::size_t count, std::complex<float>* vis) {
  const BlockPredict block = block_predict();
  const auto blocks = static_cast<std::ptrdiff_t>((count + block_rows - 1) / block_rows);
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t b = 0; b < blocks; ++b) {
    const std::size_t first = static_cast<std::size_t>(b) * block_rows;
    block(components, num_stokes, uvw_lambda, first, std::min(block_rows, count - first), vis);
  }
}

std::size_t direct_predict_limit(std::size_t count, int w_planes, std::size_t grid_cells) {
  const double fft_cells = static_cast<double>(w_planes) * static_cast<double>(grid_cells);
  const double limit = fft_cells / (component_cost_in_fft_cells() * static_cast<double>(std::max<std::size_t>(count, 1)));
  return limit >= static_cast<double>(max_direct_components) ? max_direct_components : static_cast<std::size_t>(limit);
}

}  // namespace spip::imaging
