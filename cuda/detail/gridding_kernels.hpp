#pragma once
// Launches of the gridding kernels. Each kernel body is a thin loop over threads
// around the shared per-element functions of imaging/gridding_math.hpp, the same ones
// the CPU Gridder calls.
#include <cuda_runtime.h>
#include <cufft.h>

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

// A channel's points on the device in chunks of one grid tile (imaging::TiledPoints).
struct TiledPointsView {
  const imaging::GridPoint* points;
  const long long* chunk_start;
  const int* chunk_tile;
  int chunks;
};

// Adds the points within `bounds` to w-plane p of `grids` (lanes x P^2): one thread
// block per chunk sums its points in shared memory and adds its tile to the grid once,
// so global atomics are per cell and chunk rather than per cell and point.
void grid_points(const TiledPointsView& tiled, imaging::WPlaneBounds bounds, int p, const GridShape& shape,
                 const LaneSource& source, cufftComplex* grids, cudaStream_t stream);
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
// plain/mirrored[k][lane] += grids at each point within `bounds`, times the w-weight
// and conj(rotation): the adjoint of grid_points, a block per chunk for locality.
void degrid_points(const TiledPointsView& tiled, imaging::WPlaneBounds bounds, int p, const GridShape& shape,
                   const cufftComplex* grids, int lanes, dcomplex* plain, dcomplex* mirrored, cudaStream_t stream);
// residual[k][s] = observed[k][s] - model, the model unpacked from plain/mirrored lanes.
void subtract_model(const dcomplex* plain, const dcomplex* mirrored, long long count, const float2* observed,
                    float2* residual, cudaStream_t stream);

}  // namespace spip::cuda::detail
