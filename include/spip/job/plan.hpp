#pragma once
// The job's plan: everything decided before a visibility is read, as one value that
// planning makes and the stages read.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "spip/beam/primary_beam.hpp"
#include "spip/config/config.hpp"
#include "spip/fits/spectral_cube.hpp"
#include "spip/imaging/geometry.hpp"
#include "spip/imaging/weighting.hpp"
#include "spip/job/memory_budget.hpp"
#include "spip/job/product_registry.hpp"
#include "spip/job/run_claim.hpp"
#include "spip/ms/band.hpp"
#include "spip/ms/ionosphere.hpp"
#include "spip/ms/observing_time.hpp"
#include "spip/ms/rephase.hpp"
#include "spip/ms/ms_reader.hpp"
#include "spip/parallel/decomposition.hpp"

namespace spip::pipeline {

// The largest share of a channel's rows that a member of a group of `members` holds:
// rank_rows() balances the members' costs within it, and planning sizes memory by it.
inline double largest_row_share(int members) { return members <= 1 ? 1.0 : std::min(1.0, 1.5 / members); }

struct Plan {
  std::vector<ms::MsReader> readers;
  std::optional<ms::IonosphereTable> ionosphere; // faraday.ionosphere, undone as each block is read
  ms::Band band;                                 // the image channels: every input's on one axis
  std::optional<beam::PrimaryBeam> primary_beam; // beam.model with its dish; none: apparent images only
  // The inputs' phase centres, each once: where the primary beams point. Several make a
  // mosaic: each channel is imaged and cleaned once per pointing, and the pointings'
  // restored planes are combined linearly (beam::Mosaic).
  std::vector<Direction> pointings;
  std::vector<int> input_pointing;               // per input: its pointing's index in `pointings`
  std::vector<ms::ObservingTime> pointing_times;  // per pointing: when its inputs were observed
  Direction image_centre;                        // image.centre, or the middle of the pointings
  std::vector<std::optional<ms::Rephasing>> rephasing;  // per input: its pointing -> image centre, where they differ
  // The image channels' numbers in logs and records: [chan_begin, chan_end). One
  // window's channels in storage order keep their stored numbers (input.channel_begin
  // and after); otherwise (several inputs, high to low, gaps, bins) they count from 0.
  int chan_begin = 0, chan_end = 0;
  std::vector<double> freq_hz;                   // of the image channels
  std::vector<double> data_freq_hz;              // where their data lie (ms::Band::data_freq_hz): RM synthesis's
  std::array<bool, ms::num_stokes> stokes{};     // which of I, Q, U, V some input's correlations determine
  int num_phi = 0;                               // Faraday depths (0: fewer than two channels, or not polarised)
  // Channel blocks, relative to chan_begin. Groups of ranks_per_channel consecutive
  // ranks each image one block, every member with its share of each channel's rows;
  // the group's first rank keeps and writes the block's channels.
  int ranks_per_channel = 1;
  std::string grouping;                          // why that many, for the log and --plan
  std::vector<parallel::ChannelBlock> imaged;    // per rank: the block its group images
  std::vector<parallel::ChannelBlock> blocks;    // per rank: the block it keeps and writes (none past a group's first)
  std::string backend;                           // "cpu" or "gpu <index>"
  int gpu_device = -1;                           // -1: CPU
  std::size_t gpu_share_bytes = 0;               // of the GPU's free memory, this rank's
  imaging::ImageGeometry geometry;
  std::size_t max_visibilities = 0;              // the most rows one image channel holds, of all its inputs
  ProductRegistry products;                      // every file the run writes, with its size
  MemoryPlan memory;                             // this rank's
  std::unique_ptr<RunClaim> claim;               // rank 0's on the output, held while the plan lives

  // Whether every image channel (but gaps) holds rows of every input, from the band.
  // rank_rows() cuts the rows of all inputs together, so only then does
  // largest_row_share() bound a group member's part of each channel; a channel of some
  // inputs only (a sub-band) may fall to one member whole.
  bool rows_shared_evenly = true;
  // The largest part of a channel's rows a member of a group of `members` holds.
  double member_share(int members) const { return rows_shared_evenly ? largest_row_share(members) : 1.0; }
  // The most rows one rank images of a channel: all of them, or its share in a group.
  std::size_t rank_visibilities() const {
    return static_cast<std::size_t>(std::ceil(member_share(ranks_per_channel) * static_cast<double>(max_visibilities)));
  }
  bool mosaic() const { return pointings.size() > 1; }
  bool rephased() const {
    return std::any_of(rephasing.begin(), rephasing.end(), [](const auto& r) { return r.has_value(); });
  }
  // Q and U determined: the Faraday stage runs.
  bool polarised() const { return stokes[ms::stokes_q] && stokes[ms::stokes_u]; }
};

// The plan of the Faraday stage alone, on another imager's cubes (input.cube_q, ...).
struct CubePlan {
  fits::StokesCubes cubes;
  fits::ImageHeader base;                        // the products' grid, beam and date: input.cube_q's
  std::vector<double> freq_hz;                   // of the cubes' channels
  std::vector<double> noise;                     // input.cube_noise's sigma per channel; empty: from the cubes
  std::vector<parallel::ChannelBlock> blocks;    // per rank: the channels whose planes it measures
  int num_phi = 0;                               // Faraday depths (0: fewer than two channels)
  // With image.common_beam, where a channel's beam is not the products' (base.beam): the
  // side of the FFT grid on which every plane is convolved to it; 0: the cubes are taken
  // at the resolutions they have.
  int smoothing_grid = 0;
  std::string backend = "cpu";                   // or "gpu <index>": where RM synthesis and RM-CLEAN run
  int gpu_device = -1;
  std::size_t gpu_share_bytes = 0;               // of the GPU's free memory, this rank's
  ProductRegistry products;
  MemoryPlan memory;                             // this rank's
  std::unique_ptr<RunClaim> claim;               // rank 0's on the output, held while the plan lives
};

imaging::WeightingScheme weighting_scheme(const Config& config);
// The longest baseline (wavelengths) of `max_uv` that the weighting keeps: image.uv_max
// drops the longer ones.
double kept_max_uv(const Config& config, double max_uv);

// UVW (metres, [k][3]) of the rows every input's reads keep, input after input: the
// rows of every channel; with `rows_per_input`, how many of them each input holds.
std::vector<double> inputs_uvw_m(const Plan& plan, std::vector<std::size_t>* rows_per_input = nullptr);

// With CLEAN and a common beam, restoring waits for every channel's fitted beam; a beam
// given as image.beam is known at once, and each channel is restored as it is imaged.
bool restores_later(const Config& config);
// The channel cubes a resumed run reads a finished channel's planes back from
// (RankRun::recall_planes), first the image or model, then the residual: before it is
// restored with the common beam its model and residual; once restored, where the run
// has Q and U for the Faraday stage, its image and (where CLEAN makes one) residual;
// else none. Without them it images the channel again.
std::vector<ChannelCubeKind> cubes_to_recall(const Plan& plan, bool restored);
// Those of every channel an earlier start may have finished: the restored ones' and,
// where restoring waits for the common beam, the others' too, but for a mosaic, which
// keeps its pointings' models only in memory (check_time has its own rule for it).
std::vector<ChannelCubeKind> cubes_to_resume_from(const Config& config, const Plan& plan);
bool resumes_finished_channels(const Config& config, const Plan& plan);
// Planes a rank keeps of each of its channels (PlaneStore): the model and the residual
// until restoring, then the restored image and the residual for the Faraday stage.
int kept_planes(const Config& config, const Plan& plan);
// The PlaneStore's slots per channel: kept_image and kept_residual's, and in a mosaic
// each pointing's model (kept_model()).
int kept_slots(const Plan& plan);
// Where kept planes go that the memory budget cannot hold: parallel.scratch, else
// $TMPDIR, else /tmp.
std::string scratch_folder(const ParallelConfig& config);

}  // namespace spip::pipeline
