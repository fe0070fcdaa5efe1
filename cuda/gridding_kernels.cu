#include "detail/cuda_check.hpp"
#include "detail/gridding_kernels.hpp"
#include "spip/imaging/gridding_math.hpp"

namespace spip::cuda::detail {
namespace {

using imaging::GridPoint;
using imaging::max_support;
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

// Kernel values and first cells of a point's footprint in u and v.
struct Footprints {
  int first_u, first_v;
  float u[max_support], v[max_support];
};

__device__ Footprints footprints(const GridPoint& q, const GridShape& shape) {
  Footprints f;
  const int support = shape.kernel.support;
  const double gu = imaging::grid_position_u(q.u, shape.uv_cell, shape.grid_size);
  const double gv = imaging::grid_position_v(q.v, shape.uv_cell, shape.grid_size);
  f.first_u = imaging::footprint_first(gu, support);
  f.first_v = imaging::footprint_first(gv, support);
  for (int i = 0; i < support; ++i) {
    f.u[i] = imaging::footprint_value(shape.kernel, f.first_u, i, gu);
    f.v[i] = imaging::footprint_value(shape.kernel, f.first_v, i, gv);
  }
  return f;
}

__device__ double plane_weight(const GridPoint& q, int p, const GridShape& shape) {
  return shape.wstacking ? imaging::w_plane_weight(shape.w_kernel, q.w, shape.w_first, shape.dw, p) : 1.0;
}

__device__ dcomplex rotation(const GridPoint& q, const GridShape& shape) {
  return shape.wstacking ? unit_phasor(imaging::w_rotation_angle(q.w, shape.x0)) : dcomplex(1.0);
}

// Within a chunk the points are sorted by w; these are the comparisons of the host's
// plane_range().
__device__ long long first_at_or_above(const GridPoint* points, long long lo, long long hi, double low) {
  while (lo < hi) {
    const long long mid = lo + (hi - lo) / 2;
    if (points[mid].w < low)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}
__device__ long long first_above(const GridPoint* points, long long lo, long long hi, double high) {
  while (lo < hi) {
    const long long mid = lo + (hi - lo) / 2;
    if (points[mid].w <= high)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

// The points of chunk blockIdx.x whose w-kernel reaches the plane, found by thread 0
// and shared with the block. Returns an empty range to every thread alike.
struct PointRange {
  long long lo, hi;
};
__device__ PointRange chunk_range(const TiledPointsView& tiled, imaging::WPlaneBounds bounds) {
  __shared__ PointRange range;
  if (threadIdx.x == 0) {
    const long long start = tiled.chunk_start[blockIdx.x], end = tiled.chunk_start[blockIdx.x + 1];
    const long long lo = first_at_or_above(tiled.points, start, end, bounds.low);
    range = {lo, first_above(tiled.points, lo, end, bounds.high)};
  }
  __syncthreads();
  return range;
}

// Lanes summed in shared memory at a time: two lanes of a (grid_tile + W - 1)^2 tile
// of float2 fit the 48 KiB every block may use up to W = 16.
constexpr int tile_lanes = 2;
constexpr int tile_span_max = imaging::grid_tile + max_support - 1;
static_assert(tile_lanes * tile_span_max * tile_span_max * sizeof(float2) <= 48 * 1024);

__device__ void spread_point(const GridPoint& q, int p, const GridShape& shape, const LaneSource& source, int first_lane,
                             int lanes, int tile_u, int tile_v, int span, float2* tile) {
  const Footprints f = footprints(q, shape);
  const int n = shape.grid_size, support = shape.kernel.support;
  const int du = imaging::tile_offset(f.first_u, tile_u, n), dv = imaging::tile_offset(f.first_v, tile_v, n);
  // The host binned the point with the same functions; should they ever disagree, stop
  // the kernel (the next CUDA check reports it) rather than write outside the tile.
  if (du < 0 || du >= imaging::grid_tile || dv < 0 || dv >= imaging::grid_tile) __trap();
  const dcomplex turn = rotation(q, shape) * plane_weight(q, p, shape);
  for (int l = 0; l < lanes; ++l) {
    const dcomplex raw = lane_value(source, q.k, q.mirror != 0, first_lane + l);
    if (raw.re == 0.0 && raw.im == 0.0) continue;
    const dcomplex turned = raw * turn;
    const float value_re = static_cast<float>(turned.re), value_im = static_cast<float>(turned.im);
    float2* lane_tile = tile + l * span * span;
    for (int j = 0; j < support; ++j) {
      float2* row = lane_tile + (dv + j) * span + du;
      const float row_re = value_re * f.v[j], row_im = value_im * f.v[j];
      for (int c = 0; c < support; ++c) {
        atomicAdd(&row[c].x, row_re * f.u[c]);
        atomicAdd(&row[c].y, row_im * f.u[c]);
      }
    }
  }
}

// One block per chunk: the chunk's points are spread into its tile in shared memory
// (atomics there are cheap), then every touched cell of the widened tile is added to
// the grid once, wrapping at the edges; chunks of one tile and the widened borders of
// neighbouring tiles overlap, hence the atomics there.
__global__ void grid_tiles_kernel(TiledPointsView tiled, imaging::WPlaneBounds bounds, int p, GridShape shape,
                                  LaneSource source, cufftComplex* grids) {
  extern __shared__ float2 tile_sums[];
  const PointRange range = chunk_range(tiled, bounds);
  if (range.lo == range.hi) return;
  const int n = shape.grid_size, span = imaging::grid_tile + shape.kernel.support - 1;
  const int tiles = imaging::tiles_per_side(n), tile = tiled.chunk_tile[blockIdx.x];
  const int tile_u = tile % tiles, tile_v = tile / tiles;
  for (int first_lane = 0; first_lane < source.lanes(); first_lane += tile_lanes) {
    const int lanes = min(tile_lanes, source.lanes() - first_lane);
    const int values = lanes * span * span;
    for (int c = threadIdx.x; c < values; c += blockDim.x) tile_sums[c] = make_float2(0.0f, 0.0f);
    __syncthreads();
    for (long long i = range.lo + threadIdx.x; i < range.hi; i += blockDim.x)
      spread_point(tiled.points[i], p, shape, source, first_lane, lanes, tile_u, tile_v, span, tile_sums);
    __syncthreads();
    for (int c = threadIdx.x; c < values; c += blockDim.x) {
      const float2 v = tile_sums[c];
      if (v.x == 0.0f && v.y == 0.0f) continue;
      const int lane = first_lane + c / (span * span), at = c % (span * span);
      const long long row = imaging::wrap_cell(tile_v * imaging::grid_tile + at / span, n);
      const int column = imaging::wrap_cell(tile_u * imaging::grid_tile + at % span, n);
      cufftComplex* cell = grids + lane * shape.cells() + row * n + column;
      atomicAdd(&cell->x, v.x);
      atomicAdd(&cell->y, v.y);
    }
    __syncthreads();  // before the next lanes clear the tile
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

__device__ void degrid_point(const GridPoint& q, int p, const GridShape& shape, const cufftComplex* grids, int lanes,
                             dcomplex* plain, dcomplex* mirrored) {
  const Footprints f = footprints(q, shape);
  const dcomplex turn = conj(rotation(q, shape)) * plane_weight(q, p, shape);
  const int n = shape.grid_size, support = shape.kernel.support;
  for (int lane = 0; lane < lanes; ++lane) {
    const cufftComplex* grid = grids + lane * shape.cells();
    float sum_re = 0, sum_im = 0;
    for (int j = 0; j < support; ++j) {
      const cufftComplex* row = grid + static_cast<long long>(imaging::wrap_cell(f.first_v + j, n)) * n;
      float row_re = 0, row_im = 0;
      for (int c = 0; c < support; ++c) {
        const cufftComplex cell = row[imaging::wrap_cell(f.first_u + c, n)];
        row_re += cell.x * f.u[c];
        row_im += cell.y * f.u[c];
      }
      sum_re += row_re * f.v[j];
      sum_im += row_im * f.v[j];
    }
    (q.mirror ? mirrored : plain)[static_cast<long long>(q.k) * lanes + lane] += dcomplex(sum_re, sum_im) * turn;
  }
}

// One block per chunk, a thread per point; only reads the grid, whose cells the
// chunk's points share. Each (visibility, mirror) pair is one point, so no two threads
// add to the same output.
__global__ void degrid_tiles_kernel(TiledPointsView tiled, imaging::WPlaneBounds bounds, int p, GridShape shape,
                                    const cufftComplex* grids, int lanes, dcomplex* plain, dcomplex* mirrored) {
  const PointRange range = chunk_range(tiled, bounds);
  for (long long i = range.lo + threadIdx.x; i < range.hi; i += blockDim.x)
    degrid_point(tiled.points[i], p, shape, grids, lanes, plain, mirrored);
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

void grid_points(const TiledPointsView& tiled, imaging::WPlaneBounds bounds, int p, const GridShape& shape,
                 const LaneSource& source, cufftComplex* grids, cudaStream_t stream) {
  const int span = imaging::grid_tile + shape.kernel.support - 1;
  const std::size_t shared_bytes = static_cast<std::size_t>(tile_lanes) * span * span * sizeof(float2);
  if (tiled.chunks == 0) return;
  grid_tiles_kernel<<<tiled.chunks, threads_per_block, shared_bytes, stream>>>(tiled, bounds, p, shape, source, grids);
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

void degrid_points(const TiledPointsView& tiled, imaging::WPlaneBounds bounds, int p, const GridShape& shape,
                   const cufftComplex* grids, int lanes, dcomplex* plain, dcomplex* mirrored, cudaStream_t stream) {
  if (tiled.chunks == 0) return;
  degrid_tiles_kernel<<<tiled.chunks, threads_per_block, 0, stream>>>(tiled, bounds, p, shape, grids, lanes, plain,
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
