#pragma once
// Faraday moments (Farnes et al. 2018): per-pixel weighted mean, standard deviation,
// skewness and excess kurtosis over channels, from power sums over a pixel group's channels.
#include <cstddef>
#include <vector>

namespace spip::faraday {

// Sums over channels of w, w d, w d^2, w d^3, w d^4 per pixel, in double, with d = x - c
// for the pixel's first finite value c, added by add_power_terms() of spectrum_math.hpp.
// About a value within the spectrum's range the central moments come out of the sums
// without the cancellation of sums about 0, which lost them where the spread is small
// beside the mean (two channels of nearly one value gave an excess kurtosis of 4e11).
// NaN pixels (blanked) are skipped, so each pixel counts only the channels where it is
// finite.
struct PowerSums {
  static constexpr int orders = 5;  // power_orders
  std::size_t pixels = 0;
  std::vector<double> sums;    // [order][pixel]
  std::vector<double> centre;  // c per pixel; NaN until its first finite value

  explicit PowerSums(std::size_t pixel_count = 0);
  void add(const float* plane, double weight);
};

struct MomentImages {
  std::vector<float> mean, std, skew, kurt;  // NaN where a pixel has too few channels
};

// Moments from power sums: mean = c + S1/S0, variance = S2/S0 - (S1/S0)^2,
// skewness = m3 / var^1.5, excess kurtosis = m4 / var^2 - 3 with central moments m_k
// expanded from the raw ones.
MomentImages moments(const PowerSums& sums);

}  // namespace spip::faraday
