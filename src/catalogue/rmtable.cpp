#include "spip/catalogue/rmtable.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>

#include "spip/common/celestial.hpp"
#include "spip/common/constants.hpp"
#include "spip/common/text_case.hpp"

namespace spip::catalogue {
namespace {

constexpr double nan = std::numeric_limits<double>::quiet_NaN();

// The standard's telescope names; others are its blank, "Unknown".
const char* const standard_telescopes[] = {"VLA", "LOFAR", "ATCA", "DRAO-ST", "MWA", "WSRT", "Effelsberg", "ATA",
                                           "ASKAP", "ARO", "Arecibo", "Parkes", "CHIME", "FAST"};

// The name an MS or a FITS header gives, in any case; the VLA's MSs say EVLA (or JVLA).
std::string standard_telescope(const std::string& name) {
  const std::string written = upper_case(name);
  if (written == "EVLA" || written == "JVLA") return "VLA";
  for (const char* known : standard_telescopes)
    if (written == upper_case(known)) return known;
  return "Unknown";
}

// An angle in degrees in the standard's [0, 180), also once written as a float (a tiny
// negative angle plus 180 rounds to 180).
double half_turn(double deg) {
  const double a = std::fmod(deg, 180.0);
  const double turned = a < 0 ? a + 180.0 : a;
  return static_cast<float>(turned) >= 180.0f ? 0.0 : turned;
}

// The angle at lambda0^2, in degrees: chi0 rotated by phi lambda0^2.
double polangle(const Source& s, double lambda0_sq) { return half_turn(s.chi0_deg + s.phi * lambda0_sq * rad_to_deg); }

class Columns {
 public:
  explicit Columns(const std::vector<Source>& sources) : sources_(sources) {}
  template <class T>
  void add(const char* name, const char* unit, const char* description, const std::function<double(const Source&)>& value) {
    std::vector<T> values;
    for (const Source& s : sources_) values.push_back(static_cast<T>(value(s)));
    columns.push_back({name, unit, description, std::move(values)});
  }
  void text(const char* name, const char* description, const std::function<std::string(const Source&)>& value) {
    std::vector<std::string> values;
    for (const Source& s : sources_) values.push_back(value(s));
    columns.push_back({name, "", description, std::move(values)});
  }
  void real(const char* name, const char* unit, const char* description,
            const std::function<double(const Source&)>& value) {
    add<float>(name, unit, description, value);
  }
  void blank(const char* name, const char* unit, const char* description) {
    real(name, unit, description, [](const Source&) { return nan; });
  }
  std::vector<fits::TableColumn> columns;

 private:
  const std::vector<Source>& sources_;
};

}  // namespace

fits::Table rmtable(const std::vector<Source>& sources, const FinderSettings& settings, const RmTableContext& context) {
  using S = const Source&;
  const double lambda0_sq = context.lambda0_sq;
  const double nu0 = lambda0_sq > 0 ? speed_of_light / std::sqrt(lambda0_sq) : nan;
  const auto [low, high] = std::minmax_element(context.freq_hz.begin(), context.freq_hz.end());
  // The axis's median step: a blank channel between two weighted ones does not widen it.
  std::vector<double> steps;
  for (std::size_t c = 1; c < context.axis_freq_hz.size(); ++c)
    steps.push_back(std::abs(context.axis_freq_hz[c] - context.axis_freq_hz[c - 1]));
  std::nth_element(steps.begin(), steps.begin() + static_cast<long>(steps.size() / 2), steps.end());
  const double channel_width = steps.empty() ? nan : steps[steps.size() / 2];
  const fits::Beam& beam = context.beam;
  const std::string telescope = standard_telescope(context.telescope);
  // Where the bias-corrected PI is 0 (a listed position without polarisation) its
  // relative errors have no value.
  const auto fracpol_err = [](S s) {
    return s.pi > 0 ? s.frac_pol * std::hypot(s.pi_err / s.pi, s.sigma / s.stokes_i) : nan;
  };

  // The catalogue's positions are in its images' RADESYS; the standard's are ICRS.
  const bool icrs_given = settings.radesys == "ICRS";
  const auto position = [](S s) { return Direction{s.ra_deg / rad_to_deg, s.dec_deg / rad_to_deg}; };
  const auto icrs = [&](S s) { return icrs_given ? position(s) : icrs_of_fk5(position(s)); };
  Columns c(sources);
  c.add<double>("ra", "deg", "Right Ascension [ICRS]", [&](S s) { return icrs(s).ra_rad * rad_to_deg; });
  c.add<double>("dec", "deg", "Declination [ICRS]", [&](S s) { return icrs(s).dec_rad * rad_to_deg; });
  // From the FK5 position, as astropy takes ICRS through FK5 to galactic: one place on
  // the sky gets one l and b whichever frame its images were in.
  const auto galactic_deg = [&](S s, int k) {
    return galactic(icrs_given ? fk5_of_icrs(position(s)) : position(s))[static_cast<std::size_t>(k)] * rad_to_deg;
  };
  c.add<double>("l", "deg", "Galactic Longitude", [&](S s) { return galactic_deg(s, 0); });
  c.add<double>("b", "deg", "Galactic Latitude", [&](S s) { return galactic_deg(s, 1); });
  c.real("pos_err", "deg", "Position uncertainty", [](S s) { return s.position_err_deg; });
  c.real("rm", "rad.m-2", "Rotation measure", [](S s) { return s.phi; });
  c.real("rm_err", "rad.m-2", "Error in RM", [](S s) { return s.phi_err; });
  c.blank("rm_width", "rad.m-2", "Width in Faraday depth");
  c.blank("rm_width_err", "rad.m-2", "Error in width");
  c.text("complex_flag", "Faraday complexity flag", [](S s) { return s.faraday_complex ? "Y" : "N"; });
  c.text("complex_test", "Faraday complexity metric", [](S) { return "Second moment"; });
  c.text("rm_method", "RM determination method", [&](S) {
    return context.fractional ? "RM Synthesis - Fractional polarization" : "RM Synthesis - Pol. Int";
  });
  c.text("ionosphere", "Ionospheric correction method", [&](S) { return context.ionosphere ? "Unknown" : "None"; });
  c.add<std::int32_t>("Ncomp", "", "Number of RM components", [](S) { return 1.0; });
  c.real("stokesI", "Jy", "Stokes I", [](S s) { return s.stokes_i; });
  c.real("stokesI_err", "Jy", "Error in Stokes I", [](S s) { return s.sigma; });
  c.real("spectral_index", "", "Stokes I spectral index", [](S s) { return s.spectral_index; });
  c.blank("spectral_index_err", "", "Error in spectral index");
  c.real("reffreq_I", "Hz", "Reference frequency for Stokes I", [&](S) { return context.fractional ? nu0 : nan; });
  c.real("polint", "Jy", "Polarized intensity", [](S s) { return s.pi; });
  c.real("polint_err", "Jy", "Error in Pol.Int.", [](S s) { return s.pi_err; });
  c.text("pol_bias", "Polarization bias correction method", [](S) { return "2012PASA...29..214G"; });
  c.text("flux_type", "Stokes extraction method", [](S) { return "Peak"; });
  c.blank("aperture", "deg", "Integration aperture");
  c.real("fracpol", "", "Fractional (linear) polarization", [](S s) { return s.frac_pol; });
  c.real("fracpol_err", "", "Error in fractional polarization", fracpol_err);
  c.real("polangle", "deg", "Electric vector polarization angle", [&](S s) { return polangle(s, lambda0_sq); });
  c.real("polangle_err", "deg", "Error in EVPA", [](S s) { return s.pi > 0 ? 0.5 * s.pi_err / s.pi * rad_to_deg : nan; });
  c.real("reffreq_pol", "Hz", "Reference frequency for polarization", [&](S) { return nu0; });
  const auto stokes_qu = [&](S s, bool u) {
    const double twice = 2 * polangle(s, lambda0_sq) / rad_to_deg;
    return s.pi * (u ? std::sin(twice) : std::cos(twice));
  };
  c.real("stokesQ", "Jy", "Stokes Q", [&](S s) { return stokes_qu(s, false); });
  c.real("stokesQ_err", "Jy", "Error in Stokes Q", [](S s) { return s.pi_err; });
  c.real("stokesU", "Jy", "Stokes U", [&](S s) { return stokes_qu(s, true); });
  c.real("stokesU_err", "Jy", "Error in Stokes U", [](S s) { return s.pi_err; });
  c.real("derot_polangle", "deg", "De-rotated EVPA", [](S s) { return half_turn(s.chi0_deg); });
  c.real("derot_polangle_err", "deg", "Error in De-rotated EVPA", [](S s) { return s.chi0_err_deg; });
  c.real("stokesV", "Jy", "Stokes V", [](S s) { return s.stokes_v; });
  c.real("stokesV_err", "Jy", "Error in Stokes V", [](S s) { return std::isnan(s.stokes_v) ? nan : s.sigma; });
  c.real("beam_maj", "deg", "Beam major axis", [&](S) { return beam.major_rad * rad_to_deg; });
  c.real("beam_min", "deg", "Beam minor axis", [&](S) { return beam.minor_rad * rad_to_deg; });
  c.real("beam_pa", "deg", "Beam position angle", [&](S) { return half_turn(beam.pa_rad * rad_to_deg); });
  c.blank("reffreq_beam", "Hz", "Reference frequency for beam");
  c.real("minfreq", "Hz", "Lowest frequency", [&](S) { return low == context.freq_hz.end() ? nan : *low; });
  c.real("maxfreq", "Hz", "Highest frequency", [&](S) { return high == context.freq_hz.end() ? nan : *high; });
  c.real("channelwidth", "Hz", "Typical channel width", [&](S) { return channel_width; });
  c.add<std::int32_t>("Nchan", "", "Number of channels", [&](S) { return static_cast<double>(context.freq_hz.size()); });
  c.real("rmsf_fwhm", "rad.m-2", "Full-width at half maximum of the RMSF", [&](S) { return settings.rmsf_fwhm; });
  c.real("noise_chan", "Jy", "Typical per-channel noise in Q;U", [&](S s) {
    return context.fdf_sigma > 0 && s.sigma > 0 ? context.noise_chan * s.sigma / context.fdf_sigma : context.noise_chan;
  });
  c.text("telescope", "Name of Telescope(s)", [&](S) { return telescope; });
  const auto observed = [&](const Source& s) {
    return context.pointing_times.empty() ? PointingTime{}
                                          : context.pointing_times.at(static_cast<std::size_t>(s.pointing));
  };
  c.real("int_time", "s", "Integration time", [&](S s) { return observed(s).int_time_s; });
  // The standard's "day", spelt as FITS spells it.
  c.real("epoch", "d", "Median epoch of observation", [&](S s) { return observed(s).epoch_mjd; });
  c.real("obs_interval", "d", "Interval of observation", [&](S s) { return observed(s).obs_interval_d; });
  c.blank("leakage", "", "Instrumental leakage estimate");
  c.real("beamdist", "deg", "Distance from beam centre - taken as centre of tile", [](S s) { return s.beamdist_deg; });
  c.text("catalog_name", "Name of catalog", [&](S) { return context.catalog_name; });
  c.text("dataref", "Data references", [](S) { return ""; });
  c.text("cat_id", "Source ID in catalog", [](S s) { return s.name; });
  c.text("type", "Source classification", [](S) { return ""; });
  c.text("notes", "Notes", [&](S) {
    return telescope == context.telescope || context.telescope.empty() ? "" : "telescope: " + context.telescope;
  });
  // Beyond the standard: where spip found each source, and its measures.
  c.add<std::int32_t>("island", "", "spip: island number, brightest first", [](S s) { return s.island; });
  c.add<std::int32_t>("component", "", "spip: component within its island", [](S s) { return s.component; });
  c.add<double>("x_pix", "pix", "spip: zero-based image x of the PI peak", [](S s) { return s.x; });
  c.add<double>("y_pix", "pix", "spip: zero-based image y of the PI peak", [](S s) { return s.y; });
  c.real("snr", "", "spip: polint / local FDF noise", [](S s) { return s.snr; });
  c.real("m2", "rad.m-2", "spip: second moment of the RM-CLEAN components", [](S s) { return s.m2; });
  c.real("beam_response", "", "spip: the nearest pointing's primary-beam response at reffreq_pol; NaN: none",
         [](S s) { return s.beam_response; });
  // As POSSUM's catalogue carries them (RM-Tools' sigmaAddC and its errors).
  c.real("sigma_add", "", "additional scatter of Q and U about the thin model, over the channel noise",
         [](S s) { return s.sigma_add; });
  c.real("sigma_add_err_minus", "", "lower 1-sigma error of sigma_add", [](S s) { return s.sigma_add_minus; });
  c.real("sigma_add_err_plus", "", "upper 1-sigma error of sigma_add", [](S s) { return s.sigma_add_plus; });
  c.add<std::int32_t>("complex_sigma_add_flag", "", "1 where sigma_add > 3 sigma_add_err_minus",
                      [](S s) { return s.complex_sigma_add() ? 1.0 : 0.0; });
  c.add<std::int32_t>("complex_m2_flag", "", "1 where m2 > COMPLEXT * rmsf_fwhm",
                      [](S s) { return s.faraday_complex ? 1.0 : 0.0; });
  c.real("fdf_noise_th", "Jy", "theoretical FDF noise about the source: the local rms of the pixels' noise from "
         "their channels'", [](S s) { return s.pi_err; });
  c.real("fdf_noise_mad", "Jy", "measured FDF noise at the source's pixel: MAD sigma of the clean FDF's real and "
         "imaginary parts beyond 2 RMSF widths of its peak (RM-Tools' dFDFcorMAD)", [](S s) { return s.fdf_noise_mad; });

  fits::Table table;
  table.extname = "RMTABLE";
  table.columns = std::move(c.columns);
  table.keys = {{"VERSION", 1.3, "RMTable standard version"},
                {"COMPLEXT", settings.complexity, "complex_flag Y where m2 > COMPLEXT * rmsf_fwhm"}};
  table.comments = {"spip's catalogue in the RMTable standard 1.3: see docs/products.md"};
  return table;
}

}  // namespace spip::catalogue
