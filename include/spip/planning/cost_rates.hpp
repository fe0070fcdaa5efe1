#pragma once
// What a run costs per rank, channel and pixel: timed on this machine, or read from a
// previous run's qa.json (the more accurate, for a job like that one). The time check
// of planning and the --plan report both use these rates.
#include <string>

#include "spip/config/config.hpp"
#include "spip/job/plan.hpp"

namespace spip::pipeline {

// Major cycles per channel where no previous run tells: measured 4.0 on both the
// sample and the realistic set of bench/run-imaging-bench.sh.
constexpr double default_major_cycles = 4;

struct CostRates {
  double setup_s = 0;          // FFT plans and grid corrections, once per rank
  double image_channel_s = 0;    // per channel: PSF, dirty images, CLEAN
  double restore_channel_s = 0;  // per channel, with CLEAN and a common beam: restored from its planes on disk
  double create_s = 0;         // rank 0 creating the products, which every rank waits for
  double faraday_pixel_s = 0;  // the Faraday stage, per pixel of a rank's slab
  std::string from;            // where the rates come from, for the plan's reader
};

// Timed on a synthetic channel with the inputs' own UVW (the MS's UVW column, no
// visibilities) holding a 1 Jy point source: a dirty image with its PSF, and one major
// cycle of the configured CLEAN, counted default_major_cycles times; RM synthesis and
// RM-CLEAN of noise spectra on the planned depths; and the output file system's write
// rate for the products and the restoring.
CostRates measure_rates(const Config& config, const Plan& plan);
// From the "run" timings and the per-rank and per-channel times of a qa.json. The
// previous run may have had fewer channels (a few, to time a large job): its product
// creation is scaled by the channels, and its Faraday stage gets the difference that
// RM synthesis of noise spectra, timed here, shows between its channels and the plan's.
CostRates rates_from_qa(const std::string& path, const Config& config, const Plan& plan);

// Wall time of a rank with `channels` channels to image and a Faraday slab of `pixels`.
double rank_seconds(const CostRates& rates, int channels, double pixels);

}  // namespace spip::pipeline
