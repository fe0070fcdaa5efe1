#include "spip/stages/catalogue_stage.hpp"

#include <algorithm>
#include <cmath>

#include "spip/catalogue/catalogue_table.hpp"
#include "spip/catalogue/rmtable.hpp"
#include "spip/common/constants.hpp"
#include "spip/catalogue/source_finder.hpp"
#include "spip/faraday/spectrum_math.hpp"
#include "spip/fits/fits_table.hpp"
#include "spip/job/log.hpp"
#include "spip/job/text_file.hpp"
#include "spip/stages/channel_cubes.hpp"

namespace spip::pipeline {
namespace {

catalogue::Map read_map(const std::string& path) {
  fits::FitsImage image = fits::read_image(path);
  return {static_cast<int>(image.shape.at(0)), static_cast<int>(image.shape.at(1)), std::move(image.data)};
}

// The Stokes I that PI is compared with: the mean over channels, or with
// faraday.fractional, where PI is given at nu0, the pixel's fitted I at nu0
// (PI / peak-fracpol) wherever it was fitted.
catalogue::Map stokes_i_map(const CatalogueInputs& inputs, const catalogue::Map& pi) {
  catalogue::Map stokes_i = read_map(inputs.mean_i);
  if (inputs.fracpol.empty()) return stokes_i;
  const catalogue::Map fracpol = read_map(inputs.fracpol);
  for (std::size_t i = 0; i < stokes_i.values.size(); ++i)
    if (std::isfinite(fracpol.values[i]) && fracpol.values[i] > 0) stokes_i.values[i] = pi.values[i] / fracpol.values[i];
  return stokes_i;
}

// "; KIND: a, b, c" for the log, the first ten named; nothing where there are none.
std::string listed(const std::string& kind, const std::vector<std::string>& names) {
  if (names.empty()) return "";
  std::string text = "; " + std::to_string(names.size()) + " " + kind + ": ";
  for (std::size_t k = 0; k < std::min<std::size_t>(names.size(), 10); ++k) text += (k ? ", " : "") + names[k];
  return names.size() > 10 ? text + " and " + std::to_string(names.size() - 10) + " more" : text;
}

}  // namespace

std::vector<std::string> write_catalogue(const Config& config, const fits::ImageHeader& base,
                                         const CatalogueInputs& inputs, const ProductRegistry& products,
                                         const Log& log) {
  const Stopwatch watch;
  auto map = [&](faraday::PixelMap m) { return read_map(inputs.pixel_maps.at(m)); };
  using enum faraday::PixelMap;
  const catalogue::Map pi = map(map_pi);
  const catalogue::PixelMaps maps{map(map_phi),    pi,         map(map_chi0),
                                  map(map_phi_err), map(map_pi_err), map(map_chi0_err),
                                  map(map_m2),     stokes_i_map(inputs, pi)};
  const catalogue::SinProjection projection{base.reference_x(), base.reference_y(), base.ra_rad, base.dec_rad, base.cell_rad};

  catalogue::FinderSettings settings;
  settings.threshold = config.catalogue.threshold;
  settings.beam_fwhm_pix = base.beam ? std::sqrt(base.beam->major_rad * base.beam->minor_rad) / base.cell_rad : 1.0;
  if (base.beam) {
    settings.beam_major_pix = base.beam->major_rad / base.cell_rad;
    settings.beam_minor_pix = base.beam->minor_rad / base.cell_rad;
    settings.beam_pa_rad = base.beam->pa_rad;
  }
  settings.box = config.catalogue.box > 0
                     ? config.catalogue.box
                     : std::clamp(static_cast<int>(std::lround(20 * settings.beam_fwhm_pix)), 16, std::max(base.nx, base.ny));
  settings.rmsf_fwhm = inputs.rmsf_fwhm;
  settings.complexity = config.catalogue.complexity;
  settings.pointings = inputs.pointings;
  settings.radesys = base.radesys;

  std::vector<catalogue::Source> sources;
  if (config.catalogue.sources.empty()) {
    int truncated = 0;
    sources = catalogue::find_sources(maps, projection, settings, &truncated);
    if (truncated > 0)
      log.root("catalogue: " + std::to_string(truncated) + " peak(s) above the threshold at the image's edge or next to "
               "blank pixels not listed: the sources may lie beyond, where they are not measured");
  } else {
    const std::vector<catalogue::SourcePosition> positions = catalogue::read_source_positions(config.catalogue.sources);
    catalogue::LeftOut left_out;
    sources = catalogue::sources_at(maps, projection, settings, positions, &left_out);
    log.root("catalogue.sources: " + std::to_string(sources.size()) + " of the " + std::to_string(positions.size()) +
             " positions of " + config.catalogue.sources + " measured" + listed("off the image", left_out.off_image) +
             listed("on blank pixels (below beam.limit, or with faraday.fractional below its Stokes I threshold)",
                    left_out.blank));
  }
  if (const auto& beam = inputs.primary_beam)
    for (catalogue::Source& s : sources) {
      const Direction d{s.ra_deg / rad_to_deg, s.dec_deg / rad_to_deg};
      const auto [l, m] = direction_cosines(d, inputs.pointings.at(static_cast<std::size_t>(s.pointing)));
      s.beam_response = beam->response(l, m, inputs.reference_freq_hz);
    }
  // The maps of the peak pixel that the finder does not read.
  const auto at_peak = [&](const std::string& path, double catalogue::Source::*field) {
    const catalogue::Map map = read_map(path);
    for (catalogue::Source& s : sources) s.*field = map.at(static_cast<int>(std::lround(s.x)), static_cast<int>(std::lround(s.y)));
  };
  at_peak(inputs.pixel_maps.at(map_fdf_noise), &catalogue::Source::fdf_noise_mad);
  at_peak(inputs.sigma_add.at(0), &catalogue::Source::sigma_add);
  at_peak(inputs.sigma_add.at(1), &catalogue::Source::sigma_add_minus);
  at_peak(inputs.sigma_add.at(2), &catalogue::Source::sigma_add_plus);
  if (!inputs.alpha.empty()) at_peak(inputs.alpha, &catalogue::Source::spectral_index);
  if (!inputs.mean_v.empty()) at_peak(inputs.mean_v, &catalogue::Source::stokes_v);
  const fits::Table table = catalogue::catalogue_table(sources, settings);
  fits::write_table(products.catalogue_table(), table);
  write_text_atomically(products.catalogue_csv(), catalogue::to_csv(table));
  catalogue::RmTableContext context{"spip " + config.output.prefix,
                                          base.telescope,
                                          config.faraday.fractional,
                                          !config.faraday.ionosphere.empty(),
                                          std::pow(speed_of_light / inputs.reference_freq_hz, 2),
                                          base.beam.value_or(fits::Beam{}),
                                          inputs.channel_freq_hz,
                                          inputs.axis_freq_hz,
                                          inputs.noise_chan};
  context.fdf_sigma = inputs.fdf_sigma;
  for (const ms::ObservingTime& t : inputs.pointing_times)
    context.pointing_times.push_back({t.median_mjd_s / 86400.0, t.on_source_s, (t.end_mjd_s - t.start_mjd_s) / 86400.0});
  const fits::Table standard = catalogue::rmtable(sources, settings, context);
  fits::write_table(products.rmtable_table(), standard);
  write_text_atomically(products.rmtable_csv(), catalogue::to_csv(standard));
  // The two tests flag different sources (a Faraday-thick slab can pass m2 and fail
  // sigma_add): both counts, as both columns.
  const auto complex = std::count_if(sources.begin(), sources.end(), [](const auto& s) { return s.faraday_complex; });
  const auto complex_sigma_add =
      std::count_if(sources.begin(), sources.end(), [](const auto& s) { return s.complex_sigma_add(); });
  log.root("catalogue: " + std::to_string(sources.size()) +
           (config.catalogue.sources.empty() ? " polarised source(s) above " + fixed(settings.threshold, 1) + " local sigma"
                                             : std::string(" position(s) of catalogue.sources")) +
           " (boxes of " + std::to_string(settings.box) + " pixels), " +
           std::to_string(complex) + " Faraday-complex by m2 and " + std::to_string(complex_sigma_add) +
           " by sigma_add, in " + fixed(watch.seconds(), 2) + " s");
  // Nothing in the image plane takes a PSF's sidelobes out of a dirty image, and RM-CLEAN
  // cleans only in depth: a sidelobe shares its source's depth and spectrum, so no test
  // of the FDF tells it from a source.
  if (!config.input.cubes() && config.clean.niter == 0 && config.catalogue.sources.empty() && !sources.empty())
    log.root("warning: with clean.niter 0 the catalogue is found on dirty images, in which a bright source's PSF "
             "sidelobes lie at its own Faraday depth: those above catalogue.threshold are listed as sources; "
             "clean, or raise catalogue.threshold");
  return {products.catalogue_table(), products.catalogue_csv(), products.rmtable_table(), products.rmtable_csv()};
}

}  // namespace spip::pipeline
