#pragma once
// The GPU peer of imaging::ChannelImager and deconv::image_channel: one channel's
// dirty images, PSF and Cotton-Schwab CLEAN on one device, with the same stages, the
// same shared per-element math (gridding_math.hpp, clean_math.hpp, w_layout.hpp) and
// the same products. No CUDA types cross this header.
//
// Streams: channels are uploaded on an upload stream into one of two buffer sets
// (stage(), from pinned host memory) while the current channel is imaged on the
// compute stream; next() switches sets. The overlap is measured with CUDA events.
#include <array>
#include <complex>
#include <cstddef>
#include <memory>
#include <optional>
#include <vector>

#include "spip/config/config.hpp"
#include "spip/deconv/clean.hpp"
#include "spip/imaging/beam.hpp"
#include "spip/imaging/geometry.hpp"

namespace spip::cuda {

// One channel as the CPU imager takes it: coordinates in wavelengths [k][3], imaging
// weights [k][4] and Stokes visibilities [k][4].
struct ChannelInput {
  std::vector<double> uvw_lambda;
  std::vector<float> weights;
  std::vector<std::complex<float>> vis;
};

// Upload time on the upload stream, and how much of it ran while the compute stream
// was busy with the previous channel (event timings).
struct TransferStats {
  int channels = 0;
  double upload_bytes = 0;
  double upload_ms = 0;
  double hidden_ms = 0;
  double compute_ms = 0;
};

class ChannelImager {
 public:
  // Device memory for images of `geometry` and channels of up to `max_visibilities`
  // (both buffer sets, grids, images, FFT work areas): the run's memory plan.
  static std::size_t device_bytes(const imaging::ImageGeometry& geometry, std::size_t max_visibilities);

  // Throws spip::Error naming the memory needed and free if the plan does not fit.
  ChannelImager(int device, const imaging::ImageGeometry& geometry, double accuracy, bool wstacking,
                std::size_t max_visibilities);
  ~ChannelImager();
  ChannelImager(const ChannelImager&) = delete;
  ChannelImager& operator=(const ChannelImager&) = delete;

  // Copies a channel into pinned memory and starts its upload into the buffer set not
  // in use; everything else is done on the device. A channel without visibilities
  // serves psf() only. May be called from another thread while the calls below run.
  void stage(const ChannelInput& input);
  // Makes the channel last staged current (waits for its upload) and prepares its
  // points on the device: off-grid rows lose their weight, footprints, tile entries.
  void next();

  double weight_sum(int stokes) const;
  int num_w_planes() const;
  // As imaging::ChannelImager::psf and deconv::image_channel, for the current channel.
  void psf(float* image);
  deconv::ChannelImages image_channel(const CleanConfig& clean, const std::optional<imaging::Beam>& restoring_beam,
                                      std::vector<float> psf = {});

  TransferStats transfer_stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace spip::cuda
