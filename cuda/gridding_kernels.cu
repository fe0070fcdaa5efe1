#include "detail/cuda_check.hpp"
#include "detail/gridding_kernels.hpp"
#include "spip/imaging/gridding_math.hpp"
#include "spip/imaging/tile_plan.hpp"

namespace spip::cuda::detail {
namespace {

constexpr int threads_per_block = 256;

__device__ dcomplex weighted(const LaneSource& source, long long k, int s) {
  if (s >= source.num_stokes) return {};
  const double w = source.weight[k * 4 + s];
  if (!source.vis) return {w, 0.0};
  const float2 v = source.vis[k * source.num_stokes + s];
  return {static_cast<double>(v.x) * w, static_cast<double>(v.y) * w};
}

__device__ dcomplex lane_value(const LaneSource& source, long long k, bool mirror, int lane) {
  if (!source.packed) return weighted(source, k, lane);
  return imaging::packed_lane(weighted(source, k, 2 * lane), weighted(source, k, 2 * lane + 1), mirror);
}

__device__ double plane_weight(double w, int p, const GridShape& shape) {
  return shape.wstacking ? imaging::w_plane_weight(shape.w_kernel, w, shape.w_first, shape.dw, p) : 1.0;
}

// Entries staged in shared memory at a time, and the grid rows a thread owns: a block
// of 256 threads is 32 columns by 8 row groups of 4 rows, one warp per row group.
constexpr int batch = 64;
constexpr int rows_per_thread = 4;
constexpr int max_lanes = 2;
static_assert(threads_per_block == imaging::grid_tile * imaging::grid_tile / rows_per_thread);

__global__ void grid_items_kernel(PreparedView points, int p, GridShape shape, LaneSource source, cufftComplex* grids) {
  __shared__ float fu[batch][imaging::max_support], fv[batch][imaging::max_support];
  __shared__ int du[batch], dv[batch];
  __shared__ float2 value[batch][max_lanes];
  const int n = shape.grid_size, support = shape.kernel.support, tiles = imaging::tiles_per_side(n);
  const int lanes = source.lanes();
  const int x = threadIdx.x % imaging::grid_tile, row0 = threadIdx.x / imaging::grid_tile * rows_per_thread;
  const int items = *points.item_count;
  for (int item = blockIdx.x; item < items; item += gridDim.x) {
    const WorkItem work = points.items[item];
    const int ox = work.tile % tiles * imaging::grid_tile, oy = work.tile / tiles * imaging::grid_tile;
    float sum[rows_per_thread][max_lanes][2] = {};
    for (long long base = work.lo; base < work.hi; base += batch) {
      const int m = static_cast<int>(min(static_cast<long long>(batch), work.hi - base));
      __syncthreads();  // the previous batch is consumed
      if (threadIdx.x < m) {
        const std::uint32_t i = points.entry_points[base + threadIdx.x];
        du[threadIdx.x] = imaging::footprint_index(ox, points.first_u[i], n);
        dv[threadIdx.x] = imaging::footprint_index(oy, points.first_v[i], n);
        const dcomplex turn = points.rotation[i] * plane_weight(points.w[i], p, shape);
        for (int l = 0; l < max_lanes; ++l) {
          const dcomplex v = l < lanes ? lane_value(source, i / 2, i % 2 == 1, l) * turn : dcomplex();
          value[threadIdx.x][l] = make_float2(static_cast<float>(v.re), static_cast<float>(v.im));
        }
      }
      for (int t = threadIdx.x; t < m * support; t += blockDim.x) {
        const float* f = points.footprint + static_cast<long long>(points.entry_points[base + t / support]) * 2 * support;
        fu[t / support][t % support] = f[t % support];
        fv[t / support][t % support] = f[support + t % support];
      }
      __syncthreads();
      for (int e = 0; e < m; ++e) {
        // Footprint indices of this thread's column and first row; the row test is the
        // same for the whole warp.
        int iu = du[e] + x, jv = dv[e] + row0;
        if (iu >= n) iu -= n;
        if (jv >= n) jv -= n;
        if (jv >= support && jv + rows_per_thread - 1 < n) continue;
        if (iu >= support) continue;
#pragma unroll
        for (int r = 0; r < rows_per_thread; ++r) {
          int j = jv + r;
          if (j >= n) j -= n;
          if (j >= support) continue;
#pragma unroll
          for (int l = 0; l < max_lanes; ++l)
            imaging::add_spread_term(sum[r][l][0], sum[r][l][1], value[e][l].x, value[e][l].y, fv[e][j], fu[e][iu]);
        }
      }
    }
    if (ox + x >= n) continue;
#pragma unroll
    for (int r = 0; r < rows_per_thread; ++r) {
      const int row = oy + row0 + r;
      if (row >= n) continue;
#pragma unroll
      for (int l = 0; l < max_lanes; ++l) {
        if (l >= lanes || (sum[r][l][0] == 0.0f && sum[r][l][1] == 0.0f)) continue;
        cufftComplex* cell = grids + l * shape.cells() + static_cast<long long>(row) * n + ox + x;
        if (work.split) {
          atomicAdd(&cell->x, sum[r][l][0]);
          atomicAdd(&cell->y, sum[r][l][1]);
        } else {  // the tile's only item in the plane: its cells are this thread's alone
          cell->x += sum[r][l][0];
          cell->y += sum[r][l][1];
        }
      }
    }
  }
}

__device__ dcomplex screen(int p, long long pixel, const GridShape& shape, const double* x_shifted) {
  const double w_plane = shape.w_first + p * shape.dw;
  return unit_phasor(imaging::w_screen_angle(w_plane, x_shifted[pixel]));
}

__device__ imaging::ImageCell cell_of(long long pixel, const GridShape& shape) {
  return imaging::image_cell(static_cast<int>(pixel % shape.size), static_cast<int>(pixel / shape.size), shape.size,
                             shape.grid_size);
}

__global__ void accumulate_plane_kernel(const cufftComplex* grids, int lanes, int p, GridShape shape,
                                        const double* x_shifted, dcomplex* acc) {
  const long long pixel = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (pixel >= shape.pixels()) return;
  const imaging::ImageCell at = cell_of(pixel, shape);
  const dcomplex factor = shape.wstacking ? screen(p, pixel, shape, x_shifted) * at.sign : dcomplex(at.sign);
  for (int lane = 0; lane < lanes; ++lane) {
    const cufftComplex g = grids[lane * shape.cells() + at.cell];
    acc[lane * shape.pixels() + pixel] += dcomplex(g.x, g.y) * factor;
  }
}

__global__ void finish_images_kernel(const dcomplex* acc, LaneSource source, GridShape shape, const double* correction,
                                     StokesScale scale, float* images) {
  const long long pixel = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (pixel >= shape.pixels()) return;
  for (int s = 0; s < source.num_stokes; ++s) {
    const dcomplex lane = acc[(source.packed ? s / 2 : s) * shape.pixels() + pixel];
    const double part = source.packed && s % 2 == 1 ? lane.im : lane.re;
    const float image = static_cast<float>(part * (source.packed ? 0.5 : 1.0) * correction[pixel]);
    images[s * shape.pixels() + pixel] = image * scale.s[s];
  }
}

__global__ void fill_plane_kernel(const float* images, int num_stokes, int p, GridShape shape, const double* correction,
                                  const double* x_shifted, cufftComplex* grids) {
  const long long pixel = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (pixel >= shape.pixels()) return;
  const imaging::ImageCell at = cell_of(pixel, shape);
  const double scale = at.sign * correction[pixel];
  const dcomplex factor = shape.wstacking ? conj(screen(p, pixel, shape, x_shifted)) * scale : dcomplex(scale);
  const bool packed = num_stokes > 1;
  const int lanes = packed ? (num_stokes + 1) / 2 : 1;
  for (int lane = 0; lane < lanes; ++lane) {
    const double a = images[(packed ? 2 * lane : lane) * shape.pixels() + pixel];
    const double b = packed && 2 * lane + 1 < num_stokes ? images[(2 * lane + 1) * shape.pixels() + pixel] : 0.0;
    const dcomplex g = factor * dcomplex(a, b);
    grids[lane * shape.cells() + at.cell] = make_cuComplex(static_cast<float>(g.re), static_cast<float>(g.im));
  }
}

// The item's tile of the plane is read into shared memory once; each thread then sums
// one entry's footprint cells that fall in the tile. A point crossing tile edges has
// an entry in each tile, hence the atomic adds (in double) to its outputs.
__global__ void degrid_items_kernel(PreparedView points, int p, GridShape shape, const cufftComplex* grids, int lanes,
                                    dcomplex* plain, dcomplex* mirrored) {
  __shared__ float2 tile[max_lanes][imaging::grid_tile][imaging::grid_tile];
  const int n = shape.grid_size, support = shape.kernel.support, tiles = imaging::tiles_per_side(n);
  const int items = *points.item_count;
  for (int item = blockIdx.x; item < items; item += gridDim.x) {
    const WorkItem work = points.items[item];
    const int ox = work.tile % tiles * imaging::grid_tile, oy = work.tile / tiles * imaging::grid_tile;
    __syncthreads();  // the previous item's tile is no longer read
    for (int c = threadIdx.x; c < lanes * imaging::grid_tile * imaging::grid_tile; c += blockDim.x) {
      const int l = c / (imaging::grid_tile * imaging::grid_tile), at = c % (imaging::grid_tile * imaging::grid_tile);
      const int row = oy + at / imaging::grid_tile, column = ox + at % imaging::grid_tile;
      const cufftComplex g = row < n && column < n ? grids[l * shape.cells() + static_cast<long long>(row) * n + column]
                                                   : make_cuComplex(0.0f, 0.0f);
      tile[l][at / imaging::grid_tile][at % imaging::grid_tile] = make_float2(g.x, g.y);
    }
    __syncthreads();
    for (long long e = work.lo + threadIdx.x; e < work.hi; e += blockDim.x) {
      const std::uint32_t i = points.entry_points[e];
      const float* f = points.footprint + static_cast<long long>(i) * 2 * support;
      const int du = imaging::footprint_index(ox, points.first_u[i], n);
      const int dv = imaging::footprint_index(oy, points.first_v[i], n);
      float sum[max_lanes][2] = {};
      for (int j = 0; j < support; ++j) {
        int y = j - dv;  // the footprint row's row in the tile, if it is there
        if (y < 0) y += n;
        if (y >= imaging::grid_tile) continue;
        float row[max_lanes][2] = {};
        for (int c = 0; c < support; ++c) {
          int x = c - du;
          if (x < 0) x += n;
          if (x >= imaging::grid_tile) continue;
#pragma unroll
          for (int l = 0; l < max_lanes; ++l) {
            row[l][0] += tile[l][y][x].x * f[c];
            row[l][1] += tile[l][y][x].y * f[c];
          }
        }
#pragma unroll
        for (int l = 0; l < max_lanes; ++l) {
          sum[l][0] += row[l][0] * f[support + j];
          sum[l][1] += row[l][1] * f[support + j];
        }
      }
      const dcomplex turn = conj(points.rotation[i]) * plane_weight(points.w[i], p, shape);
      dcomplex* out = (i % 2 ? mirrored : plain) + static_cast<long long>(i / 2) * lanes;
      for (int l = 0; l < lanes; ++l) {
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

}  // namespace

void grid_points(const PreparedView& points, int p, const GridShape& shape, const LaneSource& source,
                 cufftComplex* grids, cudaStream_t stream) {
  grid_items_kernel<<<points.blocks, threads_per_block, 0, stream>>>(points, p, shape, source, grids);
  check_launch();
}

void accumulate_plane(const cufftComplex* grids, int lanes, int p, const GridShape& shape, const double* x_shifted,
                      dcomplex* acc, cudaStream_t stream) {
  accumulate_plane_kernel<<<blocks_for(shape.pixels(), threads_per_block), threads_per_block, 0, stream>>>(
      grids, lanes, p, shape, x_shifted, acc);
  check_launch();
}

void finish_images(const dcomplex* acc, const LaneSource& source, const GridShape& shape, const double* correction,
                   StokesScale scale, float* images, cudaStream_t stream) {
  finish_images_kernel<<<blocks_for(shape.pixels(), threads_per_block), threads_per_block, 0, stream>>>(
      acc, source, shape, correction, scale, images);
  check_launch();
}

void fill_plane(const float* images, int num_stokes, int p, const GridShape& shape, const double* correction,
                const double* x_shifted, cufftComplex* grids, cudaStream_t stream) {
  fill_plane_kernel<<<blocks_for(shape.pixels(), threads_per_block), threads_per_block, 0, stream>>>(
      images, num_stokes, p, shape, correction, x_shifted, grids);
  check_launch();
}

void degrid_points(const PreparedView& points, int p, const GridShape& shape, const cufftComplex* grids, int lanes,
                   dcomplex* plain, dcomplex* mirrored, cudaStream_t stream) {
  degrid_items_kernel<<<points.blocks, threads_per_block, 0, stream>>>(points, p, shape, grids, lanes, plain,
                                                                          mirrored);
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
