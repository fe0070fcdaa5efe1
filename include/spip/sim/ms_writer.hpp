#pragma once
// Writing simulated Measurement Sets in the layout OSKAR writes (main table with
// tiled UVW/DATA/FLAG/WEIGHT/SIGMA, correlations [XX, XY, YX, YY]).
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "spip/ms/ionosphere.hpp"
#include "spip/sim/sky_model.hpp"

namespace spip::sim {

struct Corruption {
  double noise_sigma_jy = 0;   // Gaussian noise per correlation, real and imaginary part
  double flag_fraction = 0;    // fraction of visibilities flagged at random (all correlations)
  std::vector<int> flag_channels;  // channels flagged entirely (e.g. RFI)
  std::optional<ms::IonosphereTable> ionosphere;  // Faraday rotation applied per row before the noise
  // The antennas' primary beam: each component is seen attenuated by it at its position,
  // channel by channel (an apparent sky); none: the sky as it is.
  std::optional<beam::PrimaryBeam> primary_beam;
  std::uint64_t seed = 1;
};

// Copies `template_ms` (its UVW, times, baselines and frequencies) to `out_ms` and
// replaces DATA with the sky's exact visibilities. Written under a temporary name
// and renamed when complete.
void simulate_from_template(const std::string& template_ms, const std::string& out_ms,
                            const SkyModel& sky, const Corruption& corruption);

// Writes `out_ms` with the visibilities of `in_ms` (one spectral window) rearranged
// into spectral windows: window w holds the input's channels windows[w] in that order
// (a reversed list stores them high to low), and each input row appears once per
// window with DATA_DESC_ID w. Copies DATA, FLAG, WEIGHT, SIGMA and the row columns; for
// tests of inputs that arrive split (sub-bands, windows) without another tool's copy.
// Windows of different channel counts are stored as real ones are, with DATA and FLAG
// cells of varying shape.
void split_windows(const std::string& in_ms, const std::string& out_ms, const std::vector<std::vector<int>>& windows);

struct ArrayDescription {
  std::vector<std::array<double, 3>> station_enu_m;  // East, North, Up offsets from the site
  double lon_rad = 0, lat_rad = 0, alt_m = 0;       // site (WGS84)
  double ra_rad = 0, dec_rad = 0;                   // phase centre
  bool apparent_phase_centre = false;  // treat RA/Dec as apparent, as OSKAR does
  double freq_start_hz = 0, freq_inc_hz = 0;
  int num_channels = 0;
  double start_mjd_s = 0;              // UTC, MJD seconds, start of the first dump
  double dump_s = 0;
  int num_times = 0;
  std::string telescope = "spip-simulate";
  double dish_diameter_m = 1.0;        // ANTENNA DISH_DIAMETER
};

// Reads an OSKAR telescope model folder: layout.txt (East, North [m]) and
// position.txt (longitude, latitude [deg], altitude [m]).
void read_oskar_telescope(const std::string& dir, ArrayDescription& array);

// casacore's log keeps only its severe messages: the measures tables' notes (IERS tables
// missing, the Earth-orientation range) were eight lines of stderr on every array
// simulation, about precision the simulation does not need (its UVW and its
// visibilities come from the same times and directions).
void quiet_casacore_log();

// Parses "YYYY-MM-DD hh:mm:ss[.sss]" (UTC) to MJD seconds.
double parse_utc(const std::string& text);

// Computes UVW (antenna1 - antenna2, time-major, antenna1 < antenna2) with casacore
// measures at the midpoint of each dump, and writes a new MS with the sky's exact
// visibilities.
void simulate_from_array(const ArrayDescription& array, const std::string& out_ms,
                         const SkyModel& sky, const Corruption& corruption);

}  // namespace spip::sim
