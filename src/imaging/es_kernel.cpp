#include "spip/imaging/es_kernel.hpp"

#include <algorithm>
#include <array>
#include <numbers>
#include <vector>

namespace spip::imaging {
namespace {

// Gauss-Legendre nodes and weights on [-1, 1] (Newton on the Legendre recurrence).
struct Quadrature {
  std::vector<double> x, w;
  explicit Quadrature(int n) : x(n), w(n) {
    for (int i = 0; i < n; ++i) {
      double z = std::cos(std::numbers::pi * (i + 0.75) / (n + 0.5));
      double derivative = 0;
      for (int iteration = 0; iteration < 100; ++iteration) {
        double p0 = 1, p1 = 0;
        for (int j = 1; j <= n; ++j) {
          const double p2 = p1;
          p1 = p0;
          p0 = ((2.0 * j - 1.0) * z * p1 - (j - 1.0) * p2) / j;
        }
        derivative = n * (z * p0 - p1) / (z * z - 1.0);
        const double step = p0 / derivative;
        z -= step;
        if (std::abs(step) < 1e-15) break;
      }
      x[i] = z;
      w[i] = 2.0 / ((1.0 - z * z) * derivative * derivative);
    }
  }
};

const Quadrature& quadrature() {
  // The kernel's square-root edge needs many nodes for 1e-7 relative accuracy.
  static const Quadrature q(200);
  return q;
}

}  // namespace

EsKernel es_kernel(int support, double oversampling) {
  const double sigma = std::max(oversampling, 1.05);
  return EsKernel{support, 0.97 * std::numbers::pi * support * (1.0 - 0.5 / sigma)};
}

double aliasing_error(const EsKernel& kernel, double oversampling) {
  constexpr int samples = 32, aliases = 3;
  const double edge = 0.5 / oversampling;  // the image's edge, in cycles per grid cell
  double worst = 0;
  for (int i = 0; i <= samples; ++i) {
    const double f = edge * i / samples;
    double alias_sum = 0;
    for (int m = 1; m <= aliases; ++m)
      alias_sum += std::abs(kernel_transform(kernel, f + m, 1.0)) + std::abs(kernel_transform(kernel, f - m, 1.0));
    worst = std::max(worst, alias_sum / kernel_transform(kernel, f, 1.0));
  }
  return worst;
}

EsKernel choose_kernel(double budget, double oversampling) {
  for (int support = 3; support < max_support; ++support) {
    const EsKernel kernel = es_kernel(support, oversampling);
    if (aliasing_error(kernel, oversampling) <= budget) return kernel;
  }
  return es_kernel(max_support, oversampling);
}

double oversampling_for(double accuracy, double padding) {
  const double needed = accuracy >= 5e-4 ? 1.2 : accuracy >= 5e-6 ? 1.5 : 2.0;
  return std::max(padding, needed);
}

double kernel_transform(const EsKernel& kernel, double k, double cells) {
  const Quadrature& q = quadrature();
  const double half = 0.5 * kernel.support;
  double sum = 0;
  for (std::size_t i = 0; i < q.x.size(); ++i)
    sum += q.w[i] * kernel(q.x[i] * half) * std::cos(std::numbers::pi * q.x[i] * kernel.support * k / cells);
  return half * sum;
}

}  // namespace spip::imaging
