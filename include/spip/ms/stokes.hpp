#pragma once
// Stokes parameters from correlations, IAU conventions (Hamaker & Bregman 1996):
//   linear:   XX = I+Q, XY = U+iV, YX = U-iV, YY = I-Q
//   circular: RR = I+V, RL = Q+iU, LR = Q-iU, LL = I-V
// Every Stokes parameter is half the sum or difference of two correlations, times
// 1 or -i, so one rule (two correlation slots and a factor) covers both bases.
// Usable from C++17, C++20 and CUDA.
#include <array>
#include <complex>

#include "spip/common/host_device.hpp"

namespace spip::ms {

// CORR_TYPE codes of the POLARIZATION table (casacore's Stokes::StokesTypes).
enum class CorrType : int { RR = 5, RL = 6, LR = 7, LL = 8, XX = 9, XY = 10, YX = 11, YY = 12 };

enum StokesIndex : int { stokes_i = 0, stokes_q = 1, stokes_u = 2, stokes_v = 3 };
inline constexpr int num_stokes = 4;

// S = factor * (c[first] + sign * c[second]) / 2, where factor is 1 or -i.
struct StokesRule {
  int first = -1;   // slot in the MS correlation axis; -1: not determined by these correlations
  int second = -1;
  float sign = 1;
  bool times_minus_i = false;

  SPIP_HOST_DEVICE bool determined() const { return first >= 0 && second >= 0; }
};

// Complex arithmetic spelled out so nvcc and host compilers produce identical code.
struct Visibility {
  float re = 0, im = 0;
};

SPIP_HOST_DEVICE inline Visibility apply_rule(const StokesRule& rule, Visibility a, Visibility b) {
  const float re = 0.5f * (a.re + rule.sign * b.re);
  const float im = 0.5f * (a.im + rule.sign * b.im);
  if (rule.times_minus_i) return Visibility{im, -re};
  return Visibility{re, im};
}

// Weight of S = (a ± b)/2 from the weights (inverse variances) of a and b:
// var(S) = (var(a) + var(b)) / 4. Zero if either correlation is flagged (weight 0).
SPIP_HOST_DEVICE inline float combine_weights(float weight_a, float weight_b) {
  if (!(weight_a > 0.0f) || !(weight_b > 0.0f)) return 0.0f;
  return 4.0f * weight_a * weight_b / (weight_a + weight_b);
}

// The four rules (I, Q, U, V) for an MS correlation axis given as CORR_TYPE codes.
std::array<StokesRule, num_stokes> stokes_rules(const int* corr_types, int num_corr);

// Whether `corr_type` is one of CorrType's codes (linear or circular), which
// correlation() can make.
bool is_correlation(int corr_type);
// The correlation of code `corr_type` that sees the Stokes visibilities [I, Q, U, V]:
// the inverse of stokes_rules, for simulating an MS. Requires is_correlation(corr_type).
std::complex<float> correlation(int corr_type, const std::array<std::complex<float>, num_stokes>& stokes);

}  // namespace spip::ms
