#pragma once
// Launches of the gridding kernels. The per-element arithmetic is imaging/
// gridding_math.hpp's, the same functions the CPU Gridder calls; the layout of the
// points and the spreading threads' cells are imaging/tile_plan.hpp's, which the CPU
// tests run (tests/imaging/test_tile_plan.cpp). A channel's w-planes are gridded a batch at a
// time: every plane of the batch in one launch, one batched FFT, and one pass over the
// image that applies the batch's w-screens (and, after the last batch, the grid
// correction) to every lane at once.
#include <cuda_runtime.h>
#include <cufft.h>

#include <cstdint>

#include "spip/common/complex_math.hpp"
#include "spip/imaging/es_kernel.hpp"
#include "spip/imaging/w_layout.hpp"

namespace spip::cuda::detail {

using dcomplex = Complex<double>;

// What every gridding kernel of one image needs to know.
struct GridShape {
  imaging::EsKernel kernel, w_kernel;
  bool wstacking;
  double uv_cell, x0, dw, w_first;
  int size, grid_size;  // N and P
  SPIP_HOST_DEVICE long long pixels() const { return static_cast<long long>(size) * size; }
  SPIP_HOST_DEVICE long long cells() const { return static_cast<long long>(grid_size) * grid_size; }
};

// What one gridding pass makes: the four Stokes images as two packed lanes (I + iQ,
// U + iV) and, with `psf`, the PSF as a third (the Stokes I weights), for a channel's
// first images.
struct LaneSource {
  const float2* vis;    // [k][4]
  const float* weight;  // [k][4]
  bool psf;
  SPIP_HOST_DEVICE int lanes() const { return psf ? 3 : 2; }
};
inline constexpr int max_lanes = 3;

// One block's work: sorted points [lo, hi) of one tile that reach w-plane `plane`.
struct WorkItem {
  int lo, hi, tile, plane;
};

// A channel prepared on the device (point_preparation.hpp), in sorted order: point s
// is visibility order[s] / 2 (its Hermitian mirror where order[s] is odd).
struct PreparedView {
  const int *offset_u, *offset_v;  // where the footprint begins in its home subgrid
  const int* first_plane;
  const float* w_weights;        // [s][W_w]: the weights of planes first_plane + 0 .. W_w - 1
  const float2* rotation;        // exp(-2 pi i w x0), 1 without w-stacking
  const float* footprint;        // [s][2 W]: the u values, then the v values
  const std::uint32_t* order;
  const WorkItem* items;         // the current batch's
  const int* item_count;
  unsigned blocks;               // of the persistent grid that takes the items in turn
};

// values[s][lane] = the packed lanes of sorted point s times its rotation, for
// s < entries: made once per pass, read by every plane the point reaches.
void lane_values(const PreparedView& points, long long entries, const LaneSource& source, float2* values,
                 cudaStream_t stream);
// Adds the current batch's items (PointPreparation::build_plane_items) to `grids`
// ([plane - first][lane][P^2]). A block spreads an item's points into its tile's subgrid
// in shared memory, a thread per (lane, footprint cell modulo W) so that no two threads
// add to one cell (residue_cell), then adds the subgrid's nonzero cells to the grid.
void grid_points(const PreparedView& points, int first, const GridShape& shape, int lanes, const float2* values,
                 cufftComplex* grids, cudaStream_t stream);

// Where the last batch of a pass writes: the Stokes images [s][pixel] (lanes 0 and 1)
// and the PSF (the last lane), times the grid correction and their scales.
struct ImageTargets {
  float* images;
  float* psf;  // or nullptr: no PSF lane
  float scale[4];
  float psf_scale;
};
// acc[lane][pixel] (+)= the sum over the batch's planes of the FFT'd grid at the
// pixel's cell times the sign and the plane's w-screen; after the last batch, the
// images instead (acc is then neither read beyond this batch's sum nor written).
void add_planes(const cufftComplex* grids, int lanes, int first, int count, bool first_batch, bool last_batch,
                const GridShape& shape, const double* x_shifted, const double* correction, dcomplex* acc,
                const ImageTargets& targets, cudaStream_t stream);
// grids[plane - first][lane] = correction * sign * conj(w-screen) * (image a + i image b)
// for the batch's planes, the four-Stokes model packed in two lanes.
void fill_planes(const float* images, int first, int count, const GridShape& shape, const double* correction,
                 const double* x_shifted, cufftComplex* grids, cudaStream_t stream);
// plain/mirrored[k][lane] += grids over each point's footprint, times the w-weight and
// conj(rotation): the adjoint of grid_points. A block reads its item's subgrid into
// shared memory and each thread sums one point's footprint.
void degrid_points(const PreparedView& points, int first, const GridShape& shape, const cufftComplex* grids,
                   dcomplex* plain, dcomplex* mirrored, cudaStream_t stream);
// residual[k][s] = observed[k][s] - model, the model unpacked from plain/mirrored lanes.
void subtract_model(const dcomplex* plain, const dcomplex* mirrored, long long count, const float2* observed,
                    float2* residual, cudaStream_t stream);

}  // namespace spip::cuda::detail
