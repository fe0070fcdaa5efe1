#include "spip/imaging/beam.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

#include "spip/error.hpp"

namespace spip::imaging {
namespace {

constexpr double half_power_log = 0.69314718055994531;  // ln 2

// Pixels connected to the centre with values above `level`.
std::vector<int> main_lobe(const float* psf, const ImageGeometry& g, float level) {
  const int n = g.size;
  std::vector<char> seen(g.pixels(), 0);
  std::vector<int> lobe, stack = {(n / 2) * n + n / 2};
  seen[stack.front()] = 1;
  while (!stack.empty()) {
    const int pixel = stack.back();
    stack.pop_back();
    lobe.push_back(pixel);
    const int x = pixel % n, y = pixel / n;
    const int neighbours[4][2] = {{x - 1, y}, {x + 1, y}, {x, y - 1}, {x, y + 1}};
    for (const auto& [nx, ny] : neighbours) {
      if (nx < 0 || ny < 0 || nx >= n || ny >= n) continue;
      const int next = ny * n + nx;
      if (!seen[next] && psf[next] > level) {
        seen[next] = 1;
        stack.push_back(next);
      }
    }
  }
  return lobe;
}

// exp(-4 ln2 (d_major^2 / major^2 + d_minor^2 / minor^2)) at offset (dl, dm).
struct GaussianBeam {
  double a, b, c;  // quadratic form in (dl, dm)
  explicit GaussianBeam(const Beam& beam) {
    const double s = std::sin(beam.pa_rad), co = std::cos(beam.pa_rad);
    const double p = 4 * half_power_log / (beam.major_rad * beam.major_rad);
    const double q = 4 * half_power_log / (beam.minor_rad * beam.minor_rad);
    // Major axis along (sin pa, cos pa) in (l, m): east of north.
    a = p * s * s + q * co * co;
    b = 2 * (p - q) * s * co;
    c = p * co * co + q * s * s;
  }
  double operator()(double dl, double dm) const { return std::exp(-(a * dl * dl + b * dl * dm + c * dm * dm)); }
};

}  // namespace

Beam fit_beam(const float* psf, const ImageGeometry& g) {
  const int n = g.size;
  if (!(psf[(n / 2) * n + n / 2] > 0.99f && psf[(n / 2) * n + n / 2] < 1.01f))
    SPIP_THROW(Error, "internal error: the PSF is not normalised to 1 at the centre");
  // Normal equations of the 3-parameter linear least squares.
  double ata[3][3] = {}, atb[3] = {};
  std::vector<int> lobe = main_lobe(psf, g, 0.35f);
  if (lobe.size() < 5) {
    // Pixels nearly as large as the beam: fit the positive 3 x 3 neighbourhood.
    lobe.clear();
    for (int dy = -1; dy <= 1; ++dy)
      for (int dx = -1; dx <= 1; ++dx) {
        const int pixel = (n / 2 + dy) * n + n / 2 + dx;
        if (psf[pixel] > 0) lobe.push_back(pixel);
      }
  }
  for (int pixel : lobe) {
    const double dl = g.l(pixel % n), dm = g.m(pixel / n);
    const double row[3] = {dl * dl, dl * dm, dm * dm};
    const double target = -std::log(static_cast<double>(psf[pixel]));
    for (int i = 0; i < 3; ++i) {
      atb[i] += row[i] * target;
      for (int j = 0; j < 3; ++j) ata[i][j] += row[i] * row[j];
    }
  }
  // Cramer's rule on the symmetric 3x3 system.
  auto det3 = [](const double m[3][3]) {
    return m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0]) +
           m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);
  };
  const double det = det3(ata);
  if (!(std::abs(det) > 0)) SPIP_THROW(ConfigError, "the PSF main lobe is too small to fit a beam: image.scale is too large for the resolution");
  double coefficients[3];
  for (int k = 0; k < 3; ++k) {
    double m[3][3];
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) m[i][j] = j == k ? atb[i] : ata[i][j];
    coefficients[k] = det3(m) / det;
  }
  const double a = coefficients[0], b = coefficients[1], c = coefficients[2];
  // Eigen-decomposition of [[a, b/2], [b/2, c]]: the smaller eigenvalue is the major axis.
  const double mean = 0.5 * (a + c), spread = std::hypot(0.5 * (a - c), 0.5 * b);
  const double small = mean - spread, large = mean + spread;
  if (!(small > 0)) SPIP_THROW(ConfigError, "the PSF main lobe is not a peak; cannot fit a beam (image.scale too large for the resolution?)");
  Beam beam;
  beam.major_rad = 2 * std::sqrt(half_power_log / small);
  beam.minor_rad = 2 * std::sqrt(half_power_log / large);
  // Major-axis direction (el, em) solves (Q - small) e = 0; PA from north through east.
  // Either row of the singular matrix gives it; take the better conditioned one.
  double el = 0.5 * b, em = small - a;
  if (std::hypot(c - small, 0.5 * b) > std::hypot(el, em)) {
    el = c - small;
    em = -0.5 * b;
  }
  double pa = spread > 0 ? std::atan2(el, em) : 0.0;  // a circular beam has no direction
  while (pa <= -std::numbers::pi / 2) pa += std::numbers::pi;
  while (pa > std::numbers::pi / 2) pa -= std::numbers::pi;
  beam.pa_rad = pa;
  return beam;
}

void restore(const float* model, const ImageGeometry& g, const Beam& beam, float* image) {
  const GaussianBeam gaussian(beam);
  const int n = g.size;
  // Out to where the beam falls below 1e-7 of its peak.
  const int reach = static_cast<int>(std::ceil(beam.major_rad / g.cell_rad * 2.4)) + 1;
  std::vector<double> kernel(static_cast<std::size_t>(2 * reach + 1) * (2 * reach + 1));
  for (int dy = -reach; dy <= reach; ++dy)
    for (int dx = -reach; dx <= reach; ++dx)
      kernel[(dy + reach) * (2 * reach + 1) + dx + reach] = gaussian(-dx * g.cell_rad, dy * g.cell_rad);
  for (int y = 0; y < n; ++y)
    for (int x = 0; x < n; ++x) {
      const float flux = model[static_cast<std::size_t>(y) * n + x];
      if (flux == 0) continue;
      for (int yy = std::max(0, y - reach); yy <= std::min(n - 1, y + reach); ++yy)
        for (int xx = std::max(0, x - reach); xx <= std::min(n - 1, x + reach); ++xx)
          image[static_cast<std::size_t>(yy) * n + xx] +=
              static_cast<float>(flux * kernel[(yy - y + reach) * (2 * reach + 1) + xx - x + reach]);
    }
}

}  // namespace spip::imaging
