// Stokes rules against the IAU definitions: correlations built from known I, Q, U, V
// must give them back, in every basis, and partial bases say what they cannot give.
#include <gtest/gtest.h>

#include <complex>

#include "spip/ms/stokes.hpp"

using namespace spip::ms;

namespace {

struct Sky {
  std::complex<float> i{1.5f, 0.25f}, q{-0.3f, 0.1f}, u{0.2f, -0.4f}, v{0.05f, 0.02f};
};
constexpr std::complex<float> j{0.0f, 1.0f};

std::complex<float> stokes_from(const StokesRule& rule, const std::complex<float>* corr) {
  const Visibility out = apply_rule(rule, {corr[rule.first].real(), corr[rule.first].imag()},
                                    {corr[rule.second].real(), corr[rule.second].imag()});
  return {out.re, out.im};
}

void expect_recovers(const int* types, const std::complex<float>* corr, const Sky& sky,
                     std::array<bool, 4> determined) {
  const auto rules = stokes_rules(types, 4);
  const std::complex<float> truth[4] = {sky.i, sky.q, sky.u, sky.v};
  for (int s = 0; s < 4; ++s) {
    ASSERT_EQ(rules[s].determined(), determined[s]) << "Stokes " << "IQUV"[s];
    if (!determined[s]) continue;
    const std::complex<float> got = stokes_from(rules[s], corr);
    EXPECT_NEAR(got.real(), truth[s].real(), 1e-6) << "Stokes " << "IQUV"[s];
    EXPECT_NEAR(got.imag(), truth[s].imag(), 1e-6) << "Stokes " << "IQUV"[s];
  }
}

}  // namespace

TEST(StokesRules, LinearFeedsFollowIau) {
  const Sky s;
  const int types[] = {9, 10, 11, 12};
  const std::complex<float> corr[] = {s.i + s.q, s.u + j * s.v, s.u - j * s.v, s.i - s.q};
  expect_recovers(types, corr, s, {true, true, true, true});
}

TEST(StokesRules, CircularFeedsFollowIau) {
  const Sky s;
  const int types[] = {5, 6, 7, 8};
  const std::complex<float> corr[] = {s.i + s.v, s.q + j * s.u, s.q - j * s.u, s.i - s.v};
  expect_recovers(types, corr, s, {true, true, true, true});
}

TEST(StokesRules, CorrelationOrderDoesNotMatter) {
  const Sky s;
  const int types[] = {12, 11, 10, 9};
  const std::complex<float> corr[] = {s.i - s.q, s.u - j * s.v, s.u + j * s.v, s.i + s.q};
  expect_recovers(types, corr, s, {true, true, true, true});
}

// The simulator's correlations are the ones the reader's rules turn back into the sky,
// in both bases and any order; and they are the IAU definitions above.
TEST(StokesRules, CorrelationsFromStokesAreTheirInverse) {
  const Sky s;
  const std::array<std::complex<float>, 4> sky{s.i, s.q, s.u, s.v};
  for (const auto& types : {std::array{9, 10, 11, 12}, std::array{5, 6, 7, 8}, std::array{12, 10, 9, 11},
                            std::array{8, 6, 5, 7}}) {
    std::complex<float> corr[4];
    for (int k = 0; k < 4; ++k) {
      ASSERT_TRUE(is_correlation(types[k]));
      corr[k] = correlation(types[k], sky);
    }
    expect_recovers(types.data(), corr, s, {true, true, true, true});
  }
  EXPECT_EQ(correlation(5, sky), s.i + s.v);
  EXPECT_EQ(correlation(10, sky), s.u + j * s.v);
  EXPECT_FALSE(is_correlation(1)) << "Stokes I as a correlation is not a feed's";
  EXPECT_FALSE(is_correlation(13));
}

TEST(StokesRules, DualPolarisationGivesOnlyWhatItDetermines) {
  const int linear[] = {9, 12};
  auto rules = stokes_rules(linear, 2);
  EXPECT_TRUE(rules[stokes_i].determined());
  EXPECT_TRUE(rules[stokes_q].determined());
  EXPECT_FALSE(rules[stokes_u].determined());
  EXPECT_FALSE(rules[stokes_v].determined());
  const int circular[] = {5, 8};
  rules = stokes_rules(circular, 2);
  EXPECT_TRUE(rules[stokes_i].determined());
  EXPECT_FALSE(rules[stokes_q].determined());
  EXPECT_FALSE(rules[stokes_u].determined());
  EXPECT_TRUE(rules[stokes_v].determined());
}

TEST(StokesRules, WeightsCombineAsInverseVariancesAndRespectFlags) {
  // var(I) = (1/4 + 1/2) / 4 = 3/16, so w = 16/3.
  EXPECT_FLOAT_EQ(combine_weights(4.0f, 2.0f), 16.0f / 3.0f);
  EXPECT_FLOAT_EQ(combine_weights(1.0f, 1.0f), 2.0f);
  EXPECT_EQ(combine_weights(0.0f, 1.0f), 0.0f);
  EXPECT_EQ(combine_weights(1.0f, 0.0f), 0.0f);
}
