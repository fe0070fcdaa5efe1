#pragma once
// Reading channel blocks of a Measurement Set (the only room, with sim, that
// includes casacore; this header does not, so C++20 code may include it).
#include <array>
#include <complex>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "spip/ms/observing_time.hpp"
#include "spip/ms/stokes.hpp"

namespace spip::ms {

struct Selection {
  std::string column = "auto";  // DATA | CORRECTED_DATA | MODEL_DATA; auto: CORRECTED_DATA where the MS has it, else DATA
  int field = -1;               // -1: the MS must have exactly one field
  int spw = -1;                 // -1: the MS must have exactly one spectral window
  std::size_t row_chunk = 65536;
};

struct MsInfo {
  std::string path;
  std::int64_t num_rows = 0;          // rows in the main table (the window's alone where others' cells differ in shape)
  int field = 0;
  int spw = 0;
  int num_windows = 1;                // spectral windows in the MS
  int num_fields = 1;                 // fields in the MS
  std::vector<double> freq_hz;        // channel centres of the selected window
  std::vector<double> chan_width_hz;
  std::vector<int> corr_types;        // CORR_TYPE codes, MS order
  std::array<bool, num_stokes> stokes_determined{};  // which of I, Q, U, V the correlations give
  double ra_rad = 0, dec_rad = 0;     // phase centre, J2000
  std::string telescope;
  double dish_diameter_m = 0;         // the antennas' positive DISH_DIAMETERs where they agree to 1 %; 0 where not
  std::string dish_range;             // what the ANTENNA table holds, e.g. "22 m" or "7 to 12 m", for messages
  std::string field_name;
  std::string column;                 // the visibility column read (Selection::column, auto resolved)
  // ASKAP's DATA as the observatory writes it: correlations in the instrument frame with
  // I = XX + YY, which FixMS's fix_ms_corrs turns into the sky frame (in CORRECTED_DATA,
  // or in DATA beside the original kept as DATA_ASKAP).
  bool askap_instrument_frame = false;
  std::vector<Integration> integrations;  // the field and window's distinct TIMEs with their INTERVALs, MJD s (UTC)
  std::string spectral_frame = "TOPOCENT";  // FITS SPECSYS of the window's MEAS_FREQ_REF
  bool has_weight_spectrum = false;
  // Channels in one tile of the data column (all of them in OSKAR's and spip-simulate's
  // layout, where any channel block reads every tile); 0 where it is not tiled.
  int data_tile_channels = 0;

  int num_channels() const { return static_cast<int>(freq_hz.size()); }
  // The earliest integration's start (its TIME less half its INTERVAL), MJD s; NaN: no row.
  double start_time_mjd_s() const { return observing_time(integrations).start_mjd_s; }
  std::string date_obs() const;       // ISO 8601 of start_time_mjd_s(), the observation's start (FITS DATE-OBS)
  std::string stokes_summary() const; // e.g. "I Q U V" or "I Q (U, V not determined by [XX YY])"
};

// Stokes visibilities of the channels [chan_begin, chan_end) for every kept row
// (cross-correlations of the selected field and window, FLAG_ROW false).
// Layout: index(row, chan, stokes) = (chan * num_rows() + row) * 4 + stokes, channel
// planes one after another, so that imaging a channel reads one contiguous range.
// A visibility and its weight are 0 where any correlation the Stokes parameter needs
// is flagged or not finite (NaN or Inf in its value or weight), or where the
// correlations do not determine it. Which rows are kept does not depend on
// the channels, so every block of one MsReader has the same rows and uvw_m.
struct VisBlock {
  int chan_begin = 0, chan_end = 0;
  std::vector<double> freq_hz;                 // per channel of the block
  std::vector<double> uvw_m;                   // [row][3], metres, as in the UVW column
  std::vector<double> time_mjd_s;              // per row, as in the TIME column
  std::vector<std::complex<float>> vis;        // Jy
  std::vector<float> weight;                   // inverse variance, per Stokes
  // Per channel: correlation samples of the kept rows whose value or weight is NaN or
  // Inf, flagged or not; every one is treated as flagged.
  std::vector<std::int64_t> nonfinite_samples;
  // Cross-correlation rows of the field and window that FLAG_ROW flags whole: not in the
  // block, but flagged samples of every channel, in every share of the rows alike.
  std::int64_t flagged_rows = 0;

  int num_channels() const { return chan_end - chan_begin; }
  std::size_t num_rows() const { return uvw_m.size() / 3; }
  std::size_t index(std::size_t row, int chan, int stokes) const {
    return (static_cast<std::size_t>(chan) * num_rows() + row) * 4 + static_cast<std::size_t>(stokes);
  }
};

// One open Measurement Set, read-only and without table locks so that many ranks
// can read it at once. Every failure to use the input is an InputError naming the
// path (and the column or table) and what was expected.
class MsReader {
 public:
  MsReader(const std::string& path, const Selection& selection);
  ~MsReader();
  MsReader(MsReader&&) noexcept;
  MsReader& operator=(MsReader&&) noexcept;

  const MsInfo& info() const;

  // Reads channels [chan_begin, chan_end) of all rows, row_chunk rows per call; with
  // `share` (one entry per row that uvw_m() returns), only the rows it marks: a rank's
  // share of the rows of channels that a group of ranks images together.
  VisBlock read(int chan_begin, int chan_end, const std::vector<char>& share = {}) const;

  // UVW (metres, [row][3]) of the rows read() keeps, without their data: the
  // coordinates of every channel of a run, read once.
  std::vector<double> uvw_m() const;
  // Unflagged visibilities per channel (a Stokes I sample counts when both of its
  // correlations are unflagged); reads only FLAG and the row-selection columns.
  // Throws an InputError if nothing at all is unflagged.
  std::vector<std::int64_t> unflagged_per_channel() const;
  // The same over rows [row_begin, row_end) only, without the check, so that ranks
  // can each count a share of the rows and add the counts up.
  std::vector<std::int64_t> unflagged_per_channel(std::int64_t row_begin, std::int64_t row_end) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Throws an InputError naming the MS if every count is zero.
void require_unflagged(const MsInfo& info, const std::vector<std::int64_t>& counts);

// The spectral windows that the MS's DATA_DESCRIPTION table refers to, each once, by
// increasing id: input.spw = all.
std::vector<int> spectral_windows(const std::string& path);

}  // namespace spip::ms
