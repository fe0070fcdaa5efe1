// spip-simulate: Measurement Sets with an exactly known answer for tests and benchmarks.
#include <boost/program_options.hpp>

#include <chrono>
#include <cmath>
#include <iostream>
#include <numbers>
#include <optional>

#include "spip/beam/primary_beam.hpp"
#include "spip/common/number_text.hpp"
#include "spip/error.hpp"
#include "spip/sim/ms_writer.hpp"
#include "spip/sim/sky_model.hpp"

namespace po = boost::program_options;

namespace {

constexpr double deg = std::numbers::pi / 180.0;

po::options_description options() {
  po::options_description all("spip-simulate options");
  all.add_options()
    ("help", "show this help")
    ("sky", po::value<std::string>(), "sky model, OSKAR named-column text format")
    ("out", po::value<std::string>()->required(), "Measurement Set to write")
    ("template", po::value<std::string>(), "keep this MS's UVW, times, baselines and frequencies")
    ("telescope", po::value<std::string>(), "OSKAR telescope model folder (layout.txt, position.txt)")
    ("telescope-name", po::value<std::string>()->default_value(spip::sim::ArrayDescription{}.telescope),
     "with --telescope: the OBSERVATION table's TELESCOPE_NAME, which beam.model auto and EveryBeam read")
    ("ra", po::value<double>()->default_value(0.0), "phase centre RA [deg]")
    ("dec", po::value<double>()->default_value(60.0), "phase centre Dec [deg]")
    ("apparent", po::bool_switch(), "treat RA/Dec as apparent coordinates, as OSKAR does")
    ("freq-start", po::value<double>()->default_value(120.6e6), "first channel [Hz]")
    ("freq-inc", po::value<double>()->default_value(1.2e6), "channel spacing [Hz]")
    ("channels", po::value<int>()->default_value(40), "number of channels")
    ("start", po::value<std::string>()->default_value("2025-03-20 00:00:00"), "start time, UTC")
    ("dump", po::value<double>()->default_value(400.0), "dump time [s]")
    ("times", po::value<int>()->default_value(36), "number of time steps")
    ("noise", po::value<double>()->default_value(0.0), "noise sigma per correlation [Jy]")
    ("flag-fraction", po::value<double>()->default_value(0.0), "fraction of visibilities flagged")
    ("seed", po::value<std::uint64_t>()->default_value(1), "random seed for noise and flags")
    ("flag-channels", po::value<std::vector<int>>()->multitoken(), "channels to flag entirely, separated by spaces (--flag-channels 50 51 52)")
    ("split", po::value<std::string>(),
     "instead of simulating, rearrange this MS's channels into the spectral windows of --windows")
    ("windows", po::value<std::vector<std::string>>()->multitoken(),
     "with --split: one FIRST-LAST channel range per window (LAST < FIRST: stored high to low)")
    ("ionosphere", po::value<std::string>(),
     "table of time (MJD s) and ionospheric RM (rad/m^2): rotate each row's Q and U by RM(t) lambda^2")
    ("beam", po::value<std::string>(),
     "primary beam each component is seen through, at its position and frequency: gaussian or airy "
     "(with --dish-diameter), or fits (with --beam-fits; its leakages add their fractions of I to Q, U and V)")
    ("beam-fits", po::value<std::string>(), "the beam cube of --beam fits, as spip's beam.fits")
    ("dish-diameter", po::value<double>(),
     "dish diameter [m] of --beam, also written as the ANTENNA table's DISH_DIAMETER (--telescope)")
    ("beam-fwhm-factor", po::value<double>()->default_value(1.02), "gaussian beam: FWHM = factor lambda / D")
    ("blockage", po::value<double>()->default_value(0.0), "airy beam: diameter of the central blockage [m]");
  return all;
}

// "FIRST-LAST", inclusive; descending when LAST < FIRST.
std::vector<int> channel_range(const std::string& text) {
  std::size_t dash = text.find('-');
  std::size_t used = 0;
  int first = 0, last = 0;
  try {
    first = std::stoi(text.substr(0, dash));
    last = std::stoi(text.substr(dash + 1), &used);
  } catch (const std::exception&) {
    dash = std::string::npos;
  }
  if (dash == std::string::npos || used != text.size() - dash - 1)
    SPIP_THROW(spip::ConfigError, "--windows " + text + ": expected FIRST-LAST channel numbers");
  std::vector<int> channels;
  for (int c = first;; c += last >= first ? 1 : -1) {
    channels.push_back(c);
    if (c == last) break;
  }
  return channels;
}

int split(const po::variables_map& vm) {
  if (!vm.count("windows")) SPIP_THROW(spip::ConfigError, "--split needs --windows");
  std::vector<std::vector<int>> windows;
  for (const std::string& text : vm["windows"].as<std::vector<std::string>>()) windows.push_back(channel_range(text));
  spip::sim::split_windows(vm["split"].as<std::string>(), vm["out"].as<std::string>(), windows);
  std::cout << "spip-simulate: wrote " << vm["out"].as<std::string>() << " (" << windows.size() << " window(s))\n";
  return 0;
}

// --beam and its keys, checked.
spip::beam::PrimaryBeam primary_beam(const po::variables_map& vm) {
  const std::string name = vm["beam"].as<std::string>();
  if (name != "fits" && vm.count("beam-fits"))
    SPIP_THROW(spip::ConfigError, "--beam-fits goes with --beam fits, not --beam " + name);
  if (name == "fits") {
    if (!vm.count("beam-fits")) SPIP_THROW(spip::ConfigError, "--beam fits needs --beam-fits");
    return spip::beam::cube_beam(vm["beam-fits"].as<std::string>());
  }
  const std::optional<spip::beam::Model> model = spip::beam::model_named(name);
  if (!model) SPIP_THROW(spip::ConfigError, "--beam " + name + ": expected gaussian, airy or fits");
  if (!vm.count("dish-diameter")) SPIP_THROW(spip::ConfigError, "--beam " + name + " needs --dish-diameter");
  spip::beam::PrimaryBeam beam{.model = *model,
                               .dish_diameter_m = vm["dish-diameter"].as<double>(),
                               .fwhm_factor = vm["beam-fwhm-factor"].as<double>(),
                               .blockage_m = vm["blockage"].as<double>()};
  beam.check();
  return beam;
}

int run(const po::variables_map& vm) {
  if (vm.count("split")) return split(vm);
  if (!vm.count("sky")) SPIP_THROW(spip::ConfigError, "give --sky FILE (or --split MS)");
  const auto started = std::chrono::steady_clock::now();
  const spip::sim::SkyModel sky = spip::sim::read_sky_model(vm["sky"].as<std::string>());
  spip::sim::Corruption corruption;
  corruption.noise_sigma_jy = vm["noise"].as<double>();
  if (!(corruption.noise_sigma_jy >= 0 && std::isfinite(corruption.noise_sigma_jy)))
    SPIP_THROW(spip::ConfigError, "--noise " + spip::number_text(corruption.noise_sigma_jy) + ": expected a sigma >= 0 in Jy");
  corruption.flag_fraction = vm["flag-fraction"].as<double>();
  if (!(corruption.flag_fraction >= 0 && corruption.flag_fraction <= 1))
    SPIP_THROW(spip::ConfigError,
               "--flag-fraction " + spip::number_text(corruption.flag_fraction) + ": expected a fraction in [0, 1]");
  corruption.seed = vm["seed"].as<std::uint64_t>();
  if (vm.count("flag-channels")) corruption.flag_channels = vm["flag-channels"].as<std::vector<int>>();
  if (vm.count("ionosphere")) corruption.ionosphere = spip::ms::IonosphereTable::read(vm["ionosphere"].as<std::string>());
  if (vm.count("beam")) corruption.primary_beam = primary_beam(vm);
  // The ionosphere turns the sky before the antennas leak I into Q and U; the simulator
  // turns what they receive, leakage included, so it takes one or the other.
  if (corruption.ionosphere && corruption.primary_beam && corruption.primary_beam->has_leakage())
    SPIP_THROW(spip::ConfigError, "--ionosphere with --beam-fits leakage planes: the simulator would turn the leaked "
                                  "polarisation too; give a beam cube of STOKES I only");
  const std::string out = vm["out"].as<std::string>();
  if (vm.count("template")) {
    spip::sim::simulate_from_template(vm["template"].as<std::string>(), out, sky, corruption);
  } else if (vm.count("telescope")) {
    spip::sim::ArrayDescription array;
    spip::sim::read_oskar_telescope(vm["telescope"].as<std::string>(), array);
    array.ra_rad = vm["ra"].as<double>() * deg;
    array.dec_rad = vm["dec"].as<double>() * deg;
    array.apparent_phase_centre = vm["apparent"].as<bool>();
    array.freq_start_hz = vm["freq-start"].as<double>();
    array.freq_inc_hz = vm["freq-inc"].as<double>();
    array.num_channels = vm["channels"].as<int>();
    array.start_mjd_s = spip::sim::parse_utc(vm["start"].as<std::string>());
    array.dump_s = vm["dump"].as<double>();
    array.num_times = vm["times"].as<int>();
    if (vm.count("dish-diameter")) array.dish_diameter_m = vm["dish-diameter"].as<double>();
    array.telescope = vm["telescope-name"].as<std::string>();
    spip::sim::simulate_from_array(array, out, sky, corruption);
  } else {
    std::cerr << "spip-simulate: give --template MS or --telescope DIR\n";
    return static_cast<int>(spip::ExitCode::bad_config);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::cout << "spip-simulate: wrote " << out << " (" << sky.components.size() << " components) in "
            << spip::number_text(seconds, 3) << " s\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const po::options_description all = options();
  try {
    po::variables_map vm;
    po::store(po::parse_command_line(argc, argv, all), vm);
    if (vm.count("help")) {
      std::cout << all << "\n";
      return 0;
    }
    po::notify(vm);
    spip::sim::quiet_casacore_log();
    return run(vm);
  } catch (const po::error& e) {
    std::cerr << "spip-simulate: " << e.what() << "\n";
    return static_cast<int>(spip::ExitCode::bad_config);
  } catch (const spip::Error& e) {
    std::cerr << "spip-simulate: " << e.what() << "\n";
    return static_cast<int>(e.code());
  } catch (const std::exception& e) {
    std::cerr << "spip-simulate: " << e.what() << "\n";
    return static_cast<int>(spip::ExitCode::failure);
  }
}
