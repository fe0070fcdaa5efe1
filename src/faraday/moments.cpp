#include "spip/faraday/moments.hpp"

#include <cmath>
#include <limits>

#include "spip/faraday/spectrum_math.hpp"

namespace spip::faraday {

namespace {

// One plane's values added to the power sums [order][pixel] at `sums`.
void add_plane(double* sums, std::size_t pixels, const float* plane, double weight) {
  for (std::size_t p = 0; p < pixels; ++p) add_power_terms(sums + p, static_cast<long long>(pixels), plane[p], weight);
}

}  // namespace

void PowerSums::add(const float* plane, double weight) { add_plane(sums.data(), pixels, plane, weight); }

MomentImages moments(const PowerSums& sums) {
  const std::size_t n = sums.pixels;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  MomentImages out{std::vector<float>(n, nan), std::vector<float>(n, nan), std::vector<float>(n, nan),
                   std::vector<float>(n, nan)};
  const double* s = sums.sums.data();
  for (std::size_t p = 0; p < n; ++p) {
    const double w = s[p];
    if (!(w > 0)) continue;
    const double m1 = s[n + p] / w, r2 = s[2 * n + p] / w, r3 = s[3 * n + p] / w, r4 = s[4 * n + p] / w;
    const double var = std::max(0.0, r2 - m1 * m1);
    out.mean[p] = static_cast<float>(m1);
    out.std[p] = static_cast<float>(std::sqrt(var));
    if (!(var > 0)) continue;
    const double c3 = r3 - 3 * m1 * r2 + 2 * m1 * m1 * m1;
    const double c4 = r4 - 4 * m1 * r3 + 6 * m1 * m1 * r2 - 3 * m1 * m1 * m1 * m1;
    out.skew[p] = static_cast<float>(c3 / std::pow(var, 1.5));
    out.kurt[p] = static_cast<float>(c4 / (var * var) - 3.0);
  }
  return out;
}

}  // namespace spip::faraday
