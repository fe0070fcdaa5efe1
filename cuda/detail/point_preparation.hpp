#pragma once
// A channel's points prepared on the device from its raw coordinates and weights, for
// the output-stationary gridder and degridder (imaging/tile_plan.hpp has the layout):
// rows off the grid get zero weight, the weight sums and max |w| come from a
// deterministic block reduction, each visibility and its Hermitian mirror get their
// footprint, rotation and first w-plane once, and their (point, tile) entries are
// radix-sorted by (tile, first plane) and cut into occupied-tile segments. The host
// only waits once per channel, for the entry count that sizes the sort.
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
  long long entries;
};

class PointPreparation {
 public:
  // For channels of up to `max_rows` rows gridded with `shape`'s kernels and grid, on
  // the current device.
  PointPreparation(std::size_t max_rows, const GridShape& shape);

  // Device bytes per row of a channel and for the whole, as the memory plan counts them.
  static std::size_t bytes_per_row(int support, int grid_size);
  static std::size_t fixed_bytes(int grid_size);

  // Prepares rows [0, rows) of uvw_m [k][3] (metres; times `scale`, wavelengths) and
  // weights [k][4], zeroing the weights of rows off the grid in place, on `stream`;
  // returns when the summary is in. With a group, the rows are this rank's share: the
  // weight sums and the w-planes are the whole group's (one more wait for them).
  const ChannelSummary& prepare(const double* uvw_m, double scale, float* weights, long long rows,
                                cudaStream_t stream, const imaging::RowGroup* group);

  // Builds plane p's work items (device count at item_count()) on `stream`.
  void build_plane_items(int p, cudaStream_t stream);
  // The prepared channel, for the gridding kernels.
  PreparedView view() const;

 private:
  GridShape shape_;
  unsigned resident_blocks_;
  std::size_t max_points_, max_entries_, max_segments_, max_items_;
  long long segments_capacity_ = 0;
  DeviceArray<unsigned char> inside_;
  DeviceArray<double> partials_;
  DeviceArray<ChannelSummary> summary_;
  PinnedBuffer host_summary_;
  DeviceArray<int> first_u_, first_v_, first_plane_, counts_;
  DeviceArray<long long> offsets_;
  DeviceArray<double> w_;
  DeviceArray<dcomplex> rotation_;
  DeviceArray<float> footprint_;
  DeviceArray<std::uint64_t> keys_, keys_alt_;
  DeviceArray<std::uint32_t> entry_points_, entry_points_alt_;
  const std::uint64_t* sorted_keys_ = nullptr;
  const std::uint32_t* sorted_points_ = nullptr;
  DeviceArray<long long> segment_start_;
  DeviceArray<int> segments_;
  DeviceArray<WorkItem> items_;
  DeviceArray<int> item_count_;
  DeviceArray<char> scratch_;
};

}  // namespace spip::cuda::detail
