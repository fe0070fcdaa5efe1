#include "spip/planning/planning.hpp"

#include "run_start.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <limits>
#include <memory>
#include <numbers>
#include <optional>
#include <set>
#include <array>

#include "spip/beam/mosaic.hpp"
#include "spip/catalogue/source_finder.hpp"
#include "spip/common/constants.hpp"
#include "spip/common/number_text.hpp"
#include "spip/cuda/device_imager.hpp"
#include "spip/cuda/device.hpp"
#include "spip/error.hpp"
#include "spip/imaging/es_kernel.hpp"
#include "spip/job/failures.hpp"
#include "spip/job/log.hpp"
#include "spip/job/run_claim.hpp"
#include "spip/job/text_file.hpp"
#include "spip/parallel/mpi_context.hpp"
#include "spip/planning/cost_rates.hpp"
#include "spip/stages/channel_cubes.hpp"
#include "spip/stages/faraday_stage.hpp"
#include "spip/stages/plane_store.hpp"
#include "spip/version.hpp"

namespace spip::pipeline {

std::string input_count(const Plan& plan) {
  std::set<std::string> paths;
  for (const ms::MsReader& reader : plan.readers) paths.insert(reader.info().path);
  std::string text = std::to_string(paths.size()) + " Measurement Set(s)";
  if (plan.readers.size() > paths.size()) text += " (" + std::to_string(plan.readers.size()) + " spectral windows)";
  return text;
}

namespace {

// "RA 12.500000, Dec -45.000000 deg", for logs and messages.
std::string sky_position(Direction d) {
  return "RA " + fixed(ra_degrees(d), 6) + ", Dec " + fixed(d.dec_rad * rad_to_deg, 6) + " deg";
}

// "image, residual and model", as output.channel_cubes names them.
std::string cubes_text(const std::vector<ChannelCubeKind>& kinds) {
  std::string text;
  for (std::size_t k = 0; k < kinds.size(); ++k)
    text += std::string(k == 0 ? "" : k + 1 == kinds.size() ? " and " : ", ") + to_string(kinds[k]);
  return text;
}

}  // namespace

std::string resume_cubes_warning(const Config& config, const Plan& plan) {
  std::vector<ChannelCubeKind> missing;
  for (ChannelCubeKind kind : cubes_to_resume_from(config, plan))
    if (!plan.products.on_disk(kind)) missing.push_back(kind);
  if (missing.empty()) return "";
  return "warning: output.channel_cubes does not write every Stokes of the " + cubes_text(missing) + " cube" +
         (missing.size() > 1 ? "s" : "") + ", from which a stopped run takes back the channels it finished: a "
         "resumed run images every channel again; write " + (missing.size() > 1 ? "them" : "it") +
         " where the run may be stopped";
}

std::vector<std::string> sky_lines(const Plan& plan) {
  std::vector<std::string> lines;
  if (plan.primary_beam) lines.push_back("primary beam: " + plan.primary_beam->describe());
  if (plan.mosaic()) {
    lines.push_back("mosaic of " + std::to_string(plan.pointings.size()) + " pointings, each imaged and cleaned on " +
                    "its own and combined linearly with weights B^2 / sigma^2; image centre (image.centre, by default "
                    "their middle) " + sky_position(plan.image_centre));
    for (std::size_t p = 0; p < plan.pointings.size(); ++p)
      lines.push_back("  pointing " + std::to_string(p) + ": " + sky_position(plan.pointings[p]));
  } else if (plan.rephased()) {
    lines.push_back("image centre (image.centre): " + sky_position(plan.image_centre) +
                    "; the visibilities are turned to it from the inputs' phase centre, " +
                    sky_position(plan.pointings.front()) + ", where the primary beam stays");
  }
  return lines;
}

std::vector<double> data_channels(const Plan& plan) {
  std::vector<double> weight;
  for (const ms::BandChannel& channel : plan.band.channels) weight.push_back(channel.parts.empty() ? 0.0 : 1.0);
  return weight;
}

// A Faraday row's bytes, or none where the correlations give no Q and U.
double faraday_row_bytes(const Plan& plan) {
  const int num_chan = plan.chan_end - plan.chan_begin;
  return plan.polarised() ? FaradayStage::bytes_per_pixel(num_chan, plan.num_phi) * plan.geometry.size : 0.0;
}

namespace {

namespace fs = std::filesystem;

// An input whose channels lie further apart than the axis's step (another input's finer
// channels set it) fills only some of its planes in its part of the band: the rest are
// blank, which the count of gaps alone does not explain. Empty where it fills them all.
std::string coarse_input_line(const ms::MsInfo& info, double step_hz) {
  std::vector<double> freq = info.freq_hz;
  std::sort(freq.begin(), freq.end());
  double spacing = std::numeric_limits<double>::infinity();
  for (std::size_t k = 1; k < freq.size(); ++k) spacing = std::min(spacing, freq[k] - freq[k - 1]);
  if (!std::isfinite(spacing) || spacing < 1.5 * step_hz) return "";
  return "input " + ms::input_name(info) + ": its channels are " + fixed(spacing / 1e3, 3) + " kHz apart, " +
         fixed(spacing / step_hz, 1) + " times the axis's step, so that its part of the band has blank planes "
         "between its channels; image.channel_width " + fixed(spacing, 0) + " bins every input onto one axis of "
         "that step, which lowers the largest Faraday depth its channels leave undepolarised (sqrt(3)/dlambda^2_max)";
}

// Phase centres closer than this (0.2 mas) are the same field.
constexpr double same_direction_rad = 1e-9;

// On the sky, not by coordinates: RA 359.99999999 and 0 deg, or any RA at a pole, are one.
bool same_direction(Direction a, Direction b) { return angular_distance_rad(a, b) <= same_direction_rad; }

// One reader per Measurement Set and spectral window (input.spw: the listed ones, all,
// or the MS's only one), each MS named once.
std::vector<ms::MsReader> open_inputs(const Config& config) {
  ms::Selection selection;
  selection.column = config.input.column;
  selection.row_chunk = static_cast<std::size_t>(config.input.row_chunk);
  std::vector<ms::MsReader> readers;
  for (std::size_t k = 0; k < config.input.ms.size(); ++k) {
    const std::string& path = config.input.ms[k];
    std::error_code unreadable;  // a path that cannot be looked at is the reader's to refuse
    for (std::size_t earlier = 0; earlier < k; ++earlier)
      if (fs::equivalent(config.input.ms[earlier], path, unreadable))
        SPIP_THROW(ConfigError, "input.ms names " + config.input.ms[earlier] + " twice (also as " + path +
                                    "); each Measurement Set once, or its visibilities would count twice");
    const std::vector<int> windows = config.input.all_windows ? ms::spectral_windows(path)
                                     : config.input.spw.empty() ? std::vector<int>{-1}
                                                                : config.input.spw;
    const std::vector<int> fields = config.input.fields.empty() ? std::vector<int>{-1} : config.input.fields;
    for (int window : windows)
      for (int field : fields) {
        selection.spw = window;
        selection.field = field;
        readers.emplace_back(path, selection);
      }
  }
  return readers;
}

// The stored channels of each input that the run images: input.channel_begin/end of a
// lone window, then input.freq_min/freq_max of every one.
std::vector<std::vector<int>> selected_channels(const Config& config, const std::vector<ms::MsReader>& readers) {
  const InputConfig& input = config.input;
  const bool range = input.channel_begin != 0 || input.channel_end != -1;
  if (range && readers.size() > 1)
    SPIP_THROW(ConfigError, "input.channel_begin/channel_end number the channels of one window, but the run has " +
                                std::to_string(readers.size()) +
                                " inputs (Measurement Sets and spectral windows); select with input.freq_min and "
                                "input.freq_max in Hz instead");
  std::vector<std::vector<int>> selected;
  for (const ms::MsReader& reader : readers) {
    const ms::MsInfo& info = reader.info();
    const int stored = info.num_channels();
    const int begin = input.channel_begin, end = input.channel_end < 0 ? stored : input.channel_end;
    if (end > stored || begin >= end)
      SPIP_THROW(InputError, info.path + ": input.channel_begin/channel_end = [" + std::to_string(begin) + ", " +
                                 std::to_string(end) + ") is outside the band of " + std::to_string(stored) +
                                 " channels");
    std::vector<int>& mine = selected.emplace_back();
    for (int c = begin; c < end; ++c) {
      const double nu = info.freq_hz[static_cast<std::size_t>(c)];
      if (nu >= input.freq_min_hz && (input.freq_max_hz <= 0 || nu <= input.freq_max_hz)) mine.push_back(c);
    }
  }
  if (std::all_of(selected.begin(), selected.end(), [](const std::vector<int>& s) { return s.empty(); }))
    SPIP_THROW(InputError, "no channel of the " + std::to_string(readers.size()) +
                               " input(s) is centred within input.freq_min/freq_max = [" +
                               fixed(input.freq_min_hz, 0) + ", " +
                               (input.freq_max_hz > 0 ? fixed(input.freq_max_hz, 0) : std::string("no limit")) +
                               "] Hz");
  return selected;
}

}  // namespace

void agree_on_failure(const parallel::MpiContext& mpi, const std::exception_ptr& local) {
  ExitCode code = ExitCode::ok;
  std::string message;
  if (local) try {
      std::rethrow_exception(local);
    } catch (const Error& e) {
      code = e.code();
      message = e.what();
    } catch (const std::exception& e) {
      code = ExitCode::failure;
      message = e.what();
    } catch (...) {
      code = ExitCode::failure;
    }
  if (code != ExitCode::ok && message.empty())
    message = "rank " + std::to_string(mpi.rank()) + " failed without saying why";
  const std::vector<double> codes = mpi.gather_to_all({static_cast<double>(code)});
  const auto first = std::find_if(codes.begin(), codes.end(), [](double c) { return c > 0; });
  if (first == codes.end()) return;
  const std::vector<std::string> messages = mpi.gather_text_to_root(message);
  const auto first_rank = static_cast<std::size_t>(first - codes.begin());
  std::string report;
  if (mpi.is_root()) {
    // The same failure on many ranks is said once; a different one with its rank.
    report = messages[first_rank];
    std::set<std::string> said{report};
    for (std::size_t r = first_rank + 1; r < messages.size(); ++r)
      if (codes[r] > 0 && said.insert(messages[r]).second) report += "; rank " + std::to_string(r) + ": " + messages[r];
  }
  throw JobFailure(report, __FILE__, __LINE__, static_cast<ExitCode>(static_cast<int>(*first)));
}

namespace {

// Unflagged visibilities per image channel over every input: the cost that the channel
// blocks balance (0 for a gap or a wholly flagged channel). Each rank counts a share of
// the rows and one all-reduce adds them, so the FLAG column is read once per job, not
// once per rank. Throws an InputError only if nothing at all is unflagged.
std::vector<std::int64_t> channel_cost(const Plan& plan, const parallel::MpiContext& mpi, const Log& log) {
  std::vector<std::vector<std::int64_t>> counts;  // per input, per stored channel
  for (const ms::MsReader& reader : plan.readers) {
    const std::int64_t rows = reader.info().num_rows;
    std::exception_ptr failure;
    try {
      counts.push_back(reader.unflagged_per_channel(rows * mpi.rank() / mpi.size(), rows * (mpi.rank() + 1) / mpi.size()));
    } catch (...) {
      failure = std::current_exception();
    }
    agree_on_failure(mpi, failure);
    mpi.sum_all(counts.back());
  }
  std::vector<std::int64_t> cost(static_cast<std::size_t>(plan.band.size()), 0), used(plan.readers.size(), 0);
  for (std::size_t c = 0; c < cost.size(); ++c)
    for (const ms::ChannelPart& part : plan.band.channels[c].parts) {
      const std::int64_t n = counts[static_cast<std::size_t>(part.input)][static_cast<std::size_t>(part.channel)];
      cost[c] += n;
      used[static_cast<std::size_t>(part.input)] += n;
    }
  for (std::size_t i = 0; i < used.size() && plan.readers.size() > 1; ++i)
    if (used[i] == 0)
      log.root("input " + ms::input_name(plan.readers[i].info()) +
               ": no unflagged cross-correlation data in the selected channels; it adds nothing to them");
  if (std::all_of(cost.begin(), cost.end(), [](std::int64_t n) { return n == 0; })) {
    if (plan.readers.size() == 1) ms::require_unflagged(plan.readers.front().info(), cost);
    SPIP_THROW(InputError, "no unflagged cross-correlation data in the selected channels of any of the " +
                               std::to_string(plan.readers.size()) + " inputs");
  }
  return cost;
}

// Checks that this rank's share of its GPU holds the imaging plan and CLEAN's device buffers.
void check_device_share(const cuda::DeviceInfo& device, const parallel::MpiContext::NodeShare& share,
                        const imaging::ImageGeometry& geometry, std::size_t max_visibilities,
                        const imaging::WeightingScheme& scheme, double clean_bytes, const Log& log) {
  const std::size_t needed =
      cuda::DeviceImager::device_bytes(geometry, max_visibilities, scheme) + static_cast<std::size_t>(clean_bytes);
  const std::string sharing = std::to_string(share.amount >> 20) + " MiB free, shared by " +
                              std::to_string(share.ranks) + " rank(s) of this node";
  if (needed > share.each())
    SPIP_THROW(ConfigError, "GPU " + std::to_string(device.index) + " (" + device.name + ") has " + sharing +
                                ", but imaging " + std::to_string(geometry.size) + "^2 pixels with channels of " +
                                std::to_string(max_visibilities) + " visibilities needs " +
                                std::to_string(needed >> 20) +
                                " MiB per rank; use a smaller image.size or image.padding, or fewer ranks per GPU");
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  log.info("GPU " + std::to_string(device.index) + " (CUDA_VISIBLE_DEVICES=" + (visible ? visible : "unset") +
           "): " + device.name + ", " + sharing + "; " + std::to_string(needed >> 20) + " of this rank's " +
           std::to_string(share.each() >> 20) + " MiB planned for imaging");
}

// Everything this rank will hold, and everything the run will write, against what
// the rank may hold and what the output file system has; before any visibility is read.
void check_budgets(const Config& config, const parallel::MpiContext& mpi, const Log& log, Plan& plan) {
  std::exception_ptr failure;
  try {
    // This rank's own budget and backend: the channel blocks were cut to what every rank holds.
    const MemoryBasis own{memory_budget_bytes(config.parallel, mpi.local_size()),
                          clean_bytes_per_pixel(config.clean, plan.geometry, plan.gpu_device >= 0),
                          imaging_bytes_per_row(config.image, config.clean, plan.geometry)};
    plan.memory = plan_memory(memory_needs(config, plan, mpi.rank(), own));
    if (mpi.is_root()) require_disk_space(config.output.dir, plan.products.bytes_to_write());
  } catch (...) {
    failure = std::current_exception();
  }
  agree_on_failure(mpi, failure);
  log.root(plan.memory.describe() + " (rank 0)");
  // A budget the node cannot give: the kernel (or Slurm's cgroup) kills a rank before
  // the budget ever stops it.
  const double node = node_memory_bytes(), asked = memory_budget_bytes(config.parallel, 1, node) * mpi.local_size();
  if (config.parallel.memory_gb > 0 && asked > node)
    log.root("WARNING: parallel.memory_gb " + fixed(config.parallel.memory_gb, 2) + " GB for each of the " +
             std::to_string(mpi.local_size()) + " rank(s) on this node is more than its " + fixed(node / 1e9, 2) +
             " GB; a rank may be killed for memory before the budget stops it");
}

}  // namespace

// Rows of one rank's Faraday slab, as pixels.
double slab_pixels(int rank, int ranks, const imaging::ImageGeometry& geometry) {
  const auto [first, last] = FaradayStage::slab_rows(rank, ranks, geometry.size);
  return static_cast<double>(last - first) * geometry.size;
}

MemoryNeeds memory_needs(const Config& config, const Plan& plan, int rank, const MemoryBasis& basis) {
  const auto r = static_cast<std::size_t>(rank);
  MemoryNeeds needs;
  needs.budget = basis.budget;
  needs.geometry = plan.geometry;
  needs.clean_bytes_per_pixel = basis.clean_bytes_per_pixel;
  needs.row_bytes = basis.row_bytes;
  // Every row of a channel is read and staged, flagged or not (flags are weight 0).
  needs.rows_per_channel = static_cast<double>(plan.max_visibilities) * plan.member_share(plan.ranks_per_channel);
  needs.my_channels = plan.imaged[r].size();
  needs.block_channels = config.input.block_channels;
  needs.faraday_row_bytes = faraday_row_bytes(plan);
  needs.kept_bytes = PlaneStore::bytes(plan.blocks[r].size(), kept_planes(config, plan), plan.geometry.pixels());
  needs.pointings = static_cast<int>(plan.pointings.size());
  return needs;
}

SlowestRank slowest_rank(const std::vector<parallel::ChannelBlock>& blocks, const imaging::ImageGeometry& geometry) {
  SlowestRank slowest;
  const int ranks = static_cast<int>(blocks.size());
  for (int r = 0; r < ranks; ++r) {
    slowest.channels = std::max(slowest.channels, blocks[static_cast<std::size_t>(r)].size());
    slowest.slab_pixels = std::max(slowest.slab_pixels, slab_pixels(r, ranks, geometry));
  }
  return slowest;
}

int node_ranks(int ranks, int given, long cores, int threads, int gpus) {
  if (given > 0) return std::min(given, ranks);
  const long by_cores = cores / std::max(1, threads);
  return static_cast<int>(std::clamp<long>(gpus > 0 ? std::min<long>(by_cores, gpus) : by_cores, 1, ranks));
}

namespace {

// With parallel.time_limit (what is left of the job's time before its warning), a run
// that could never finish would only be requeued for ever: one whose slowest rank
// cannot image a channel in one start (after the set-up), a mosaic restored with the
// common beam that cannot image all its channels in one (it keeps its pointings' models
// only until restoring, so a resumed run images them again), one whose channel cubes
// keep nothing a resumed run could take back that cannot image its channels and do its
// share of the Faraday stage in one, or one that cannot do its share of the Faraday
// stage, which starts again from its beginning when stopped. Such a run stops here; one
// that needs several starts says how many.
// Rank 0 times the rates for every rank on its CPU, so a GPU run is only told.
void check_time(const Config& config, const parallel::MpiContext& mpi, const Log& log, const Plan& plan) {
  const double limit = config.parallel.time_limit;
  const bool cubes_resume = resumes_finished_channels(config, plan);
  const std::string needed = cubes_text(cubes_to_resume_from(config, plan));
  if (const std::string warning = resume_cubes_warning(config, plan); !warning.empty()) log.root(warning);
  if (!(limit > 0)) return;
  const auto seconds = [](double s) { return fixed(s, s < 10 ? 2 : 0) + " s"; };
  std::exception_ptr failure;
  try {
    if (mpi.is_root()) {
      const CostRates rates = measure_rates(config, plan);
      const SlowestRank slowest = slowest_rank(plan.blocks, plan.geometry);
      const double first = rates.setup_s + rates.create_s + rates.image_channel_s;
      const double imaging = rates.setup_s + rates.create_s + slowest.channels * rates.image_channel_s;
      const bool images_in_one_start = plan.mosaic() && restores_later(config);
      const double faraday = rates.setup_s + slowest.slab_pixels * rates.faraday_pixel_s;
      const double total = rank_seconds(rates, slowest.channels, slowest.slab_pixels);
      const std::string problem =
          first > limit ? "a rank with " + std::to_string(slowest.channels) + " channels needs about " +
                              seconds(first) + " to finish its first channel (set-up " + fixed(rates.setup_s, 1) +
                              " s, imaging " + fixed(rates.image_channel_s, 2) + " s per channel)"
          : images_in_one_start && imaging > limit
              ? "a mosaic restored with the common beam images every channel again when resumed (it keeps its "
                "pointings' models only until restoring), and a rank's " + std::to_string(slowest.channels) +
                    " channels need about " + seconds(imaging) + " in one start"
          : !cubes_resume && total > limit
              ? "output.channel_cubes does not write the " + needed + " cubes a resumed run takes back the channels "
                "an earlier start finished from, so every start images every channel again, and a rank's " +
                    std::to_string(slowest.channels) + " channels and its share of the Faraday stage need about " +
                    seconds(total) + " in one start"
          : faraday > limit ? "a rank's share of the Faraday stage (" + fixed(slowest.slab_pixels, 0) +
                                  " pixels) needs about " + seconds(faraday) + " in one start"
                            : std::string();
      const std::string remedy =
          images_in_one_start && first <= limit && imaging > limit
              ? "; set image.beam (each channel is then restored as it is imaged, and a resumed run keeps it), or ask "
                "for more time or more ranks"
          : !cubes_resume && first <= limit && total > limit
              ? "; write all Stokes of the " + needed + " cubes (output.channel_cubes), or ask for more time or more ranks"
              : "; ask for more time or more ranks";
      if (!problem.empty() && plan.gpu_device < 0)
        SPIP_THROW(ConfigError, problem + ", but parallel.time_limit is " + seconds(limit) + remedy);
      log.root("estimated " + seconds(total) + " on the slowest rank (CPU rates: set-up " +
               seconds(rates.setup_s + rates.create_s) + ", imaging " + seconds(rates.image_channel_s) + " a channel, " +
               std::to_string(slowest.channels) + " channels) against parallel.time_limit " + seconds(limit) +
               (!problem.empty() ? "; on the CPU " + problem
                : total > limit  ? "; it needs about " +
                                      std::to_string(static_cast<int>(std::ceil(total / limit))) +
                                      " starts, each stopped by the batch system's warning or SIGTERM (spip does "
                                      "not stop itself at the limit) and resumed"
                                 : std::string()));
    }
  } catch (...) {
    failure = std::current_exception();
  }
  agree_on_failure(mpi, failure);
}

}  // namespace

namespace {

std::optional<cuda::DeviceInfo> choose_device(const Config& config, int local_rank, const Log& log) {
  const Device requested = config.parallel.device;
  if (requested == Device::cpu) return std::nullopt;
  const cuda::DeviceProbe probe = cuda::probe_devices();
  if (probe.devices.empty()) {
    if (requested == Device::gpu)
      SPIP_THROW(ConfigError, "parallel.device = gpu but no usable GPU: " + probe.reason);
    // One line a node: its ranks all find what the first finds, and nodes may differ.
    if (local_rank == 0) log.info("no GPU on this node (" + probe.reason + "); its ranks use the CPU backend");
    return std::nullopt;
  }
  return probe.devices[static_cast<std::size_t>(local_rank) % probe.devices.size()];
}

}  // namespace

RankDevice choose_rank_device(const Config& config, const parallel::MpiContext& mpi, const Log& log) {
  RankDevice chosen;
  std::exception_ptr failure;
  try {
    chosen.device = choose_device(config, mpi.local_rank(), log);
    // Makes this rank's CUDA context, which its GPU's share must not count as free.
    if (chosen.device) {
      cuda::free_memory_bytes(chosen.device->index);
      cuda::require_cublas();
    }
  } catch (...) {
    failure = std::current_exception();
  }
  agree_on_failure(mpi, failure);
  const std::optional<cuda::DeviceInfo>& device = chosen.device;
  chosen.share = mpi.share_on_node(device ? device->pci_address : -1,
                                   [&] { return device ? cuda::free_memory_bytes(device->index) : 0; });
  return chosen;
}

std::unique_ptr<RunClaim> claim_run(const Config& config, const ProductRegistry& products, bool break_claim,
                                    const parallel::MpiContext& mpi, const Log& log) {
  std::unique_ptr<RunClaim> claim;
  std::exception_ptr failure;
  std::string cleared;
  if (mpi.is_root()) try {
      claim = std::make_unique<RunClaim>(products.claim(), config.output.prefix, break_claim, cleared);
    } catch (...) {
      failure = std::current_exception();
    }
  agree_on_failure(mpi, failure);
  if (!cleared.empty()) log.root("cleared the claim of " + cleared);
  return claim;
}

namespace {

// The files the configuration reads.
std::vector<std::string> input_files(const Config& config) {
  std::vector<std::string> files = config.input.ms;
  for (const std::string* file : {&config.input.cube_i, &config.input.cube_q, &config.input.cube_u,
                                  &config.input.cube_v, &config.input.cube_noise, &config.faraday.ionosphere,
                                  &config.catalogue.sources, &config.beam.fits})
    if (!file->empty()) files.push_back(*file);
  return files;
}

// An earlier run's products are replaced, or removed once this run has made its own
// (remove_earlier_products()): an input among them is refused before anything is written.
// Only its partial Faraday products go now: they are never resumed from, and this run
// creates its own. The partial channel cubes stay: resume continues them, and a fresh
// start recreates them.
void check_inputs_among_products(const Config& config, const ProductRegistry& products) {
  const std::vector<std::string> inputs = input_files(config), earlier = products.earlier_runs_files();
  for (const std::string& file : earlier)
    for (const std::string& input : inputs) {
      std::error_code error;
      if (fs::equivalent(file, input, error))
        SPIP_THROW(ConfigError, "the input " + input + " is a product name of output.prefix " + config.output.prefix +
                                    " in " + config.output.dir + ", which this run would replace; choose another "
                                    "output.prefix or output.dir");
    }
  for (const std::string& file : earlier)
    if (file.ends_with(".partial")) {
      std::error_code error;
      fs::remove(file, error);
      if (error) SPIP_THROW(InputError, "cannot remove an earlier run's " + file + ": " + error.message());
    }
}

}  // namespace

void prepare_output(const Config& config, const ProductRegistry& products, bool spills,
                    const parallel::MpiContext& mpi, const Log& log) {
  std::exception_ptr failure;
  try {
    if (spills) PlaneStore::check_scratch(scratch_folder(config.parallel));
  } catch (...) {
    failure = std::current_exception();
  }
  agree_on_failure(mpi, failure);
  const std::string path = products.effective_config();
  try {
    if (mpi.is_root()) {
      fs::create_directories(config.output.dir);
      check_inputs_among_products(config, products);
      write_text_atomically(path, to_ini(config));
    }
  } catch (...) {
    failure = std::current_exception();
  }
  agree_on_failure(mpi, failure);
  log.root("effective configuration in " + path);
}

void remove_earlier_products(const Config& config, const ProductRegistry& products,
                             const std::vector<std::string>& made, const parallel::MpiContext& mpi, const Log& log) {
  if (!mpi.is_root()) return;
  int removed = 0;
  for (const std::string& file : products.earlier_runs_files()) {
    if (std::find(made.begin(), made.end(), file) != made.end()) continue;
    std::error_code error;
    if (fs::remove(file, error)) ++removed;
    if (error) log.root("warning: cannot remove an earlier run's " + file + ": " + error.message());
  }
  if (removed > 0)
    log.root("removed " + std::to_string(removed) + " file(s) an earlier run of the prefix " + config.output.prefix +
             " left in " + config.output.dir + " that this run does not make");
}

namespace {

// Whether the image channels are one window's stored channels in storage order, so that
// logs and records can number them as the MS does (input.channel_begin and after).
bool stored_numbering(const Plan& plan, bool binned) {
  if (plan.readers.size() != 1 || binned) return false;
  const int first = plan.band.channels.front().parts.front().channel;
  for (int k = 0; k < plan.band.size(); ++k) {
    const std::vector<ms::ChannelPart>& parts = plan.band.channels[static_cast<std::size_t>(k)].parts;
    if (parts.size() != 1 || parts.front().channel != first + k) return false;
  }
  return true;
}

}  // namespace

// What the metadata says, the same for a run and for --plan: the inputs, the imaged
// channels and their Faraday depths, the image and grid.
namespace {

// beam.model with its dish (beam.dish_diameter, or the first input's antennas'), its cube
// or the inputs' telescope.
std::optional<beam::PrimaryBeam> primary_beam(const BeamConfig& config, const std::vector<ms::MsInfo>& infos) {
  const ms::MsInfo& info = infos.front();
  if (config.model == BeamModel::none) return std::nullopt;
  if (config.model == BeamModel::fits) {
    if (config.fits.empty()) SPIP_THROW(ConfigError, "beam.model = fits needs beam.fits, the beam cube");
    return beam::cube_beam(config.fits);
  }
  if (config.model == BeamModel::automatic) {
    for (const ms::MsInfo& other : infos)
      if (other.telescope != info.telescope)
        SPIP_THROW(ConfigError, "beam.model = auto: " + ms::input_name(info) + " names the telescope '" +
                                    info.telescope + "' and " + ms::input_name(other) + " '" + other.telescope +
                                    "'; expected one telescope, or beam.model gaussian, airy or fits");
    std::optional<beam::PrimaryBeam> beam = beam::telescope_beam(info.telescope);
    if (!beam)
      SPIP_THROW(ConfigError, "beam.model = auto: " + ms::input_name(info) + " names the telescope '" + info.telescope +
                                  "', which has no beam model here (" + beam::known_telescopes() +
                                  " have); set beam.model to fits with beam.fits (a beam cube, as an aperture array's "
                                  "such as the MWA's or LOFAR's must be given), or gaussian or airy with beam.dish_diameter");
    return beam;
  }
  const double dish = config.dish_diameter_m > 0 ? config.dish_diameter_m : info.dish_diameter_m;
  if (!(dish > 0))
    SPIP_THROW(ConfigError, "beam.model = " + to_string(config.model) + " needs one dish diameter, but " +
                                ms::input_name(info) + "'s ANTENNA table has " + info.dish_range +
                                "; set beam.dish_diameter");
  beam::PrimaryBeam beam{.model = config.model == BeamModel::gaussian ? beam::Model::gaussian : beam::Model::airy,
                         .dish_diameter_m = dish,
                         .fwhm_factor = config.fwhm_factor,
                         .blockage_m = config.blockage_m};
  beam.check();
  return beam;
}

// The inputs' phase centres, each once, and each input's among them. Several make a
// mosaic, which needs the primary beam to weight the pointings by (and no leakage
// planes: a pointing's leaked I is not yet taken out before the pointings are combined).
void find_pointings(const std::vector<ms::MsInfo>& infos, Plan& plan) {
  for (const ms::MsInfo& info : infos) {
    const Direction centre{info.ra_rad, info.dec_rad};
    auto found = std::find_if(plan.pointings.begin(), plan.pointings.end(),
                              [&](const Direction& d) { return same_direction(d, centre); });
    if (found == plan.pointings.end()) found = plan.pointings.insert(plan.pointings.end(), centre);
    plan.input_pointing.push_back(static_cast<int>(found - plan.pointings.begin()));
  }
  if (!plan.mosaic()) return;
  const std::string named = ms::input_name(infos.front()) + " and " +
                            ms::input_name(infos[static_cast<std::size_t>(
                                std::find_if(plan.input_pointing.begin(), plan.input_pointing.end(),
                                             [](int p) { return p > 0; }) -
                                plan.input_pointing.begin())]);
  if (!plan.primary_beam)
    SPIP_THROW(ConfigError, named + " have different phase centres, " + std::to_string(plan.pointings.size()) +
                                " pointings in all: a mosaic of them weights each by its primary beam; set beam.model "
                                "(gaussian, airy, fits or auto)");
  if (plan.primary_beam->has_leakage())
    SPIP_THROW(ConfigError, named + " make a mosaic of " + std::to_string(plan.pointings.size()) +
                                " pointings, and beam.fits gives leakage planes, which mosaics do not take out yet; "
                                "give a beam cube of STOKES I only");
}

// The middle of the pointings: their mean direction.
Direction middle(const std::vector<Direction>& pointings) {
  if (pointings.size() == 1) return pointings.front();
  std::array<double, 3> sum{};
  for (const Direction& d : pointings) {
    const auto axes = tangent_axes(d);
    for (int k = 0; k < 3; ++k) sum[k] += axes[2][k];
  }
  const double ra = std::atan2(sum[1], sum[0]);
  return {ra < 0 ? ra + 2 * std::numbers::pi : ra, std::atan2(sum[2], std::hypot(sum[0], sum[1]))};
}

// The image's tangent plane must see every pointing (its SIN projection ends 90 deg away).
void check_centre(const Config& config, Direction centre, Direction pointing, bool mosaic) {
  const double offset_rad = angular_distance_rad(centre, pointing);
  if (offset_rad < std::numbers::pi / 2) return;
  const std::string offset = fixed(offset_rad * rad_to_deg, 1);
  if (!config.image.centre_deg.empty())
    SPIP_THROW(ConfigError, "image.centre = " + fixed(config.image.centre_deg[0], 6) + "," +
                                fixed(config.image.centre_deg[1], 6) + " is " + offset + " deg from " +
                                (mosaic ? "the pointing at RA " + fixed(pointing.ra_rad * rad_to_deg, 6) + ", Dec " +
                                              fixed(pointing.dec_rad * rad_to_deg, 6)
                                        : std::string("the inputs' phase centre")) +
                                "; expected a centre less than 90 deg from it (RA in degrees, not hours)");
  SPIP_THROW(ConfigError, "the pointings lie " + offset + " deg and more from their middle; expected a mosaic's "
                          "pointings within 90 deg of its centre (image.centre)");
}

// beam.model corrects each pixel by the response there, and blanks it below beam.limit:
// an image that no pointing's beam reaches (image.centre some degrees off, a mosaic's
// centre between pointings far apart) would run to the end and write every corrected
// product blank.
void check_beam_reaches_image(const Config& config, const Plan& plan) {
  const beam::ImageGrid grid{config.image.size, config.pixel_scale_rad(), plan.image_centre, plan.pointings.front()};
  const double limit = config.beam.limit;
  const double highest = beam::highest_response(*plan.primary_beam, grid, plan.pointings, plan.freq_hz.front(),
                                                plan.freq_hz.back(), limit);
  if (highest >= limit) return;
  // Never "0.2 or more (0.2 at most)": as many figures as tell them apart.
  std::string shown = number_text(highest, 3);
  if (std::stod(shown) >= limit) shown = number_text(highest, 9);
  SPIP_THROW(ConfigError,
             "no pixel of the " + std::to_string(config.image.size) + "^2 image about " + sky_position(plan.image_centre) +
                 " has a primary-beam response of beam.limit = " + number_text(limit) + " or more (" + shown +
                 " at most" +
                 (plan.mosaic() ? ", all " + std::to_string(plan.pointings.size()) + " pointings together" : "") +
                 "): every corrected product would be blank; expected image.centre nearer the " +
                 (plan.mosaic() ? "pointings (the first at " : "pointing (") + sky_position(plan.pointings.front()) +
                 "), a larger image, or a lower beam.limit");
}

// Each image channel takes each Stokes parameter from the inputs whose correlations give
// it, a mosaic's pointing from its own inputs. A channel (of a pointing) whose inputs do
// not give one that others give (an input of XX and YY alone, where another has XY and
// YX too) would image it as zero and weigh it fully in RM synthesis: such a band is
// refused in one line.
void check_stokes_of_every_channel(const Plan& plan) {
  const auto pointing_of = [&](int input) {
    return plan.input_pointing.empty() ? 0 : plan.input_pointing[static_cast<std::size_t>(input)];
  };
  for (int s = 0; s < ms::num_stokes; ++s) {
    if (!plan.stokes[s]) continue;
    int first = -1, last = -1, input = -1;
    for (int c = 0; c < plan.band.size(); ++c) {
      const std::vector<ms::ChannelPart>& parts = plan.band.channels[static_cast<std::size_t>(c)].parts;
      for (const ms::ChannelPart& part : parts) {
        if (std::any_of(parts.begin(), parts.end(), [&](const ms::ChannelPart& other) {
              return pointing_of(other.input) == pointing_of(part.input) &&
                     plan.readers[static_cast<std::size_t>(other.input)].info().stokes_determined[s];
            }))
          continue;
        if (first < 0) first = c, input = part.input;
        last = c;
      }
    }
    if (first < 0) continue;
    const ms::MsInfo& info = plan.readers[static_cast<std::size_t>(input)].info();
    SPIP_THROW(InputError, "Stokes " + std::string(1, "IQUV"[s]) + " is given by other inputs but not on channels " +
                               std::to_string(plan.chan_begin + first) + "-" + std::to_string(plan.chan_begin + last) +
                               " (" + fixed(plan.freq_hz[static_cast<std::size_t>(first)] / 1e6, 4) + "-" +
                               fixed(plan.freq_hz[static_cast<std::size_t>(last)] / 1e6, 4) + " MHz), which only " +
                               "inputs such as " + ms::input_name(info) + " (correlations [" + info.stokes_summary() +
                               "]) cover: it would be imaged as zero there; image those channels apart "
                               "(input.freq_min, input.freq_max), or leave that input out");
  }
}

}  // namespace

Plan open_plan(const Config& config) {
  Plan plan;
  plan.readers = open_inputs(config);
  if (!config.faraday.ionosphere.empty()) plan.ionosphere = ms::IonosphereTable::read(config.faraday.ionosphere);
  // Read once now, so that a list spip cannot use stops the run before any channel.
  if (!config.catalogue.sources.empty()) catalogue::read_source_positions(config.catalogue.sources);
  std::vector<ms::MsInfo> infos;
  for (const ms::MsReader& reader : plan.readers) infos.push_back(reader.info());
  plan.primary_beam = primary_beam(config.beam, infos);
  // The ionosphere turns the sky's polarisation before the antennas leak I into Q and U:
  // derotating the visibilities turns the leaked part too, which the leakage planes,
  // subtracted after imaging, do not.
  if (plan.ionosphere && plan.primary_beam && plan.primary_beam->has_leakage())
    SPIP_THROW(ConfigError, "faraday.ionosphere derotates the visibilities, the antennas' leakage of I into Q and U "
                            "with them, while beam.fits's leakage planes are subtracted after imaging unrotated: "
                            "expected a beam cube of STOKES I only beside faraday.ionosphere");
  find_pointings(infos, plan);
  for (std::size_t p = 0; p < plan.pointings.size(); ++p) {
    std::vector<ms::Integration> integrations;
    for (std::size_t k = 0; k < infos.size(); ++k)
      if (plan.input_pointing[k] == static_cast<int>(p))
        integrations.insert(integrations.end(), infos[k].integrations.begin(), infos[k].integrations.end());
    plan.pointing_times.push_back(ms::observing_time(std::move(integrations)));
  }
  plan.image_centre = config.image.centre_deg.empty()
                          ? middle(plan.pointings)
                          : Direction{config.image.centre_deg[0] / rad_to_deg, config.image.centre_deg[1] / rad_to_deg};
  for (const Direction& pointing : plan.pointings) check_centre(config, plan.image_centre, pointing, plan.mosaic());
  for (int p : plan.input_pointing) {
    const Direction& pointing = plan.pointings[static_cast<std::size_t>(p)];
    plan.rephasing.push_back(same_direction(pointing, plan.image_centre)
                                 ? std::nullopt
                                 : std::optional<ms::Rephasing>(std::in_place, pointing, plan.image_centre));
  }
  const bool dish_from_inputs = (config.beam.model == BeamModel::gaussian || config.beam.model == BeamModel::airy) &&
                                config.beam.dish_diameter_m == 0;
  if (dish_from_inputs)
    for (const ms::MsInfo& info : infos)
      if (std::abs(info.dish_diameter_m - plan.primary_beam->dish_diameter_m) > 0.01 * plan.primary_beam->dish_diameter_m)
        SPIP_THROW(ConfigError, "beam.model = " + to_string(config.beam.model) + ": " + ms::input_name(info) +
                                    "'s dishes (" + info.dish_range + ") differ from " + ms::input_name(infos.front()) +
                                    "'s (" + infos.front().dish_range + "); set beam.dish_diameter");
  plan.band = ms::merge_band(infos, selected_channels(config, plan.readers));
  const bool binned = config.image.channels_out > 0 || config.image.channel_width_hz > 0;
  if (binned) plan.band = ms::bin_band(plan.band, config.image.channels_out, config.image.channel_width_hz);
  plan.chan_begin = stored_numbering(plan, binned) ? plan.band.channels.front().parts.front().channel : 0;
  plan.chan_end = plan.chan_begin + plan.band.size();
  plan.freq_hz = plan.band.freq_hz();
  plan.data_freq_hz = plan.band.data_freq_hz();
  if (plan.primary_beam) {
    plan.primary_beam->check_band(plan.freq_hz.front(), plan.freq_hz.back());
    check_beam_reaches_image(config, plan);
  }
  for (const ms::MsReader& reader : plan.readers)
    for (int s = 0; s < ms::num_stokes; ++s) plan.stokes[s] = plan.stokes[s] || reader.info().stokes_determined[s];
  check_stokes_of_every_channel(plan);
  if (plan.freq_hz.size() >= 2 && plan.polarised())
    plan.num_phi = FaradayStage::planned_axis(plan.data_freq_hz, config.faraday).count;
  plan.geometry = imaging::ImageGeometry::make(config.image.size, config.pixel_scale_rad(),
                                               imaging::oversampling_for(config.image.accuracy, config.image.padding));
  std::vector<std::size_t> input_rows;
  for (const ms::MsReader& reader : plan.readers) input_rows.push_back(static_cast<std::size_t>(reader.info().num_rows));
  for (const ms::BandChannel& channel : plan.band.channels)
    plan.max_visibilities = std::max(plan.max_visibilities, ms::channel_rows(channel, input_rows));
  plan.rows_shared_evenly = plan.band.every_channel_has_all(static_cast<int>(plan.readers.size()));
  plan.products = ProductRegistry(config, {plan.stokes, plan.chan_end - plan.chan_begin, config.image.size, plan.num_phi,
                                                  static_cast<int>(plan.pointings.size())});
  return plan;
}

namespace {

// The group size and why: see decompose().
int group_size(const Config& config, int channels, int ranks, const std::function<bool(int members)>& member_fits,
               std::string& why) {
  const int asked = config.parallel.ranks_per_channel;
  if (asked > 0) {
    if (ranks % asked != 0)
      SPIP_THROW(ConfigError, "parallel.ranks_per_channel = " + std::to_string(asked) + " does not divide the " +
                                  std::to_string(ranks) + (ranks > 1 ? " ranks" : " rank") + "; expected a divisor of " +
                                  std::to_string(ranks));
    why = "parallel.ranks_per_channel = " + std::to_string(asked);
    return asked;
  }
  // Every group busy: as large as the ranks allow without leaving a group idle.
  int size = 1;
  for (int d = 1; d <= ranks; ++d)
    if (ranks % d == 0 && static_cast<long long>(d) * channels <= ranks) size = d;
  why = size > 1 ? std::to_string(ranks) + " ranks for " + std::to_string(channels) + " channel(s): groups of " +
                       std::to_string(size) + " keep every rank busy"
                 : "one rank per channel";
  if (member_fits(size)) return size;
  int shared = size;
  for (int d = size + 1; d <= ranks && !member_fits(shared); ++d)
    if (ranks % d == 0) shared = d;
  why = "a channel does not fit a rank's memory (parallel.memory_gb) or its share of a GPU: groups of " +
        std::to_string(shared) + " share its rows";
  return shared;
}

// A channel's time is a part per visibility and a part per grid cell (the FFTs, grid
// corrections and CLEAN's image work), which a flagged channel does as fully as any:
// docs/scaling.md's a_img = 9.8e-6 s per row and b_img = 9.7e-7 s per cell (a_psf and
// b_psf alike) make a cell cost about a tenth of a visibility. A group's members share the
// visibilities but each does the cells. Balanced on visibilities alone, a rank given
// 90 %-flagged channels took six of eight and 2.6 times the other's time.
std::vector<std::int64_t> channel_work(const std::vector<std::int64_t>& visibilities,
                                       const imaging::ImageGeometry& geometry, int members) {
  const double cells = 0.1 * members * static_cast<double>(geometry.grid_size) * geometry.grid_size;
  std::vector<std::int64_t> work;
  for (std::int64_t n : visibilities) work.push_back(n > 0 ? n + static_cast<std::int64_t>(cells) : 0);
  return work;
}

}  // namespace

void decompose(const Config& config, const std::vector<std::int64_t>& cost, int ranks,
               const std::function<bool(double share)>& fits, Plan& plan) {
  const int channels = static_cast<int>(cost.size());
  const int size =
      group_size(config, channels, ranks, [&](int members) { return fits(plan.member_share(members)); }, plan.grouping);
  const int groups = ranks / size;
  const int per_group = config.parallel.channels_per_rank;
  std::vector<parallel::ChannelBlock> group_blocks = per_group <= 0
                                                          ? parallel::balance_channels(channel_work(cost, plan.geometry, size), groups)
                                                          : parallel::fixed_channel_blocks(channels, per_group, groups);
  if (group_blocks.empty())
    SPIP_THROW(ConfigError, "parallel.channels_per_rank = " + std::to_string(per_group) + " on " +
                                std::to_string(groups) + (size > 1 ? " group" : " rank") + (groups > 1 ? "s" : "") +
                                (size > 1 ? " of ranks" : "") +
                                " cannot hold " + std::to_string(channels) + " channels; expected at least " +
                                std::to_string((channels + groups - 1) / groups));
  plan.ranks_per_channel = size;
  plan.imaged.clear();
  plan.blocks.clear();
  for (int r = 0; r < ranks; ++r) {
    const parallel::ChannelBlock& block = group_blocks[static_cast<std::size_t>(r / size)];
    plan.imaged.push_back(block);
    plan.blocks.push_back(r % size == 0 ? block : parallel::ChannelBlock{block.begin, block.begin});
  }
}

namespace {

// "I, Q, U, V": the Stokes parameters the first input's correlations determine (or not).
std::string stokes_list(const std::array<bool, ms::num_stokes>& stokes, bool determined) {
  std::string list;
  for (int s = 0; s < ms::num_stokes; ++s)
    if (stokes[s] == determined) list += (list.empty() ? "" : ", ") + std::string(1, "IQUV"[s]);
  return list;
}

}  // namespace

Plan make_plan(const Config& config, const parallel::MpiContext& mpi, const Log& log, bool break_claim) {
  // Each rank opens the inputs itself: one that cannot (a path not mounted on its node)
  // says so through rank 0, and every rank stops, instead of the others waiting for it.
  Plan plan;
  std::exception_ptr opening;
  try {
    plan = open_plan(config);
  } catch (...) {
    opening = std::current_exception();
  }
  agree_on_failure(mpi, opening);
  log.root("spip " + std::string(version) + " on " + std::to_string(mpi.size()) + " rank(s): channels [" +
           std::to_string(plan.chan_begin) + ", " + std::to_string(plan.chan_end) + ") of " +
           input_count(plan) + " into " + std::to_string(config.image.size) +
           "^2 images of " + fixed(config.image.scale_arcsec, 2) + "\" in Stokes " + stokes_list(plan.stokes, true) +
           (plan.polarised() ? ", then the Faraday stage" : "") + "; products in " + config.output.dir + " (prefix " +
           config.output.prefix + ")");
  for (const ms::MsReader& reader : plan.readers) {
    const ms::ObservingTime observed = ms::observing_time(reader.info().integrations);
    log.root("input " + ms::input_name(reader.info()) + ": " + std::to_string(reader.info().num_rows) + " rows, " +
             std::to_string(reader.info().num_channels()) + " channels from " +
             fixed(reader.info().freq_hz.front() / 1e6, 4) + " to " + fixed(reader.info().freq_hz.back() / 1e6, 4) +
             " MHz, correlations [" + reader.info().stokes_summary() + "] from " + reader.info().column +
             (std::isfinite(observed.on_source_s)
                  ? "; observed from " + reader.info().date_obs().substr(0, 19) + " UTC over " +
                        duration_text(observed.end_mjd_s - observed.start_mjd_s) + ", " +
                        duration_text(observed.on_source_s) + " on source"
                  : ""));
  }
  // A copy of an MS under another name is the same observation twice: its visibilities
  // would count twice, as a second observation of the same channels would count once
  // more, which spip cannot tell apart from it; the log says where inputs look alike.
  for (std::size_t k = 0; k < plan.readers.size(); ++k)
    for (std::size_t earlier = 0; earlier < k; ++earlier) {
      const ms::MsInfo &a = plan.readers[earlier].info(), &b = plan.readers[k].info();
      if (a.path != b.path && a.num_rows == b.num_rows && a.start_time_mjd_s() == b.start_time_mjd_s() &&
          a.freq_hz == b.freq_hz && a.ra_rad == b.ra_rad && a.dec_rad == b.dec_rad)
        log.root("WARNING: inputs " + ms::input_name(a) + " and " + ms::input_name(b) +
                 " have the same rows, start, channels and phase centre: if one is a copy of the other, every "
                 "visibility counts twice");
    }
  for (const ms::MsReader& reader : plan.readers)
    if (reader.info().askap_instrument_frame)
      log.root("WARNING: input " + ms::input_name(reader.info()) + " is ASKAP's DATA as the observatory writes it: "
               "correlations in the instrument frame with I = XX + YY, which spip takes as sky-frame correlations "
               "with I = (XX + YY) / 2, so every flux is halved and Q and U are mixed; run FixMS's "
               "fix_ms_corrs first (it writes CORRECTED_DATA, which input.column auto reads)");
  for (const std::string& line : sky_lines(plan)) log.root(line);
  log.root("frequency axis: " + std::to_string(plan.band.size()) + " channels from " +
           fixed(plan.freq_hz.front() / 1e6, 4) + " MHz in steps of " + fixed(plan.band.step_hz / 1e3, 3) + " kHz" +
           (plan.band.gaps() > 0 ? ", " + std::to_string(plan.band.gaps()) +
                                       " of them in gaps between the inputs' channels (blank planes)"
                                 : std::string()));
  for (const ms::MsReader& reader : plan.readers)
    if (const std::string line = coarse_input_line(reader.info(), plan.band.step_hz); !line.empty()) log.root(line);
  if (const int off = plan.band.off_centre(); off > 0)
    log.root(std::to_string(off) + " of the bins hold channels off their centre (a gap, the band's end, or bins that do not "
             "divide the channels evenly): the FITS axis "
             "labels each bin at its centre, RM synthesis takes it at its channels' mean frequency");
  std::string correlations;
  for (const ms::MsReader& reader : plan.readers)
    correlations += (correlations.empty() ? "" : "; ") + reader.info().stokes_summary();
  if (const std::string missing = stokes_list(plan.stokes, false); !missing.empty())
    log.root("Stokes " + missing + " not determined by the correlations [" + correlations + "]: no cubes of " + missing +
             (plan.polarised() ? std::string()
                             : ", and no Faraday products (moments, RM synthesis, RM-CLEAN, peak maps, catalogue), "
                               "which need Q and U"));
  // Before hours of imaging, not after: the axis needs only the frequencies. Rank 0's
  // alone, as it alone says them.
  if (plan.num_phi > 0 && mpi.is_root())
    for (const std::string& warning : FaradayStage::axis_warnings(plan.data_freq_hz, config.faraday, data_channels(plan)))
      log.root(warning);
  // Before the FLAG column is read for the channel costs, or anything is written.
  plan.claim = claim_run(config, plan.products, break_claim, mpi, log);
  const RankDevice chosen = choose_rank_device(config, mpi, log);
  const std::optional<cuda::DeviceInfo>& device = chosen.device;
  const parallel::MpiContext::NodeShare& share = chosen.share;
  plan.backend = chosen.backend();
  plan.gpu_device = chosen.index();
  plan.gpu_share_bytes = chosen.share_bytes();
  std::exception_ptr failure;
  const std::vector<std::int64_t> cost = channel_cost(plan, mpi, log);
  // A share of a channel fits a rank when the host memory and, on a GPU, the rank's part
  // of the device hold it: the least of any rank, so that every rank decides alike.
  const MemoryBasis basis{-mpi.max(-memory_budget_bytes(config.parallel, mpi.local_size())),
                          mpi.max(clean_bytes_per_pixel(config.clean, plan.geometry, device.has_value())),
                          imaging_bytes_per_row(config.image, config.clean, plan.geometry)};
  // The least device share of the GPU ranks, which every rank, with a device or not,
  // reaches and plans with, so that a job whose nodes differ decides alike everywhere.
  const double gpu_share = -mpi.max(device ? -static_cast<double>(share.each()) : -std::numeric_limits<double>::infinity());
  const bool any_device = std::isfinite(gpu_share);
  const double clean_device = clean_device_bytes(config.clean, plan.geometry.size);
  const auto fits = [&](double share) {
    const double rows = share * static_cast<double>(plan.max_visibilities);
    return channel_imaging_bytes(plan.geometry, rows,
                                 basis.clean_bytes_per_pixel, basis.row_bytes,
                                 static_cast<int>(plan.pointings.size())) <= basis.budget &&
           (!any_device || static_cast<double>(cuda::DeviceImager::device_bytes(
                           plan.geometry, static_cast<std::size_t>(std::ceil(rows)), weighting_scheme(config))) +
                               clean_device <=
                           gpu_share);
  };
  try {
    decompose(config, cost, mpi.size(), fits, plan);
  } catch (...) {
    failure = std::current_exception();
  }
  agree_on_failure(mpi, failure);
  if (plan.ranks_per_channel > 1) log.root("channels shared by groups of ranks: " + plan.grouping);
  try {
    if (device)
      check_device_share(*device, share, plan.geometry, plan.rank_visibilities(), weighting_scheme(config),
                         clean_device, log);
  } catch (...) {
    failure = std::current_exception();
  }
  agree_on_failure(mpi, failure);
  check_budgets(config, mpi, log, plan);
  check_time(config, mpi, log, plan);
  prepare_output(config, plan.products, plan.memory.kept_spilled, mpi, log);
  return plan;
}

}  // namespace spip::pipeline
