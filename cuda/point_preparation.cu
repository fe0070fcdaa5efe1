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
constexpr int sums = 5;  // the four weight sums and max |w|

// The block's weight sums and largest |w| into values[.][0], by a fixed tree.
__device__ void reduce_block(const double* mine, double (*values)[threads_per_block]) {
  for (int s = 0; s < sums; ++s) values[s][threadIdx.x] = mine[s];
  __syncthreads();
  for (int half = threads_per_block / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) {
      for (int s = 0; s < 4; ++s) values[s][threadIdx.x] += values[s][threadIdx.x + half];
      values[4][threadIdx.x] = fmax(values[4][threadIdx.x], values[4][threadIdx.x + half]);
    }
    __syncthreads();
  }
}

// Per row: on the grid or not (weights zeroed where not), and per block the sums of
// the weights and the largest |w| of rows on the grid, by a fixed tree: the same
// result for the same channel on every run.
__global__ void survey_kernel(const double* uvw_m, double scale, float* weights, long long rows, double uv_cell,
                              int grid_size, unsigned char* inside, double* partials) {
  __shared__ double values[sums][threads_per_block];
  const long long k = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  double mine[sums] = {0, 0, 0, 0, 0};
  if (k < rows) {
    const bool on = imaging::on_grid(uvw_m[3 * k] * scale, uvw_m[3 * k + 1] * scale, uv_cell, grid_size);
    inside[k] = on;
    for (int s = 0; s < 4; ++s) {
      if (!on) weights[4 * k + s] = 0.0f;
      mine[s] = weights[4 * k + s];
    }
    mine[4] = on ? fabs(uvw_m[3 * k + 2] * scale) : 0.0;
  }
  reduce_block(mine, values);
  if (threadIdx.x < sums) partials[static_cast<long long>(blockIdx.x) * sums + threadIdx.x] = values[threadIdx.x][0];
}

// One block: the blocks' partials in a fixed order, then the w-planes they need.
__global__ void summary_kernel(const double* partials, int blocks, GridShape shape, ChannelSummary* summary) {
  __shared__ double values[sums][threads_per_block];
  double mine[sums] = {0, 0, 0, 0, 0};
  for (int b = threadIdx.x; b < blocks; b += blockDim.x) {
    for (int s = 0; s < 4; ++s) mine[s] += partials[b * sums + s];
    mine[4] = fmax(mine[4], partials[b * sums + 4]);
  }
  reduce_block(mine, values);
  if (threadIdx.x != 0) return;
  for (int s = 0; s < 4; ++s) summary->weight_sum[s] = values[s][0];
  summary->w_reach = values[4][0];
  const imaging::WPlanes planes =
      shape.wstacking ? imaging::w_planes(values[4][0], shape.w_kernel.support, shape.dw) : imaging::WPlanes{0.0, 1};
  summary->w_first = planes.w_first;
  summary->planes = planes.planes;
}

// Point 2k + m (m = 1: the mirror, coordinates negated) of row k: its footprint,
// rotation and first plane, and how many tile entries it makes (none off the grid).
// Coordinates in wavelengths are uvw_m * scale, the product the CPU imager takes.
__global__ void points_kernel(const double* uvw_m, double scale, const unsigned char* inside, long long rows, GridShape shape,
                              const ChannelSummary* summary, int* first_u, int* first_v,
                              int* first_plane, double* w_out, dcomplex* rotation, float* footprint, int* counts) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= 2 * rows) return;
  const long long k = i / 2;
  if (!inside[k]) {
    counts[i] = 0;
    return;
  }
  const double sign = i % 2 ? -1.0 : 1.0;
  const double u = sign * (uvw_m[3 * k] * scale), v = sign * (uvw_m[3 * k + 1] * scale),
               w = sign * (uvw_m[3 * k + 2] * scale);
  const int n = shape.grid_size, support = shape.kernel.support;
  const double gu = imaging::grid_position_u(u, shape.uv_cell, n), gv = imaging::grid_position_v(v, shape.uv_cell, n);
  const int fu = imaging::footprint_first(gu, support), fv = imaging::footprint_first(gv, support);
  float* values = footprint + i * 2 * support;
  for (int c = 0; c < support; ++c) {
    values[c] = imaging::footprint_value(shape.kernel, fu, c, gu);
    values[support + c] = imaging::footprint_value(shape.kernel, fv, c, gv);
  }
  first_u[i] = fu;
  first_v[i] = fv;
  w_out[i] = w;
  first_plane[i] = shape.wstacking ? imaging::first_w_plane(w, imaging::WPlanes{summary->w_first, summary->planes},
                                                            shape.dw, shape.w_kernel.support)
                                   : 0;
  rotation[i] = shape.wstacking ? unit_phasor(imaging::w_rotation_angle(w, shape.x0)) : dcomplex(1.0);
  counts[i] = imaging::axis_tiles(fu, support, n).count * imaging::axis_tiles(fv, support, n).count;
}

__global__ void entry_total_kernel(const int* counts, const long long* offsets, long long points,
                                   ChannelSummary* summary) {
  summary->entries = points > 0 ? offsets[points - 1] + counts[points - 1] : 0;
}

__global__ void entries_kernel(const int* first_u, const int* first_v, const int* first_plane, const int* counts,
                               const long long* offsets, long long points, int support, int grid_size,
                               std::uint64_t* keys, std::uint32_t* entry_points) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= points || counts[i] == 0) return;
  std::uint64_t point_keys[9];
  const int count = imaging::point_entry_keys(first_u[i], first_v[i], first_plane[i], support, grid_size, point_keys);
  for (int e = 0; e < count; ++e) {
    keys[offsets[i] + e] = point_keys[e];
    entry_points[offsets[i] + e] = static_cast<std::uint32_t>(i);
  }
}

// 1 where a sorted entry starts its tile's segment.
__global__ void segment_flags_kernel(const std::uint64_t* keys, long long entries, int* flags) {
  const long long e = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e < entries) flags[e] = e == 0 || imaging::key_tile(keys[e]) != imaging::key_tile(keys[e - 1]);
}

// From the inclusive scan of the flags: each segment's first entry, then the end.
__global__ void segment_starts_kernel(const int* flags, const int* index, long long entries, long long* segment_start,
                                      int* segments) {
  const long long e = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= entries) return;
  if (flags[e]) segment_start[index[e] - 1] = e;
  if (e == entries - 1) {
    segment_start[index[e]] = entries;
    *segments = index[e];
  }
}

// A thread per occupied tile: its entries that reach plane p, in items of at most
// max_chunk_entries.
__global__ void plane_items_kernel(const std::uint64_t* keys, const long long* segment_start, const int* segments,
                                   int p, int w_support, WorkItem* items, int* item_count) {
  const long long s = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (s >= *segments) return;
  const imaging::EntryRange range = imaging::plane_entries(keys, segment_start[s], segment_start[s + 1], p, w_support);
  const long long chunks = imaging::chunks_of(range);
  if (chunks == 0) return;
  const int tile = imaging::key_tile(keys[range.lo]);
  int at = atomicAdd(item_count, static_cast<int>(chunks));
  for (long long lo = range.lo; lo < range.hi; lo += imaging::max_chunk_entries)
    items[at++] = WorkItem{lo, min(range.hi, lo + imaging::max_chunk_entries), tile, chunks > 1};
}

// A persistent grid of blocks takes a plane's items in turn: the item count is only on
// the device, and every block that runs has an item with points.
unsigned resident_blocks() {
  int device = 0, processors = 0;
  SPIP_CUDA_CHECK(cudaGetDevice(&device));
  SPIP_CUDA_CHECK(cudaDeviceGetAttribute(&processors, cudaDevAttrMultiProcessorCount, device));
  return static_cast<unsigned>(8 * processors);
}

std::size_t max_entries_per_point(const GridShape& shape) {
  const int t = imaging::max_axis_tiles(shape.kernel.support, shape.grid_size);
  return static_cast<std::size_t>(t) * t;
}

std::size_t max_segments(std::size_t entries, int grid_size) {
  const std::size_t tiles = imaging::tiles_per_side(grid_size);
  return std::min(entries, tiles * tiles);
}

}  // namespace

PointPreparation::PointPreparation(std::size_t max_rows, const GridShape& shape)
    : shape_(shape), resident_blocks_(resident_blocks()), max_points_(2 * max_rows),
      max_entries_(2 * max_rows * max_entries_per_point(shape)),
      max_segments_(max_segments(max_entries_, shape.grid_size)),
      max_items_(max_segments_ + max_entries_ / imaging::max_chunk_entries + 1),
      inside_(max_rows), partials_(blocks_for(static_cast<long long>(max_rows), threads_per_block) * sums + sums),
      summary_(1), host_summary_(sizeof(ChannelSummary)), first_u_(max_points_), first_v_(max_points_),
      first_plane_(max_points_), counts_(max_points_), offsets_(max_points_), w_(max_points_),
      rotation_(max_points_), footprint_(max_points_ * 2 * shape.kernel.support), keys_(max_entries_),
      keys_alt_(max_entries_), entry_points_(max_entries_), entry_points_alt_(max_entries_),
      segment_start_(max_segments_ + 1), segments_(1), items_(max_items_), item_count_(1) {
  // One scratch area for the scans and the sort, the largest any of them asks for.
  std::size_t scan_bytes = 0, flags_bytes = 0, sort_bytes = 0;
  const int max_points = static_cast<int>(max_points_), max_entries = static_cast<int>(max_entries_);
  SPIP_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, counts_.get(), offsets_.get(), max_points));
  int* flags = reinterpret_cast<int*>(keys_alt_.get());
  SPIP_CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, flags_bytes, flags, flags + max_entries_, max_entries));
  cub::DoubleBuffer<std::uint64_t> keys(keys_.get(), keys_alt_.get());
  cub::DoubleBuffer<std::uint32_t> values(entry_points_.get(), entry_points_alt_.get());
  SPIP_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, keys, values, max_entries));
  scratch_ = DeviceArray<char>(std::max({scan_bytes, flags_bytes, sort_bytes, std::size_t{1}}));
}

std::size_t PointPreparation::bytes_per_row(int support, int grid_size) {
  const int t = imaging::max_axis_tiles(support, grid_size);
  const std::size_t per_point = 3 * sizeof(int) + sizeof(int) + sizeof(long long) + sizeof(double) +
                                sizeof(dcomplex) + 2 * support * sizeof(float);
  const std::size_t per_entry = 2 * (sizeof(std::uint64_t) + sizeof(std::uint32_t));  // the sort's two buffers
  const std::size_t entries = 2 * static_cast<std::size_t>(t) * t;
  return 1 + 2 * per_point + entries * per_entry + 1;  // + 1: the block partials and the items of crowded tiles
}

std::size_t PointPreparation::fixed_bytes(int grid_size) {
  const std::size_t tiles = imaging::tiles_per_side(grid_size);
  return tiles * tiles * (sizeof(long long) + sizeof(WorkItem)) + (16u << 20);  // and the CUB scratch, about
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
  if (points > 0) {
    points_kernel<<<blocks_for(points, threads_per_block), threads_per_block, 0, stream>>>(
        uvw_m, scale, inside_.get(), rows, shape_, summary_.get(), first_u_.get(), first_v_.get(),
        first_plane_.get(), w_.get(), rotation_.get(), footprint_.get(), counts_.get());
    std::size_t bytes = scratch_.bytes();
    SPIP_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(scratch_.get(), bytes, counts_.get(), offsets_.get(),
                                                  static_cast<int>(points), stream));
  }
  entry_total_kernel<<<1, 1, 0, stream>>>(counts_.get(), offsets_.get(), points, summary_.get());
  SPIP_CUDA_CHECK(cudaGetLastError());
  // The one wait (two with a group): the sort and the scans below are sized by the entry count.
  SPIP_CUDA_CHECK(cudaMemcpyAsync(&host, summary_.get(), sizeof host, cudaMemcpyDeviceToHost, stream));
  SPIP_CUDA_CHECK(cudaStreamSynchronize(stream));
  const long long entries = host.entries;
  segments_capacity_ = static_cast<long long>(max_segments(static_cast<std::size_t>(entries), shape_.grid_size));
  SPIP_CUDA_CHECK(cudaMemsetAsync(segments_.get(), 0, sizeof(int), stream));
  if (entries == 0) return host;
  if (host.planes > imaging::max_key_planes)
    SPIP_THROW(Error, "GPU imager: a channel needs " + std::to_string(host.planes) + " w-planes, more than the " +
                          std::to_string(imaging::max_key_planes) +
                          " its tile keys hold; use the CPU backend (parallel.device = cpu) or a smaller field");

  entries_kernel<<<blocks_for(points, threads_per_block), threads_per_block, 0, stream>>>(
      first_u_.get(), first_v_.get(), first_plane_.get(), counts_.get(), offsets_.get(), points,
      shape_.kernel.support, shape_.grid_size, keys_.get(), entry_points_.get());
  cub::DoubleBuffer<std::uint64_t> keys(keys_.get(), keys_alt_.get());
  cub::DoubleBuffer<std::uint32_t> values(entry_points_.get(), entry_points_alt_.get());
  std::size_t bytes = scratch_.bytes();
  SPIP_CUDA_CHECK(
      cub::DeviceRadixSort::SortPairs(scratch_.get(), bytes, keys, values, static_cast<int>(entries), 0,
                                      imaging::key_bits(shape_.grid_size), stream));
  sorted_keys_ = keys.Current();
  sorted_points_ = values.Current();
  // The flags and their scan live in the sort's other key buffer, free after the sort.
  int* flags = reinterpret_cast<int*>(keys.Alternate());
  int* index = flags + entries;
  const unsigned entry_blocks = blocks_for(entries, threads_per_block);
  segment_flags_kernel<<<entry_blocks, threads_per_block, 0, stream>>>(sorted_keys_, entries, flags);
  bytes = scratch_.bytes();
  SPIP_CUDA_CHECK(cub::DeviceScan::InclusiveSum(scratch_.get(), bytes, flags, index, static_cast<int>(entries), stream));
  segment_starts_kernel<<<entry_blocks, threads_per_block, 0, stream>>>(flags, index, entries, segment_start_.get(),
                                                                        segments_.get());
  SPIP_CUDA_CHECK(cudaGetLastError());
  return host;
}

void PointPreparation::build_plane_items(int p, cudaStream_t stream) {
  SPIP_CUDA_CHECK(cudaMemsetAsync(item_count_.get(), 0, sizeof(int), stream));
  if (segments_capacity_ == 0) return;
  plane_items_kernel<<<blocks_for(segments_capacity_, threads_per_block), threads_per_block, 0, stream>>>(
      sorted_keys_, segment_start_.get(), segments_.get(), p, shape_.w_kernel.support, items_.get(),
      item_count_.get());
  SPIP_CUDA_CHECK(cudaGetLastError());
}

PreparedView PointPreparation::view() const {
  return PreparedView{first_u_.get(),  first_v_.get(), w_.get(),          rotation_.get(),
                      footprint_.get(), sorted_points_, items_.get(), item_count_.get(), resident_blocks_};
}

}  // namespace spip::cuda::detail
