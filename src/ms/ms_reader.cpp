// casacore side of the ms room; compiled as C++17 (casacore 3.5 headers are not C++20-clean).
#include "spip/ms/ms_reader.hpp"

#include <casacore/casa/Arrays/Array.h>
#include <casacore/casa/Arrays/Slicer.h>
#include <casacore/casa/Arrays/Vector.h>
#include <casacore/casa/Containers/Record.h>
#include <casacore/casa/Exceptions/Error.h>
#include <casacore/casa/Quanta/MVTime.h>
#include <casacore/measures/Measures/MDirection.h>
#include <casacore/measures/Measures/MCDirection.h>
#include <casacore/measures/TableMeasures/ArrayMeasColumn.h>
#include <casacore/tables/Tables/ArrayColumn.h>
#include <casacore/tables/Tables/RowNumbers.h>
#include <casacore/tables/DataMan/TiledStManAccessor.h>
#include <casacore/tables/Tables/TableColumn.h>
#include <casacore/tables/Tables/ScalarColumn.h>
#include <casacore/tables/Tables/Table.h>
#include <casacore/tables/Tables/TableLock.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <filesystem>
#include <iterator>
#include <limits>
#include <numeric>
#include <sstream>
#include <vector>

#include "spip/error.hpp"

namespace spip::ms {
namespace {

namespace cc = casacore;

[[noreturn]] void bad_input(const std::string& message) { SPIP_THROW(InputError, message); }

// Calls f(rows, first) for consecutive slices of 2^20 of a table's `count` rows: a scalar
// column read a slice at a time costs no more memory than a slice, however large the MS.
template <typename F>
void for_each_slice(cc::rownr_t count, F&& f) {
  constexpr cc::rownr_t slice = 1 << 20;
  for (cc::rownr_t first = 0; first < count; first += slice)
    f(cc::Slicer(cc::IPosition(1, static_cast<long long>(first)),
                 cc::IPosition(1, static_cast<long long>(std::min(slice, count - first)))),
      first);
}

// The distinct integrations (TIME, INTERVAL; INTERVAL 0 where the column is missing) of
// the selected field and windows' rows alone, whatever the rows' order (a calibrator's
// scan before the target's is not the target's; DATE-OBS is the earliest one's start).
// Rows of one time stamp mostly follow one another; where they do not (a table ordered
// by baseline), the list is made distinct whenever it has doubled, so that it holds at
// most about twice the time stamps, not a row each.
std::vector<Integration> integrations(const cc::Table& main, int field, const std::vector<int>& data_desc_ids) {
  const cc::ScalarColumn<double> time(main, "TIME");
  const cc::ScalarColumn<int> field_of(main, "FIELD_ID"), description_of(main, "DATA_DESC_ID");
  const bool has_interval = main.tableDesc().isColumn("INTERVAL");
  std::vector<Integration> found;
  std::size_t distinct = 0;
  for_each_slice(main.nrow(), [&](const cc::Slicer& rows, cc::rownr_t) {
    const cc::Vector<double> t = time.getColumnRange(rows);
    const cc::Vector<int> fields = field_of.getColumnRange(rows), descriptions = description_of.getColumnRange(rows);
    cc::Vector<double> interval;
    if (has_interval) interval = cc::ScalarColumn<double>(main, "INTERVAL").getColumnRange(rows);
    for (std::size_t r = 0; r < t.size(); ++r)
      if (fields[r] == field &&
          std::find(data_desc_ids.begin(), data_desc_ids.end(), descriptions[r]) != data_desc_ids.end() &&
          (found.empty() || found.back().mid_mjd_s != t[r] || found.back().length_s < (has_interval ? interval[r] : 0.0))) {
        found.push_back({t[r], has_interval ? interval[r] : 0.0});
        if (found.size() > 2 * distinct + 1024) {
          distinct_integrations(found);
          distinct = found.size();
        }
      }
  });
  distinct_integrations(found);
  return found;
}

// FITS SPECSYS of a window's MEAS_FREQ_REF, casacore's MFrequency types in their order
// (REST, LSRK, LSRD, BARY, GEO, TOPO, GALACTO, LGROUP, CMB); TOPOCENT where the
// column is missing.
std::string spectral_frame(const cc::Table& windows, int spw, const std::string& path) {
  if (!windows.tableDesc().isColumn("MEAS_FREQ_REF")) return "TOPOCENT";
  constexpr const char* specsys[] = {"SOURCE",   "LSRK",     "LSRD",     "BARYCENT", "GEOCENTR",
                                     "TOPOCENT", "GALACTOC", "LOCALGRP", "CMBDIPOL"};
  const int frame = cc::ScalarColumn<int>(windows, "MEAS_FREQ_REF")(static_cast<cc::rownr_t>(spw));
  if (frame < 0 || frame >= static_cast<int>(std::size(specsys)))
    bad_input(path + ": spectral window " + std::to_string(spw) + " has MEAS_FREQ_REF " + std::to_string(frame) +
              ", not a frequency frame; expected 0 to 8 (REST to CMB)");
  return specsys[frame];
}

// Read-only and without locks: many ranks read the same MS at once.
cc::Table open_table(const std::string& path) {
  return cc::Table(path, cc::TableLock(cc::TableLock::NoLocking), cc::Table::Old);
}

// Permission first, with POSIX's own test: casacore answers that an unreadable folder
// is no table, after a warning of its own on stderr. A folder above it that may not be
// entered counts too (stat fails with EACCES).
bool denied(const std::string& path) {
  std::error_code error;
  const bool folder = std::filesystem::is_directory(path, error);
  if (error) return error == std::errc::permission_denied;
  return std::filesystem::exists(path, error) && ::access(path.c_str(), folder ? R_OK | X_OK : R_OK) != 0 &&
         errno == EACCES;
}

bool exists(const std::string& path) {
  std::error_code error;
  return std::filesystem::exists(path, error);
}

void require_table(const std::string& path, const std::string& what) {
  if (denied(path) || denied(path + "/table.dat") || denied(path + "/table.f0"))
    bad_input(what + ": permission denied; spip needs to read it");
  if (!exists(path)) bad_input(what + ": no such file or directory");
  if (!cc::Table::isReadable(path))
    bad_input(what + (exists(path + "/table.dat")
                          ? ": its table.dat cannot be read (a truncated or corrupt file?); expected a MeasurementSet"
                          : ": not a casacore table; expected a MeasurementSet directory"));
}

cc::Table open_subtable(const std::string& ms_path, const char* name) {
  const std::string path = ms_path + "/" + name;
  if (!denied(path) && !exists(path))
    bad_input(ms_path + ": the " + name + " subtable is missing; expected a MeasurementSet");
  require_table(path, ms_path + ": its " + name + " subtable");
  return open_table(path);
}

void require_column(const cc::Table& table, const std::string& column, const std::string& what) {
  if (!table.tableDesc().isColumn(column))
    bad_input(what + ": column " + column + " not found");
}

std::string corr_name(int code) {
  static const char* names[] = {"RR", "RL", "LR", "LL", "XX", "XY", "YX", "YY"};
  if (code >= 5 && code <= 12) return names[code - 5];
  return "CORR_TYPE " + std::to_string(code);
}

// Picks the index to use from a subtable with `rows` entries: an explicit selection
// must exist; no selection requires that there is exactly one.
int select_row(int requested, std::size_t rows, const std::string& ms_path, const char* what,
               const char* key) {
  if (rows == 0) bad_input(ms_path + ": the " + std::string(what) + " table is empty");
  if (requested < 0) {
    if (rows > 1)
      bad_input(ms_path + " has " + std::to_string(rows) + " " + what + "s; choose one with " +
                key);
    return 0;
  }
  if (static_cast<std::size_t>(requested) >= rows)
    bad_input(ms_path + ": " + key + " = " + std::to_string(requested) + " but the MS has " +
              std::to_string(rows) + " " + what + "(s)");
  return requested;
}

}  // namespace

struct MsReader::Impl {
  Selection selection;
  MsInfo info;
  cc::Table stored;                // the main table as stored, for its storage managers
  cc::Table main;                  // the rows read: stored, or its selected window's (select_window_rows)
  cc::rownr_t first_stored_row = 0;  // main's first row in stored
  std::vector<int> data_desc_ids;  // DATA_DESC_IDs that point at the selected window
  std::array<StokesRule, num_stokes> rules{};
  std::string weight_column;       // WEIGHT_SPECTRUM, WEIGHT or SIGMA

  void open(const std::string& path);
  void read_windows();
  void select_window_rows();
  void read_field();
  void read_dishes();
  void choose_weights();

  // Rows [first, first + count) to read, and which of them to keep.
  struct RowChunk {
    cc::Slicer range;
    std::vector<char> keep;
    std::size_t kept = 0;
    std::int64_t flagged = 0;  // rows left out only for their FLAG_ROW
  };
  RowChunk keep_rows(cc::rownr_t first, cc::rownr_t count) const;
  // Rows of a main-table column (and a section of each cell), or an InputError naming
  // the column and its file: a table that cannot give them is damaged.
  template <typename T>
  cc::Vector<T> scalars(const std::string& column, const cc::Slicer& rows) const {
    return readable(column, [&] { return cc::ScalarColumn<T>(main, column).getColumnRange(rows); });
  }
  template <typename T>
  cc::Array<T> cells(const std::string& column, const cc::Slicer& rows) const {
    return readable(column, [&] { return cc::ArrayColumn<T>(main, column).getColumnRange(rows); });
  }
  template <typename T>
  cc::Array<T> cells(const std::string& column, const cc::Slicer& rows, const cc::Slicer& section) const {
    return readable(column, [&] { return cc::ArrayColumn<T>(main, column).getColumnRange(rows, section); });
  }
  // The same into `out`, resized only where the shape differs: one chunk's arrays
  // serve the next, whose pages are then already mapped.
  template <typename T>
  void cells(const std::string& column, const cc::Slicer& rows, const cc::Slicer& section, cc::Array<T>& out) const {
    readable(column, [&] {
      cc::ArrayColumn<T>(main, column).getColumnRange(rows, section, out, true);
      return 0;
    });
  }
  template <typename Read>
  auto readable(const std::string& column, Read read) const -> decltype(read()) {
    try {
      return read();
    } catch (const cc::AipsError& e) {
      damaged(column, e);
    }
  }
  [[noreturn]] void damaged(const std::string& column, const cc::AipsError& e) const;
  std::string file_of(const std::string& column) const;
  cc::rownr_t rows_per_chunk() const;
  // Calls f(accessor, name) for each data column stored by a tiled storage manager.
  template <typename F>
  void for_each_tiled_column(F&& f) const {
    for (const char* column : {"DATA", "FLAG", "WEIGHT_SPECTRUM", "CORRECTED_DATA", "MODEL_DATA"}) {
      if (!stored.tableDesc().isColumn(column)) continue;
      try {
        cc::ROTiledStManAccessor tiles(stored, column, true);
        f(tiles, column);
      } catch (const cc::AipsError&) {
        // Not a tiled storage manager: nothing cached per tile.
      }
    }
  }
  void cache_one_band_of_tiles() const;
  void release_tiles() const;
  int tile_channels() const;
  // One chunk's cells as getColumnRange gives them: [corr, chan, row], corr fastest.
  struct ChunkCells {
    const cc::Complex* data;
    const bool* flag;
    const float* weight;
    int num_chan;
  };
  void convert(const RowChunk& chunk, const ChunkCells& cells, std::size_t first_row, VisBlock& block) const;
  void weights(const cc::Slicer& rows, int chan_begin, int chan_end, cc::Array<float>& out) const;
};

void MsReader::Impl::open(const std::string& path) {
  info.path = path;
  require_table(path, path);
  main = stored = open_table(path);
  for (const char* column : {"UVW", "ANTENNA1", "ANTENNA2", "FLAG", "FLAG_ROW", "FIELD_ID",
                             "DATA_DESC_ID", "TIME"})
    require_column(main, column, path + " (not a MeasurementSet?)");
  if (selection.column == "auto") selection.column = main.tableDesc().isColumn("CORRECTED_DATA") ? "CORRECTED_DATA" : "DATA";
  require_column(main, selection.column, path);
  info.column = selection.column;
  read_windows();
  select_window_rows();
  info.num_rows = static_cast<std::int64_t>(main.nrow());
  read_field();
  choose_weights();
  info.integrations = integrations(main, info.field, data_desc_ids);
  const cc::Table observation = open_subtable(path, "OBSERVATION");
  if (observation.nrow() > 0 && observation.tableDesc().isColumn("TELESCOPE_NAME"))
    info.telescope = cc::ScalarColumn<cc::String>(observation, "TELESCOPE_NAME")(0);
  info.askap_instrument_frame = info.telescope.rfind("ASKAP", 0) == 0 && info.column == "DATA" &&
                                !main.tableDesc().isColumn("DATA_ASKAP");
  read_dishes();
  info.data_tile_channels = tile_channels();
  cache_one_band_of_tiles();
}

// A heterogeneous array (7 m and 12 m dishes) has no one primary beam. Rows of
// antennas no data uses often hold 0 (VLA), as do whole tables (ATCA): only positive
// diameters count.
void MsReader::Impl::read_dishes() {
  const cc::Table antennas = open_subtable(info.path, "ANTENNA");
  std::vector<double> dishes;
  if (antennas.tableDesc().isColumn("DISH_DIAMETER"))
    for (double d : cc::ScalarColumn<double>(antennas, "DISH_DIAMETER").getColumn())
      if (d > 0) dishes.push_back(d);
  if (dishes.empty()) {
    info.dish_range = "no positive DISH_DIAMETER";
    return;
  }
  const auto [low, high] = std::minmax_element(dishes.begin(), dishes.end());
  std::ostringstream range;
  range << *low;
  if (*high != *low) range << " to " << *high;
  info.dish_range = range.str() + " m";
  if (*high <= 1.01 * *low)
    info.dish_diameter_m = std::accumulate(dishes.begin(), dishes.end(), 0.0) / static_cast<double>(dishes.size());
}

void MsReader::Impl::read_windows() {
  const cc::Table windows = open_subtable(info.path, "SPECTRAL_WINDOW");
  info.spw = select_row(selection.spw, windows.nrow(), info.path, "spectral window", "input.spw");
  info.num_windows = static_cast<int>(windows.nrow());
  const cc::Vector<double> freq = cc::ArrayColumn<double>(windows, "CHAN_FREQ")(info.spw);
  const cc::Vector<double> width = cc::ArrayColumn<double>(windows, "CHAN_WIDTH")(info.spw);
  info.freq_hz.assign(freq.begin(), freq.end());
  info.chan_width_hz.assign(width.begin(), width.end());
  info.spectral_frame = spectral_frame(windows, info.spw, info.path);

  const cc::Table descriptions = open_subtable(info.path, "DATA_DESCRIPTION");
  const cc::ScalarColumn<int> spw_of(descriptions, "SPECTRAL_WINDOW_ID");
  const cc::ScalarColumn<int> pol_of(descriptions, "POLARIZATION_ID");
  int pol_id = -1;
  for (cc::rownr_t d = 0; d < descriptions.nrow(); ++d) {
    if (spw_of(d) != info.spw) continue;
    if (pol_id >= 0 && pol_of(d) != pol_id)
      bad_input(info.path + ": spectral window " + std::to_string(info.spw) +
                " has several polarisation setups; expected one");
    pol_id = pol_of(d);
    data_desc_ids.push_back(static_cast<int>(d));
  }
  if (pol_id < 0)
    bad_input(info.path + ": no DATA_DESCRIPTION row refers to spectral window " +
              std::to_string(info.spw));

  const cc::Table polarizations = open_subtable(info.path, "POLARIZATION");
  const cc::Vector<int> corr = cc::ArrayColumn<int>(polarizations, "CORR_TYPE")(pol_id);
  info.corr_types.assign(corr.begin(), corr.end());
  if (info.corr_types.empty() || info.corr_types.size() > 4)
    bad_input(info.path + ": " + std::to_string(info.corr_types.size()) +
              " correlations in its POLARIZATION table; expected 1 to 4");
  rules = stokes_rules(info.corr_types.data(), static_cast<int>(info.corr_types.size()));
  for (int s = 0; s < num_stokes; ++s) info.stokes_determined[s] = rules[s].determined();
  if (!info.stokes_determined[stokes_i])
    bad_input(info.path + ": correlations [" + info.stokes_summary() +
              "] do not determine Stokes I; expected linear or circular feeds");
}

void MsReader::Impl::read_field() {
  const cc::Table fields = open_subtable(info.path, "FIELD");
  info.field = select_row(selection.field, fields.nrow(), info.path, "field", "input.field");
  info.num_fields = static_cast<int>(fields.nrow());
  const cc::ArrayMeasColumn<cc::MDirection> phase_dir(fields, "PHASE_DIR");
  const cc::Array<cc::MDirection> dirs = phase_dir(info.field);
  const cc::MDirection j2000 =
      cc::MDirection::Convert(dirs(cc::IPosition(dirs.ndim(), 0)), cc::MDirection::J2000)();
  const cc::Vector<double> angles = j2000.getAngle("rad").getValue();
  info.ra_rad = angles(0);
  info.dec_rad = angles(1);
  if (fields.tableDesc().isColumn("NAME"))
    info.field_name = cc::ScalarColumn<cc::String>(fields, "NAME")(info.field);
}

// casacore reads a range of rows only where their cells share one shape: where other
// windows of the MS have another channel count or other correlations, the reader works
// on a reference table of the rows of the selected window alone.
void MsReader::Impl::select_window_rows() {
  const cc::Table descriptions = open_subtable(info.path, "DATA_DESCRIPTION");
  const cc::Table windows = open_subtable(info.path, "SPECTRAL_WINDOW");
  const cc::Table polarizations = open_subtable(info.path, "POLARIZATION");
  const cc::ScalarColumn<int> spw_of(descriptions, "SPECTRAL_WINDOW_ID"), pol_of(descriptions, "POLARIZATION_ID");
  const cc::ScalarColumn<int> channels_of(windows, "NUM_CHAN"), correlations_of(polarizations, "NUM_CORR");
  bool other_shape = false;
  for (cc::rownr_t d = 0; d < descriptions.nrow(); ++d) {
    const int spw = spw_of(d), pol = pol_of(d);
    if (std::find(data_desc_ids.begin(), data_desc_ids.end(), static_cast<int>(d)) != data_desc_ids.end() || spw < 0 ||
        pol < 0 || static_cast<cc::rownr_t>(spw) >= windows.nrow() || static_cast<cc::rownr_t>(pol) >= polarizations.nrow())
      continue;
    other_shape = other_shape || channels_of(static_cast<cc::rownr_t>(spw)) != info.num_channels() ||
                  correlations_of(static_cast<cc::rownr_t>(pol)) != static_cast<int>(info.corr_types.size());
  }
  if (!other_shape) return;
  const cc::ScalarColumn<int> ddid(stored, "DATA_DESC_ID");
  std::vector<cc::rownr_t> rows;
  for_each_slice(stored.nrow(), [&](const cc::Slicer& slice, cc::rownr_t first) {
    const cc::Vector<int> ids = ddid.getColumnRange(slice);
    for (std::size_t r = 0; r < ids.size(); ++r)
      if (std::find(data_desc_ids.begin(), data_desc_ids.end(), ids[r]) != data_desc_ids.end()) rows.push_back(first + r);
  });
  main = stored(cc::RowNumbers(cc::Vector<cc::rownr_t>(rows.begin(), rows.end())));
  first_stored_row = rows.empty() ? 0 : rows.front();
}

void MsReader::Impl::choose_weights() {
  const auto& desc = main.tableDesc();
  if (desc.isColumn("WEIGHT_SPECTRUM") && main.nrow() > 0 &&
      cc::ArrayColumn<float>(main, "WEIGHT_SPECTRUM").isDefined(0)) {
    weight_column = "WEIGHT_SPECTRUM";
    info.has_weight_spectrum = true;
  } else if (desc.isColumn("WEIGHT")) {
    weight_column = "WEIGHT";
  } else if (desc.isColumn("SIGMA")) {
    weight_column = "SIGMA";
  } else {
    bad_input(info.path + ": none of WEIGHT_SPECTRUM, WEIGHT or SIGMA is present");
  }
}

MsReader::Impl::RowChunk MsReader::Impl::keep_rows(cc::rownr_t first, cc::rownr_t count) const {
  RowChunk chunk{cc::Slicer(cc::IPosition(1, first), cc::IPosition(1, count)), std::vector<char>(count, 0), 0, 0};
  const cc::Vector<int> ant1 = scalars<int>("ANTENNA1", chunk.range);
  const cc::Vector<int> ant2 = scalars<int>("ANTENNA2", chunk.range);
  const cc::Vector<int> field = scalars<int>("FIELD_ID", chunk.range);
  const cc::Vector<int> ddid = scalars<int>("DATA_DESC_ID", chunk.range);
  const cc::Vector<bool> flag_row = scalars<bool>("FLAG_ROW", chunk.range);
  for (cc::rownr_t r = 0; r < count; ++r) {
    const bool wanted_ddid =
        std::find(data_desc_ids.begin(), data_desc_ids.end(), ddid(r)) != data_desc_ids.end();
    const bool selected = ant1(r) != ant2(r) && field(r) == info.field && wanted_ddid;
    chunk.keep[r] = selected && !flag_row(r);
    chunk.kept += chunk.keep[r];
    chunk.flagged += selected && flag_row(r);
  }
  return chunk;
}

// The storage manager's files: table.f<SEQNR> of the manager that holds the column,
// and its tile files (table.f<SEQNR>_TSM0, ...) where it is a tiled one.
std::string MsReader::Impl::file_of(const std::string& column) const {
  const cc::Record managers = stored.dataManagerInfo();
  for (cc::uInt m = 0; m < managers.nfields(); ++m) {
    const cc::Record manager = managers.subRecord(m);
    const cc::Vector<cc::String> columns = manager.asArrayString("COLUMNS");
    if (std::find(columns.begin(), columns.end(), cc::String(column)) == columns.end()) continue;
    const std::string stem = "table.f" + std::to_string(manager.asInt("SEQNR"));
    std::vector<std::string> files;
    std::error_code error;
    for (std::filesystem::directory_iterator it(info.path, error), end; !error && it != end; it.increment(error)) {
      const std::string name = it->path().filename().string();
      if (name == stem || name.rfind(stem + "_", 0) == 0) files.push_back(info.path + "/" + name);
    }
    std::sort(files.begin(), files.end());
    std::string listed;
    for (const std::string& file : files) listed += (listed.empty() ? "" : ", ") + file;
    return listed.empty() ? info.path + "/" + stem : listed;
  }
  return info.path;
}

void MsReader::Impl::damaged(const std::string& column, const cc::AipsError& e) const {
  bad_input(info.path + ": column " + column + " (in " + file_of(column) +
            ") cannot be read; the table is damaged (a truncated or corrupt file?); casacore: " + e.what());
}

// Bounds one call to ~64 MiB of DATA rows, and to row_chunk rows: the arrays a chunk is
// read into.
cc::rownr_t MsReader::Impl::rows_per_chunk() const {
  const std::size_t bytes_per_row = 8 * info.corr_types.size() * info.freq_hz.size();
  const std::size_t by_memory = std::max<std::size_t>(1, (std::size_t{64} << 20) / bytes_per_row);
  return std::min<std::size_t>(by_memory, selection.row_chunk);
}

// Each tiled data column's cache holds one band of tiles across its cells (every tile
// that one row's cell spans): reading row chunks in order then reads each tile once,
// into the same buffers. Left to itself, the cache keeps every tile it touched;
// clearing it after each chunk instead freed its buffers, and faulting fresh pages in
// for the next chunk took most of a read (bench/run-read-bench.sh). Hypercubes without
// a row axis (TiledCellStMan's, one per row) are left alone.
void MsReader::Impl::cache_one_band_of_tiles() const {
  for_each_tiled_column([&](cc::ROTiledStManAccessor& tiles, const char* column) {
    const int cell_axes = stored.tableDesc().columnDesc(column).ndim();  // -1: not fixed
    for (cc::uInt h = 0; cell_axes > 0 && h < tiles.nhypercubes(); ++h) {
      const cc::IPosition& shape = tiles.getHypercubeShape(h);
      const cc::IPosition& tile = tiles.getTileShape(h);
      if (static_cast<int>(shape.size()) != cell_axes + 1 || tile.size() != shape.size()) continue;
      cc::uInt across = 1;
      for (int axis = 0; axis < cell_axes; ++axis)
        across *= static_cast<cc::uInt>((shape(axis) + tile(axis) - 1) / std::max<long long>(tile(axis), 1));
      tiles.setHypercubeCacheSize(h, across, true);
    }
  });
}

// A read's band of tiles goes with it: in a layout of tiles narrow in channels and tall
// in rows, a band is hundreds of MB, which imaging must not hold beside its own.
void MsReader::Impl::release_tiles() const {
  for_each_tiled_column([](cc::ROTiledStManAccessor& tiles, const char*) { tiles.clearCaches(); });
  cache_one_band_of_tiles();
}

// The data column's tile width in channels, of the hypercube that holds the first row
// read (in TiledShapeStMan, hypercube 0 is an empty one).
int MsReader::Impl::tile_channels() const {
  if (main.nrow() == 0) return 0;
  try {
    const cc::IPosition& tile = cc::ROTiledStManAccessor(stored, selection.column, true).tileShape(first_stored_row);
    return tile.size() == 3 ? static_cast<int>(tile(1)) : 0;
  } catch (const cc::AipsError&) {
    return 0;  // not tiled
  }
}

// Weights per [corr, chan, row] whatever the MS stores: WEIGHT_SPECTRUM as is,
// WEIGHT repeated over channels, or 1/SIGMA^2.
void MsReader::Impl::weights(const cc::Slicer& rows, int chan_begin, int chan_end, cc::Array<float>& out) const {
  const std::size_t num_corr = info.corr_types.size();
  const std::size_t num_chan = static_cast<std::size_t>(chan_end - chan_begin);
  if (weight_column == "WEIGHT_SPECTRUM") {
    const cc::Slicer section(cc::IPosition(2, 0, chan_begin),
                             cc::IPosition(2, static_cast<int>(num_corr), static_cast<int>(num_chan)));
    cells<float>(weight_column, rows, section, out);
    return;
  }
  const cc::Array<float> per_row = cells<float>(weight_column, rows);
  const std::size_t num_rows = per_row.shape()(1);
  out.resize(cc::IPosition(3, num_corr, num_chan, num_rows));
  const bool from_sigma = weight_column == "SIGMA";
  const float* in = per_row.data();
  float* w = out.data();
  for (std::size_t r = 0; r < num_rows; ++r)
    for (std::size_t c = 0; c < num_chan; ++c)
      for (std::size_t k = 0; k < num_corr; ++k) {
        const float v = in[r * num_corr + k];
        w[(r * num_chan + c) * num_corr + k] = from_sigma ? (v > 0 ? 1.0f / (v * v) : 0.0f) : v;
      }
}

// A chunk's kept rows into the block's channel planes, row by row over all channels:
// passes over a few channels at a time, each over all rows, took 10-20 % longer
// (bench/run-read-bench.sh).
void MsReader::Impl::convert(const RowChunk& chunk, const ChunkCells& cells, std::size_t first_row,
                             VisBlock& block) const {
  const std::size_t num_corr = info.corr_types.size(), kept = block.num_rows();
  const int num_chan = cells.num_chan;
  std::complex<float>* vis = block.vis.data();
  float* weight = block.weight.data();
  std::int64_t* nonfinite = block.nonfinite_samples.data();
  std::size_t out_row = first_row;
  for (std::size_t r = 0; r < chunk.keep.size(); ++r) {
    if (!chunk.keep[r]) continue;
    for (int c = 0; c < num_chan; ++c) {
      const std::size_t base = (r * num_chan + c) * num_corr;
      const cc::Complex* d = cells.data + base;
      const float* w = cells.weight + base;
      // A NaN or Inf counts as flagged before any arithmetic: NaN x 0 is NaN, so a
      // zero weight alone would still carry it onto the grid.
      std::array<bool, 4> usable{};
      for (std::size_t k = 0; k < num_corr; ++k) {
        const bool finite = std::isfinite(d[k].real()) && std::isfinite(d[k].imag()) && std::isfinite(w[k]);
        nonfinite[c] += !finite;
        usable[k] = finite && !cells.flag[base + k];
      }
      for (int s = 0; s < num_stokes; ++s) {
        const StokesRule& rule = rules[s];
        if (!rule.determined() || !usable[rule.first] || !usable[rule.second]) continue;  // stays 0, weight 0
        const std::size_t out = (c * kept + out_row) * num_stokes + s;  // block.index()
        const Visibility v = apply_rule(rule, {d[rule.first].real(), d[rule.first].imag()},
                                        {d[rule.second].real(), d[rule.second].imag()});
        vis[out] = {v.re, v.im};
        weight[out] = combine_weights(w[rule.first], w[rule.second]);
      }
    }
    ++out_row;
  }
}

MsReader::MsReader(const std::string& path, const Selection& selection)
    : impl_(std::make_unique<Impl>()) {
  impl_->selection = selection;
  try {
    impl_->open(path);
  } catch (const cc::AipsError& e) {  // casacore's words, and what they most often mean
    bad_input(path + ": cannot be opened (a truncated or corrupt table file, or a storage manager such as Dysco "
              "that this casacore lacks?); casacore: " + std::string(e.what()));
  }
}

MsReader::~MsReader() = default;
MsReader::MsReader(MsReader&&) noexcept = default;
MsReader& MsReader::operator=(MsReader&&) noexcept = default;

const MsInfo& MsReader::info() const { return impl_->info; }

VisBlock MsReader::read(int chan_begin, int chan_end, const std::vector<char>& share) const {
  const Impl& m = *impl_;
  const int band = m.info.num_channels();
  if (chan_begin < 0 || chan_end > band || chan_begin >= chan_end)
    bad_input(m.info.path + ": channel range [" + std::to_string(chan_begin) + ", " +
              std::to_string(chan_end) + ") is outside the band of " + std::to_string(band) +
              " channels");
  const int num_chan = chan_end - chan_begin;
  const int num_corr = static_cast<int>(m.info.corr_types.size());
  VisBlock block;
  block.chan_begin = chan_begin;
  block.chan_end = chan_end;
  block.freq_hz.assign(m.info.freq_hz.begin() + chan_begin, m.info.freq_hz.begin() + chan_end);

  try {
    const cc::Slicer section(cc::IPosition(2, 0, chan_begin), cc::IPosition(2, num_corr, num_chan));
    const cc::rownr_t total = m.main.nrow();
    const cc::rownr_t step = m.rows_per_chunk();
    // The rows kept first (from scalar columns only), so that the channel planes are
    // allocated once at their size.
    std::vector<Impl::RowChunk> chunks;
    std::size_t kept = 0, selected = 0;
    for (cc::rownr_t first = 0; first < total; first += step) {
      chunks.push_back(m.keep_rows(first, std::min(step, total - first)));
      Impl::RowChunk& chunk = chunks.back();
      block.flagged_rows += chunk.flagged;
      if (!share.empty())
        for (std::size_t r = 0; r < chunk.keep.size(); ++r)
          if (chunk.keep[r] && !share.at(selected++)) {
            chunk.keep[r] = false;
            --chunk.kept;
          }
      kept += chunk.kept;
    }
    if (!share.empty() && selected != share.size())
      SPIP_THROW(Error, m.info.path + ": a share of " + std::to_string(share.size()) + " rows for " +
                            std::to_string(selected) + " selected rows");
    block.uvw_m.resize(kept * 3);
    block.time_mjd_s.reserve(kept);
    block.vis.resize(kept * num_chan * num_stokes);
    block.weight.resize(block.vis.size());
    block.nonfinite_samples.assign(num_chan, 0);
    std::size_t out_row = 0;
    cc::Array<cc::Complex> data;
    cc::Array<bool> flag;
    cc::Array<float> weight;
    for (const Impl::RowChunk& chunk : chunks) {
      if (chunk.kept == 0) continue;
      const cc::Array<double> uvw = m.cells<double>("UVW", chunk.range);
      const cc::Vector<double> time = m.scalars<double>("TIME", chunk.range);
      m.cells<cc::Complex>(m.selection.column, chunk.range, section, data);
      m.cells<bool>("FLAG", chunk.range, section, flag);
      m.weights(chunk.range, chan_begin, chan_end, weight);

      for (std::size_t r = 0; r < chunk.keep.size(); ++r) {
        if (!chunk.keep[r]) continue;
        std::copy_n(uvw.data() + 3 * r, 3, block.uvw_m.data() + 3 * block.time_mjd_s.size());
        block.time_mjd_s.push_back(time(r));
      }
      m.convert(chunk, {data.data(), flag.data(), weight.data(), num_chan}, out_row, block);
      out_row += chunk.kept;
    }
    m.release_tiles();
  } catch (const cc::AipsError& e) {
    bad_input(m.info.path + ": reading the main table: " + std::string(e.what()));
  }
  return block;
}

std::vector<double> MsReader::uvw_m() const {
  const Impl& m = *impl_;
  std::vector<double> out;
  try {
    const cc::rownr_t total = m.main.nrow();
    const cc::rownr_t step = m.rows_per_chunk();
    out.reserve(total * 3);
    for (cc::rownr_t first = 0; first < total; first += step) {
      const Impl::RowChunk chunk = m.keep_rows(first, std::min(step, total - first));
      if (chunk.kept == 0) continue;
      const cc::Array<double> uvw = m.cells<double>("UVW", chunk.range);
      for (std::size_t r = 0; r < chunk.keep.size(); ++r)
        if (chunk.keep[r]) out.insert(out.end(), uvw.data() + 3 * r, uvw.data() + 3 * r + 3);
    }
  } catch (const cc::AipsError& e) {
    bad_input(m.info.path + ": reading the main table: " + std::string(e.what()));
  }
  return out;
}

std::vector<std::int64_t> MsReader::unflagged_per_channel() const {
  const std::vector<std::int64_t> counts = unflagged_per_channel(0, impl_->info.num_rows);
  require_unflagged(impl_->info, counts);
  return counts;
}

void require_unflagged(const MsInfo& info, const std::vector<std::int64_t>& counts) {
  if (std::all_of(counts.begin(), counts.end(), [](std::int64_t n) { return n == 0; }))
    bad_input(info.path + ": no unflagged cross-correlation data in the selected channels of field " +
              std::to_string(info.field) + ", spectral window " + std::to_string(info.spw) +
              " (input.channel_begin, input.channel_end, input.freq_min and input.freq_max select them)");
}

std::vector<std::int64_t> MsReader::unflagged_per_channel(std::int64_t row_begin, std::int64_t row_end) const {
  const Impl& m = *impl_;
  const int num_chan = m.info.num_channels();
  const StokesRule& rule_i = m.rules[stokes_i];
  std::vector<std::int64_t> counts(num_chan, 0);
  try {
    const auto end = static_cast<cc::rownr_t>(std::clamp<std::int64_t>(row_end, 0, m.info.num_rows));
    const cc::rownr_t step = m.rows_per_chunk();
    const std::size_t num_corr = m.info.corr_types.size();
    for (auto first = static_cast<cc::rownr_t>(std::max<std::int64_t>(row_begin, 0)); first < end; first += step) {
      const Impl::RowChunk chunk = m.keep_rows(first, std::min(step, end - first));
      if (chunk.kept == 0) continue;
      const cc::Array<bool> flag = m.cells<bool>("FLAG", chunk.range);
      const bool* f = flag.data();
      for (std::size_t r = 0; r < chunk.keep.size(); ++r) {
        if (!chunk.keep[r]) continue;
        for (int c = 0; c < num_chan; ++c) {
          const std::size_t base = (r * num_chan + c) * num_corr;
          counts[c] += !f[base + rule_i.first] && !f[base + rule_i.second];
        }
      }
    }
    m.release_tiles();
  } catch (const cc::AipsError& e) {
    bad_input(m.info.path + ": reading the main table: " + std::string(e.what()));
  }
  return counts;
}

std::string MsInfo::date_obs() const {
  const double start = start_time_mjd_s();
  if (!std::isfinite(start)) return "";
  const cc::MVTime time(start / 86400.0);
  std::string iso = time.string(cc::MVTime::FITS, 9);
  return iso;
}

std::string MsInfo::stokes_summary() const {
  std::ostringstream out;
  for (std::size_t k = 0; k < corr_types.size(); ++k) out << (k ? " " : "") << corr_name(corr_types[k]);
  return out.str();
}

std::vector<int> spectral_windows(const std::string& path) {
  require_table(path, path);
  const cc::Table descriptions = open_subtable(path, "DATA_DESCRIPTION");
  const cc::Vector<int> windows = cc::ScalarColumn<int>(descriptions, "SPECTRAL_WINDOW_ID").getColumn();
  std::vector<int> ids(windows.begin(), windows.end());
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  if (ids.empty()) bad_input(path + ": the DATA_DESCRIPTION table is empty");
  return ids;
}

}  // namespace spip::ms
