#pragma once
// The catalogue in the RMTable standard, version 1.3 (Van Eck et al. 2023, ApJS 267,
// 28): the table the consolidated RM catalogue, POSSUM and CIRADA exchange, with the
// `rmtable` package's column names, units, types and blanks, its standard strings and
// its angle ranges, then the columns of spip's own catalogue that place each source in
// the image.
#include <limits>
#include <string>
#include <vector>

#include "spip/catalogue/source_finder.hpp"
#include "spip/fits/fits_image.hpp"
#include "spip/fits/fits_table.hpp"

namespace spip::catalogue {

// When a pointing was observed, in the standard's units; NaN where not known.
struct PointingTime {
  double epoch_mjd = std::numeric_limits<double>::quiet_NaN();       // the median of its integrations, d
  double int_time_s = std::numeric_limits<double>::quiet_NaN();      // the time its integrations cover
  double obs_interval_d = std::numeric_limits<double>::quiet_NaN();  // from its first integration's start to its last's end
};

// What the standard asks of a catalogue besides its sources: the run's and the band's.
struct RmTableContext {
  std::string catalog_name;       // "spip PREFIX"
  std::string telescope;          // TELESCOP; "Unknown" in the table where the standard has no such name
  bool fractional = false;        // faraday.fractional: RM synthesis of Q/I and U/I
  bool ionosphere = false;        // faraday.ionosphere: derotated by a table of unknown origin
  double lambda0_sq = 0;          // m^2: the angles' and Q, U's reference
  fits::Beam beam;                // the restoring beam
  std::vector<double> freq_hz;    // the channels that were weighted
  std::vector<double> axis_freq_hz;  // every channel of the axis, weighted or blank: channelwidth is its step
  double noise_chan = 0;          // Jy/beam: the median channel's noise in Q and U over the field
  // Per pointing of FinderSettings::pointings: a source takes its nearest's (Source::pointing),
  // as beamdist does; empty where the inputs do not say (other imagers' cubes).
  std::vector<PointingTime> pointing_times{};
  // The field's FDF noise, of which a source's sigma_qu is the local value: noise_chan is
  // scaled by their ratio to the source's place (with a primary beam, 1 / B there); 0: not scaled.
  double fdf_sigma = 0;
};

fits::Table rmtable(const std::vector<Source>& sources, const FinderSettings& settings,
                    const RmTableContext& context);

}  // namespace spip::catalogue
