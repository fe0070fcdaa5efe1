#include "spip/planning/cost_rates.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>

#include <nlohmann/json.hpp>

#include "spip/common/constants.hpp"
#include "spip/common/free_space.hpp"
#include "spip/error.hpp"
#include "spip/faraday/moments.hpp"
#include "spip/faraday/rm_synthesis.hpp"
#include "spip/fits/fits_image.hpp"
#include "spip/imaging/beam.hpp"
#include "spip/job/log.hpp"
#include "spip/job/qa.hpp"
#include "spip/stages/channel_cubes.hpp"
#include "spip/stages/imaging_stage.hpp"

namespace spip::pipeline {

namespace fs = std::filesystem;

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
  int version = 0;
  try {
    qa = nlohmann::ordered_json::parse(in);
    version = qa.is_object() ? qa.value("spip_qa_version", 0) : 0;
  } catch (const nlohmann::json::exception& e) {
    SPIP_THROW(InputError, path + ": not a spip qa.json: " + e.what());
  }
  if (version != qa_version)
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
                             const imaging::ChannelView& out) {
  std::copy(uvw_m.begin(), uvw_m.end(), out.uvw_m);
  std::fill_n(out.vis, ms::num_stokes * out.rows, std::complex<float>{0.0f, 0.0f});
  for (std::size_t r = 0; r < out.rows; ++r) out.vis[ms::num_stokes * r + ms::stokes_i] = {1.0f, 0.0f};
  std::fill_n(out.weights, ms::num_stokes * out.rows, 1.0f);
  imaging::apply_weighting(plan.geometry, weighting_scheme(config), uvw_m.data(), freq_hz / speed_of_light, out.rows,
                           ms::num_stokes, out.weights);
}

// The Faraday stage's work per pixel on noise spectra (most pixels of a real field hold
// only noise), on the run's Faraday depth axis, over 4096 pixels: enough blocks for every
// thread. It times what each row group does beside reading and writing: the moments of
// I, V, Q, U and P (a pass over the channels each), where the run makes residuals each
// pixel's FDF noise from them (twice with faraday.fractional: as imaged and as flattened), and
// RM synthesis with RM-CLEAN; RM synthesis alone once took a third of the stage (a
// survey trial's plan was 9 times short). An axis longer than sampled_depths (the demo's
// has 241) is timed on its central depths and scaled by its length, as synthesis and each
// RM-CLEAN pass go; a longer noise spectrum also holds more peaks above the cutoff, so for
// it this is a lower bound (but one that --plan can make: the whole axis took 51 GB at
// 1.56 million depths).
double faraday_seconds_per_pixel(const Config& config, const std::vector<double>& freq_hz, bool residuals) {
  constexpr int pixels = 4096, sampled_depths = 1025;
  const std::vector<double> weight(freq_hz.size(), 1.0);
  faraday::SynthesisSetup setup = faraday::make_setup(freq_hz, weight, config.faraday);
  const double axis_scale = std::max(1.0, static_cast<double>(setup.axis.count) / sampled_depths);
  setup.axis.count = std::min(setup.axis.count, sampled_depths);
  setup.axis.phi_first = -0.5 * (setup.axis.count - 1) * setup.axis.dphi;
  const int num_chan = static_cast<int>(freq_hz.size());
  const double sigma = 1.0 / std::sqrt(static_cast<double>(num_chan));  // of the FDF, unit channel noise
  const FaradayConfig& f = config.faraday;
  const faraday::SpectrumSettings settings = faraday::spectrum_settings(
      setup, sigma, {f.rmclean_gain, f.rmclean_cutoff * sigma, f.rmclean_niter, f.rmclean_xcorr});
  std::mt19937 random(1);
  std::normal_distribution<float> noise(0.0f, 1.0f);
  std::vector<float> q(static_cast<std::size_t>(num_chan) * pixels), u(q.size());
  for (std::size_t k = 0; k < q.size(); ++k) {
    q[k] = noise(random);
    u[k] = noise(random);
  }
  std::vector<std::complex<float>> p(q.size());
  for (std::size_t k = 0; k < p.size(); ++k) p[k] = {q[k], u[k]};
  const std::vector<std::complex<float>> a = faraday::synthesis_matrix(setup, setup.axis);
  const std::vector<std::complex<float>> rmsf = faraday::rmsf_for_clean(setup);
  const std::vector<double> channel_sigma(freq_hz.size(), 1.0);
  const std::vector<float> expected(pixels, static_cast<float>(sigma));
  std::vector<float> alpha(pixels, -0.7f);
  std::vector<double> log_nu_ratio;
  for (double nu : freq_hz) log_nu_ratio.push_back(std::log(nu / freq_hz[freq_hz.size() / 2]));
  const Stopwatch moments;
  for (int quantity = 0; quantity < 5; ++quantity) {
    faraday::PowerSums sums(pixels);
    for (int c = 0; c < num_chan; ++c) sums.add((quantity % 2 ? u : q).data() + static_cast<std::size_t>(c) * pixels, 1.0);
    faraday::moments(sums);
  }
  const double moments_s = moments.seconds();
  const Stopwatch depths;  // what grows with the axis
  if (residuals) {
    faraday::residual_noise(setup, a, {q.data(), u.data(), pixels, {}, q.data(), u.data()}, channel_sigma, expected, 5);
    if (f.fractional)
      faraday::residual_noise(setup, a, {q.data(), u.data(), pixels, {&alpha, &log_nu_ratio}, q.data(), u.data()},
                              channel_sigma, expected, 5);
  }
  faraday::synthesise_slab(a, num_chan, p.data(), pixels, rmsf, settings);
  return (moments_s + depths.seconds() * axis_scale) / pixels;
}

// Bytes per second with which this process writes products to the file system of
// `dir`, timed on a 64 MiB scratch cube written as the depth cubes are: created with
// its header only, then written with MPI-IO in row groups over all planes. The cube is
// removed.
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
  CubeWriter writer;
  for (int row = 0; row < header.ny; row += 64) writer.rows(scratch, row, rows);
  writer.close();
  const double seconds = watch.seconds();
  std::error_code error;
  fs::remove(fits::CubeFile::partial_path(scratch), error);
  return 4.0 * header.nx * header.ny * 256 / seconds;
}

// The coordinates of the image channel with the most rows, part after part, as a run
// stages it (at the parts' own frequencies only a scale apart, which costs nothing here);
// in a mosaic, of that channel's pointing with the most rows, which a run images once
// per pointing.
std::vector<double> largest_channel_uvw_m(const Plan& plan) {
  std::vector<std::size_t> input_rows;
  const std::vector<double> all = inputs_uvw_m(plan, &input_rows);
  std::vector<std::size_t> first(input_rows.size(), 0);
  for (std::size_t i = 1; i < first.size(); ++i) first[i] = first[i - 1] + input_rows[i - 1];
  const auto largest = std::max_element(
      plan.band.channels.begin(), plan.band.channels.end(), [&](const ms::BandChannel& a, const ms::BandChannel& b) {
        return ms::channel_rows(a, input_rows) < ms::channel_rows(b, input_rows);
      });
  std::vector<std::size_t> pointing_rows(plan.pointings.size(), 0);
  for (const ms::ChannelPart& part : largest->parts)
    pointing_rows[static_cast<std::size_t>(plan.input_pointing[static_cast<std::size_t>(part.input)])] +=
        input_rows[static_cast<std::size_t>(part.input)];
  const auto busiest = static_cast<int>(std::max_element(pointing_rows.begin(), pointing_rows.end()) - pointing_rows.begin());
  std::vector<double> uvw;
  for (const ms::ChannelPart& part : largest->parts) {
    const auto i = static_cast<std::size_t>(part.input);
    if (plan.input_pointing[i] != busiest) continue;
    uvw.insert(uvw.end(), all.begin() + static_cast<std::ptrdiff_t>(3 * first[i]),
               all.begin() + static_cast<std::ptrdiff_t>(3 * (first[i] + input_rows[i])));
  }
  return uvw;
}

}  // namespace

CostRates measure_rates(const Config& config, const Plan& plan) {
  CostRates rates;
  // A group's member images its share of a channel's rows, and plans its memory for that
  // share alone: the whole channel could exceed what a rank holds.
  std::vector<double> uvw_m = largest_channel_uvw_m(plan);
  const auto share_rows = static_cast<std::size_t>(
      std::ceil(plan.member_share(plan.ranks_per_channel) * static_cast<double>(uvw_m.size() / 3)));
  uvw_m.resize(3 * std::min(uvw_m.size() / 3, std::max<std::size_t>(share_rows, 1)));
  uvw_m.shrink_to_fit();
  const double freq_hz = plan.freq_hz[plan.freq_hz.size() / 2];
  const Stopwatch setup;
  const std::unique_ptr<ImagingStage> cpu =
      ImagingStage::make(plan.geometry, config.image, weighting_scheme(config), -1, uvw_m.size() / 3, nullptr);
  ImagingStage& imaging = *cpu;
  rates.setup_s = setup.seconds();
  write_synthetic_channel(config, plan, uvw_m, freq_hz, imaging.stage_area(uvw_m.size() / 3));
  imaging.stage(freq_hz);
  imaging.next();

  // A dirty image (and PSF), then one with a single major cycle: their difference is a
  // major cycle's cost (predict, re-grid, the minor cycles). How many a channel takes
  // depends on the sky, not on this noiseless point source.
  CleanConfig clean = config.clean;
  clean.niter = 0;
  double max_uv_m = 0;
  for (std::size_t k = 0; k + 2 < uvw_m.size(); k += 3) max_uv_m = std::max(max_uv_m, std::hypot(uvw_m[k], uvw_m[k + 1]));
  const double beam_rad = imaging::deconvolution_beam(kept_max_uv(config, max_uv_m * freq_hz / speed_of_light),
                                                      weighting_scheme(config).taper_fwhm_rad);
  imaging.image(clean, beam_rad);  // first touch of the grids and tables
  const Stopwatch dirty;
  imaging.image(clean, beam_rad);
  const double dirty_s = dirty.seconds();
  double major_s = 0;
  if (config.clean.niter > 0) {
    clean = config.clean;
    clean.max_major = 1;
    const Stopwatch major;
    imaging.image(clean, beam_rad);
    major_s = std::max(0.0, major.seconds() - dirty_s);
  }
  const double cycles = config.clean.niter > 0 ? std::min<double>(default_major_cycles, config.clean.max_major) : 0;
  rates.image_channel_s = static_cast<double>(plan.pointings.size()) * (dirty_s + cycles * major_s);
  rates.from = "timed here on the CPU (a synthetic channel with the inputs' UVW" +
               std::string(plan.mosaic() ? ", once per pointing" : "") + "; " + fixed(cycles, 0) +
               " major cycles per channel assumed)";

  // Rank 0 creates the products with their headers only, which costs nothing worth
  // counting; each rank writes its channels' planes on the writer thread, behind the
  // imaging. The Faraday stage takes the kept planes over MPI (memory copies on one
  // node, not timed here) and writes its images a pixel at a time.
  const double pixels = static_cast<double>(plan.geometry.pixels());
  double faraday_bytes = 0;
  for (const Product& product : plan.products.all())
    if (product.kind == ProductKind::moment_image || product.kind == ProductKind::fdf_cube ||
        product.kind == ProductKind::pixel_map)
      faraday_bytes += product.bytes;
  const double rate = write_rate(config.output.dir);
  rates.create_s = 0;
  // Restoring with a common beam takes a channel's kept model and residual and writes
  // the restored planes output.channel_cubes chose, with beam.model their corrected
  // planes and the beam's response too.
  if (restores_later(config)) {
    const auto restored = std::ranges::count_if(plan.products.channel_cubes(), [](const ChannelCube& cube) {
      return cube.kind == ChannelCubeKind::image || cube.kind == ChannelCubeKind::image_pb ||
             cube.kind == ChannelCubeKind::pb;
    });
    rates.restore_channel_s = 4 * pixels * static_cast<double>(restored) / rate;
  }
  rates.faraday_pixel_s = plan.polarised() ? faraday_bytes / pixels / rate : 0.0;
  if (plan.num_phi > 0)
    rates.faraday_pixel_s +=
        faraday_seconds_per_pixel(config, plan.data_freq_hz, plan.products.made(ChannelCubeKind::residual));
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
  const bool residuals = plan.products.made(ChannelCubeKind::residual);
  if (plan.num_phi > 0 && num_chan > previous_channels && previous_channels >= 2)
    rates.faraday_pixel_s +=
        faraday_seconds_per_pixel(config, plan.data_freq_hz, residuals) -
        faraday_seconds_per_pixel(config,
                                  std::vector<double>(plan.data_freq_hz.begin(), plan.data_freq_hz.begin() + previous_channels),
                                  residuals);
  rates.from = "measured by the run of " + path + " (" + std::to_string(previous_channels) + " channels)";
  return rates;
}

double rank_seconds(const CostRates& rates, int channels, double pixels) {
  return rates.setup_s + rates.create_s + channels * (rates.image_channel_s + rates.restore_channel_s) +
         pixels * rates.faraday_pixel_s;
}

}  // namespace spip::pipeline
