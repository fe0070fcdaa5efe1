#pragma once
// A channel's points prepared on the device from its raw coordinates and weights, for
// the subgrid gridder and degridder (imaging/tile_plan.hpp has the layout): rows off
// the grid get zero weight, the weight sums and max |w| come from a deterministic
// block reduction, each visibility and its Hermitian mirror are radix-sorted by (home
// tile, first w-plane), and then, once per channel and in sorted order, get their grid
// cells, footprint, w-plane weights and rotation in float. Sorted tile segments are cut
// into work items of bounded size per w-plane. The host waits once per channel, for
// the summary (two waits with a group).
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda_check.hpp"
#include "gridding_kernels.hpp"
#include "spip/imaging/row_group.hpp"

namespace spip::cuda::detail {

// What the host needs of a prepared channel (kept in pinned memory).
struct ChannelSummary {
  double weight_sum[4];
  double w_reach;  // max |w| on the grid, wavelengths
  double w_first;
  int planes;
  long long entries;  // points on the grid: twice the rows on it
};

class PointPreparation {
 public:
  // For channels of up to `max_rows` rows gridded with `shape`'s kernels and grid, on
  // the current device, in batches of up to `plane_batch` w-planes. `shape`'s w_first
  // is not used: each channel's planes are its own (ChannelSummary).
  PointPreparation(std::size_t max_rows, const GridShape& shape, int plane_batch);

  // Device bytes per row of a channel and for the whole, as the memory plan counts them.
  static std::size_t bytes_per_row(int support, int w_support);
  static std::size_t fixed_bytes(int grid_size, int plane_batch);

  // Prepares rows [0, rows) of uvw_m [k][3] (metres; times `scale`, wavelengths) and
  // weights [k][4], zeroing the weights of rows off the grid in place, on `stream`;
  // returns when the summary is in. With a group, the rows are this rank's share: the
  // weight sums and the w-planes are the whole group's (one more wait for them).
  const ChannelSummary& prepare(const double* uvw_m, double scale, float* weights, long long rows,
                                cudaStream_t stream, const imaging::RowGroup* group);

  // Builds the work items of planes [first, first + count) on `stream`; their count and
  // the (point, plane) pairs they hold are on the device (view()).
  void build_plane_items(int first, int count, cudaStream_t stream);
  // The (point, plane) pairs of the last items built, for the benchmark (waits).
  long long point_planes(cudaStream_t stream) const;
  // The prepared channel, for the gridding kernels.
  PreparedView view() const;

 private:
  GridShape shape_;
  int plane_batch_;
  unsigned resident_blocks_;
  std::size_t max_points_, max_segments_, max_items_;
  long long points_ = 0, entries_ = 0;
  DeviceArray<unsigned char> inside_;
  DeviceArray<double> partials_;
  DeviceArray<ChannelSummary> summary_;
  PinnedBuffer host_summary_;
  DeviceArray<int> offset_u_, offset_v_, first_plane_;
  DeviceArray<float2> rotation_;
  DeviceArray<float> footprint_, w_weights_;
  DeviceArray<std::uint64_t> keys_, keys_alt_;
  DeviceArray<std::uint32_t> order_, order_alt_;
  const std::uint64_t* sorted_keys_ = nullptr;
  const std::uint32_t* sorted_points_ = nullptr;
  DeviceArray<long long> segment_start_;
  DeviceArray<int> segments_;
  DeviceArray<WorkItem> items_;
  DeviceArray<int> item_count_;
  DeviceArray<long long> point_planes_;
  DeviceArray<char> scratch_;
};

}  // namespace spip::cuda::detail
