#pragma once
// When a pointing was observed, as the RMTable standard's epoch, int_time and
// obs_interval describe it: from the distinct integrations (TIME, INTERVAL) of every
// input of the pointing. Spectral windows and Measurement Sets observed at once share
// their integrations, which count once.
#include <limits>
#include <vector>

namespace spip::ms {

// One time stamp of the main table: its TIME (the integration's middle) and INTERVAL.
struct Integration {
  double mid_mjd_s = 0;
  double length_s = 0;
};

struct ObservingTime {
  static constexpr double none = std::numeric_limits<double>::quiet_NaN();
  double start_mjd_s = none;   // the first integration's beginning
  double end_mjd_s = none;     // the last one's end
  double median_mjd_s = none;  // the median of the integrations' middles
  double on_source_s = none;   // the time covered by integrations, overlaps once
};

// Sorted by TIME, one integration per TIME: the longest INTERVAL given for it.
void distinct_integrations(std::vector<Integration>& integrations);

// NaN throughout where there is no integration; on_source_s NaN where an INTERVAL is not
// known (0: the column is missing).
ObservingTime observing_time(std::vector<Integration> integrations);

}  // namespace spip::ms
