#pragma once
// Launches of the gridding kernels. Each kernel body is a thin loop over threads
// around the shared per-element functions of imaging/gridding_math.hpp, the same ones
// the CPU Gridder calls.
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

// The visibilities a lane is made of: Stokes [k][num_stokes] (nullptr: all 1, for the
// PSF) with weights [k][4] (only the first num_stokes used), packed in pairs or not.
struct LaneSource {
  const float2* vis;
  const float* weight;
  int num_stokes;
  bool packed;
  SPIP_HOST_DEVICE int lanes() const { return packed ? (num_stokes + 1) / 2 : num_stokes; }
};

// One block's work in a w-plane: sorted entries [lo, hi), all of one tile; `split`
// when the tile's entries in the plane were more than one block takes.
struct WorkItem {
  long long lo, hi;
  int tile, split;
};

// A channel prepared on the device (point_preparation.hpp). Point 2k + m is
// visibility k (m = 1: its Hermitian mirror).
struct PreparedView {
  const int *first_u, *first_v;
  const double* w;
  const dcomplex* rotation;           // exp(-2 pi i w x0), 1 without w-stacking
  const float* footprint;             // [point][2 W]: the u values, then the v values
  const std::uint32_t* entry_points;  // the point of each sorted (point, tile) entry
  const WorkItem* items;              // the current plane's
  const int* item_count;
  unsigned blocks;                    // of the persistent grid that takes the items in turn
};

// Adds the current plane's items (PointPreparation::build_plane_items) to w-plane p of
// `grids` (lanes x P^2). Output-stationary: a block owns its tile's 32 x 32 cells, a
// thread four cells of one column in registers, and the block loops over the item's
// entries staged in shared memory; only split tiles add to the grid atomically.
void grid_points(const PreparedView& points, int p, const GridShape& shape, const LaneSource& source,
                 cufftComplex* grids, cudaStream_t stream);
// acc[lane][pixel] += FFT'd grid at the pixel's cell times the sign and plane p's w-screen.
void accumulate_plane(const cufftComplex* grids, int lanes, int p, const GridShape& shape, const double* x_shifted,
                      dcomplex* acc, cudaStream_t stream);
// images[s][pixel] = lane part * correction * scale[s] (1 / weight sum; 0.5 more when packed).
struct StokesScale {
  float s[4];
};
void finish_images(const dcomplex* acc, const LaneSource& source, const GridShape& shape, const double* correction,
                   StokesScale scale, float* images, cudaStream_t stream);
// grids = correction * sign * conj(w-screen of plane p) * (image a + i image b).
void fill_plane(const float* images, int num_stokes, int p, const GridShape& shape, const double* correction,
                const double* x_shifted, cufftComplex* grids, cudaStream_t stream);
// plain/mirrored[k][lane] += grids over each point's footprint, times the w-weight and
// conj(rotation): the adjoint of grid_points. A block loads its item's tile of the
// plane into shared memory and each thread sums one entry's cells of that tile.
void degrid_points(const PreparedView& points, int p, const GridShape& shape, const cufftComplex* grids, int lanes,
                   dcomplex* plain, dcomplex* mirrored, cudaStream_t stream);
// residual[k][s] = observed[k][s] - model, the model unpacked from plain/mirrored lanes.
void subtract_model(const dcomplex* plain, const dcomplex* mirrored, long long count, const float2* observed,
                    float2* residual, cudaStream_t stream);

}  // namespace spip::cuda::detail
