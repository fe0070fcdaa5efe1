#include "spip/faraday/spectral_model.hpp"

#include <cmath>

namespace spip::faraday {

std::optional<PowerLaw> fit_power_law(const float* stokes_i, std::size_t stride, const std::vector<double>& log_nu_ratio,
                                      const std::vector<double>& weight) {
  double s = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  int used = 0;
  for (std::size_t c = 0; c < weight.size(); ++c) {
    const double i = stokes_i[c * stride];
    if (!(weight[c] > 0) || !(i > 0)) continue;
    const double w = weight[c] * i * i, x = log_nu_ratio[c], y = std::log(i);
    s += w;
    sx += w * x;
    sy += w * y;
    sxx += w * x * x;
    sxy += w * x * y;
    ++used;
  }
  const double determinant = s * sxx - sx * sx;
  if (used < 2 || !(determinant > 0)) return std::nullopt;
  const double alpha = (s * sxy - sx * sy) / determinant;
  return PowerLaw{std::exp((sy - alpha * sx) / s), alpha};
}

}  // namespace spip::faraday
