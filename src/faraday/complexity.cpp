#include "spip/faraday/complexity.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace spip::faraday {
namespace {

constexpr int samples = 1000;

// The sample where the cumulative distribution first exceeds `q`, interpolated linearly
// from the one before (the first sample's value if it is the first).
double percentile(const std::vector<double>& x, const std::vector<double>& cdf, double q) {
  const auto above = std::upper_bound(cdf.begin(), cdf.end(), q);
  if (above == cdf.end()) return std::numeric_limits<double>::quiet_NaN();
  const auto i = static_cast<std::size_t>(above - cdf.begin());
  if (i == 0) return x[0];
  const double slope = (cdf[i] - cdf[i - 1]) / (x[i] - x[i - 1]);
  return x[i] + (q - cdf[i]) / slope;
}

}  // namespace

SigmaAdd sigma_add(std::span<const double> y) {
  constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  if (y.empty()) return {nan, nan, nan};
  // The likelihood needs only the sum of squares: every residual's own sigma is 1.
  double sum_sq = 0;
  for (double r : y) sum_sq += r * r;
  const auto [low, high] = std::minmax_element(y.begin(), y.end());
  const double range = (*high + 1) - (*low - 1);
  const double n = static_cast<double>(y.size());
  std::vector<double> s(samples), log_p(samples);
  for (int k = 0; k < samples; ++k) {
    s[k] = range / samples + k * (range - range / samples) / (samples - 1);
    const double total = 1 + s[k] * s[k];
    log_p[k] = -std::log(s[k]) - 0.5 * n * std::log(total) - 0.5 * sum_sq / total;
  }
  const double peak = *std::max_element(log_p.begin(), log_p.end());
  std::vector<double> cdf(samples);
  double running = 0;
  for (int k = 0; k < samples; ++k) cdf[k] = running += std::exp(log_p[k] - peak);
  for (double& c : cdf) c /= running;
  const double median = percentile(s, cdf, 0.50);
  // Over thousands of channels the prior's 1/sigma_add piles a thin source's posterior
  // into the first sample. A lower bound that falls there is not resolved from zero, and
  // is taken as zero: RM-Tools takes the sample's own value, and so calls most such
  // sources significant (3 lower errors of a sample's width).
  const double lower = cdf[0] > 0.1572 ? 0.0 : percentile(s, cdf, 0.1572);
  return {median, median - lower, percentile(s, cdf, 0.8427) - median};
}

}  // namespace spip::faraday
