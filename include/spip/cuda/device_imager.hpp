#pragma once
// The GPU peer of imaging::ChannelImager and deconv::HostCleanBackend: one channel's
// dirty images, PSF and CLEAN primitives on one device, driven by the same major-cycle
// driver (deconv::clean_channel), with the same shared per-element math
// (gridding_math.hpp, clean_math.hpp, w_layout.hpp) and the same products. No CUDA
// types cross this header.
//
// Streams: channels are uploaded on an upload stream into one of two buffer sets
// (staging_area() and upload(), from pinned host memory) while the current channel is
// imaged on the compute stream; next() switches sets. The overlap is measured with CUDA events.
#include <complex>
#include <cstddef>
#include <memory>
#include <vector>

#include "spip/config/config.hpp"
#include "spip/deconv/major_cycle.hpp"
#include "spip/imaging/channel_view.hpp"
#include "spip/imaging/geometry.hpp"
#include "spip/imaging/row_group.hpp"
#include "spip/imaging/weighting.hpp"

namespace spip::cuda {

using imaging::ChannelView;

// Upload time on the upload stream, and how much of it ran while the compute stream
// was busy with the previous channel (event timings); the device time of each
// channel's weighting and point preparation (events); and the host's wall time in the
// CLEAN backend's steps that wait for the device: the first images (gridding, FFTs and
// the PSF's download), the noise estimate (the residual's download and its medians on
// the host) and the products' download.
struct TransferStats {
  int channels = 0;
  double upload_bytes = 0;
  double upload_ms = 0;
  double hidden_ms = 0;
  double compute_ms = 0;
  double weighting_ms = 0;
  double preparation_ms = 0;
  double invert_ms = 0;
  double noise_ms = 0;
  double fetch_ms = 0;
  // Of fetch_ms, in the images' staged copies alone (the link, and the host's copy out of
  // pinned memory), not in filling the channel's vectors.
  double images_download_ms = 0;
};

// One channel's imaging stage by stage on the device (event timings, each stage waited
// for): the point preparation (survey, sort, footprints and plane weights in sorted
// order), then one pass making the dirty IQUV and the PSF: the lane values, the work
// items, the subgrid gridding (with clearing the grids), the batched FFTs and the
// pass that applies the w-screens and the grid correction; and the prediction of a
// four-Stokes model (its planes filled, FFT'd and degridded). `point_planes` counts the
// (point, w-plane) pairs gridded: each one spreads support^2 cells in every lane.
struct KernelTimes {
  double prepare_ms = 0, values_ms = 0, items_ms = 0, grid_ms = 0, fft_ms = 0, finish_ms = 0;
  double degrid_ms = 0;
  long long visibilities = 0;  // Stokes visibilities: four per row
  long long point_planes = 0;
  int planes = 0, support = 0, lanes = 0, batches = 0;
};

class DeviceImager {
 public:
  // Device memory for images of `geometry` and channels of up to `max_visibilities`
  // (the coordinates, both buffer sets, grids, images, FFT work areas, the weighting's
  // density cells): the run's memory plan.
  static std::size_t device_bytes(const imaging::ImageGeometry& geometry, std::size_t max_visibilities,
                                  const imaging::WeightingScheme& weighting);

  // Throws spip::Error naming the memory needed and free if the plan does not fit.
  // Channels are staged with their natural weights: the imager makes the imaging
  // weights of `weighting` on the device. With a group (parallel.ranks_per_channel),
  // the rows are this rank's share: the weighting's densities, the weight sums, the
  // w-planes and every image are the group's (summed through the host), and the
  // leader alone runs the minor cycles.
  // `plane_batch` w-planes are gridded at once; 0: as many as 1 GiB of grids holds.
  DeviceImager(int device, const imaging::ImageGeometry& geometry, double accuracy, bool wstacking,
                std::size_t max_visibilities, const imaging::WeightingScheme& weighting,
                const imaging::RowGroup* group = nullptr, int plane_batch = 0);
  ~DeviceImager();
  DeviceImager(const DeviceImager&) = delete;
  DeviceImager& operator=(const DeviceImager&) = delete;

  // The pinned memory of the buffer set not in use, once its last upload is done, for
  // a channel of `rows` rows (at most max_visibilities). The caller writes the channel
  // there, its coordinates included (the host's only pass over its rows), and upload()
  // starts its upload; everything else is done on the device. One channel is staged at
  // a time (another replaces it): both may be called from another thread while the
  // current channel is cleaned, not while next() does.
  ChannelView staging_area(std::size_t rows);
  void upload(double freq_hz);
  // Makes the channel last staged current (waits for its upload) and prepares its
  // points on the device: imaging weights, off-grid rows zeroed, points sorted by tile with their footprints.
  void next();

  double weight_sum(int stokes) const;
  int num_w_planes() const;
  // The CLEAN backend on the current channel, for deconv::clean_channel(): its images
  // stay on the device until fetch(); before, only the PSF, the peaks and (for the
  // noise estimate) the residual are read back.
  std::unique_ptr<deconv::CleanBackend> clean_backend();

  TransferStats transfer_stats() const;
  // For the benchmark: the stages on the current channel (after its images are made).
  KernelTimes time_kernels();

 private:
  struct Impl;
  class DeviceBackend;
  std::unique_ptr<Impl> impl_;
};

}  // namespace spip::cuda
