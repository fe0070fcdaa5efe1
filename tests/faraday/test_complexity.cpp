// sigma_add against what it estimates: residuals drawn with a known additional scatter.
#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <random>
#include <vector>

#include "spip/faraday/complexity.hpp"

namespace {

std::vector<double> residuals(double extra, int count, unsigned seed) {
  std::mt19937 random(seed);
  std::normal_distribution<double> noise(0.0, 1.0), scatter(0.0, extra > 0 ? extra : 1.0);
  std::vector<double> y;
  for (int k = 0; k < count; ++k) y.push_back(noise(random) + (extra > 0 ? scatter(random) : 0.0));
  return y;
}

}  // namespace

// 576 residuals (288 channels of Q and U): the estimate brackets the truth with its errors.
TEST(SigmaAdd, RecoversTheAdditionalScatterWithinItsErrors) {
  for (double extra : {0.5, 1.0, 3.0}) {
    const spip::faraday::SigmaAdd s = spip::faraday::sigma_add(residuals(extra, 576, 11));
    EXPECT_GT(s.value, 3 * s.minus) << extra;  // significant
    EXPECT_LT(std::abs(s.value - extra), 3 * std::max(s.minus, s.plus)) << extra << ": " << s.value;
  }
}

TEST(SigmaAdd, NoiseAloneIsConsistentWithZero) {
  for (unsigned seed : {1u, 2u, 3u}) {
    const spip::faraday::SigmaAdd s = spip::faraday::sigma_add(residuals(0.0, 576, seed));
    EXPECT_LT(s.value, 3 * s.minus) << seed << ": " << s.value << " -" << s.minus;
    EXPECT_LT(s.value, 0.3) << seed;
  }
  EXPECT_TRUE(std::isnan(spip::faraday::sigma_add({}).value));
}

// 65,536 channels of Q and U, as SKA's: the prior's 1/sigma_add piles the posterior of
// pure noise into the grid's first sample, where taking that sample's value as the lower
// bound (as RM-Tools does) gives a lower error of a sample's width and flags most of
// these spectra complex.
TEST(SigmaAdd, NoiseAloneIsConsistentWithZeroOverManyChannels) {
  for (unsigned seed : {1u, 2u, 3u, 4u, 5u, 6u}) {
    const spip::faraday::SigmaAdd s = spip::faraday::sigma_add(residuals(0.0, 131072, seed));
    EXPECT_LT(s.value, 3 * s.minus) << seed << ": " << s.value << " -" << s.minus;
  }
  // A scatter of 0.3 of the noise in those channels is found.
  const spip::faraday::SigmaAdd s = spip::faraday::sigma_add(residuals(0.3, 131072, 7));
  EXPECT_GT(s.value, 3 * s.minus) << s.value << " -" << s.minus;
  EXPECT_NEAR(s.value, 0.3, 3 * std::max(s.minus, s.plus));
}
