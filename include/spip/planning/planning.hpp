#pragma once
// Everything decided before a visibility is read: the inputs, the channel blocks of
// the ranks, the backend, and what the run will hold, write and take, checked against
// what it may use. `spip --plan` prints the same figures for sizing a job.
#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "spip/config/config.hpp"
#include "spip/imaging/geometry.hpp"
#include "spip/imaging/weighting.hpp"
#include "spip/job/plan.hpp"
#include "spip/ms/band.hpp"
#include "spip/ms/ionosphere.hpp"
#include "spip/ms/ms_reader.hpp"
#include "spip/parallel/decomposition.hpp"

namespace spip::parallel {
class MpiContext;
}

namespace spip::pipeline {

class Log;

// Opens the inputs, balances the channels over the ranks, chooses the backend, and
// checks memory, disk and (with parallel.time_limit) time. Collective; every rank
// throws alike when the run cannot start. Rank 0 claims the output folder and prefix
// once the inputs are open (RunClaim; `break_claim` clears another's), and at the end
// writes the effective configuration next to the products.
Plan make_plan(const Config& config, const parallel::MpiContext& mpi, const Log& log, bool break_claim);

// Rank 0, once the run has committed `made`: the files an earlier run of the prefix left
// that this run did not replace. Until here they stay, so that a run that fails leaves
// the earlier run's products as they were (a truncated input once left none).
void remove_earlier_products(const Config& config, const ProductRegistry& products,
                             const std::vector<std::string>& made, const parallel::MpiContext& mpi, const Log& log);

// What the metadata says, the same for a run and for --plan: the inputs, the imaged
// channels and their Faraday depths, the image and grid.
Plan open_plan(const Config& config);

// The Faraday stage alone on another imager's cubes (input.cube_q, ...): the cubes
// opened and checked against input.cube_q's grid and frequency axis (InputError naming
// both where they differ), input.cube_noise read, each of `ranks` ranks given a block
// of channels to measure, the products named. What --plan and the run both see.
CubePlan open_cube_plan(const Config& config, int ranks);
// Rank `rank`'s memory plan on another imager's cubes, within `budget` bytes: a run's and
// --plan's alike.
MemoryPlan cube_memory(const CubePlan& plan, int rank, double budget);
// That, with the claim on the output, the memory and disk checks and the effective
// configuration, as make_plan does for Measurement Sets. Collective.
CubePlan make_cube_plan(const Config& config, const parallel::MpiContext& mpi, const Log& log, bool break_claim);

// Groups of ranks and their contiguous channel blocks (plan.ranks_per_channel,
// grouping, imaged, blocks): parallel.ranks_per_channel, or chosen. A chosen group is
// one rank, unless the ranks outnumber the channels (then as many as keep every group
// busy) or a channel does not fit a rank (`fits`: whether a rank can image the given
// share of a channel's rows, Plan::member_share; then enough ranks to share it). The blocks are
// parallel.channels_per_rank per group, or balanced by `cost` per channel.
void decompose(const Config& config, const std::vector<std::int64_t>& cost, int ranks,
               const std::function<bool(double share)>& fits, Plan& plan);

// "N Measurement Set(s)", with the spectral windows where an MS gives several: for logs.
std::string input_count(const Plan& plan);

// The primary beam and, with image.centre, the two centres, one line each: for the run's
// log and --plan.
std::vector<std::string> sky_lines(const Plan& plan);
// The warning that output.channel_cubes leaves out cubes a stopped run takes back the
// channels it finished from, naming them; empty where it writes them all.
std::string resume_cubes_warning(const Config& config, const Plan& plan);

// 1 for each channel of the axis that some input gives data for, 0 for a gap.
std::vector<double> data_channels(const Plan& plan);

// A Faraday row's bytes, or none where the correlations give no Q and U.
double faraday_row_bytes(const Plan& plan);

// Rows of one rank's Faraday slab, as pixels.
double slab_pixels(int rank, int ranks, const imaging::ImageGeometry& geometry);

// The rank with the most channels, and the most image rows of a Faraday slab.
struct SlowestRank {
  int channels = 0;
  double slab_pixels = 0;
};
SlowestRank slowest_rank(const std::vector<parallel::ChannelBlock>& blocks, const imaging::ImageGeometry& geometry);

// How many of a job's `ranks` --plan puts on one node: `given` (--plan-node-ranks) where
// set, else as many as its `cores` hold at `threads` each and, where `gpus` > 0, no more
// than that: multi-node-gpu.sbatch gives each rank a GPU of its own. At least 1, at most
// `ranks`.
int node_ranks(int ranks, int given, long cores, int threads, int gpus);

// What the memory figures of every rank start from: the bytes a rank may use
// (memory_budget_bytes) and CLEAN's bytes per pixel, the most of any rank's backend.
struct MemoryBasis {
  double budget = 0;
  double clean_bytes_per_pixel = 0;
  double row_bytes = 0;  // imaging_bytes_per_row(): it chooses kernels, so once per plan
};
// What `rank` will hold, for a run's own check and for --plan alike: its channels,
// the plan's busiest channel (its share in a group), its kept planes and a Faraday row.
MemoryNeeds memory_needs(const Config& config, const Plan& plan, int rank, const MemoryBasis& basis);

}  // namespace spip::pipeline
