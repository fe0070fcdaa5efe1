#include "spip/imaging/weighting.hpp"

#include <cmath>
#include <numbers>
#include <vector>

namespace spip::imaging {
namespace {

// Density-grid cell of (u, v), or -1 outside the grid.
long density_cell(const ImageGeometry& g, double u, double v) {
  const double cell = 1.0 / (g.size * g.cell_rad);
  const long iu = std::lround(u / cell) + g.size / 2, iv = std::lround(v / cell) + g.size / 2;
  if (iu < 0 || iv < 0 || iu >= g.size || iv >= g.size) return -1;
  return iv * g.size + iu;
}

}  // namespace

void apply_weighting(const ImageGeometry& geometry, const WeightingScheme& scheme, const double* uvw,
                     double uv_scale, std::size_t count, int num_stokes, float* weight) {
  const bool limits = scheme.uv_min > 0 || scheme.uv_max > 0;
  // Natural weights without limits or taper are the imaging weights: no pass over the
  // channel, which on the GPU path would be the host's largest cost per row.
  if (scheme.mode == Weighting::natural && !limits && scheme.taper_fwhm_rad <= 0) return;
  std::vector<double> factor(count, 1.0);
  const double taper = scheme.taper_fwhm_rad > 0
                           ? std::pow(std::numbers::pi * scheme.taper_fwhm_rad, 2) / (4.0 * std::log(2.0))
                           : 0.0;
  const double uv_min_sq = scheme.uv_min > 0 ? scheme.uv_min * scheme.uv_min : 0.0;
  const double uv_max_sq = scheme.uv_max * scheme.uv_max;
  for (std::size_t k = 0; k < count; ++k) {
    const double u = uvw[3 * k] * uv_scale, v = uvw[3 * k + 1] * uv_scale;
    const double uv_sq = u * u + v * v;
    if (uv_sq < uv_min_sq || (scheme.uv_max > 0 && uv_sq > uv_max_sq)) factor[k] = 0;
    if (taper > 0) factor[k] *= std::exp(-taper * uv_sq);
  }
  if (scheme.mode != Weighting::natural) {
    std::vector<double> density(geometry.pixels(), 0.0);
    std::vector<long> cells(2 * count, -1);
    for (std::size_t k = 0; k < count; ++k) {
      const double w = weight[k * num_stokes] * factor[k];
      if (w <= 0) continue;
      const double u = uvw[3 * k] * uv_scale, v = uvw[3 * k + 1] * uv_scale;
      cells[2 * k] = density_cell(geometry, u, v);
      cells[2 * k + 1] = density_cell(geometry, -u, -v);
      for (long cell : {cells[2 * k], cells[2 * k + 1]})
        if (cell >= 0) density[cell] += w;
    }
    // Briggs (1995): f^2 = (5 * 10^-R)^2 / (sum_cells W^2 / sum_k w_k).
    double sum_w = 0, sum_w2 = 0;
    for (double d : density) {
      sum_w += d;
      sum_w2 += d * d;
    }
    const double f2 = scheme.mode == Weighting::briggs && sum_w2 > 0
                          ? std::pow(5.0 * std::pow(10.0, -scheme.robust), 2) / (sum_w2 / sum_w)
                          : 0.0;
    for (std::size_t k = 0; k < count; ++k) {
      const long cell = cells[2 * k];
      if (cell < 0) continue;
      const double d = density[cell];
      factor[k] /= scheme.mode == Weighting::uniform ? d : 1.0 + d * f2;
    }
  }
  for (std::size_t k = 0; k < count; ++k)
    for (int s = 0; s < num_stokes; ++s)
      weight[k * num_stokes + s] = static_cast<float>(weight[k * num_stokes + s] * factor[k]);
}

}  // namespace spip::imaging
