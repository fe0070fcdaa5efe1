#include "detail/cuda_check.hpp"
#include "detail/gridding_kernels.hpp"
#include "spip/imaging/gridding_math.hpp"
#include "spip/imaging/tile_plan.hpp"

namespace spip::cuda::detail {
namespace {

constexpr int threads_per_block = 256;

__device__ float2 times(float2 a, float2 b) { return make_float2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }

__device__ float2 packed(const LaneSource& source, long long k, int pair, bool mirror) {
  const float wa = source.weight[4 * k + 2 * pair], wb = source.weight[4 * k + 2 * pair + 1];
  const float2 a = source.vis[4 * k + 2 * pair], b = source.vis[4 * k + 2 * pair + 1];
  const Complex<float> lane =
      imaging::packed_lane(Complex<float>(a.x * wa, a.y * wa), Complex<float>(b.x * wb, b.y * wb), mirror);
  return make_float2(lane.re, lane.im);
}

__global__ void lane_values_kernel(PreparedView points, long long entries, LaneSource source, float2* values) {
  const long long s = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (s >= entries) return;
  const std::uint32_t i = points.order[s];
  const long long k = i / 2;
  const bool mirror = i % 2 == 1;
  const float2 turn = points.rotation[s];
  float2* out = values + s * source.lanes();
  out[0] = times(packed(source, k, 0, mirror), turn);
  out[1] = times(packed(source, k, 1, mirror), turn);
  // The PSF's lane packs the Stokes I weight with nothing: the same at the mirror.
  if (source.psf) out[2] = times(make_float2(source.weight[4 * k], 0.0f), turn);
}

// The grid cell of subgrid cell `at` (y * side + x) of tile (tu, tv).
__device__ long long grid_cell(int tu, int tv, int at, int side, int n) {
  return static_cast<long long>(imaging::subgrid_to_grid(tv, at / side, n)) * n +
         imaging::subgrid_to_grid(tu, at % side, n);
}

// Points staged in shared memory at a time, each with its footprint, its lane values
// times its plane's w-weight, and where its footprint begins in the subgrid.
constexpr int staged_points = 128;

template <int Lanes>
std::size_t grid_shared_bytes(int support) {
  const std::size_t side = imaging::subgrid_side(support);
  return (2 * Lanes * side * side + staged_points * 2 * support) * sizeof(float) +
         staged_points * (Lanes * sizeof(float2) + 4 * sizeof(int));
}

// Thread t takes lane t / W^2 and, of every footprint, the one cell whose column and row
// are congruent to (t % W, t / W % W) modulo W: no two threads of a block ever add to
// the same subgrid cell, so the block needs no atomics in shared memory, every cell sums
// its points in sorted order, and a thread keeps a cell's sum in registers while
// successive points fall on it. Only the threads that round the block up to whole warps
// rest while the points are spread.
template <int Lanes>
__global__ void __launch_bounds__(max_lanes* imaging::max_support* imaging::max_support)
    grid_subgrids_kernel(PreparedView points, int first, GridShape shape, const float2* values, cufftComplex* grids) {
  extern __shared__ float shared[];
  const int n = shape.grid_size, support = shape.kernel.support, w_support = shape.w_kernel.support;
  const int side = imaging::subgrid_side(support), area = side * side, tiles = imaging::tiles_per_side(n);
  float* subgrid = shared;                           // [2 lane + part][y][x]
  float* footprint = subgrid + 2 * Lanes * area;     // [staged][2 W]
  auto* value = reinterpret_cast<float2*>(footprint + staged_points * 2 * support);  // [staged][lane]
  auto* origin = reinterpret_cast<int*>(value + staged_points * Lanes);  // [staged]: du, dv, du % W, dv % W
  const int classes = support * support;
  const int lane = threadIdx.x / classes, column = threadIdx.x % support, row = threadIdx.x / support % support;
  for (int c = threadIdx.x; c < 2 * Lanes * area; c += blockDim.x) subgrid[c] = 0.0f;
  const int items = *points.item_count;
  for (int item = blockIdx.x; item < items; item += gridDim.x) {
    const WorkItem work = points.items[item];
    for (int base = work.lo; base < work.hi; base += staged_points) {
      const int m = min(staged_points, work.hi - base);
      __syncthreads();  // the subgrid is clear, and the last points are spread
      const float* from = points.footprint + static_cast<long long>(base) * 2 * support;
      for (int t = threadIdx.x; t < m * 2 * support; t += blockDim.x) footprint[t] = from[t];
      for (int t = threadIdx.x; t < m; t += blockDim.x) {
        const int s = base + t;
        const float weight = points.w_weights[static_cast<long long>(s) * w_support + work.plane - points.first_plane[s]];
#pragma unroll
        for (int l = 0; l < Lanes; ++l) {
          const float2 v = values[static_cast<long long>(s) * Lanes + l];
          value[t * Lanes + l] = make_float2(v.x * weight, v.y * weight);
        }
        const int du = points.offset_u[s], dv = points.offset_v[s];
        origin[4 * t] = du;
        origin[4 * t + 1] = dv;
        origin[4 * t + 2] = du % support;
        origin[4 * t + 3] = dv % support;
      }
      __syncthreads();
      if (lane >= Lanes) continue;
      float* part = subgrid + 2 * lane * area;
      float re = 0.0f, im = 0.0f;
      int at = -1;
      for (int e = 0; e < m; ++e) {
        const int i = imaging::residue_cell(column, origin[4 * e + 2], support);
        const int j = imaging::residue_cell(row, origin[4 * e + 3], support);
        const int here = (origin[4 * e + 1] + j) * side + origin[4 * e] + i;
        if (here != at) {
          if (at >= 0) {
            part[at] += re;
            part[area + at] += im;
          }
          at = here;
          re = im = 0.0f;
        }
        const float2 v = value[e * Lanes + lane];
        imaging::add_spread_term(re, im, v.x, v.y, footprint[e * 2 * support + support + j],
                                 footprint[e * 2 * support + i]);
      }
      if (at >= 0) {
        part[at] += re;
        part[area + at] += im;
      }
    }
    __syncthreads();
    // The subgrid onto the grid, cleared behind: other items of the tile, and the
    // neighbouring tiles' overhangs, add to the same cells.
    const int tu = work.tile % tiles, tv = work.tile / tiles;
    cufftComplex* plane = grids + static_cast<long long>(work.plane - first) * Lanes * shape.cells();
    for (int at = threadIdx.x; at < area; at += blockDim.x) {
      const long long cell = grid_cell(tu, tv, at, side, n);
#pragma unroll
      for (int l = 0; l < Lanes; ++l) {
        const float re = subgrid[2 * l * area + at], im = subgrid[(2 * l + 1) * area + at];
        if (re == 0.0f && im == 0.0f) continue;
        atomicAdd(&plane[l * shape.cells() + cell].x, re);
        atomicAdd(&plane[l * shape.cells() + cell].y, im);
        subgrid[2 * l * area + at] = 0.0f;
        subgrid[(2 * l + 1) * area + at] = 0.0f;
      }
    }
  }
}

__device__ imaging::ImageCell cell_of(long long pixel, const GridShape& shape) {
  return imaging::image_cell(static_cast<int>(pixel % shape.size), static_cast<int>(pixel / shape.size), shape.size,
                             shape.grid_size);
}

// The w-screens of planes first, first + 1, ... at a pixel: the first one, then a step
// per plane (in double, so that 64 steps stay far below float rounding).
struct Screens {
  dcomplex screen, step;
  __device__ Screens(int first, long long pixel, const GridShape& shape, const double* x_shifted) {
    if (!shape.wstacking) {
      screen = step = dcomplex(1.0);
      return;
    }
    const double x = x_shifted[pixel];
    screen = unit_phasor(imaging::w_screen_angle(shape.w_first + first * shape.dw, x));
    step = unit_phasor(imaging::w_screen_angle(shape.dw, x));
  }
};

__global__ void add_planes_kernel(const cufftComplex* grids, int lanes, int first, int count, bool first_batch,
                                  bool last_batch, GridShape shape, const double* x_shifted, const double* correction,
                                  dcomplex* acc, ImageTargets targets) {
  const long long pixel = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (pixel >= shape.pixels()) return;
  const imaging::ImageCell at = cell_of(pixel, shape);
  dcomplex sum[max_lanes];
  for (int l = 0; l < lanes; ++l) sum[l] = first_batch ? dcomplex() : acc[l * shape.pixels() + pixel];
  Screens screens(first, pixel, shape, x_shifted);
  for (int b = 0; b < count; ++b) {
    const dcomplex factor = screens.screen * at.sign;
    for (int l = 0; l < lanes; ++l) {
      const cufftComplex g = grids[(static_cast<long long>(b) * lanes + l) * shape.cells() + at.cell];
      sum[l] += dcomplex(g.x, g.y) * factor;
    }
    screens.screen = screens.screen * screens.step;
  }
  if (!last_batch) {
    for (int l = 0; l < lanes; ++l) acc[l * shape.pixels() + pixel] = sum[l];
    return;
  }
  // Packed lanes hold two real images, each doubled by the Hermitian mirrors.
  const double scale = 0.5 * correction[pixel];
  for (int s = 0; s < 4; ++s) {
    const dcomplex lane = sum[s / 2];
    targets.images[s * shape.pixels() + pixel] = static_cast<float>((s % 2 ? lane.im : lane.re) * scale) * targets.scale[s];
  }
  if (targets.psf) targets.psf[pixel] = static_cast<float>(sum[lanes - 1].re * scale) * targets.psf_scale;
}

__global__ void fill_planes_kernel(const float* images, int first, int count, GridShape shape, const double* correction,
                                   const double* x_shifted, cufftComplex* grids) {
  const long long pixel = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (pixel >= shape.pixels()) return;
  const imaging::ImageCell at = cell_of(pixel, shape);
  const double scale = at.sign * correction[pixel];
  dcomplex lane[2];
  for (int l = 0; l < 2; ++l)
    lane[l] = dcomplex(images[2 * l * shape.pixels() + pixel], images[(2 * l + 1) * shape.pixels() + pixel]) * scale;
  Screens screens(first, pixel, shape, x_shifted);
  for (int b = 0; b < count; ++b) {
    const dcomplex factor = conj(screens.screen);
    for (int l = 0; l < 2; ++l) {
      const dcomplex g = factor * lane[l];
      grids[(static_cast<long long>(b) * 2 + l) * shape.cells() + at.cell] =
          make_cuComplex(static_cast<float>(g.re), static_cast<float>(g.im));
    }
    screens.screen = screens.screen * screens.step;
  }
}

// The item's subgrid of its plane is read into shared memory once; each thread then
// sums one point's footprint. A point reaches several planes, hence the atomic adds
// (in double) to its outputs.
__global__ void degrid_subgrids_kernel(PreparedView points, int first, GridShape shape, const cufftComplex* grids,
                                       dcomplex* plain, dcomplex* mirrored) {
  extern __shared__ float2 tile[];
  const int n = shape.grid_size, support = shape.kernel.support, w_support = shape.w_kernel.support;
  const int side = imaging::subgrid_side(support), area = side * side, tiles = imaging::tiles_per_side(n);
  const int items = *points.item_count;
  for (int item = blockIdx.x; item < items; item += gridDim.x) {
    const WorkItem work = points.items[item];
    const int tu = work.tile % tiles, tv = work.tile / tiles;
    const cufftComplex* plane = grids + static_cast<long long>(work.plane - first) * 2 * shape.cells();
    __syncthreads();  // the previous item's subgrid is no longer read
    for (int c = threadIdx.x; c < 2 * area; c += blockDim.x) {
      const cufftComplex g = plane[c / area * shape.cells() + grid_cell(tu, tv, c % area, side, n)];
      tile[c] = make_float2(g.x, g.y);
    }
    __syncthreads();
    for (int s = work.lo + threadIdx.x; s < work.hi; s += blockDim.x) {
      const float* f = points.footprint + static_cast<long long>(s) * 2 * support;
      const int du = points.offset_u[s], dv = points.offset_v[s];
      float sum[2][2] = {};
      for (int j = 0; j < support; ++j) {
        float line[2][2] = {};
        for (int c = 0; c < support; ++c)
          for (int l = 0; l < 2; ++l) {
            const float2 g = tile[l * area + (dv + j) * side + du + c];
            line[l][0] += g.x * f[c];
            line[l][1] += g.y * f[c];
          }
        for (int l = 0; l < 2; ++l) {
          sum[l][0] += line[l][0] * f[support + j];
          sum[l][1] += line[l][1] * f[support + j];
        }
      }
      const float2 r = points.rotation[s];
      const double weight = points.w_weights[static_cast<long long>(s) * w_support + work.plane - points.first_plane[s]];
      const dcomplex turn = conj(dcomplex(r.x, r.y)) * weight;
      const std::uint32_t i = points.order[s];
      dcomplex* out = (i % 2 ? mirrored : plain) + static_cast<long long>(i / 2) * 2;
      for (int l = 0; l < 2; ++l) {
        const dcomplex v = dcomplex(sum[l][0], sum[l][1]) * turn;
        atomicAdd(&out[l].re, v.re);
        atomicAdd(&out[l].im, v.im);
      }
    }
  }
}

__global__ void subtract_model_kernel(const dcomplex* plain, const dcomplex* mirrored, long long count,
                                      const float2* observed, float2* residual) {
  const long long k = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k >= count) return;
  for (int s = 0; s < 4; ++s) {
    const long long lane = k * 2 + s / 2;
    const dcomplex model = imaging::unpacked_stokes(plain[lane], mirrored[lane], s % 2 == 1);
    const float2 v = observed[k * 4 + s];
    residual[k * 4 + s] = make_float2(v.x - static_cast<float>(model.re), v.y - static_cast<float>(model.im));
  }
}

void check_launch() { SPIP_CUDA_CHECK(cudaGetLastError()); }

std::size_t subgrid_bytes(int support, int floats_per_cell) {
  const std::size_t side = imaging::subgrid_side(support);
  return side * side * floats_per_cell * sizeof(float);
}

// Kernels whose shared memory may pass the default 48 KiB (W = 16 with three lanes: a
// 53 KiB subgrid and 20 KiB of staged points) are allowed the most the widest kernel
// needs, on the current device.
template <class Kernel>
void allow_shared(Kernel kernel, std::size_t bytes) {
  SPIP_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
}

template <int Lanes>
void launch_grid(const PreparedView& points, int first, const GridShape& shape, const float2* values,
                 cufftComplex* grids, cudaStream_t stream) {
  allow_shared(grid_subgrids_kernel<Lanes>, grid_shared_bytes<Lanes>(imaging::max_support));
  const int support = shape.kernel.support, threads = (Lanes * support * support + 31) / 32 * 32;
  grid_subgrids_kernel<Lanes><<<points.blocks, threads, grid_shared_bytes<Lanes>(support), stream>>>(
      points, first, shape, values, grids);
  check_launch();
}

}  // namespace

void lane_values(const PreparedView& points, long long entries, const LaneSource& source, float2* values,
                 cudaStream_t stream) {
  if (entries == 0) return;
  lane_values_kernel<<<blocks_for(entries, threads_per_block), threads_per_block, 0, stream>>>(points, entries, source,
                                                                                              values);
  check_launch();
}

void grid_points(const PreparedView& points, int first, const GridShape& shape, int lanes, const float2* values,
                 cufftComplex* grids, cudaStream_t stream) {
  switch (lanes) {
    case 2: launch_grid<2>(points, first, shape, values, grids, stream); break;
    case 3: launch_grid<3>(points, first, shape, values, grids, stream); break;
    default: SPIP_THROW(Error, "GPU gridder: " + std::to_string(lanes) + " lanes");
  }
}

void add_planes(const cufftComplex* grids, int lanes, int first, int count, bool first_batch, bool last_batch,
                const GridShape& shape, const double* x_shifted, const double* correction, dcomplex* acc,
                const ImageTargets& targets, cudaStream_t stream) {
  add_planes_kernel<<<blocks_for(shape.pixels(), threads_per_block), threads_per_block, 0, stream>>>(
      grids, lanes, first, count, first_batch, last_batch, shape, x_shifted, correction, acc, targets);
  check_launch();
}

void fill_planes(const float* images, int first, int count, const GridShape& shape, const double* correction,
                 const double* x_shifted, cufftComplex* grids, cudaStream_t stream) {
  fill_planes_kernel<<<blocks_for(shape.pixels(), threads_per_block), threads_per_block, 0, stream>>>(
      images, first, count, shape, correction, x_shifted, grids);
  check_launch();
}

void degrid_points(const PreparedView& points, int first, const GridShape& shape, const cufftComplex* grids,
                   dcomplex* plain, dcomplex* mirrored, cudaStream_t stream) {
  allow_shared(degrid_subgrids_kernel, subgrid_bytes(imaging::max_support, 4));
  degrid_subgrids_kernel<<<points.blocks, threads_per_block, subgrid_bytes(shape.kernel.support, 4), stream>>>(
      points, first, shape, grids, plain, mirrored);
  check_launch();
}

void subtract_model(const dcomplex* plain, const dcomplex* mirrored, long long count, const float2* observed,
                    float2* residual, cudaStream_t stream) {
  if (count == 0) return;
  subtract_model_kernel<<<blocks_for(count, threads_per_block), threads_per_block, 0, stream>>>(plain, mirrored, count,
                                                                                               observed, residual);
  check_launch();
}

}  // namespace spip::cuda::detail
