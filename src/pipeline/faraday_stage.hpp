#pragma once
// The Faraday products of a run: moments from per-pixel power sums (one reduction),
// and RM synthesis, RM-CLEAN and peak maps on pixel slabs after one all-to-all.
#include <complex>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "spip/config/config.hpp"
#include "spip/cuda/moments.hpp"
#include "spip/faraday/moments.hpp"
#include "spip/fits/fits_image.hpp"
#include "spip/parallel/decomposition.hpp"

namespace spip::parallel {
class MpiContext;
}

namespace spip::pipeline {

class Log;

class FaradayStage {
 public:
  // `base` is the image header of the channel cubes (WCS, beam, date); `blocks` the
  // channel blocks of all ranks over the imaged range; `gpu_device` >= 0 accumulates
  // the moments and runs RM synthesis and RM-CLEAN on that GPU.
  FaradayStage(const Config& config, const fits::ImageHeader& base, std::vector<double> freq_hz,
               std::vector<parallel::ChannelBlock> blocks, int rank, int gpu_device);

  // One of this rank's channels, in increasing order: restored planes [4][N*N] and the
  // channel's polarised noise (MAD sigma of its Q, U residuals).
  void add_channel(const std::vector<float>& restored, double noise);
  // A channel with nothing imaged: no moments, zero weight in RM synthesis.
  void add_blank_channel();

  // Collective: every rank calls it once after its last channel. Returns the paths of
  // the products rank 0 wrote.
  std::vector<std::string> finish(const parallel::MpiContext& mpi, const Log& log);

 private:
  std::string path(const std::string& name) const;
  std::vector<std::string> write_moments(const parallel::MpiContext& mpi) const;
  double channel_weight(double noise) const;

  const Config& config_;
  fits::ImageHeader base_;
  std::vector<double> freq_hz_;
  std::vector<parallel::ChannelBlock> blocks_;
  int rank_;
  int gpu_device_;                         // -1: the CPU backend
  std::size_t pixels_;
  std::optional<faraday::StokesPowerSums> host_sums_;     // one of these two
  std::unique_ptr<cuda::StokesPowerSums> device_sums_;
  std::vector<std::complex<float>> qu_;    // [my channel][pixel] Q + iU
  std::vector<double> noise_;              // per my channel
};

}  // namespace spip::pipeline
