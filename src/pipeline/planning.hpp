#pragma once
// Everything decided before a visibility is read: the inputs, the channel blocks of
// the ranks, the backend, and what the run will hold, write and take, checked against
// what it may use. `spip --plan` prints the same figures for sizing a job.
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "budget.hpp"
#include "run_claim.hpp"
#include "spip/config/config.hpp"
#include "spip/imaging/geometry.hpp"
#include "spip/imaging/weighting.hpp"
#include "spip/ms/ionosphere.hpp"
#include "spip/ms/ms_reader.hpp"
#include "spip/parallel/decomposition.hpp"

namespace spip::parallel {
class MpiContext;
}

namespace spip::pipeline {

class Log;

struct Plan {
  std::vector<ms::MsReader> readers;
  std::optional<ms::IonosphereTable> ionosphere; // faraday.ionosphere, undone as each block is read
  int chan_begin = 0, chan_end = 0;              // imaged range of the band
  std::vector<double> freq_hz;                   // of the imaged channels
  std::array<bool, ms::num_stokes> stokes{};     // which of I, Q, U, V some input's correlations determine
  int num_phi = 0;                               // Faraday depths (0: fewer than two channels, or not polarised)
  std::vector<parallel::ChannelBlock> blocks;    // per rank, relative to chan_begin
  std::string backend;                           // "cpu" or "gpu <index>"
  int gpu_device = -1;                           // -1: CPU
  std::size_t gpu_share_bytes = 0;               // of the GPU's free memory, this rank's
  imaging::ImageGeometry geometry;
  std::size_t max_visibilities = 0;              // rows of all inputs: the most one channel holds
  std::int64_t busiest_channel = 0;              // unflagged visibilities of the fullest imaged channel
  MemoryPlan memory;                             // this rank's
  std::unique_ptr<RunClaim> claim;               // rank 0's on the output, held while the plan lives

  // Q and U determined: the Faraday stage runs.
  bool polarised() const { return stokes[ms::stokes_q] && stokes[ms::stokes_u]; }
};

// Opens the inputs, balances the channels over the ranks, chooses the backend, and
// checks memory, disk and (with parallel.time_limit) time. Collective; every rank
// throws alike when the run cannot start. Rank 0 claims the output folder and prefix
// once the inputs are open (RunClaim; `break_claim` clears another's), and at the end
// writes the effective configuration next to the products.
Plan make_plan(const Config& config, const parallel::MpiContext& mpi, const Log& log, bool break_claim);

imaging::WeightingScheme weighting_scheme(const Config& config);

// UVW (metres, [k][3]) of the rows every input's reads keep, input after input: the
// rows of every channel.
std::vector<double> inputs_uvw_m(const Plan& plan);

// Major cycles per channel where no previous run tells: measured 4.0 on both the
// sample and the realistic set of bench/run-imaging-bench.sh.
constexpr double default_major_cycles = 4;

// What a run costs per rank, channel and pixel: timed on this machine, or read from a
// previous run's qa.json (the more accurate, for a job like that one).
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
