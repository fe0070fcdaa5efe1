// The plan of the Faraday stage on another imager's cubes: what their headers say,
// checked against each other, and what the run will hold and write.
#include <cmath>
#include <exception>
#include <fstream>
#include <sstream>

#include "run_start.hpp"
#include "spip/catalogue/source_finder.hpp"
#include "spip/common/constants.hpp"
#include "spip/error.hpp"
#include "spip/imaging/beam.hpp"
#include "spip/job/log.hpp"
#include "spip/parallel/mpi_context.hpp"
#include "spip/planning/planning.hpp"
#include "spip/stages/faraday_stage.hpp"
#include "spip/version.hpp"

namespace spip::pipeline {
namespace {

std::string named(const std::string& key, const std::string& path) { return key + " '" + path + "'"; }

// Why `cube` is not on `reference`'s grid and frequency axis; empty where it is.
std::string mismatch(const fits::SpectralCube& cube, const fits::SpectralCube& reference) {
  const fits::ImageHeader &a = cube.grid, &b = reference.grid;
  if (a.nx != b.nx || a.ny != b.ny)
    return std::to_string(a.nx) + " x " + std::to_string(a.ny) + " pixels against " + std::to_string(b.nx) + " x " +
           std::to_string(b.ny);
  const double tolerance = 1e-6 * b.cell_rad;  // a millionth of a pixel, in radians
  if (std::abs(a.cell_rad - b.cell_rad) > 1e-9 * b.cell_rad)
    return "pixels of " + fixed(a.cell_rad * rad_to_arcsec, 4) + "\" against " + fixed(b.cell_rad * rad_to_arcsec, 4) + "\"";
  if (std::abs(a.ra_rad - b.ra_rad) * std::cos(b.dec_rad) > tolerance || std::abs(a.dec_rad - b.dec_rad) > tolerance ||
      std::abs(a.reference_x() - b.reference_x()) > 1e-6 || std::abs(a.reference_y() - b.reference_y()) > 1e-6)
    return "another reference direction or pixel (CRVAL, CRPIX)";
  if (cube.freq_hz.size() != reference.freq_hz.size())
    return std::to_string(cube.freq_hz.size()) + " channels against " + std::to_string(reference.freq_hz.size());
  for (std::size_t c = 0; c < cube.freq_hz.size(); ++c)
    if (std::abs(cube.freq_hz[c] - reference.freq_hz[c]) > 1e-9 * reference.freq_hz[c])
      return "channel " + std::to_string(c) + " at " + fixed(cube.freq_hz[c] / 1e6, 6) + " MHz against " +
             fixed(reference.freq_hz[c] / 1e6, 6) + " MHz";
  return {};
}

std::optional<fits::SpectralCube> open_cube(const std::string& key, const std::string& path, fits::Stokes stokes,
                                            const std::optional<fits::SpectralCube>& reference) {
  if (path.empty()) return std::nullopt;
  // The reader's refusals name the file; the key says which of the cubes it was.
  fits::SpectralCube cube = [&] {
    try {
      return fits::open_spectral_cube(path);
    } catch (const InputError& e) {
      SPIP_THROW(InputError, key + ": " + e.what());
    }
  }();
  constexpr const char* names[] = {"", "I", "Q", "U", "V"};
  if (cube.stokes && *cube.stokes != stokes)
    SPIP_THROW(InputError, named(key, path) + " holds Stokes " + names[static_cast<int>(*cube.stokes)] +
                               " (its STOKES axis), not " + names[static_cast<int>(stokes)]);
  if (reference)
    if (const std::string why = mismatch(cube, *reference); !why.empty())
      SPIP_THROW(InputError, named(key, path) + " does not match " + named("input.cube_q", reference->path) + ": " + why);
  return cube;
}

// input.cube_noise: one sigma per channel, '#' starting a comment, as RM-Tools' -n file;
// a blank channel is found in the cubes, not given a sigma of 0.
std::vector<double> read_noise(const std::string& path, std::size_t channels) {
  std::ifstream in(path);
  if (!in) SPIP_THROW(InputError, named("input.cube_noise", path) + ": cannot be read");
  std::vector<double> noise;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line.substr(0, line.find('#')));
    std::string word;
    while (words >> word) {
      std::size_t used = 0;
      double sigma = 0;
      try {
        sigma = std::stod(word, &used);
      } catch (const std::exception&) {
      }
      if (used != word.size() || !(sigma > 0) || std::isinf(sigma))
        SPIP_THROW(InputError, named("input.cube_noise", path) + ": '" + word + "' is not a noise sigma > 0");
      noise.push_back(sigma);
    }
  }
  if (noise.size() != channels)
    SPIP_THROW(InputError, named("input.cube_noise", path) + " gives " + std::to_string(noise.size()) +
                               " sigmas for the cubes' " + std::to_string(channels) + " channels");
  return noise;
}

// A cube's per-channel beams (its BEAMS table), less blanked channels' zero beams (spip's
// own per-channel cubes), which are no resolution.
std::vector<fits::Beam> measured_beams(const fits::SpectralCube& cube) {
  std::vector<fits::Beam> beams;
  for (const fits::Beam& b : cube.channel_beams)
    if (b.major_rad > 0 && b.minor_rad > 0) beams.push_back(b);
  return beams;
}

}  // namespace

CubePlan open_cube_plan(const Config& config, int ranks) {
  const InputConfig& input = config.input;
  CubePlan plan;
  fits::StokesCubes& cubes = plan.cubes;
  cubes.q = open_cube("input.cube_q", input.cube_q, fits::Stokes::Q, std::nullopt);
  cubes.u = open_cube("input.cube_u", input.cube_u, fits::Stokes::U, cubes.q);
  cubes.i = open_cube("input.cube_i", input.cube_i, fits::Stokes::I, cubes.q);
  cubes.v = open_cube("input.cube_v", input.cube_v, fits::Stokes::V, cubes.q);
  // Read once now, so that a list spip cannot use stops the run before any channel.
  if (!config.catalogue.sources.empty()) catalogue::read_source_positions(config.catalogue.sources);
  if (config.faraday.fractional && !cubes.i)
    SPIP_THROW(ConfigError, "faraday.fractional divides Q and U by each pixel's Stokes I: expected input.cube_i");
  plan.freq_hz = cubes.q->freq_hz;
  const int channels = cubes.q->channels();
  if (!input.cube_noise.empty()) plan.noise = read_noise(input.cube_noise, plan.freq_hz.size());
  plan.base = cubes.q->grid;
  plan.base.spectral.reset();
  plan.base.stokes.reset();
  // Per-channel beams: the products' is one that holds them all, as after imaging.
  std::vector<imaging::Beam> channel_beams;
  for (const fits::Beam& b : measured_beams(*cubes.q)) channel_beams.push_back({b.major_rad, b.minor_rad, b.pa_rad});
  if (!channel_beams.empty()) {
    const imaging::Beam common = imaging::enclosing_beam(channel_beams);
    plan.base.beam = fits::Beam{common.major_rad, common.minor_rad, common.pa_rad};
  }
  // The catalogue sizes its noise boxes, separates components and scales position errors
  // by the restoring beam: a cube without one takes image.beam, or is refused.
  const ImageConfig& image = config.image;
  if (!plan.base.beam && image.beam_major_arcsec > 0)
    plan.base.beam = fits::Beam{image.beam_major_arcsec / rad_to_arcsec, image.beam_minor_arcsec / rad_to_arcsec,
                                image.beam_pa_deg / rad_to_deg};
  if (!plan.base.beam && (config.catalogue.threshold > 0 || !config.catalogue.sources.empty()))
    SPIP_THROW(InputError, named("input.cube_q", input.cube_q) +
                               " gives no restoring beam (BMAJ and BMIN, or a BEAMS table), which the catalogue "
                               "needs for its noise boxes, its components and their position errors: expected "
                               "image.beam MAJOR,MINOR,PA (arcsec, deg), or catalogue.threshold 0 and no catalogue.sources");
  for (int r = 0; r < ranks; ++r) {
    const auto [begin, end] = FaradayStage::slab_rows(r, ranks, channels);
    plan.blocks.push_back({begin, end});
  }
  plan.num_phi = channels >= 2 ? FaradayStage::planned_axis(plan.freq_hz, config.faraday).count : 0;
  ProductShape shape;
  shape.stokes = {cubes.i.has_value(), true, true, cubes.v.has_value()};
  shape.channels = channels;
  shape.image_size = plan.base.nx;
  shape.rows = plan.base.ny;
  shape.depths = plan.num_phi;
  shape.imaged = false;
  plan.products = ProductRegistry(config, shape);
  return plan;
}

CubePlan make_cube_plan(const Config& config, const parallel::MpiContext& mpi, const Log& log, bool break_claim) {
  CubePlan plan;
  std::exception_ptr failure;
  try {
    plan = open_cube_plan(config, mpi.size());
  } catch (...) {
    failure = std::current_exception();
  }
  agree_on_failure(mpi, failure);
  const fits::ImageHeader& grid = plan.base;
  const std::string given = std::string("Q, U") + (plan.cubes.i ? ", I" : "") + (plan.cubes.v ? ", V" : "");
  log.root("spip " + std::string(version) + " on " + std::to_string(mpi.size()) + " rank(s): the Faraday stage on " +
           "another imager's cubes of Stokes " + given + ", " + std::to_string(grid.nx) + " x " +
           std::to_string(grid.ny) + " pixels of " + fixed(grid.cell_rad * rad_to_arcsec, 2) + "\", " +
           std::to_string(plan.freq_hz.size()) + " channels from " + fixed(plan.freq_hz.front() / 1e6, 4) + " to " +
           fixed(plan.freq_hz.back() / 1e6, 4) + " MHz; channel noise " +
           (plan.noise.empty() ? "from the cubes" : "from " + config.input.cube_noise) + "; products in " +
           config.output.dir + " (prefix " + config.output.prefix + ")");
  // RM synthesis takes the channels as they are: at several resolutions, a source's
  // flux per beam changes across the band, which reads as depolarisation.
  if (const std::vector<fits::Beam> beams = measured_beams(*plan.cubes.q); !beams.empty()) {
    const auto [small, large] = std::minmax_element(beams.begin(), beams.end(), [](const fits::Beam& a, const fits::Beam& b) {
      return a.major_rad * a.minor_rad < b.major_rad * b.minor_rad;
    });
    if (large->major_rad * large->minor_rad > 1.01 * small->major_rad * small->minor_rad)
      log.root("WARNING: input.cube_q's channels have beams from " + fixed(small->major_rad * rad_to_arcsec, 2) +
               "\" x " + fixed(small->minor_rad * rad_to_arcsec, 2) + "\" to " +
               fixed(large->major_rad * rad_to_arcsec, 2) + "\" x " + fixed(large->minor_rad * rad_to_arcsec, 2) +
               "\" (its BEAMS table); the Faraday stage takes them at these resolutions: convolve the cubes to "
               "one beam first (CASA's imsmooth, RACS-tools' beamcon_3D) for RM synthesis of extended emission");
  }
  if (!plan.cubes.i && (config.catalogue.threshold > 0 || !config.catalogue.sources.empty()))
    log.root("no catalogue: it compares each source's polarised intensity with Stokes I; give input.cube_i");
  plan.claim = claim_run(config, plan.products, break_claim, mpi, log);
  // RM synthesis and RM-CLEAN on this rank's GPU where there is one, as after imaging.
  const RankDevice chosen = choose_rank_device(config, mpi, log);
  plan.backend = chosen.backend();
  plan.gpu_device = chosen.index();
  plan.gpu_share_bytes = chosen.share_bytes();
  try {
    const double pixels = static_cast<double>(grid.nx) * grid.ny;
    plan.memory = plan_cube_memory(
        memory_budget_bytes(config.parallel, mpi.local_size()),
        FaradayStage::bytes_per_pixel(static_cast<int>(plan.freq_hz.size()), plan.num_phi) * grid.nx, 8.0 * pixels);
    if (mpi.is_root()) require_disk_space(config.output.dir, plan.products.bytes_to_write());
  } catch (...) {
    failure = std::current_exception();
  }
  agree_on_failure(mpi, failure);
  write_effective_config(config, plan.products, mpi, log);
  return plan;
}

}  // namespace spip::pipeline
