#pragma once
// The Faraday products of a run, made after every rank has imaged its channels: each
// rank takes a slab of image rows, a group of rows at a time. For each group the ranks
// exchange their kept planes with one MPI all-to-all (every channel owner sends each
// slab owner those rows of its restored I, Q, U, V and residual Q, U), so that no
// product is read back; each rank then computes the moment images, runs RM synthesis,
// RM-CLEAN and the peak fit, and writes the rows straight into the products. Memory is
// bounded by the row group, not by the channels or the depths.
#include <cmath>
#include <complex>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "spip/beam/mosaic.hpp"
#include "spip/beam/primary_beam.hpp"
#include "spip/config/config.hpp"
#include "spip/faraday/rm_synthesis.hpp"
#include "spip/fits/fits_image.hpp"
#include "spip/job/product_registry.hpp"
#include "spip/ms/observing_time.hpp"
#include "spip/parallel/decomposition.hpp"
#include "spip/stages/channel_cubes.hpp"
#include "spip/stages/faraday_rows.hpp"

namespace spip {
class Stopwatch;
}

namespace spip::parallel {
class MpiContext;
}

namespace spip::pipeline {

class Log;
class StopRequest;

class FaradayStage {
 public:
  // The stage takes its rows from `rows`: the restored (or another imager's) I, Q, U, V
  // planes and, where there are some, the residual Q and U (from which each pixel's own
  // FDF noise comes); it writes the products the registry names. `base` is the image
  // header of the products (WCS, beam, date), `freq_hz` the channels', `group_bytes`
  // what one row group may hold; `gpu_device` >= 0 runs RM synthesis and RM-CLEAN on
  // that GPU, of whose memory a row group takes at most `gpu_bytes` (this rank's share).
  // With a `primary_beam`, every plane is divided by the beam's response in its channel
  // first (NaN below beam.limit), so that every product describes the true sky: about
  // `pointings`, the mosaic's effective response where there are several.
  FaradayStage(const Config& config, const ProductRegistry& products, const fits::ImageHeader& base,
               std::vector<double> freq_hz, std::vector<double> data_freq_hz, double group_bytes, int gpu_device, std::size_t gpu_bytes,
               std::unique_ptr<FaradayRows> rows, std::optional<beam::PrimaryBeam> primary_beam,
               beam::Pointings pointings, std::vector<ms::ObservingTime> pointing_times);

  // Collective: every rank calls it once after its last channel's planes are in the
  // cubes, with `channel_noise` of its channels in increasing order: each channel's
  // polarised noise (MAD sigma of its Q, U residuals), or a negative value for a
  // channel with nothing imaged (zero weight in the moments and in RM synthesis).
  // Returns the paths of the products (on rank 0). Asked to stop, every rank leaves
  // after its current row group with the products still partial.
  std::vector<std::string> finish(const std::vector<double>& channel_noise, const parallel::MpiContext& mpi,
                                  const Log& log, StopRequest& stop);

  // Faraday depths of the products finish() made; 0 before, or without RM synthesis.
  int depths() const { return depths_; }
  // The log's line for finish()'s `seconds`: what ran (RM synthesis only with depths).
  std::string done_text(double seconds) const;
  // What this rank's finish() moved while it made the products: bytes sent to other
  // ranks over MPI, and bytes of product files read back (measured by the fits room).
  double mpi_bytes() const { return rows_->mpi_bytes(); }
  // Seconds this rank spent in the exchange: gathering its kept rows, the all-to-all
  // (waiting for the slowest rank included) and unpacking.
  double exchange_seconds() const { return rows_->exchange_seconds(); }
  double product_bytes_read() const { return product_bytes_read_; }

  // Rows [first, last) of an image of `ny` rows that `rank` of `ranks` takes in this stage.
  static std::pair<int, int> slab_rows(int rank, int ranks, int ny);

  // What a row group holds per pixel, for `num_chan` channels and `num_phi` depths.
  static double bytes_per_pixel(int num_chan, int num_phi);
  // Rows of a row group of an image `nx` wide: as many as `group_bytes` of host memory
  // hold, at least one and at most the slab's; with `gpu_bytes` > 0 also no more than
  // the device's slab (cuda::slab_bytes) fits in it.
  static int group_rows(double group_bytes, int num_chan, int num_phi, int nx, int slab_rows, std::size_t gpu_bytes);
  // The Faraday depth axis a run of these channels would use, all channels weighted
  // alike: what planning and the disk estimate need before any channel is imaged.
  static faraday::FaradayAxis planned_axis(const std::vector<double>& freq_hz, const FaradayConfig& config);
  // Warnings on that axis, for planning to give before any channel is imaged: a range
  // beyond what the channels' widths leave undepolarised, and a step that samples the
  // RMSF too coarsely for RM-CLEAN. `weight`: 1 for a channel with data, 0 for a gap;
  // empty: every channel counts. Empty where there is nothing to warn of.
  static std::vector<std::string> axis_warnings(const std::vector<double>& freq_hz, const FaradayConfig& config,
                                                std::vector<double> weight = {});

 private:
  struct Synthesis;
  std::optional<Synthesis> plan_synthesis(const std::vector<double>& weight, const std::vector<double>& noise,
                                          const Log& log) const;
  void create_products(const Synthesis* synthesis) const;
  void synthesise_slab(const std::vector<double>& weight, const Synthesis* synthesis, const parallel::MpiContext& mpi,
                       const Log& log, StopRequest& stop, const Stopwatch& watch);
  std::vector<std::string> commit_products(const Synthesis* synthesis) const;
  std::vector<std::string> write_rmsf(const Synthesis& synthesis) const;
  double channel_weight(double noise) const;
  void correct_for_beam(RowBatch& group, const std::vector<double>& weight) const;
  void blank_beyond_horizon(RowBatch& group) const;
  void blank_unmeasured(RowBatch& group, const std::vector<double>& weight) const;
  void process_rows(const RowBatch& group, const std::vector<double>& weight, const Synthesis* synthesis,
                    long long& iterations) const;
  std::vector<float> write_moment_rows(int quantity, int first_row, const std::vector<float>& planes,
                                       const std::vector<double>& weight) const;
  using Flattening = faraday::Flattening;
  std::vector<float> pixel_noise(const Synthesis& synthesis, const RowBatch& group, const std::vector<float>& expected,
                                 const Flattening& flattening) const;
  std::vector<float> noise_floor(const Synthesis& synthesis, const RowBatch& group, const std::vector<double>& weight,
                                 const Flattening& flattening) const;
  std::vector<float> flattened_noise(const Synthesis& synthesis, const RowBatch& group,
                                     const std::vector<double>& weight, const Flattening& flattening) const;
  std::vector<float> flatten_spectra(const Synthesis& synthesis, const std::vector<float>& stokes_i_rows,
                                     const std::vector<float>& mean_i, const std::vector<double>& weight,
                                     const std::vector<float>& sigmas, std::vector<std::complex<float>>& p,
                                     std::vector<float>& alpha) const;
  std::vector<float> sigma_add_rows(const Synthesis& synthesis, const RowBatch& group,
                                    const std::vector<std::complex<float>>& p, const std::vector<float>& maps,
                                    const std::vector<float>& alpha, const std::vector<double>& weight,
                                    const std::vector<float>& sigmas, const std::vector<float>& floor) const;

  const Config& config_;
  const ProductRegistry& products_;
  fits::ImageHeader base_;
  std::vector<double> freq_hz_;       // the channels' on the FITS axis: the primary beam's, channelwidth's
  std::vector<double> data_freq_hz_;  // where their data lie (ms::Band::data_freq_hz): RM synthesis's
  double group_bytes_;
  int gpu_device_;            // -1: the CPU backend
  std::size_t gpu_bytes_;
  std::unique_ptr<FaradayRows> rows_;
  std::optional<beam::PrimaryBeam> beam_;
  beam::Pointings pointings_;  // where the beams point, and in a mosaic their weights per channel
  std::vector<ms::ObservingTime> pointing_times_;  // when each was observed, for the catalogue; empty: not known
  beam::ImageGrid grid_;       // the image (its pointing: the first)
  int depths_ = 0;
  double product_bytes_read_ = 0;
  const std::unique_ptr<CubeWriter> writer_ = std::make_unique<CubeWriter>();  // the rows this rank writes
};

}  // namespace spip::pipeline
