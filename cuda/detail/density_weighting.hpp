#pragma once
// A channel's imaging weights made on the device from its natural weights, as
// imaging::apply_weighting makes them on the host, with the same per-visibility
// arithmetic (imaging/weighting_math.hpp, compiled without FMA contraction): uv limits
// and taper, and for uniform and Briggs weighting the densities of the padded image's
// uv cells (imaging::density_grid_size), counted with atomic adds, summed by a fixed tree for Briggs's f^2, and divided
// out. The host does nothing per row. The weights may differ from the host's in their
// last bits: the order of the atomic adds, and the device's exp for the taper.
#include <cuda_runtime.h>

#include "cuda_check.hpp"
#include "spip/imaging/row_group.hpp"
#include "spip/imaging/weighting.hpp"

namespace spip::cuda::detail {

class DensityWeighting {
 public:
  DensityWeighting(const imaging::WeightingScheme& scheme, const imaging::ImageGeometry& geometry);

  // Device bytes the scheme needs for images of `geometry`: the density cells, if any.
  static std::size_t device_bytes(const imaging::WeightingScheme& scheme, const imaging::ImageGeometry& geometry);

  // Rewrites weights [k][4] of rows [0, rows) of uvw_m [k][3] (metres; times `scale`,
  // wavelengths) on `stream`; nothing to do for natural weights without limits or taper.
  // With a group, the rows are this rank's share and the densities are summed over the
  // group (through the host).
  void apply(const double* uvw_m, double scale, float* weights, long long rows, cudaStream_t stream,
             const imaging::RowGroup* group);

 private:
  bool unchanged_;
  bool densities_;
  bool uniform_;
  double robust_;
  imaging::UvTerms terms_;
  int size_;
  double cell_;
  DeviceArray<double> density_;
  DeviceArray<double> partials_;  // per block: sum of densities, sum of their squares
  DeviceArray<double> f2_;
  std::vector<double> group_density_;  // the host's copy for a group's sum
};

}  // namespace spip::cuda::detail
