#include "spip/catalogue/catalogue_table.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <functional>
#include <sstream>
#include <type_traits>

namespace spip::catalogue {
namespace {

template <class T>
fits::TableColumn column(const std::vector<Source>& sources, const char* name, const char* unit,
                         const std::string& description, std::function<T(const Source&)> value) {
  std::vector<T> values;
  for (const Source& s : sources) values.push_back(value(s));
  return {name, unit, description, std::move(values)};
}

// Numbers in their shortest form that reads back to the same value: ten digits wrote an
// RA of 359.9999999925 deg as 360.
std::string csv_value(const fits::TableColumn& column, std::size_t row) {
  return std::visit(
      [row](const auto& values) -> std::string {
        using T = std::decay_t<decltype(values[row])>;
        if constexpr (std::is_floating_point_v<T>) {
          if (std::isnan(values[row])) return "nan";
          char text[32];
          return std::string(text, std::to_chars(text, text + sizeof text, values[row]).ptr);
        } else {
          std::ostringstream out;
          out << values[row];
          return out.str();
        }
      },
      column.values);
}

}  // namespace

fits::Table catalogue_table(const std::vector<Source>& sources, const FinderSettings& settings) {
  using S = const Source&;
  fits::Table table;
  table.extname = "CATALOGUE";
  const std::string frame = settings.radesys == "FK5" ? "FK5 J2000" : settings.radesys;
  table.columns = {
      column<std::string>(sources, "name", "", "IAU-style name from the truncated position", [](S s) { return s.name; }),
      column<std::int32_t>(sources, "island", "", "island number, brightest first", [](S s) { return s.island; }),
      column<std::int32_t>(sources, "component", "", "component within its island", [](S s) { return s.component; }),
      column<double>(sources, "x_pix", "pix", "zero-based image x of the PI peak", [](S s) { return s.x; }),
      column<double>(sources, "y_pix", "pix", "zero-based image y of the PI peak", [](S s) { return s.y; }),
      column<double>(sources, "ra", "deg", "right ascension (" + frame + ")", [](S s) { return s.ra_deg; }),
      column<double>(sources, "ra_err", "deg", "position error along RA on the sky (an angle: already times cos dec)", [](S s) { return s.ra_err_deg; }),
      column<double>(sources, "dec", "deg", "declination (" + frame + ")", [](S s) { return s.dec_deg; }),
      column<double>(sources, "dec_err", "deg", "position error in declination", [](S s) { return s.dec_err_deg; }),
      column<double>(sources, "phi", "rad/m^2", "Faraday depth of the clean FDF peak", [](S s) { return s.phi; }),
      column<double>(sources, "phi_err", "rad/m^2", "error of phi", [](S s) { return s.phi_err; }),
      column<double>(sources, "pi", "Jy/beam", "bias-corrected polarised intensity", [](S s) { return s.pi; }),
      column<double>(sources, "pi_err", "Jy/beam", "error of pi", [](S s) { return s.pi_err; }),
      column<double>(sources, "chi0", "deg", "intrinsic polarisation angle", [](S s) { return s.chi0_deg; }),
      column<double>(sources, "chi0_err", "deg", "error of chi0", [](S s) { return s.chi0_err_deg; }),
      column<double>(sources, "stokes_i", "Jy/beam", "Stokes I: mean over the channels, or at nu0 with faraday.fractional", [](S s) { return s.stokes_i; }),
      column<double>(sources, "stokes_v", "Jy/beam", "Stokes V: mean over the channels; NaN: V not imaged", [](S s) { return s.stokes_v; }),
      column<double>(sources, "frac_pol", "", "pi / stokes_i", [](S s) { return s.frac_pol; }),
      column<double>(sources, "sigma_qu", "Jy/beam", "local FDF noise per Q or U part", [](S s) { return s.sigma; }),
      column<double>(sources, "snr", "", "pi / sigma_qu", [](S s) { return s.snr; }),
      column<double>(sources, "fdf_noise_mad", "Jy/beam",
                     "measured FDF noise at the peak pixel: MAD sigma of the clean FDF away from its peak",
                     [](S s) { return s.fdf_noise_mad; }),
      column<double>(sources, "m2", "rad/m^2", "second moment of the RM-CLEAN components", [](S s) { return s.m2; }),
      column<std::int32_t>(sources, "faraday_complex", "", "1 where m2 > COMPLEXT * RMSFFWHM",
                           [](S s) { return static_cast<std::int32_t>(s.faraday_complex); }),
      column<double>(sources, "sigma_add", "", "additional scatter of Q and U about the thin model, in units of the channel noise",
                     [](S s) { return s.sigma_add; }),
      column<double>(sources, "sigma_add_err_minus", "", "lower 1-sigma error of sigma_add", [](S s) { return s.sigma_add_minus; }),
      column<double>(sources, "sigma_add_err_plus", "", "upper 1-sigma error of sigma_add", [](S s) { return s.sigma_add_plus; }),
      column<std::int32_t>(sources, "complex_sigma_add", "", "1 where sigma_add > 3 sigma_add_err_minus",
                           [](S s) { return static_cast<std::int32_t>(s.complex_sigma_add()); }),
      column<double>(sources, "beamdist", "deg", "distance from the nearest pointing centre", [](S s) { return s.beamdist_deg; }),
      column<double>(sources, "beam_response", "",
                     "the nearest pointing's primary-beam response at the source at nu0 (the fluxes are corrected for the beams); NaN: no beam.model",
                     [](S s) { return s.beam_response; }),
  };
  table.keys = {{"THRESHLD", settings.threshold, "islands above this many local sigma_qu"},
                {"NOISEBOX", static_cast<double>(settings.box), "[pix] side of the local-noise boxes"},
                {"BEAMPIX", settings.beam_fwhm_pix, "[pix] restoring beam FWHM, sqrt(BMAJ BMIN)"},
                {"RMSFFWHM", settings.rmsf_fwhm, "[rad/m^2] measured RMSF FWHM"},
                {"COMPLEXT", settings.complexity, "Faraday complexity threshold on m2 / RMSFFWHM"}};
  table.comments = {"spip polarised-source catalogue: see docs/products.md"};
  return table;
}

std::string to_csv(const fits::Table& table) {
  std::ostringstream out;
  for (std::size_t c = 0; c < table.columns.size(); ++c) out << (c ? "," : "") << table.columns[c].name;
  out << "\n";
  const std::size_t rows = table.columns.front().rows();
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < table.columns.size(); ++c) out << (c ? "," : "") << csv_value(table.columns[c], r);
    out << "\n";
  }
  return out.str();
}

}  // namespace spip::catalogue
