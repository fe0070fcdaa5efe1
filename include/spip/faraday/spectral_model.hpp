#pragma once
// A pixel's Stokes I spectrum as a power law, I(nu) = i0 (nu / nu0)^alpha, which
// faraday.fractional divides Q and U by before RM synthesis (RM-Tools' `-i`), so that a
// Faraday-thin source whose brightness changes across the band has an RMSF-shaped FDF.
#include <cstddef>
#include <optional>
#include <vector>

namespace spip::faraday {

struct PowerLaw {
  double i0 = 0;     // at nu0
  double alpha = 0;  // spectral index
};

// Weighted least squares of ln I_c on x_c = ln(nu_c / nu0), weights w_c I_c^2 (the
// inverse variances of ln I_c for a noise common to the channels), over the channels
// with w_c > 0 and I_c > 0. `stokes_i` holds channel c at index c * stride. None with
// fewer than two such channels.
std::optional<PowerLaw> fit_power_law(const float* stokes_i, std::size_t stride, const std::vector<double>& log_nu_ratio,
                                      const std::vector<double>& weight);

}  // namespace spip::faraday
