#include "spip/faraday/moments.hpp"

#include <cmath>
#include <limits>

#include "spip/faraday/spectrum_math.hpp"

namespace spip::faraday {

namespace {

constexpr double unset = std::numeric_limits<double>::quiet_NaN();

}  // namespace

PowerSums::PowerSums(std::size_t pixel_count)
    : pixels(pixel_count), sums(orders * pixel_count, 0.0), centre(pixel_count, unset) {}

void PowerSums::add(const float* plane, double weight) {
  if (!(weight > 0)) return;  // adds nothing, and must not choose the centre
  for (std::size_t p = 0; p < pixels; ++p) {
    if (!std::isfinite(plane[p])) continue;
    if (std::isnan(centre[p])) centre[p] = plane[p];
    add_power_terms(sums.data() + p, static_cast<long long>(pixels), plane[p] - centre[p], weight);
  }
}

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
    out.mean[p] = static_cast<float>(sums.centre[p] + m1);
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
