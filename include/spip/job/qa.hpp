#pragma once
// What a run records of each channel, each rank and itself, as typed records that
// qa.json, the progress markers and the gather to rank 0 all serialise through
// nlohmann-json. NaN (a number that does not apply) is null in JSON, and so is Inf,
// which comes back as NaN.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "spip/common/celestial.hpp"
#include "spip/imaging/beam.hpp"

namespace spip::pipeline {

// The records' layout; progress markers of another version are not resumed from.
inline constexpr int qa_version = 7;

struct ChannelQa {
  int channel = 0;
  double freq_hz = 0;       // the FITS axis's: a binned channel's centre
  double data_freq_hz = 0;  // where RM synthesis takes it: its data's mean frequency
  int rank = 0;
  std::string blank;             // why the channel's planes are blank (NaN); empty: imaged
  double visibilities = 0, flagged_fraction = 0;
  double nonfinite_samples = 0;  // NaN or Inf correlation samples, treated as flagged
  double weight_sum = 0, max_uv_wavelengths = 0;
  imaging::Beam beam;            // the channel's own restoring beam
  bool beam_theoretical = false; // the theoretical beam stood in for a fit that was not a beam
  int iterations = 0, major_cycles = 0;
  std::vector<double> scales_px;      // multiscale CLEAN's scales; empty for point CLEAN or none run
  std::vector<int> scale_iterations;  // the iterations at each of them
  double search_noise_jy = 0, clean_threshold_jy = 0;  // NaN where they do not apply
  std::optional<bool> threshold_reached;               // none without CLEAN or a threshold
  std::string clean_stop;  // deconv::clean_stop_name(); empty (null) without CLEAN
  double psf_sidelobe = 0; // a degenerate PSF's sidelobe relative to its peak (deconv::degenerate_sidelobe); NaN: none
  double residual_sigma_jy = 0, residual_peak_jy = 0, restored_peak_i_jy = 0, dynamic_range = 0;
  double read_s = 0, image_s = 0;
  // A mosaic's: each pointing's weight 1 / sigma^2 (1/Jy^2; 0: no data in the channel).
  std::vector<double> mosaic_weights;
};
void to_json(nlohmann::ordered_json& out, const ChannelQa& qa);
void from_json(const nlohmann::ordered_json& in, ChannelQa& qa);

// A channel's progress marker: its QA and what the later stages need of it.
struct ChannelMarker {
  ChannelQa qa;
  double polarised_noise = -1;  // < 0: blanked
};
void to_json(nlohmann::ordered_json& out, const ChannelMarker& marker);
void from_json(const nlohmann::ordered_json& in, ChannelMarker& marker);

// One rank's block and stage times in this run.
struct RankQa {
  int rank = 0, channel_begin = 0, channel_end = 0;
  double read_s = 0, image_s = 0, restore_s = 0;
  int channels_imaged = 0;  // in this run: a resumed run skips finished ones
  // Bytes: the Faraday stage's sent to other ranks over MPI and read back from product
  // files (none), kept planes read back from parallel.scratch, and planes a resumed run
  // read from the partial cubes for the channels an earlier run finished.
  double faraday_mpi_bytes = 0, faraday_product_bytes_read = 0, scratch_bytes_read = 0, resume_bytes_read = 0;
  double faraday_exchange_s = 0;  // the Faraday stage's time in the exchange
};
void to_json(nlohmann::ordered_json& out, const RankQa& qa);
void from_json(const nlohmann::ordered_json& in, RankQa& qa);

// The run's size and the wall times that are not per channel or per rank, in seconds:
// what `spip --plan --plan-rates` reads back as the rates of a similar job.
struct RunQa {
  int ranks = 0, channels = 0, faraday_depths = 0;
  long long image_pixels = 0;
  int grid_size = 0;
  double setup_s = 0;    // FFT plans and grid corrections (rank 0)
  double create_s = 0;   // rank 0 creating the channel cubes
  double faraday_s = 0;  // the Faraday stage
  double total_s = 0;
};
void to_json(nlohmann::ordered_json& out, const RunQa& qa);
void from_json(const nlohmann::ordered_json& in, RunQa& qa);

// PREFIX-qa.json's text: the run, the common restoring beam, the pointings ([RA, Dec]
// in degrees; several in a mosaic), one line per channel and per rank.
std::string qa_json_text(const RunQa& run, const imaging::Beam& restoring_beam, const std::vector<Direction>& pointings,
                         const std::vector<ChannelQa>& channels, const std::vector<RankQa>& ranks);

}  // namespace spip::pipeline
