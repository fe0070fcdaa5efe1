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
#include "spip/stages/catalogue_stage.hpp"
#include "spip/stages/faraday_stage.hpp"
#include "spip/stages/plane_store.hpp"
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
  if (a.radesys != b.radesys) return "RADESYS " + a.radesys + " against " + b.radesys;
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

imaging::Beam imaging_beam(const fits::Beam& b) { return {b.major_rad, b.minor_rad, b.pa_rad}; }

std::string described(const imaging::Beam& b) {
  return fixed(b.major_rad * rad_to_arcsec, 2) + "\" x " + fixed(b.minor_rad * rad_to_arcsec, 2) + "\" at " +
         fixed(b.pa_rad * rad_to_deg, 1) + " deg";
}

// The configuration key that names a given cube.
std::string key_of(fits::Stokes stokes) {
  constexpr const char* names[] = {"", "i", "q", "u", "v"};
  return std::string("input.cube_") + names[static_cast<int>(stokes)];
}

// Every given cube's channels' beams (BEAMS tables' or headers'), less blanked channels'
// zero beams (spip's own per-channel cubes), which are no resolution.
std::vector<imaging::Beam> measured_beams(const fits::StokesCubes& cubes) {
  std::vector<imaging::Beam> beams;
  for (const auto& [stokes, cube] : cubes.given())
    for (int c = 0; c < cube->channels(); ++c)
      if (const std::optional<fits::Beam> beam = cube->beam_of(c)) beams.push_back(imaging_beam(*beam));
  return beams;
}

// With image.common_beam: the side of the FFT grid on which the channels whose beams are
// not `common` are convolved to it; 0 where every channel's is. A channel that `common`
// (image.beam) does not hold is refused: no convolution makes an image sharper.
int plan_smoothing(const Config& config, const fits::StokesCubes& cubes, const imaging::Beam& common) {
  std::vector<imaging::Beam> from;
  std::string beamless;  // a cube of no beam at all, which cannot be convolved beside the others
  for (const auto& [stokes, cube] : cubes.given()) {
    const std::string key = key_of(stokes);
    bool any = false;
    for (int c = 0; c < cube->channels(); ++c)
      if (const std::optional<fits::Beam> given = cube->beam_of(c)) {
        any = true;
        const imaging::Beam beam = imaging_beam(*given);
        if (!imaging::holds(common, beam))
          SPIP_THROW(ConfigError, named(key, cube->path) + "'s channel " + std::to_string(c) + " has a beam of " +
                                      described(beam) + ", which image.beam " + described(common) +
                                      " does not hold: expected a larger image.beam, or image.common_beam false to "
                                      "take the channels as they are");
        if (!imaging::alike(beam, common)) from.push_back(beam);
      }
    if (!any && beamless.empty()) beamless = named(key, cube->path);
  }
  if (from.empty()) return 0;
  if (!beamless.empty())
    SPIP_THROW(InputError, beamless + " gives no beam (BMAJ and BMIN, or a BEAMS table), so it cannot be convolved to " +
                               described(common) + " beside the other cubes (image.common_beam): expected its beam, or "
                               "image.common_beam false to take the cubes as they are");
  if (!config.input.cube_noise.empty())
    SPIP_THROW(ConfigError, named("input.cube_noise", config.input.cube_noise) +
                                " gives each channel's noise at its own beam, but the channels are convolved to " +
                                described(common) + " (image.common_beam), which changes it: expected no "
                                "input.cube_noise (spip then measures it after convolving), or image.common_beam false");
  const fits::ImageHeader& grid = cubes.q->grid;
  return imaging::smoothing_grid(grid.nx, grid.ny, grid.cell_rad, from, common);
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
  // The products' beam: image.beam where given, else one that holds every channel's, as
  // after imaging; with image.common_beam every channel is convolved to it.
  const ImageConfig& image = config.image;
  std::optional<imaging::Beam> chosen;
  if (image.beam_major_arcsec > 0)
    chosen = imaging::Beam{image.beam_major_arcsec / rad_to_arcsec, image.beam_minor_arcsec / rad_to_arcsec,
                           image.beam_pa_deg / rad_to_deg};
  if (const std::vector<imaging::Beam> beams = measured_beams(cubes); !beams.empty()) {
    const imaging::Beam common = chosen && image.common_beam ? *chosen : imaging::enclosing_beam(beams);
    plan.base.beam = fits::Beam{common.major_rad, common.minor_rad, common.pa_rad};
    if (image.common_beam) plan.smoothing_grid = plan_smoothing(config, cubes, common);
  } else if (chosen) {
    plan.base.beam = fits::Beam{chosen->major_rad, chosen->minor_rad, chosen->pa_rad};
  }
  // The catalogue sizes its noise boxes, separates components and scales position errors
  // by the restoring beam: a cube without one takes image.beam, or is refused.
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

MemoryPlan cube_memory(const CubePlan& plan, int rank, double budget) {
  const double pixels = static_cast<double>(plan.base.nx) * plan.base.ny;
  // Measuring the noise reads a channel's Q and U planes and copies the measured pixels
  // of one; convolving holds every Stokes's planes and the one being read beside the
  // FFT grid, and the rank keeps them for the exchange of rows.
  const int stokes = static_cast<int>(plan.cubes.given().size());
  const bool smoothing = plan.smoothing_grid > 0;
  const double plane_bytes =
      smoothing ? 4.0 * (stokes + 1) * pixels + imaging::smoothing_bytes(plan.smoothing_grid) : 12.0 * pixels;
  const double kept_bytes =
      smoothing ? PlaneStore::bytes(plan.blocks[static_cast<std::size_t>(rank)].size(), stokes,
                                    static_cast<std::size_t>(pixels))
                : 0.0;
  const double catalogue = rank == 0 && plan.products.has_catalogue() ? catalogue_bytes(pixels) : 0.0;
  return plan_cube_memory(budget,
                          FaradayStage::bytes_per_pixel(static_cast<int>(plan.freq_hz.size()), plan.num_phi) * plan.base.nx,
                          plane_bytes, kept_bytes, catalogue);
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
  // At several resolutions, a source's flux per beam changes across the band, which
  // RM synthesis reads as depolarisation.
  if (const std::vector<imaging::Beam> beams = measured_beams(plan.cubes); !beams.empty()) {
    const auto [small, large] = std::minmax_element(beams.begin(), beams.end(), [](const imaging::Beam& a, const imaging::Beam& b) {
      return a.major_rad * a.minor_rad < b.major_rad * b.minor_rad;
    });
    const std::string range = "the cubes' channels have beams from " + described(*small) + " to " + described(*large);
    const imaging::Beam common = imaging_beam(*grid.beam);
    if (plan.smoothing_grid > 0)
      log.root(range + ": each is convolved to " + described(common) + " (image.common_beam) on " +
               std::to_string(plan.smoothing_grid) + "^2 FFTs");
    else if (!config.image.common_beam && large->major_rad * large->minor_rad > 1.01 * small->major_rad * small->minor_rad)
      log.root("WARNING: " + range + "; the Faraday stage takes them at these resolutions (image.common_beam false)");
  }
  if (!plan.cubes.i && (config.catalogue.threshold > 0 || !config.catalogue.sources.empty()))
    log.root("no catalogue: it compares each source's polarised intensity with Stokes I; give input.cube_i");
  if (plan.num_phi > 0 && mpi.is_root())
    for (const std::string& warning : FaradayStage::axis_warnings(plan.freq_hz, config.faraday)) log.root(warning);
  plan.claim = claim_run(config, plan.products, break_claim, mpi, log);
  // RM synthesis and RM-CLEAN on this rank's GPU where there is one, as after imaging.
  const RankDevice chosen = choose_rank_device(config, mpi, log);
  plan.backend = chosen.backend();
  plan.gpu_device = chosen.index();
  plan.gpu_share_bytes = chosen.share_bytes();
  try {
    plan.memory = cube_memory(plan, mpi.rank(), memory_budget_bytes(config.parallel, mpi.local_size()));
    if (mpi.is_root()) require_disk_space(config.output.dir, plan.products.bytes_to_write());
  } catch (...) {
    failure = std::current_exception();
  }
  agree_on_failure(mpi, failure);
  prepare_output(config, plan.products, plan.memory.kept_spilled, mpi, log);
  return plan;
}

}  // namespace spip::pipeline
