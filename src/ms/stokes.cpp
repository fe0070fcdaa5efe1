#include "spip/ms/stokes.hpp"

namespace spip::ms {
namespace {

int find_slot(const int* corr_types, int num_corr, CorrType wanted) {
  for (int k = 0; k < num_corr; ++k)
    if (corr_types[k] == static_cast<int>(wanted)) return k;
  return -1;
}

StokesRule rule(const int* corr_types, int num_corr, CorrType a, CorrType b, float sign,
                bool times_minus_i) {
  const int first = find_slot(corr_types, num_corr, a);
  const int second = find_slot(corr_types, num_corr, b);
  if (first < 0 || second < 0) return StokesRule{};
  return StokesRule{first, second, sign, times_minus_i};
}

// Takes whichever basis determines the parameter; a mixed-basis MS does not exist
// in practice, and a pure one determines each parameter in only one way.
StokesRule first_determined(StokesRule linear, StokesRule circular) {
  return linear.determined() ? linear : circular;
}

}  // namespace

std::array<StokesRule, num_stokes> stokes_rules(const int* c, int n) {
  using T = CorrType;
  return {
      first_determined(rule(c, n, T::XX, T::YY, +1, false), rule(c, n, T::RR, T::LL, +1, false)),
      first_determined(rule(c, n, T::XX, T::YY, -1, false), rule(c, n, T::RL, T::LR, +1, false)),
      first_determined(rule(c, n, T::XY, T::YX, +1, false), rule(c, n, T::RL, T::LR, -1, true)),
      first_determined(rule(c, n, T::XY, T::YX, -1, true), rule(c, n, T::RR, T::LL, -1, false)),
  };
}

bool is_correlation(int corr_type) {
  return corr_type >= static_cast<int>(CorrType::RR) && corr_type <= static_cast<int>(CorrType::YY);
}

std::complex<float> correlation(int corr_type, const std::array<std::complex<float>, num_stokes>& s) {
  const std::complex<float> i_unit(0, 1);
  switch (static_cast<CorrType>(corr_type)) {
    case CorrType::RR: return s[stokes_i] + s[stokes_v];
    case CorrType::RL: return s[stokes_q] + i_unit * s[stokes_u];
    case CorrType::LR: return s[stokes_q] - i_unit * s[stokes_u];
    case CorrType::LL: return s[stokes_i] - s[stokes_v];
    case CorrType::XX: return s[stokes_i] + s[stokes_q];
    case CorrType::XY: return s[stokes_u] + i_unit * s[stokes_v];
    case CorrType::YX: return s[stokes_u] - i_unit * s[stokes_v];
    case CorrType::YY: return s[stokes_i] - s[stokes_q];
  }
  return {};
}

}  // namespace spip::ms
