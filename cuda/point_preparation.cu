#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <cstring>

#include "detail/point_preparation.hpp"
#include "spip/imaging/gridding_math.hpp"
#include "spip/imaging/tile_plan.hpp"

namespace spip::cuda::detail {
namespace {

constexpr int threads_per_block = 256;
constexpr int sums = 6;  // the four weight sums, max |w| and the rows on the grid

// The block's sums and largest |w| into values[.][0], by a fixed tree.
__device__ void reduce_block(const double* mine, double (*values)[threads_per_block]) {
  for (int s = 0; s < sums; ++s) values[s][threadIdx.x] = mine[s];
  __syncthreads();
  for (int half = threads_per_block / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) {
      for (int s = 0; s < sums; ++s)
        values[s][threadIdx.x] = s == 4 ? fmax(values[s][threadIdx.x], values[s][threadIdx.x + half])
                                        : values[s][threadIdx.x] + values[s][threadIdx.x + half];
    }
    __syncthreads();
  }
}

// Per row: on the grid or not (weights zeroed where not), and per block the sums of
// the weights, the largest |w| and the count of rows on the grid, by a fixed tree: the
// same result for the same channel on every run.
__global__ void survey_kernel(const double* uvw_m, double scale, float* weights, long long rows, double uv_cell,
                              int grid_size, unsigned char* inside, double* partials) {
  __shared__ double values[sums][threads_per_block];
  const long long k = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  double mine[sums] = {0, 0, 0, 0, 0, 0};
  if (k < rows) {
    const bool on = imaging::on_grid(uvw_m[3 * k] * scale, uvw_m[3 * k + 1] * scale, uv_cell, grid_size);
    inside[k] = on;
    for (int s = 0; s < 4; ++s) {
      if (!on) weights[4 * k + s] = 0.0f;
      mine[s] = weights[4 * k + s];
    }
    mine[4] = on ? fabs(uvw_m[3 * k + 2] * scale) : 0.0;
    mine[5] = on;
  }
  reduce_block(mine, values);
  if (threadIdx.x < sums) partials[static_cast<long long>(blockIdx.x) * sums + threadIdx.x] = values[threadIdx.x][0];
}

// One block: the blocks' partials in a fixed order, then the w-planes they need.
__global__ void summary_kernel(const double* partials, int blocks, GridShape shape, ChannelSummary* summary) {
  __shared__ double values[sums][threads_per_block];
  double mine[sums] = {0, 0, 0, 0, 0, 0};
  for (int b = threadIdx.x; b < blocks; b += blockDim.x) {
    for (int s = 0; s < sums; ++s)
      mine[s] = s == 4 ? fmax(mine[s], partials[b * sums + s]) : mine[s] + partials[b * sums + s];
  }
  reduce_block(mine, values);
  if (threadIdx.x != 0) return;
  for (int s = 0; s < 4; ++s) summary->weight_sum[s] = values[s][0];
  summary->w_reach = values[4][0];
  summary->entries = 2 * static_cast<long long>(values[5][0]);
  const imaging::WPlanes planes =
      shape.wstacking ? imaging::w_planes(values[4][0], shape.w_kernel.support, shape.dw) : imaging::WPlanes{0.0, 1};
  summary->w_first = planes.w_first;
  summary->planes = planes.planes;
}

// Point i = 2k + m of row k (m = 1: the mirror, coordinates negated), in wavelengths:
// uvw_m * scale, the product the CPU imager takes.
struct PointCoordinates {
  double u, v, w;
};
__device__ PointCoordinates coordinates(const double* uvw_m, double scale, long long i) {
  const long long k = i / 2;
  const double sign = i % 2 ? -1.0 : 1.0;
  return {sign * (uvw_m[3 * k] * scale), sign * (uvw_m[3 * k + 1] * scale), sign * (uvw_m[3 * k + 2] * scale)};
}

__device__ int first_plane_of(double w, const GridShape& shape, const ChannelSummary& summary) {
  return shape.wstacking ? imaging::first_w_plane(w, imaging::WPlanes{summary.w_first, summary.planes}, shape.dw,
                                                  shape.w_kernel.support)
                         : 0;
}

// Each point's sort key (home tile, first plane); points off the grid sort to the end.
__global__ void keys_kernel(const double* uvw_m, double scale, const unsigned char* inside, long long points,
                            GridShape shape, const ChannelSummary* summary, std::uint64_t* keys,
                            std::uint32_t* order) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= points) return;
  order[i] = static_cast<std::uint32_t>(i);
  if (!inside[i / 2]) {
    keys[i] = imaging::off_grid_key(shape.grid_size);
    return;
  }
  const PointCoordinates c = coordinates(uvw_m, scale, i);
  const int n = shape.grid_size, support = shape.kernel.support;
  const int fu = imaging::footprint_first(imaging::grid_position_u(c.u, shape.uv_cell, n), support);
  const int fv = imaging::footprint_first(imaging::grid_position_v(c.v, shape.uv_cell, n), support);
  keys[i] = imaging::entry_key(imaging::home_tile(fu, fv, n), first_plane_of(c.w, shape, *summary));
}

// Sorted point s: where its footprint begins in its home subgrid, its footprint, w-plane weights and rotation, worked out in
// double and kept in float, in sorted order, so that the gridders read them in turn.
__global__ void sorted_points_kernel(const double* uvw_m, double scale, const std::uint32_t* order, long long points,
                                     GridShape shape, const ChannelSummary* summary, int* offset_u, int* offset_v,
                                     int* first_plane, float* w_weights, float2* rotation, float* footprint) {
  const long long s = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (s >= points || s >= summary->entries) return;
  const PointCoordinates c = coordinates(uvw_m, scale, order[s]);
  const int n = shape.grid_size, support = shape.kernel.support, w_support = shape.w_kernel.support;
  const double gu = imaging::grid_position_u(c.u, shape.uv_cell, n), gv = imaging::grid_position_v(c.v, shape.uv_cell, n);
  const int fu = imaging::footprint_first(gu, support), fv = imaging::footprint_first(gv, support);
  float* values = footprint + s * 2 * support;
  for (int i = 0; i < support; ++i) {
    values[i] = imaging::footprint_value(shape.kernel, fu, i, gu);
    values[support + i] = imaging::footprint_value(shape.kernel, fv, i, gv);
  }
  offset_u[s] = imaging::subgrid_offset(fu, n);
  offset_v[s] = imaging::subgrid_offset(fv, n);
  const int first = first_plane_of(c.w, shape, *summary);
  first_plane[s] = first;
  for (int b = 0; b < w_support; ++b)
    w_weights[s * w_support + b] =
        shape.wstacking ? static_cast<float>(imaging::w_plane_weight(shape.w_kernel, c.w, summary->w_first, shape.dw,
                                                                     first + b))
                        : (b == 0 ? 1.0f : 0.0f);
  const dcomplex turn = shape.wstacking ? unit_phasor(imaging::w_rotation_angle(c.w, shape.x0)) : dcomplex(1.0);
  rotation[s] = make_float2(static_cast<float>(turn.re), static_cast<float>(turn.im));
}

// 1 where a sorted point starts its tile's segment.
__global__ void segment_flags_kernel(const std::uint64_t* keys, long long points, int* flags) {
  const long long e = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e < points) flags[e] = e == 0 || imaging::key_tile(keys[e]) != imaging::key_tile(keys[e - 1]);
}

// From the inclusive scan of the flags: each segment's first point, then the end.
__global__ void segment_starts_kernel(const int* flags, const int* index, long long points, long long* segment_start,
                                      int* segments) {
  const long long e = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= points) return;
  if (flags[e]) segment_start[index[e] - 1] = e;
  if (e == points - 1) {
    segment_start[index[e]] = points;
    *segments = index[e];
  }
}

// A thread per tile segment (the off-grid one has none): for each plane of the batch,
// its points that reach the plane, in items of at most max_chunk_entries.
__global__ void plane_items_kernel(const std::uint64_t* keys, const long long* segment_start, const int* segments,
                                   int first, int count, int w_support, int off_grid_tile, WorkItem* items,
                                   int* item_count, long long* point_planes) {
  const long long s = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (s >= *segments) return;
  const int tile = imaging::key_tile(keys[segment_start[s]]);
  if (tile == off_grid_tile) return;
  long long pairs = 0;
  for (int p = first; p < first + count; ++p) {
    const imaging::EntryRange range = imaging::plane_entries(keys, segment_start[s], segment_start[s + 1], p, w_support);
    const long long chunks = imaging::chunks_of(range);
    if (chunks == 0) continue;
    pairs += range.hi - range.lo;
    int at = atomicAdd(item_count, static_cast<int>(chunks));
    for (long long lo = range.lo; lo < range.hi; lo += imaging::max_chunk_entries)
      items[at++] = WorkItem{static_cast<int>(lo), static_cast<int>(min(range.hi, lo + imaging::max_chunk_entries)),
                             tile, p};
  }
  if (pairs) atomicAdd(reinterpret_cast<unsigned long long*>(point_planes), static_cast<unsigned long long>(pairs));
}

// A persistent grid of blocks takes a batch's items in turn: the item count is only on
// the device, and every block that runs has an item with points.
unsigned resident_blocks() {
  int device = 0, processors = 0;
  SPIP_CUDA_CHECK(cudaGetDevice(&device));
  SPIP_CUDA_CHECK(cudaDeviceGetAttribute(&processors, cudaDevAttrMultiProcessorCount, device));
  return static_cast<unsigned>(8 * processors);
}

std::size_t max_segments(std::size_t points, int grid_size) {
  const std::size_t tiles = imaging::tiles_per_side(grid_size);
  return std::min(points, tiles * tiles + 1);
}

}  // namespace

PointPreparation::PointPreparation(std::size_t max_rows, const GridShape& shape, int plane_batch)
    : shape_(shape), plane_batch_(plane_batch), resident_blocks_(resident_blocks()), max_points_(2 * max_rows),
      max_segments_(max_segments(max_points_, shape.grid_size)), max_items_(0), inside_(max_rows),
      partials_(blocks_for(static_cast<long long>(max_rows), threads_per_block) * sums + sums), summary_(1),
      host_summary_(sizeof(ChannelSummary)), offset_u_(max_points_), offset_v_(max_points_), first_plane_(max_points_),
      rotation_(max_points_), footprint_(max_points_ * 2 * shape.kernel.support),
      w_weights_(max_points_ * shape.w_kernel.support), keys_(max_points_), keys_alt_(max_points_),
      order_(max_points_), order_alt_(max_points_), segment_start_(max_segments_ + 1), segments_(1), item_count_(1),
      point_planes_(1) {
  // Every (segment, plane) of a batch makes at most one item beyond its full chunks; a
  // point reaches at most W_w planes, so the full chunks are at most that many points'.
  max_items_ = max_segments_ * static_cast<std::size_t>(plane_batch) +
               max_points_ * shape.w_kernel.support / imaging::max_chunk_entries + 1;
  items_ = DeviceArray<WorkItem>(max_items_);
  // One scratch area for the scan and the sort, the larger of the two.
  std::size_t flags_bytes = 0, sort_bytes = 0;
  const int max_points = static_cast<int>(max_points_);
  int* flags = reinterpret_cast<int*>(keys_alt_.get());
  SPIP_CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, flags_bytes, flags, flags + max_points_, max_points));
  cub::DoubleBuffer<std::uint64_t> keys(keys_.get(), keys_alt_.get());
  cub::DoubleBuffer<std::uint32_t> values(order_.get(), order_alt_.get());
  SPIP_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, keys, values, max_points));
  scratch_ = DeviceArray<char>(std::max({flags_bytes, sort_bytes, std::size_t{1}}));
}

std::size_t PointPreparation::bytes_per_row(int support, int w_support) {
  const std::size_t per_point = 3 * sizeof(int) + sizeof(float2) + (2 * support + w_support) * sizeof(float) +
                                2 * (sizeof(std::uint64_t) + sizeof(std::uint32_t));  // the sort's two buffers
  const std::size_t items = w_support * sizeof(WorkItem) / imaging::max_chunk_entries + 1;
  return 1 + 2 * per_point + 2 * items + 1;  // + 1: the block partials
}

std::size_t PointPreparation::fixed_bytes(int grid_size, int plane_batch) {
  const std::size_t tiles = imaging::tiles_per_side(grid_size);
  return (tiles * tiles + 2) * (sizeof(long long) + plane_batch * sizeof(WorkItem)) + (16u << 20);  // and CUB's scratch
}

const ChannelSummary& PointPreparation::prepare(const double* uvw_m, double scale, float* weights, long long rows,
                                                cudaStream_t stream, const imaging::RowGroup* group) {
  const long long points = 2 * rows;
  const unsigned row_blocks = std::max(1u, blocks_for(rows, threads_per_block));
  survey_kernel<<<row_blocks, threads_per_block, 0, stream>>>(uvw_m, scale, weights, rows, shape_.uv_cell,
                                                              shape_.grid_size, inside_.get(), partials_.get());
  summary_kernel<<<1, threads_per_block, 0, stream>>>(partials_.get(), static_cast<int>(row_blocks), shape_,
                                                      summary_.get());
  ChannelSummary& host = *reinterpret_cast<ChannelSummary*>(host_summary_.get());
  if (group) {
    SPIP_CUDA_CHECK(cudaMemcpyAsync(&host, summary_.get(), sizeof host, cudaMemcpyDeviceToHost, stream));
    SPIP_CUDA_CHECK(cudaStreamSynchronize(stream));
    group->sum(host.weight_sum, 4);
    host.w_reach = group->max(host.w_reach);
    const imaging::WPlanes planes = shape_.wstacking ? imaging::w_planes(host.w_reach, shape_.w_kernel.support, shape_.dw)
                                                     : imaging::WPlanes{0.0, 1};
    host.w_first = planes.w_first;
    host.planes = planes.planes;
    SPIP_CUDA_CHECK(cudaMemcpyAsync(summary_.get(), &host, sizeof host, cudaMemcpyHostToDevice, stream));
  }
  points_ = points;
  SPIP_CUDA_CHECK(cudaMemsetAsync(segments_.get(), 0, sizeof(int), stream));
  if (points > 0) {
    const unsigned point_blocks = blocks_for(points, threads_per_block);
    keys_kernel<<<point_blocks, threads_per_block, 0, stream>>>(uvw_m, scale, inside_.get(), points, shape_,
                                                                summary_.get(), keys_.get(), order_.get());
    cub::DoubleBuffer<std::uint64_t> keys(keys_.get(), keys_alt_.get());
    cub::DoubleBuffer<std::uint32_t> values(order_.get(), order_alt_.get());
    std::size_t bytes = scratch_.bytes();
    SPIP_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(scratch_.get(), bytes, keys, values, static_cast<int>(points), 0,
                                                    imaging::key_bits(shape_.grid_size), stream));
    sorted_keys_ = keys.Current();
    sorted_points_ = values.Current();
    sorted_points_kernel<<<point_blocks, threads_per_block, 0, stream>>>(
        uvw_m, scale, sorted_points_, points, shape_, summary_.get(), offset_u_.get(), offset_v_.get(),
        first_plane_.get(), w_weights_.get(), rotation_.get(), footprint_.get());
    // The flags and their scan live in the sort's other key buffer, free after the sort.
    int* flags = reinterpret_cast<int*>(keys.Alternate());
    int* index = flags + points;
    segment_flags_kernel<<<point_blocks, threads_per_block, 0, stream>>>(sorted_keys_, points, flags);
    bytes = scratch_.bytes();
    SPIP_CUDA_CHECK(
        cub::DeviceScan::InclusiveSum(scratch_.get(), bytes, flags, index, static_cast<int>(points), stream));
    segment_starts_kernel<<<point_blocks, threads_per_block, 0, stream>>>(flags, index, points, segment_start_.get(),
                                                                          segments_.get());
  }
  SPIP_CUDA_CHECK(cudaGetLastError());
  // The one wait (two with a group): the host needs the planes and the weight sums.
  SPIP_CUDA_CHECK(cudaMemcpyAsync(&host, summary_.get(), sizeof host, cudaMemcpyDeviceToHost, stream));
  SPIP_CUDA_CHECK(cudaStreamSynchronize(stream));
  entries_ = host.entries;
  if (host.planes > imaging::max_key_planes)
    SPIP_THROW(Error, "GPU imager: a channel needs " + std::to_string(host.planes) + " w-planes, more than the " +
                          std::to_string(imaging::max_key_planes) +
                          " its sort keys hold; use the CPU backend (parallel.device = cpu) or a smaller field");
  return host;
}

void PointPreparation::build_plane_items(int first, int count, cudaStream_t stream) {
  SPIP_CUDA_CHECK(cudaMemsetAsync(item_count_.get(), 0, sizeof(int), stream));
  SPIP_CUDA_CHECK(cudaMemsetAsync(point_planes_.get(), 0, sizeof(long long), stream));
  if (entries_ == 0) return;
  if (count > plane_batch_)
    SPIP_THROW(Error, "GPU imager: a batch of " + std::to_string(count) + " w-planes, more than the " +
                          std::to_string(plane_batch_) + " planned");
  const int tiles = imaging::tiles_per_side(shape_.grid_size);
  plane_items_kernel<<<blocks_for(static_cast<long long>(max_segments(points_, shape_.grid_size)), threads_per_block),
                       threads_per_block, 0, stream>>>(sorted_keys_, segment_start_.get(), segments_.get(), first,
                                                       count, shape_.w_kernel.support, tiles * tiles, items_.get(),
                                                       item_count_.get(), point_planes_.get());
  SPIP_CUDA_CHECK(cudaGetLastError());
}

long long PointPreparation::point_planes(cudaStream_t stream) const {
  long long pairs = 0;
  SPIP_CUDA_CHECK(cudaMemcpyAsync(&pairs, point_planes_.get(), sizeof pairs, cudaMemcpyDeviceToHost, stream));
  SPIP_CUDA_CHECK(cudaStreamSynchronize(stream));
  return pairs;
}

PreparedView PointPreparation::view() const {
  return PreparedView{offset_u_.get(),  offset_v_.get(),   first_plane_.get(), w_weights_.get(), rotation_.get(),
                      footprint_.get(), sorted_points_,   items_.get(),       item_count_.get(), resident_blocks_};
}

}  // namespace spip::cuda::detail
