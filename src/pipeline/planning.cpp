#include "planning.hpp"

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <memory>
#include <numbers>
#include <optional>
#include <random>
#include <set>

#include <nlohmann/json.hpp>

#include "channel_imaging.hpp"
#include "faraday_stage.hpp"
#include "products.hpp"
#include "qa.hpp"
#include "run_claim.hpp"
#include "spip/common/constants.hpp"
#include "spip/cuda/device.hpp"
#include "spip/cuda/rm_synthesis.hpp"
#include "spip/error.hpp"
#include "spip/faraday/rm_synthesis.hpp"
#include "spip/fits/fits_image.hpp"
#include "spip/parallel/mpi_context.hpp"
#include "spip/pipeline/log.hpp"
#include "spip/pipeline/pipeline.hpp"
#include "spip/version.hpp"

namespace spip::pipeline {
namespace {

// A Faraday row's bytes, or none where the correlations give no Q and U.
double faraday_row_bytes(const Plan& plan) {
  const int num_chan = plan.chan_end - plan.chan_begin;
  return plan.polarised() ? FaradayStage::bytes_per_pixel(num_chan, plan.num_phi) * plan.geometry.size : 0.0;
}

namespace fs = std::filesystem;

std::vector<ms::MsReader> open_inputs(const Config& config) {
  ms::Selection selection;
  selection.column = config.input.column;
  selection.field = config.input.field;
  selection.spw = config.input.spw;
  selection.row_chunk = static_cast<std::size_t>(config.input.row_chunk);
  std::vector<ms::MsReader> readers;
  std::vector<ms::MsInfo> infos;
  for (const std::string& path : config.input.ms) {
    readers.emplace_back(path, selection);
    for (const ms::MsInfo& earlier : infos)
      if (fs::equivalent(earlier.path, path))
        SPIP_THROW(ConfigError, "input.ms names " + earlier.path + " twice (also as " + path +
                                    "); each Measurement Set once, or its visibilities would count twice");
    infos.push_back(readers.back().info());
  }
  ms::require_same_channels(infos);
  return readers;
}

// A planning step may fail on some ranks only (a node without a GPU, a read error in
// one share of the rows), or on all of them. If any failed, every rank throws a
// JobFailure with the code of the lowest failing rank, and rank 0's holds each
// different message once, so that all ranks leave together and the job says why in
// one line.
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

// Unflagged visibilities per imaged channel over every input MS: the cost that the
// channel blocks balance. Each rank counts a share of the rows and one all-reduce adds
// them, so the FLAG column is read once per job, not once per rank.
std::vector<std::int64_t> channel_cost(const std::vector<ms::MsReader>& readers, int begin, int end,
                                       const parallel::MpiContext& mpi) {
  std::vector<std::int64_t> cost(static_cast<std::size_t>(end - begin), 0);
  for (const ms::MsReader& reader : readers) {
    const std::int64_t rows = reader.info().num_rows;
    std::vector<std::int64_t> counts;
    std::exception_ptr failure;
    try {
      counts = reader.unflagged_per_channel(rows * mpi.rank() / mpi.size(), rows * (mpi.rank() + 1) / mpi.size());
    } catch (...) {
      failure = std::current_exception();
    }
    agree_on_failure(mpi, failure);
    mpi.sum_all(counts);
    ms::require_unflagged(reader.info(), counts);
    for (int c = begin; c < end; ++c) cost[c - begin] += counts[c];
  }
  return cost;
}

// The GPU this rank images on, if any: local rank modulo the visible devices
// (CUDA_VISIBLE_DEVICES, which Slurm's --gpus-per-task sets per task).
std::optional<cuda::DeviceInfo> choose_device(const Config& config, int local_rank, const Log& log) {
  const Device requested = config.parallel.device;
  if (requested == Device::cpu) return std::nullopt;
  const cuda::DeviceProbe probe = cuda::probe_devices();
  if (probe.devices.empty()) {
    if (requested == Device::gpu)
      SPIP_THROW(ConfigError, "parallel.device = gpu but no usable GPU: " + probe.reason);
    log.info("no GPU (" + probe.reason + "); using the CPU backend");
    return std::nullopt;
  }
  return probe.devices[static_cast<std::size_t>(local_rank) % probe.devices.size()];
}

// Checks that this rank's share of its GPU holds the imaging plan.
void check_device_share(const cuda::DeviceInfo& device, const parallel::MpiContext::NodeShare& share,
                        const imaging::ImageGeometry& geometry, std::size_t max_visibilities,
                        const imaging::WeightingScheme& scheme, const Log& log) {
  const std::size_t needed = cuda::ChannelImager::device_bytes(geometry, max_visibilities, scheme);
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
  const int num_chan = plan.chan_end - plan.chan_begin;
  std::exception_ptr failure;
  try {
    MemoryNeeds needs;
    needs.budget = memory_budget_bytes(config.parallel, mpi.local_size());
    needs.geometry = plan.geometry;
    // What the reader keeps of a channel (the selected field and window, unflagged),
    // not every row of the main table.
    needs.rows_per_channel = static_cast<double>(plan.busiest_channel);
    needs.my_channels = plan.blocks[static_cast<std::size_t>(mpi.rank())].size();
    needs.block_channels = config.input.block_channels;
    needs.faraday_row_bytes = faraday_row_bytes(plan);
    plan.memory = plan_memory(needs);
    if (mpi.is_root())
      require_disk_space(config.output.dir,
                         product_bytes(make_cube_set(config, plan).paths(), num_chan,
                                       static_cast<double>(plan.geometry.pixels()), plan.num_phi, config.faraday));
  } catch (...) {
    failure = std::current_exception();
  }
  agree_on_failure(mpi, failure);
  log.root(plan.memory.describe() + " (rank 0)");
}

// The rank with the most channels, and the most image rows of a Faraday slab.
struct SlowestRank {
  int channels = 0;
  double slab_pixels = 0;
};

// Rows of one rank's Faraday slab, as pixels.
double slab_pixels(int rank, int ranks, const imaging::ImageGeometry& geometry) {
  const auto [first, last] = FaradayStage::slab_rows(rank, ranks, geometry.size);
  return static_cast<double>(last - first) * geometry.size;
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

// With parallel.time_limit (what is left of the job's time before its warning), a run
// that could never finish would only be requeued for ever: one whose slowest rank
// cannot image a channel in one start (after set-up and the PSFs of all its channels),
// or cannot do its share of the Faraday stage, which starts again from its beginning
// when stopped. Such a run stops here; one that needs several starts says how many.
// Rank 0 times the rates for every rank on its CPU, so a GPU run is only told.
void check_time(const Config& config, const parallel::MpiContext& mpi, const Log& log, const Plan& plan) {
  const double limit = config.parallel.time_limit;
  if (!(limit > 0)) return;
  std::exception_ptr failure;
  try {
    if (mpi.is_root()) {
      const CostRates rates = measure_rates(config, plan);
      const SlowestRank slowest = slowest_rank(plan.blocks, plan.geometry);
      const double first = rates.setup_s + rates.create_s + rates.image_channel_s;
      const double faraday = rates.setup_s + slowest.slab_pixels * rates.faraday_pixel_s;
      const double total = rank_seconds(rates, slowest.channels, slowest.slab_pixels);
      const std::string problem =
          first > limit ? "a rank with " + std::to_string(slowest.channels) + " channels needs about " +
                              fixed(first, 0) + " s to finish its first channel (set-up " + fixed(rates.setup_s, 1) +
                              " s, imaging " + fixed(rates.image_channel_s, 2) + " s per channel)"
          : faraday > limit ? "a rank's share of the Faraday stage (" + fixed(slowest.slab_pixels, 0) +
                                  " pixels) needs about " + fixed(faraday, 0) + " s in one start"
                            : std::string();
      if (!problem.empty() && plan.gpu_device < 0)
        SPIP_THROW(ConfigError, problem + ", but parallel.time_limit is " + fixed(limit, 0) +
                                    " s; ask for more time or more ranks");
      log.root("estimated " + fixed(total, 0) + " s on the slowest rank (CPU rates) against parallel.time_limit " +
               fixed(limit, 0) + " s" +
               (!problem.empty() ? "; on the CPU " + problem
                : total > limit  ? "; the run will stop before the limit and resume, in about " +
                                      std::to_string(static_cast<int>(std::ceil(total / limit))) + " starts"
                                 : std::string()));
    }
  } catch (...) {
    failure = std::current_exception();
  }
  agree_on_failure(mpi, failure);
}

// Rank 0's claim on the output folder and prefix.
std::unique_ptr<RunClaim> claim_run(const Config& config, bool break_claim, const parallel::MpiContext& mpi,
                                    const Log& log) {
  std::unique_ptr<RunClaim> claim;
  std::exception_ptr failure;
  std::string cleared;
  if (mpi.is_root()) try {
      claim = std::make_unique<RunClaim>(config.output.dir, config.output.prefix, break_claim, cleared);
    } catch (...) {
      failure = std::current_exception();
    }
  agree_on_failure(mpi, failure);
  if (!cleared.empty()) log.root("cleared the claim of " + cleared);
  return claim;
}

// The effective configuration next to the products, once the run is known to start.
void write_effective_config(const Config& config, const parallel::MpiContext& mpi, const Log& log) {
  std::exception_ptr failure;
  const std::string path = (fs::path(config.output.dir) / (config.output.prefix + "-config.ini")).string();
  try {
    if (mpi.is_root()) {
      fs::create_directories(config.output.dir);
      write_text_atomically(path, to_ini(config));
    }
  } catch (...) {
    failure = std::current_exception();
  }
  agree_on_failure(mpi, failure);
  log.root("effective configuration in " + path);
}

// What the metadata says, the same for a run and for --plan: the inputs, the imaged
// channels and their Faraday depths, the image and grid.
Plan open_plan(const Config& config) {
  Plan plan;
  plan.readers = open_inputs(config);
  if (!config.faraday.ionosphere.empty()) plan.ionosphere = ms::IonosphereTable::read(config.faraday.ionosphere);
  const ms::MsInfo& info = plan.readers.front().info();
  const int band = info.num_channels();
  plan.chan_begin = config.input.channel_begin;
  plan.chan_end = config.input.channel_end < 0 ? band : config.input.channel_end;
  if (plan.chan_end > band || plan.chan_begin >= plan.chan_end)
    SPIP_THROW(InputError, info.path + ": input.channel_begin/channel_end = [" + std::to_string(plan.chan_begin) +
                               ", " + std::to_string(plan.chan_end) + ") is outside the band of " +
                               std::to_string(band) + " channels");
  plan.freq_hz.assign(info.freq_hz.begin() + plan.chan_begin, info.freq_hz.begin() + plan.chan_end);
  for (const ms::MsReader& reader : plan.readers)
    for (int s = 0; s < ms::num_stokes; ++s) plan.stokes[s] = plan.stokes[s] || reader.info().stokes_determined[s];
  if (plan.freq_hz.size() >= 2 && plan.polarised())
    plan.num_phi = FaradayStage::planned_axis(plan.freq_hz, config.faraday).count;
  plan.geometry = imaging::ImageGeometry::make(config.image.size, config.pixel_scale_rad(),
                                               imaging::oversampling_for(config.image.accuracy, config.image.padding));
  for (const ms::MsReader& reader : plan.readers) plan.max_visibilities += static_cast<std::size_t>(reader.info().num_rows);
  return plan;
}

// Contiguous channel blocks for `ranks` ranks: parallel.channels_per_rank each, or
// balanced by `cost` per channel.
std::vector<parallel::ChannelBlock> channel_blocks(const Config& config, const std::vector<std::int64_t>& cost,
                                                   int ranks) {
  const int per_rank = config.parallel.channels_per_rank;
  if (per_rank <= 0) return parallel::balance_channels(cost, ranks);
  const int channels = static_cast<int>(cost.size());
  std::vector<parallel::ChannelBlock> blocks = parallel::fixed_channel_blocks(channels, per_rank, ranks);
  if (blocks.empty())
    SPIP_THROW(ConfigError, "parallel.channels_per_rank = " + std::to_string(per_rank) + " on " +
                                std::to_string(ranks) + " ranks cannot hold " + std::to_string(channels) +
                                " channels; expected at least " + std::to_string((channels + ranks - 1) / ranks));
  return blocks;
}

// "I, Q, U, V": the Stokes parameters the first input's correlations determine (or not).
std::string stokes_list(const std::array<bool, ms::num_stokes>& stokes, bool determined) {
  std::string list;
  for (int s = 0; s < ms::num_stokes; ++s)
    if (stokes[s] == determined) list += (list.empty() ? "" : ", ") + std::string(1, "IQUV"[s]);
  return list;
}

}  // namespace

Plan make_plan(const Config& config, const parallel::MpiContext& mpi, const Log& log, bool break_claim) {
  Plan plan = open_plan(config);
  const ms::MsInfo& info = plan.readers.front().info();
  const int band = info.num_channels();
  log.root("spip " + std::string(version) + " on " + std::to_string(mpi.size()) + " rank(s): channels [" +
           std::to_string(plan.chan_begin) + ", " + std::to_string(plan.chan_end) + ") of " +
           std::to_string(plan.readers.size()) + " Measurement Set(s) into " + std::to_string(config.image.size) +
           "^2 images of " + fixed(config.image.scale_arcsec, 2) + "\" in Stokes " + stokes_list(plan.stokes, true) +
           (plan.polarised() ? ", then the Faraday stage" : "") + "; products in " + config.output.dir + " (prefix " +
           config.output.prefix + ")");
  for (const ms::MsReader& reader : plan.readers)
    log.root("input " + reader.info().path + ": " + std::to_string(reader.info().num_rows) + " rows, " +
             std::to_string(band) + " channels, correlations [" + reader.info().stokes_summary() + "]");
  std::string correlations;
  for (const ms::MsReader& reader : plan.readers)
    correlations += (correlations.empty() ? "" : "; ") + reader.info().stokes_summary();
  if (const std::string missing = stokes_list(plan.stokes, false); !missing.empty())
    log.root("Stokes " + missing + " not determined by the correlations [" + correlations + "]: no cubes of " + missing +
             (plan.polarised() ? std::string()
                             : ", and no Faraday products (moments, RM synthesis, RM-CLEAN, peak maps, catalogue), "
                               "which need Q and U"));
  // Before the FLAG column is read for the channel costs, or anything is written.
  plan.claim = claim_run(config, break_claim, mpi, log);
  std::optional<cuda::DeviceInfo> device;
  std::exception_ptr failure;
  try {
    device = choose_device(config, mpi.local_rank(), log);
    // Makes this rank's CUDA context, which its GPU's share must not count as free.
    if (device) cuda::free_memory_bytes(device->index);
  } catch (...) {
    failure = std::current_exception();
  }
  agree_on_failure(mpi, failure);
  const parallel::MpiContext::NodeShare share = mpi.share_on_node(
      device ? device->pci_address : -1, [&] { return device ? cuda::free_memory_bytes(device->index) : 0; });
  try {
    if (device)
      check_device_share(*device, share, plan.geometry, plan.max_visibilities, weighting_scheme(config), log);
  } catch (...) {
    failure = std::current_exception();
  }
  agree_on_failure(mpi, failure);
  plan.backend = device ? "gpu " + std::to_string(device->index) : "cpu";
  plan.gpu_device = device ? device->index : -1;
  plan.gpu_share_bytes = device ? share.each() : 0;
  const std::vector<std::int64_t> cost = channel_cost(plan.readers, plan.chan_begin, plan.chan_end, mpi);
  plan.busiest_channel = *std::max_element(cost.begin(), cost.end());
  plan.blocks = channel_blocks(config, cost, mpi.size());
  check_budgets(config, mpi, log, plan);
  check_time(config, mpi, log, plan);
  write_effective_config(config, mpi, log);
  return plan;
}


imaging::WeightingScheme weighting_scheme(const Config& config) {
  imaging::WeightingScheme scheme;
  scheme.mode = config.image.weighting;
  scheme.robust = config.image.robust;
  scheme.uv_min = config.image.uv_min;
  scheme.uv_max = config.image.uv_max;
  scheme.taper_fwhm_rad = config.image.taper_arcsec / rad_to_arcsec;
  return scheme;
}

namespace {

// A previous run's QA as this version's typed records.
struct PreviousQa {
  RunQa run;
  std::vector<ChannelQa> channels;
  std::vector<RankQa> ranks;
};

PreviousQa read_qa(const std::string& path) {
  std::ifstream in(path);
  if (!in) SPIP_THROW(InputError, path + ": cannot open the previous run's qa.json");
  nlohmann::ordered_json qa;
  try {
    qa = nlohmann::ordered_json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    SPIP_THROW(InputError, path + ": not a spip qa.json: " + e.what());
  }
  if (!qa.is_object() || qa.value("spip_qa_version", 0) != qa_version)
    SPIP_THROW(InputError, path + ": not the qa.json of this spip (spip_qa_version " + std::to_string(qa_version) +
                               "); run the few channels again to time them");
  try {
    return PreviousQa{qa.at("run").get<RunQa>(), qa.at("channels").get<std::vector<ChannelQa>>(),
                      qa.at("ranks").get<std::vector<RankQa>>()};
  } catch (const nlohmann::json::exception& e) {
    SPIP_THROW(InputError, path + ": a record of this qa.json is incomplete: " + e.what());
  }
}

// A channel at `freq_hz` with a 1 Jy point source at the phase centre and unit
// weights before the configured weighting, written into `out`.
void write_synthetic_channel(const Config& config, const Plan& plan, const std::vector<double>& uvw_m, double freq_hz,
                             const cuda::ChannelView& out) {
  std::fill_n(out.vis, ms::num_stokes * out.rows, std::complex<float>{0.0f, 0.0f});
  for (std::size_t r = 0; r < out.rows; ++r) out.vis[ms::num_stokes * r + ms::stokes_i] = {1.0f, 0.0f};
  std::fill_n(out.weights, ms::num_stokes * out.rows, 1.0f);
  imaging::apply_weighting(plan.geometry, weighting_scheme(config), uvw_m.data(), freq_hz / speed_of_light, out.rows,
                           ms::num_stokes, out.weights);
}

// RM synthesis and RM-CLEAN of noise spectra (most pixels of a real field hold only
// noise) on the run's Faraday depth axis, per pixel.
double faraday_seconds_per_pixel(const Config& config, const std::vector<double>& freq_hz) {
  constexpr int pixels = 4096;
  const std::vector<double> weight(freq_hz.size(), 1.0);
  const faraday::SynthesisSetup setup = faraday::make_setup(freq_hz, weight, config.faraday);
  const int num_chan = static_cast<int>(freq_hz.size());
  const double sigma = 1.0 / std::sqrt(static_cast<double>(num_chan));  // of the FDF, unit channel noise
  const FaradayConfig& f = config.faraday;
  const faraday::SpectrumSettings settings = faraday::spectrum_settings(
      setup, sigma, {f.rmclean_gain, f.rmclean_cutoff * sigma, f.rmclean_niter, f.rmclean_xcorr});
  std::mt19937 random(1);
  std::normal_distribution<float> noise(0.0f, 1.0f);
  std::vector<std::complex<float>> p(static_cast<std::size_t>(num_chan) * pixels);
  for (auto& value : p) value = {noise(random), noise(random)};
  const std::vector<std::complex<float>> a = faraday::synthesis_matrix(setup, setup.axis);
  const std::vector<std::complex<float>> rmsf = faraday::rmsf_for_clean(setup);
  const Stopwatch watch;
  faraday::synthesise_slab(a, num_chan, p.data(), pixels, rmsf, settings);
  return watch.seconds() / pixels;
}

// Bytes per second with which this process writes products to the file system of
// `dir`, timed on a 64 MiB scratch cube written as the depth cubes are: created filled,
// then written in row groups over all planes. The cube is removed.
double write_rate(const std::string& dir) {
  const fs::path existing = nearest_existing(dir);
  const std::string scratch = (existing / (".spip-plan-write-rate-" + std::to_string(getpid()) + ".fits")).string();
  fits::ImageHeader header;
  header.nx = header.ny = 256;
  header.cell_rad = 1e-5;
  header.spectral = fits::LinearAxis{"FDEP", "rad/m^2", 0, 1, 1, 256};
  const std::vector<float> rows(static_cast<std::size_t>(header.nx) * 64 * 256, 1.0f);
  const Stopwatch watch;
  fits::CubeFile::create(scratch, header);
  for (int row = 0; row < header.ny; row += 64) fits::CubeFile::write_rows(scratch, row, rows);
  const double seconds = watch.seconds();
  std::error_code error;
  fs::remove(fits::CubeFile::partial_path(scratch), error);
  return 2 * 4.0 * header.nx * header.ny * 256 / seconds;
}

}  // namespace

std::vector<double> inputs_uvw_m(const Plan& plan) {
  std::vector<double> uvw;
  for (const ms::MsReader& reader : plan.readers) {
    const std::vector<double> rows = reader.uvw_m();
    uvw.insert(uvw.end(), rows.begin(), rows.end());
  }
  return uvw;
}

CostRates measure_rates(const Config& config, const Plan& plan) {
  CostRates rates;
  const std::vector<double> uvw_m = inputs_uvw_m(plan);
  const double freq_hz = plan.freq_hz[plan.freq_hz.size() / 2];
  const Stopwatch setup;
  ChannelImaging imaging(plan.geometry, config.image, weighting_scheme(config), -1, uvw_m.size() / 3);
  rates.setup_s = setup.seconds();
  imaging.set_uvw(uvw_m);
  write_synthetic_channel(config, plan, uvw_m, freq_hz, imaging.stage_area());
  imaging.stage(freq_hz);
  imaging.next();

  // A dirty image (and PSF), then one with a single major cycle: their difference is a
  // major cycle's cost (predict, re-grid, the minor cycles). How many a channel takes
  // depends on the sky, not on this noiseless point source.
  CleanConfig clean = config.clean;
  clean.niter = 0;
  imaging.image(clean);  // first touch of the grids and tables
  const Stopwatch dirty;
  imaging.image(clean);
  const double dirty_s = dirty.seconds();
  double major_s = 0;
  if (config.clean.niter > 0) {
    clean = config.clean;
    clean.max_major = 1;
    const Stopwatch major;
    imaging.image(clean);
    major_s = std::max(0.0, major.seconds() - dirty_s);
  }
  const double cycles = config.clean.niter > 0 ? std::min<double>(default_major_cycles, config.clean.max_major) : 0;
  rates.image_channel_s = dirty_s + cycles * major_s;
  rates.from = "timed here on the CPU (a synthetic channel with the inputs' UVW; " + fixed(cycles, 0) +
               " major cycles per channel assumed)";

  const int num_chan = plan.chan_end - plan.chan_begin;
  const double pixels = static_cast<double>(plan.geometry.pixels());
  const double fdf_planes = static_cast<double>(config.faraday.cubes.size()) * plan.num_phi;
  const double rate = write_rate(config.output.dir);
  const double channel_cubes = static_cast<double>(
      make_cube_set(config, plan).paths().size());
  // Rank 0 creates every product filled; the Faraday stage reads the restored I, Q, U, V
  // of every channel (from the page cache: counted as cheaply as written) and writes 20
  // moments, the depth cubes and the pixel maps per pixel.
  const double images = plan.polarised() ? 20 + faraday::pixel_map_count : 0;
  rates.create_s = 4 * pixels * (channel_cubes * num_chan + images + fdf_planes) / rate;
  // Restoring with a common beam reads a channel's model and residual planes back and
  // writes its restored ones: 12 planes, read as cheaply as written.
  if (config.clean.niter > 0 && config.image.common_beam) rates.restore_channel_s = 4 * pixels * 12 / rate;
  rates.faraday_pixel_s = plan.polarised() ? 4 * (4.0 * num_chan + images + fdf_planes) / rate : 0.0;
  if (plan.num_phi > 0) rates.faraday_pixel_s += faraday_seconds_per_pixel(config, plan.freq_hz);
  return rates;
}

CostRates rates_from_qa(const std::string& path, const Config& config, const Plan& plan) {
  const PreviousQa qa = read_qa(path);
  CostRates rates;
  rates.setup_s = qa.run.setup_s;
  rates.create_s = qa.run.create_s;
  double restore_s = 0, owned = 0, image_s = 0;
  int channels = 0;
  for (const RankQa& rank : qa.ranks) {
    restore_s += rank.restore_s;
    owned += rank.channel_end - rank.channel_begin;
  }
  for (const ChannelQa& channel : qa.channels)
    if (channel.image_s > 0) {
      image_s += channel.image_s;
      ++channels;
    }
  if (owned == 0 || channels == 0) SPIP_THROW(InputError, path + ": no imaged channel to take rates from");
  rates.restore_channel_s = restore_s / owned;
  rates.image_channel_s = image_s / channels;
  const int previous_channels = qa.run.channels;
  const int num_chan = plan.chan_end - plan.chan_begin;
  rates.create_s *= static_cast<double>(num_chan) / previous_channels;
  rates.faraday_pixel_s = qa.run.faraday_s * qa.run.ranks / static_cast<double>(qa.run.image_pixels);
  if (num_chan > previous_channels && previous_channels >= 2)
    rates.faraday_pixel_s +=
        faraday_seconds_per_pixel(config, plan.freq_hz) -
        faraday_seconds_per_pixel(config, std::vector<double>(plan.freq_hz.begin(), plan.freq_hz.begin() + previous_channels));
  rates.from = "measured by the run of " + path + " (" + std::to_string(previous_channels) + " channels)";
  return rates;
}

double rank_seconds(const CostRates& rates, int channels, double pixels) {
  return rates.setup_s + rates.create_s + channels * (rates.image_channel_s + rates.restore_channel_s) +
         pixels * rates.faraday_pixel_s;
}

namespace {

std::string clock_time(double seconds) {
  const long total = static_cast<long>(std::ceil(seconds));
  char text[32];
  std::snprintf(text, sizeof text, "%ld:%02ld:%02ld", total / 3600, total / 60 % 60, total % 60);
  return text;
}

std::string gb(double bytes) { return fixed(bytes / 1e9, bytes < 1e8 ? 3 : 2) + " GB"; }

// How the GPU columns apply, and how many ranks one of this machine's GPUs would take
// (a run splits each GPU's free memory evenly between the ranks of its node on it).
std::string device_plan(const cuda::DeviceProbe& probe, double rank_bytes) {
  std::string text =
      "GPU columns: a rank's device memory while imaging and for its largest Faraday row group (a run shrinks the\n"
      "groups to the rank's share of its GPU); the times are the CPU backend's\n";
  if (probe.devices.empty()) return text + "no GPU here (" + probe.reason + ") to fit ranks to\n";
  const cuda::DeviceInfo& device = probe.devices.front();
  const double total = static_cast<double>(device.memory_bytes);
  constexpr double context_bytes = 512.0 * (1 << 20);  // a CUDA context on a current GPU, about
  return text + "GPU " + std::to_string(device.index) + " here (" + device.name + ", " + gb(total) +
         ") holds up to " + std::to_string(static_cast<long>(total / (rank_bytes + context_bytes))) +
         " such ranks, with 0.5 GiB for each one's CUDA context\n";
}

}  // namespace

void print_plan(const Config& config, const PlanRequest& request, int mpi_ranks, std::ostream& out) {
  const int ranks = request.ranks > 0 ? request.ranks : mpi_ranks;
  // Without parallel.threads, the ranks share this machine's cores, as they would in a
  // run here; for other nodes, set parallel.threads to the intended --cpus-per-task.
  omp_set_num_threads(config.parallel.threads > 0 ? config.parallel.threads : std::max(1, omp_get_num_procs() / ranks));
  const int threads = omp_get_max_threads();
  Plan plan = open_plan(config);
  const int num_chan = plan.chan_end - plan.chan_begin;
  const int num_phi = plan.num_phi;
  // From the metadata alone every row counts in every channel; a run balances the
  // unflagged visibilities, which it counts from FLAG.
  const std::vector<std::int64_t> uniform(static_cast<std::size_t>(num_chan), 1);
  plan.blocks = channel_blocks(config, uniform, ranks);

  out << "spip " << version << " plan: " << ranks << " rank(s) of " << threads << " OpenMP thread(s); channels ["
      << plan.chan_begin << ", " << plan.chan_end << ") of " << plan.readers.size() << " Measurement Set(s), "
      << plan.max_visibilities << " rows per channel; " << plan.geometry.size << "^2 pixels on a "
      << plan.geometry.grid_size << "^2 grid; " << num_phi << " Faraday depths\n";
  const CostRates rates =
      request.previous_qa.empty() ? measure_rates(config, plan) : rates_from_qa(request.previous_qa, config, plan);
  out << "rates " << rates.from << ":\n  set-up " << fixed(rates.setup_s, 2) << " s; per channel: image and CLEAN "
      << fixed(rates.image_channel_s, 3) << " s, restore " << fixed(rates.restore_channel_s, 3)
      << " s; Faraday stage " << fixed(rates.faraday_pixel_s * 1e6, 2) << " us per pixel; products created by rank 0 in "
      << fixed(rates.create_s, 2) << " s\n\n";

  const cuda::DeviceProbe probe = cuda::probe_devices();
  const bool gpu = probe.backend_built && config.parallel.device != Device::cpu;
  const double gpu_imaging =
      gpu ? static_cast<double>(
                cuda::ChannelImager::device_bytes(plan.geometry, plan.max_visibilities, weighting_scheme(config)))
          : 0;
  char line[256];
  std::snprintf(line, sizeof line, "%5s %15s %14s %12s %12s %12s %12s %12s\n", "rank", "channels", "visibilities",
                "host memory", "Faraday mem", gpu ? "GPU imaging" : "", gpu ? "GPU Faraday" : "", "est. time");
  out << line;
  double peak_bytes = 0, slowest_s = 0, gpu_peak = gpu_imaging;
  for (int r = 0; r < ranks; ++r) {
    const parallel::ChannelBlock& block = plan.blocks[static_cast<std::size_t>(r)];
    MemoryNeeds needs;
    needs.budget = memory_budget_bytes(config.parallel, ranks);
    needs.geometry = plan.geometry;
    needs.rows_per_channel = static_cast<double>(plan.max_visibilities);
    needs.my_channels = block.size();
    needs.block_channels = config.input.block_channels;
    needs.faraday_row_bytes = faraday_row_bytes(plan);
    const MemoryPlan memory = plan_memory(needs);
    const double host = memory.imaging + memory.channel_data + 2 * memory.block;
    const double seconds = rank_seconds(rates, block.size(), slab_pixels(r, ranks, plan.geometry));
    const auto [y0, y1] = FaradayStage::slab_rows(r, ranks, plan.geometry.size);
    const int group_rows =
        FaradayStage::group_rows(memory.faraday_group, num_chan, num_phi, plan.geometry.size, y1 - y0, 0);
    const double gpu_faraday =
        gpu && num_phi > 0 ? static_cast<double>(cuda::slab_bytes(num_phi, num_chan, group_rows * plan.geometry.size))
                           : 0;
    gpu_peak = std::max(gpu_peak, gpu_faraday);
    peak_bytes = std::max(peak_bytes, host + memory.faraday_group);
    slowest_s = std::max(slowest_s, seconds);
    char channels[48];
    std::snprintf(channels, sizeof channels, "[%d, %d)", plan.chan_begin + block.begin, plan.chan_begin + block.end);
    std::snprintf(line, sizeof line, "%5d %15s %14.0f %12s %12s %12s %12s %12s\n", r, channels,
                  static_cast<double>(block.size()) * static_cast<double>(plan.max_visibilities), gb(host).c_str(),
                  gb(memory.faraday_group).c_str(), gpu ? gb(gpu_imaging).c_str() : "",
                  gpu ? gb(gpu_faraday).c_str() : "", clock_time(seconds).c_str());
    out << line;
  }
  const double disk =
      product_bytes(make_cube_set(config, plan).paths(), num_chan,
                    static_cast<double>(plan.geometry.pixels()), num_phi, config.faraday);
  out << "\nproducts: " << gb(disk) << " in " << config.output.dir << "\n";
  if (gpu) out << device_plan(probe, gpu_peak);
  out << "wall time at other rank counts:";
  for (int n = 1; n <= num_chan; n *= 2) {
    const SlowestRank slowest = slowest_rank(parallel::balance_channels(uniform, n), plan.geometry);
    out << " " << n << ": " << clock_time(rank_seconds(rates, slowest.channels, slowest.slab_pixels)) << ";";
  }
  // Slurm counts memory in MiB. A quarter more memory than planned; for the time, ten
  // minutes for the warning before the limit and the margins that docs/benchmarks.md
  // measured: rates timed here came to 0.6-0.7 of a run, a short run's to 0.7-1.0.
  const long mem_per_cpu_mb = static_cast<long>(std::ceil(1.25 * peak_bytes / threads / (1 << 20)));
  const double margin = request.previous_qa.empty() ? 2.0 : 1.5;
  out << "\n\nsuggested: sbatch --ntasks=" << ranks << " --cpus-per-task=" << threads << " --mem-per-cpu="
      << mem_per_cpu_mb << "M --time=" << clock_time(margin * slowest_s + 600) << " slurm/one-node.sbatch "
      << (config.config_file.empty() ? std::string("CONFIG") : config.config_file) << " " << config.output.dir << "\n";
}

}  // namespace spip::pipeline
