#include "spip/imaging/weighting.hpp"

#include <cmath>
#include <numbers>
#include <vector>

namespace spip::imaging {

bool weights_unchanged(const WeightingScheme& scheme) {
  return scheme.mode == Weighting::natural && scheme.uv_min <= 0 && scheme.uv_max <= 0 && scheme.taper_fwhm_rad <= 0;
}

UvTerms uv_terms(const WeightingScheme& scheme) {
  UvTerms terms;
  terms.uv_min_sq = scheme.uv_min > 0 ? scheme.uv_min * scheme.uv_min : 0.0;
  terms.uv_max_sq = scheme.uv_max > 0 ? scheme.uv_max * scheme.uv_max : 0.0;
  terms.taper = scheme.taper_fwhm_rad > 0
                    ? std::pow(std::numbers::pi * scheme.taper_fwhm_rad, 2) / (4.0 * std::log(2.0))
                    : 0.0;
  return terms;
}

void apply_weighting(const ImageGeometry& geometry, const WeightingScheme& scheme, const double* uvw,
                     double uv_scale, std::size_t count, int num_stokes, float* weight, const RowGroup* group) {
  // No pass over the channel, which on the GPU path would be the host's largest cost per row.
  if (weights_unchanged(scheme)) return;
  const UvTerms terms = uv_terms(scheme);
  std::vector<double> factor(count);
  for (std::size_t k = 0; k < count; ++k) factor[k] = uv_limits(terms, uvw[3 * k] * uv_scale, uvw[3 * k + 1] * uv_scale);
  if (scheme.mode != Weighting::natural) {
    const int size = density_grid_size(geometry);
    const double cell = density_cell_size(geometry);
    std::vector<double> density(static_cast<std::size_t>(size) * size, 0.0);
    std::vector<long long> cells(count, -1);
    for (std::size_t k = 0; k < count; ++k) {
      const double w = density_weight(weight + k * num_stokes, num_stokes, factor[k]);
      if (!(w > 0)) continue;
      const double u = uvw[3 * k] * uv_scale, v = uvw[3 * k + 1] * uv_scale;
      cells[k] = density_cell(size, cell, u, v);
      // Each visibility together with its Hermitian conjugate.
      for (long long c : {cells[k], density_cell(size, cell, -u, -v)})
        if (c >= 0) density[c] += w;
    }
    if (group) group->sum(density);
    double sum_w = 0, sum_w2 = 0;
    for (double d : density) {
      sum_w += d;
      sum_w2 += d * d;
    }
    const bool uniform = scheme.mode == Weighting::uniform;
    const double f2 = uniform ? 0.0 : briggs_f2(scheme.robust, sum_w, sum_w2);
    for (std::size_t k = 0; k < count; ++k)
      if (cells[k] >= 0) factor[k] /= density_divisor(uniform, density[cells[k]], f2);
  }
  if (terms.taper > 0)
    for (std::size_t k = 0; k < count; ++k) factor[k] *= uv_taper(terms, uvw[3 * k] * uv_scale, uvw[3 * k + 1] * uv_scale);
  for (std::size_t k = 0; k < count; ++k)
    for (int s = 0; s < num_stokes; ++s)
      weight[k * num_stokes + s] = static_cast<float>(weight[k * num_stokes + s] * factor[k]);
}

}  // namespace spip::imaging
