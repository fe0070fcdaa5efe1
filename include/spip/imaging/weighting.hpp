#pragma once
// Imaging weights from natural (inverse-variance) weights, per channel.
#include <cmath>
#include <cstddef>

#include "spip/config/config.hpp"
#include "spip/imaging/geometry.hpp"
#include "spip/imaging/row_group.hpp"
#include "spip/imaging/weighting_math.hpp"

namespace spip::imaging {

struct WeightingScheme {
  Weighting mode = Weighting::natural;
  double robust = 0;         // Briggs
  double uv_min = 0;         // wavelengths
  double uv_max = 0;         // wavelengths; 0: none
  double taper_fwhm_rad = 0; // Gaussian taper, FWHM in the image; 0: none
};

// Natural weights without uv limits or taper: the imaging weights are the data's.
bool weights_unchanged(const WeightingScheme& scheme);
UvTerms uv_terms(const WeightingScheme& scheme);
// Uniform and Briggs weighting count densities on the uv cells of the image padded as
// WSClean pads it by default (x 1.2, then up to a multiple of 4), so that a robustness
// gives WSClean's weights, beam and noise: on the image's own, coarser cells, Briggs 0
// gave 5 % more noise than WSClean's Briggs 0 on the same data.
inline int density_grid_size(const ImageGeometry& geometry) {
  const int padded = static_cast<int>(std::ceil(geometry.size * 1.2));
  return padded + (4 - padded % 4) % 4;
}
inline double density_cell_size(const ImageGeometry& geometry) {
  return 1.0 / (density_grid_size(geometry) * geometry.cell_rad);
}

// Rewrites weight[k][s] (num_stokes interleaved) in place. Densities for uniform and
// Briggs weighting are counted on density_grid_size()^2 cells of density_cell_size(), each
// visibility together with its Hermitian conjugate, from the Stokes I weights (slot 0;
// density_weight()) within the uv limits; the same factor, times the taper, then applies
// to every Stokes parameter of a visibility.
// The coordinates are uvw [k][3] times `uv_scale` wavelengths: 1 for uvw in
// wavelengths, frequency / c for uvw in metres. With a group, these are this rank's
// share of the channel's rows, and the densities are counted over the whole group.
void apply_weighting(const ImageGeometry& geometry, const WeightingScheme& scheme, const double* uvw,
                     double uv_scale, std::size_t count, int num_stokes, float* weight,
                     const RowGroup* group = nullptr);

}  // namespace spip::imaging
