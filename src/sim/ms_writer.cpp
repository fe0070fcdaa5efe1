// casacore side of the sim room; compiled as C++17.
#include "spip/sim/ms_writer.hpp"

#include <casacore/casa/Arrays/Array.h>
#include <casacore/casa/Arrays/Matrix.h>
#include <casacore/casa/Arrays/Vector.h>
#include <casacore/casa/Exceptions/Error.h>
#include <casacore/casa/Logging/LogFilter.h>
#include <casacore/casa/Logging/LogSink.h>
#include <casacore/casa/Logging/StreamLogSink.h>
#include <casacore/casa/Quanta/MVTime.h>
#include <casacore/measures/Measures/MCDirection.h>
#include <casacore/measures/Measures/MCPosition.h>
#include <casacore/measures/Measures/MDirection.h>
#include <casacore/measures/Measures/MEpoch.h>
#include <casacore/measures/Measures/MPosition.h>
#include <casacore/measures/Measures/MeasFrame.h>
#include <casacore/ms/MeasurementSets/MSColumns.h>
#include <casacore/ms/MeasurementSets/MeasurementSet.h>
#include <casacore/tables/DataMan/IncrStManAccessor.h>
#include <casacore/tables/DataMan/IncrementalStMan.h>
#include <casacore/tables/DataMan/StandardStMan.h>
#include <casacore/tables/DataMan/TiledColumnStMan.h>
#include <casacore/tables/DataMan/TiledShapeStMan.h>
#include <casacore/tables/Tables/ArrColDesc.h>
#include <casacore/tables/Tables/ScalarColumn.h>
#include <casacore/tables/Tables/SetupNewTab.h>
#include <casacore/tables/Tables/TableCopy.h>
#include <casacore/tables/Tables/TableLock.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "spip/common/constants.hpp"
#include "spip/common/free_space.hpp"
#include "spip/common/number_text.hpp"
#include "spip/error.hpp"
#include "spip/ms/stokes.hpp"

namespace spip::sim {
namespace {

namespace cc = casacore;
namespace fs = std::filesystem;

constexpr cc::rownr_t rows_per_chunk = 4096;

std::string partial_name(const std::string& out_ms) { return out_ms + ".partial"; }

// Replaces only a Measurement Set (or nothing): a mistyped --out must not delete a folder.
void check_replaceable(const std::string& out_ms) {
  if (fs::exists(out_ms) && !cc::Table::isReadable(out_ms))
    SPIP_THROW(InputError, "--out " + out_ms + " exists and is not a Measurement Set; it is not replaced");
}

// A set too large for its folder's free space is refused before it is begun.
void check_space(const std::string& out_ms, double bytes) {
  const std::optional<double> free = free_bytes(out_ms);
  if (free && bytes > *free)
    SPIP_THROW(InputError, "--out " + out_ms + ": the MS needs about " + number_text(bytes / 1e9, 3) + " GB and its "
                               "file system has " + number_text(*free / 1e9, 3) + " GB free");
}

// An input MS may not be the output it would be replaced by, nor hold it (a subtable).
void check_distinct(const std::string& in_ms, const std::string& out_ms, const char* option) {
  const fs::path in = fs::weakly_canonical(in_ms), out = fs::weakly_canonical(out_ms);
  const auto [end, unused] = std::mismatch(in.begin(), in.end(), out.begin(), out.end());
  if (end == in.end())
    SPIP_THROW(InputError, std::string(option) + " " + in_ms + " holds --out " + out_ms + "; write the new MS elsewhere");
}

// Atomic publication: `make` writes the MS under a partial name, which becomes `out_ms`
// only once it is complete. However `make` fails, nothing of it is left.
template <class Make>
void write_atomically(const std::string& out_ms, Make make) {
  check_replaceable(out_ms);
  const std::string partial = partial_name(out_ms);
  fs::remove_all(partial);
  try {
    make(partial);
  } catch (const cc::AipsError& e) {
    fs::remove_all(partial);
    SPIP_THROW(Error, out_ms + ": " + std::string(e.what()));
  } catch (...) {
    fs::remove_all(partial);
    throw;
  }
  fs::remove_all(out_ms);
  fs::rename(partial, out_ms);
}

// The ionosphere's Faraday rotation of [XX, XY, YX, YY] = [I+Q, U+iV, U-iV, I-Q] per row,
// through the same rotation spip undoes.
void rotate_by_ionosphere(const ms::IonosphereTable& table, const cc::Vector<double>& time,
                          const std::vector<double>& freq_hz, cc::Array<cc::Complex>& data) {
  cc::Complex* v = data.data();
  for (std::size_t r = 0; r < time.nelements(); ++r) {
    const double rm = table.rm_at(time(r));
    for (std::size_t c = 0; c < freq_hz.size(); ++c, v += 4) {
      const double lambda_sq = std::pow(speed_of_light / freq_hz[c], 2);
      const std::complex<float> i = 0.5f * (v[0] + v[3]), i_v = 0.5f * (v[1] - v[2]);
      std::complex<float> q = 0.5f * (v[0] - v[3]), u = 0.5f * (v[1] + v[2]);
      ms::rotate_linear_polarisation(q, u, rm * lambda_sq);
      v[0] = i + q;
      v[1] = u + i_v;
      v[2] = u - i_v;
      v[3] = i - q;
    }
  }
}

// What the rows of one DATA_DESCRIPTION hold: their window's channels and their
// correlations.
struct Description {
  std::vector<double> freq_hz;
  std::vector<int> corr_types;
};

std::vector<Description> descriptions(const cc::MSColumns& columns) {
  std::vector<Description> all;
  for (cc::rownr_t d = 0; d < columns.dataDescription().nrow(); ++d) {
    const int window = columns.dataDescription().spectralWindowId()(d);
    const int polarization = columns.dataDescription().polarizationId()(d);
    const cc::Vector<double> freq = columns.spectralWindow().chanFreq()(window);
    const cc::Vector<int> types = columns.polarization().corrType()(polarization);
    Description description{{freq.begin(), freq.end()}, {types.begin(), types.end()}};
    for (int type : description.corr_types)
      if (!ms::is_correlation(type))
        SPIP_THROW(InputError, "POLARIZATION row " + std::to_string(polarization) + ": correlation type " +
                                   std::to_string(type) + " is neither linear (XX, XY, YX, YY) nor circular (RR, RL, LR, LL)");
    all.push_back(std::move(description));
  }
  return all;
}

// Each field's phase centre (RA, Dec) in J2000.
std::vector<std::pair<double, double>> phase_centres(const cc::MSColumns& columns) {
  std::vector<std::pair<double, double>> centres;
  for (cc::rownr_t f = 0; f < columns.field().nrow(); ++f) {
    const cc::MDirection centre =
        cc::MDirection::Convert(columns.field().phaseDirMeasCol()(f)(cc::IPosition(1, 0)), cc::MDirection::J2000)();
    const cc::Vector<double> angles = centre.getAngle("rad").getValue();
    centres.emplace_back(angles(0), angles(1));
  }
  return centres;
}

// The template's correlations from the predicted [XX, XY, YX, YY] of each channel and row.
cc::Array<cc::Complex> to_correlations(const cc::Array<cc::Complex>& linear, const std::vector<int>& corr_types) {
  const cc::IPosition shape = linear.shape();
  const std::size_t num_corr = corr_types.size();
  cc::Array<cc::Complex> data(cc::IPosition(3, static_cast<long>(num_corr), shape(1), shape(2)));
  const cc::Complex* v = linear.data();
  cc::Complex* out = data.data();
  const std::complex<float> minus_i(0, -1);
  for (std::size_t k = 0; k < linear.nelements() / 4; ++k, v += 4, out += num_corr) {
    const std::array<std::complex<float>, ms::num_stokes> stokes{0.5f * (v[0] + v[3]), 0.5f * (v[0] - v[3]),
                                                                 0.5f * (v[1] + v[2]), 0.5f * minus_i * (v[1] - v[2])};
    for (std::size_t c = 0; c < num_corr; ++c) out[c] = ms::correlation(corr_types[c], stokes);
  }
  return data;
}

template <typename T>
void put_if_present(cc::MeasurementSet& ms, const char* column, const cc::Slicer& rows, const cc::Array<T>& values) {
  if (ms.tableDesc().isColumn(column)) cc::ArrayColumn<T>(ms, column).putColumnRange(rows, values);
}

// DATA for rows [first, first + count) of one description and field: exact visibilities
// plus optional noise and flags, with weights that say the noise.
void write_rows(cc::MeasurementSet& ms, const SkyModel& sky, const Corruption& corruption,
                const Description& description, std::pair<double, double> centre, cc::rownr_t first,
                cc::rownr_t count, std::mt19937_64& rng) {
  const cc::Slicer rows(cc::IPosition(1, first), cc::IPosition(1, count));
  const cc::Array<double> uvw = cc::ArrayColumn<double>(ms, "UVW").getColumnRange(rows);
  const std::vector<double>& freq_hz = description.freq_hz;
  const std::size_t num_chan = freq_hz.size();
  cc::Array<cc::Complex> linear(cc::IPosition(3, 4, num_chan, count));
  predict(sky, centre.first, centre.second, uvw.data(), count, freq_hz, linear.data(),
          corruption.primary_beam ? &*corruption.primary_beam : nullptr);
  if (corruption.ionosphere) {
    const cc::Vector<double> time = cc::ScalarColumn<double>(ms, "TIME").getColumnRange(rows);
    rotate_by_ionosphere(*corruption.ionosphere, time, freq_hz, linear);
  }
  cc::Array<cc::Complex> data = to_correlations(linear, description.corr_types);
  const long num_corr = static_cast<long>(description.corr_types.size());
  cc::Array<bool> flag(data.shape(), false);
  if (corruption.noise_sigma_jy > 0) {
    std::normal_distribution<float> noise(0.0f, static_cast<float>(corruption.noise_sigma_jy));
    for (cc::Complex& v : data) v += cc::Complex(noise(rng), noise(rng));
  }
  if (corruption.flag_fraction > 0) {
    std::bernoulli_distribution flagged(corruption.flag_fraction);
    bool* f = flag.data();
    for (std::size_t k = 0; k < flag.nelements(); k += static_cast<std::size_t>(num_corr))
      if (flagged(rng)) std::fill(f + k, f + k + num_corr, true);
  }
  for (int channel : corruption.flag_channels) {
    if (channel < 0 || static_cast<std::size_t>(channel) >= num_chan)
      SPIP_THROW(InputError, "--flag-channels: channel " + std::to_string(channel) + " is outside the band");
    for (cc::rownr_t r = 0; r < count; ++r)
      for (long k = 0; k < num_corr; ++k) flag(cc::IPosition(3, k, channel, r)) = true;
  }
  cc::ArrayColumn<cc::Complex>(ms, "DATA").putColumnRange(rows, data);
  cc::ArrayColumn<bool>(ms, "FLAG").putColumnRange(rows, flag);
  const float sigma = corruption.noise_sigma_jy > 0 ? static_cast<float>(corruption.noise_sigma_jy) : 1.0f;
  cc::ArrayColumn<float>(ms, "SIGMA").putColumnRange(rows, cc::Array<float>(cc::IPosition(2, num_corr, count), sigma));
  cc::ArrayColumn<float>(ms, "WEIGHT")
      .putColumnRange(rows, cc::Array<float>(cc::IPosition(2, num_corr, count), 1.0f / (sigma * sigma)));
  // Readers take these before WEIGHT and SIGMA where they exist (a template's).
  put_if_present(ms, "SIGMA_SPECTRUM", rows, cc::Array<float>(data.shape(), sigma));
  put_if_present(ms, "WEIGHT_SPECTRUM", rows, cc::Array<float>(data.shape(), 1.0f / (sigma * sigma)));
}

// Every row in runs of one data description and field, so that each run is predicted
// with its own channels, correlations and phase centre.
void fill_data(cc::MeasurementSet& ms, const SkyModel& sky, const Corruption& corruption) {
  const cc::MSColumns columns(ms);
  const std::vector<Description> described = descriptions(columns);
  const std::vector<std::pair<double, double>> centres = phase_centres(columns);
  const cc::Vector<int> description = columns.dataDescId().getColumn(), field = columns.fieldId().getColumn();
  std::mt19937_64 rng(corruption.seed);
  for (cc::rownr_t first = 0; first < ms.nrow();) {
    cc::rownr_t end = first + 1;
    while (end < ms.nrow() && end - first < rows_per_chunk && description(end) == description(first) &&
           field(end) == field(first))
      ++end;
    if (description(first) < 0 || static_cast<std::size_t>(description(first)) >= described.size() ||
        field(first) < 0 || static_cast<std::size_t>(field(first)) >= centres.size())
      SPIP_THROW(InputError, "row " + std::to_string(first) + " names a DATA_DESC_ID or FIELD_ID the MS does not have");
    write_rows(ms, sky, corruption, described[static_cast<std::size_t>(description(first))],
               centres[static_cast<std::size_t>(field(first))], first, end - first, rng);
    first = end;
  }
}

// What a template held besides the layout is not the simulated sky's: calibrated or
// model visibilities that imagers would take before DATA, and rows flagged whole.
void forget_template_data(cc::MeasurementSet& ms) {
  for (const char* column : {"CORRECTED_DATA", "MODEL_DATA"})
    if (ms.tableDesc().isColumn(column)) ms.removeColumn(column);
  cc::ScalarColumn<bool>(ms, "FLAG_ROW").fillColumn(false);
}

}  // namespace

void simulate_from_template(const std::string& template_ms, const std::string& out_ms,
                            const SkyModel& sky, const Corruption& corruption) {
  if (!cc::Table::isReadable(template_ms))
    SPIP_THROW(InputError, template_ms + ": not a readable MeasurementSet (--template)");
  check_distinct(template_ms, out_ms, "--template");
  write_atomically(out_ms, [&](const std::string& partial) {
    {
      const cc::Table source(template_ms, cc::TableLock(cc::TableLock::NoLocking));
      source.deepCopy(partial, cc::Table::New, true);
    }
    cc::MeasurementSet ms(partial, cc::Table::Update);
    forget_template_data(ms);
    fill_data(ms, sky, corruption);
  });
}

// ---------------------------------------------------------------------------
// Array mode

namespace {

std::vector<std::string> data_lines(const std::string& path) {
  std::ifstream file(path);
  if (!file) SPIP_THROW(InputError, path + ": cannot open");
  std::vector<std::string> lines;
  for (std::string line; std::getline(file, line);) {
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    for (char& c : line)
      if (c == ',') c = ' ';
    lines.push_back(line);
  }
  return lines;
}

// Station positions in ITRF: the site's geodetic position plus ENU offsets rotated
// to the geocentric frame.
std::vector<cc::MVPosition> itrf_positions(const ArrayDescription& array) {
  const cc::MPosition site(
      cc::MVPosition(cc::Quantity(array.alt_m, "m"), cc::Quantity(array.lon_rad, "rad"),
                     cc::Quantity(array.lat_rad, "rad")),
      cc::MPosition::WGS84);
  const cc::Vector<double> centre =
      cc::MPosition::Convert(site, cc::MPosition::ITRF)().getValue().getValue();
  const double sl = std::sin(array.lon_rad), cl = std::cos(array.lon_rad);
  const double sp = std::sin(array.lat_rad), cp = std::cos(array.lat_rad);
  std::vector<cc::MVPosition> positions;
  for (const auto& en : array.station_enu_m) {
    const double e = en[0], n = en[1], u = en[2];
    positions.emplace_back(centre(0) - sl * e - sp * cl * n + cp * cl * u, centre(1) + cl * e - sp * sl * n + cp * sl * u,
                           centre(2) + cp * n + sp * u);
  }
  return positions;
}

// Greenwich hour angle and declination of the phase centre at `mjd_s` (UTC).
std::pair<double, double> greenwich_hadec(const ArrayDescription& array, double mjd_s) {
  const cc::MEpoch epoch(cc::MVEpoch(cc::Quantity(mjd_s, "s")), cc::MEpoch::UTC);
  const cc::MPosition site(
      cc::MVPosition(cc::Quantity(array.alt_m, "m"), cc::Quantity(array.lon_rad, "rad"),
                     cc::Quantity(array.lat_rad, "rad")),
      cc::MPosition::WGS84);
  const cc::MeasFrame frame(epoch, site);
  const cc::MDirection centre(cc::Quantity(array.ra_rad, "rad"), cc::Quantity(array.dec_rad, "rad"),
                              array.apparent_phase_centre ? cc::MDirection::APP : cc::MDirection::J2000);
  const cc::MDirection hadec =
      cc::MDirection::Convert(centre, cc::MDirection::Ref(cc::MDirection::HADEC, frame))();
  const cc::Vector<double> angles = hadec.getAngle("rad").getValue();
  return {angles(0) - array.lon_rad, angles(1)};
}

// Thompson, Moran & Swenson (2017) eq. 4.1 with the geocentric (ITRF) baseline and the
// Greenwich hour angle.
cc::Vector<double> baseline_uvw(const cc::MVPosition& a, const cc::MVPosition& b, double ha,
                                double dec) {
  const cc::Vector<double> d = a.getValue() - b.getValue();
  const double sh = std::sin(ha), ch = std::cos(ha), sd = std::sin(dec), cd = std::cos(dec);
  cc::Vector<double> uvw(3);
  uvw(0) = sh * d(0) + ch * d(1);
  uvw(1) = -sd * ch * d(0) + sd * sh * d(1) + cd * d(2);
  uvw(2) = cd * ch * d(0) - cd * sh * d(1) + sd * d(2);
  return uvw;
}

void bind_tiled(cc::SetupNewTable& setup, const char* column, const char* manager,
                const cc::IPosition& tile) {
  cc::TiledColumnStMan tiled(manager, tile);
  setup.bindColumn(column, tiled);
}

// `varying_channels`: DATA and FLAG cells of any shape, as an MS of spectral windows
// with different channel counts stores them (a hypercube per shape, TiledShapeStMan),
// with tiles of up to array.num_channels channels.
cc::MeasurementSet create_ms(const std::string& path, const ArrayDescription& array,
                             cc::rownr_t num_rows, bool varying_channels = false) {
  cc::TableDesc desc = cc::MS::requiredTableDesc();
  cc::MS::addColumnToDesc(desc, cc::MS::DATA, 2);
  desc.rwColumnDesc(cc::MS::columnName(cc::MS::DATA)).rwKeywordSet().define("UNIT", "Jy");
  const cc::IPosition cell(2, 4, array.num_channels);
  if (!varying_channels)
    for (const char* name : {"DATA", "FLAG"}) desc.rwColumnDesc(name).setShape(cell);
  for (const char* name : {"WEIGHT", "SIGMA"}) desc.rwColumnDesc(name).setShape(cc::IPosition(1, 4));

  cc::SetupNewTable setup(path, desc, cc::Table::New);
  cc::IncrementalStMan incremental("ISMData");
  setup.bindAll(incremental);
  cc::StandardStMan standard("SSMData", 32768);
  setup.bindColumn("ANTENNA1", standard);
  setup.bindColumn("ANTENNA2", standard);
  // Tiles span all channels and ~1 MB, as OSKAR's writer lays them out.
  const int rows_per_tile = std::max(1, 1048576 / (4 * array.num_channels * 8));
  bind_tiled(setup, "UVW", "TiledUVW", cc::IPosition(2, 3, rows_per_tile));
  bind_tiled(setup, "WEIGHT", "TiledWeight", cc::IPosition(2, 4, rows_per_tile));
  bind_tiled(setup, "SIGMA", "TiledSigma", cc::IPosition(2, 4, rows_per_tile));
  for (const auto& [column, manager] : {std::pair{"DATA", "TiledData"}, {"FLAG", "TiledFlag"}}) {
    const cc::IPosition tile(3, 4, array.num_channels, rows_per_tile);
    if (varying_channels) {
      cc::TiledShapeStMan shaped(manager, tile);
      setup.bindColumn(column, shaped);
    } else {
      bind_tiled(setup, column, manager, tile);
    }
  }
  cc::MeasurementSet ms(setup, num_rows);
  ms.createDefaultSubtables(cc::Table::New);
  return ms;
}

void fill_subtables(cc::MeasurementSet& ms, const ArrayDescription& array,
                    const std::vector<cc::MVPosition>& stations) {
  cc::MSColumns columns(ms);
  const std::size_t num_stations = stations.size();

  ms.antenna().addRow(num_stations);
  ms.feed().addRow(num_stations);
  cc::Matrix<double> beam_offset(2, 2, 0.0);
  cc::Vector<cc::String> pol_types(2);
  pol_types(0) = "X";
  pol_types(1) = "Y";
  cc::Vector<double> receptor_angle(2);
  receptor_angle(0) = M_PI / 2;  // OSKAR writes [90 deg, 0 deg]
  receptor_angle(1) = 0.0;
  cc::Matrix<cc::Complex> pol_response(2, 2, cc::Complex(0.0f, 0.0f));
  for (std::size_t a = 0; a < num_stations; ++a) {
    char name[32];
    std::snprintf(name, sizeof name, "s%04zu", a);
    columns.antenna().name().put(a, name);
    columns.antenna().station().put(a, name);
    columns.antenna().type().put(a, "GROUND-BASED");
    columns.antenna().mount().put(a, "FIXED");
    columns.antenna().dishDiameter().put(a, array.dish_diameter_m);
    columns.antenna().position().put(a, stations[a].getValue());
    columns.antenna().offset().put(a, cc::Vector<double>(3, 0.0));
    columns.feed().antennaId().put(a, static_cast<int>(a));
    columns.feed().numReceptors().put(a, 2);
    columns.feed().beamOffset().put(a, beam_offset);
    columns.feed().polarizationType().put(a, pol_types);
    columns.feed().polResponse().put(a, pol_response);
    columns.feed().receptorAngle().put(a, receptor_angle);
    columns.feed().position().put(a, cc::Vector<double>(3, 0.0));
    columns.feed().spectralWindowId().put(a, -1);
  }

  ms.spectralWindow().addRow();
  cc::Vector<double> freq(array.num_channels), width(array.num_channels, array.freq_inc_hz);
  for (int c = 0; c < array.num_channels; ++c) freq(c) = array.freq_start_hz + c * array.freq_inc_hz;
  auto& spw = columns.spectralWindow();
  spw.chanFreq().put(0, freq);
  spw.chanWidth().put(0, width);
  spw.effectiveBW().put(0, width);
  spw.resolution().put(0, width);
  spw.numChan().put(0, array.num_channels);
  spw.refFrequency().put(0, freq(0));
  spw.totalBandwidth().put(0, array.num_channels * std::abs(array.freq_inc_hz));
  spw.measFreqRef().put(0, 5);  // TOPO, as OSKAR
  spw.netSideband().put(0, 1);

  ms.polarization().addRow();
  cc::Vector<int> corr_type(4);
  cc::Matrix<int> corr_product(2, 4);
  for (int k = 0; k < 4; ++k) {
    corr_type(k) = 9 + k;  // XX, XY, YX, YY
    corr_product(0, k) = k / 2;
    corr_product(1, k) = k % 2;
  }
  columns.polarization().corrType().put(0, corr_type);
  columns.polarization().corrProduct().put(0, corr_product);
  columns.polarization().numCorr().put(0, 4);

  ms.dataDescription().addRow();
  columns.dataDescription().spectralWindowId().put(0, 0);
  columns.dataDescription().polarizationId().put(0, 0);

  ms.field().addRow();
  cc::Matrix<double> dir(2, 1);
  dir(0, 0) = array.ra_rad;
  dir(1, 0) = array.dec_rad;
  columns.field().name().put(0, "field");
  columns.field().phaseDir().put(0, dir);
  columns.field().delayDir().put(0, dir);
  columns.field().referenceDir().put(0, dir);

  ms.observation().addRow();
  columns.observation().telescopeName().put(0, array.telescope);
  cc::Vector<double> range(2);
  range(0) = array.start_mjd_s;
  range(1) = array.start_mjd_s + array.num_times * array.dump_s;
  columns.observation().timeRange().put(0, range);
  columns.observation().observer().put(0, "spip-simulate");
}

void fill_main(cc::MeasurementSet& ms, const ArrayDescription& array,
               const std::vector<cc::MVPosition>& stations) {
  cc::MSMainColumns columns(ms);
  const int n = static_cast<int>(stations.size());
  cc::rownr_t row = 0;
  for (int t = 0; t < array.num_times; ++t) {
    const double mid = array.start_mjd_s + (t + 0.5) * array.dump_s;
    const auto [ha, dec] = greenwich_hadec(array, mid);
    for (int a = 0; a < n; ++a)
      for (int b = a + 1; b < n; ++b, ++row) {
        columns.antenna1().put(row, a);
        columns.antenna2().put(row, b);
        columns.uvw().put(row, baseline_uvw(stations[a], stations[b], ha, dec));
        columns.time().put(row, mid);
        columns.timeCentroid().put(row, mid);
        columns.interval().put(row, array.dump_s);
        columns.exposure().put(row, array.dump_s);
        columns.scanNumber().put(row, 1);
      }
  }
}

}  // namespace

void read_oskar_telescope(const std::string& dir, ArrayDescription& array) {
  const std::vector<std::string> position = data_lines(dir + "/position.txt");
  if (position.empty()) SPIP_THROW(InputError, dir + "/position.txt: no position");
  std::istringstream site(position[0]);
  double lon_deg = 0, lat_deg = 0;
  site >> lon_deg >> lat_deg >> array.alt_m;
  if (!site && !site.eof()) SPIP_THROW(InputError, dir + "/position.txt: expected lon lat [alt]");
  array.lon_rad = lon_deg * M_PI / 180;
  array.lat_rad = lat_deg * M_PI / 180;
  array.station_enu_m.clear();
  for (const std::string& line : data_lines(dir + "/layout.txt")) {
    std::istringstream fields(line);
    std::array<double, 3> enu{};
    if (!(fields >> enu[0] >> enu[1]))
      SPIP_THROW(InputError, dir + "/layout.txt: expected 'East North [Up]' per line, got '" + line + "'");
    if (!(fields >> enu[2])) enu[2] = 0;
    array.station_enu_m.push_back(enu);
  }
  if (array.station_enu_m.size() < 2) SPIP_THROW(InputError, dir + "/layout.txt: fewer than 2 stations");
  // Two stations at one place make a baseline of no length: every visibility of it is
  // the sky's total flux, which no interferometer measures.
  for (std::size_t a = 0; a < array.station_enu_m.size(); ++a)
    for (std::size_t b = a + 1; b < array.station_enu_m.size(); ++b)
      if (array.station_enu_m[a] == array.station_enu_m[b])
        SPIP_THROW(InputError, dir + "/layout.txt: stations " + std::to_string(a + 1) + " and " + std::to_string(b + 1) +
                                   " are at the same position");
}

void quiet_casacore_log() {
  cc::LogSinkInterface* sink = new cc::StreamLogSink(cc::LogFilter(cc::LogMessage::SEVERE), &std::cerr);
  cc::LogSink::globalSink(sink);  // casacore owns it from here
}

double parse_utc(const std::string& text) {
  cc::Quantity time;
  if (!cc::MVTime::read(time, text))
    SPIP_THROW(ConfigError, "--start '" + text + "': expected a UTC time such as '2025-03-20 12:00:00'");
  return time.getValue("s");
}

void simulate_from_array(const ArrayDescription& array, const std::string& out_ms,
                         const SkyModel& sky, const Corruption& corruption) {
  // The options' values: usage errors (exit 2), as spip's configuration errors are.
  if (array.num_channels < 1)
    SPIP_THROW(ConfigError, "--channels " + std::to_string(array.num_channels) + ": expected at least 1");
  if (array.num_times < 1) SPIP_THROW(ConfigError, "--times " + std::to_string(array.num_times) + ": expected at least 1");
  if (array.station_enu_m.size() < 2) SPIP_THROW(InputError, "the array has fewer than two stations");
  const double last_hz = array.freq_start_hz + (array.num_channels - 1) * array.freq_inc_hz;
  if (!(array.freq_start_hz > 0 && last_hz > 0 && std::isfinite(last_hz)))
    SPIP_THROW(ConfigError, "--freq-start and --freq-inc give channels from " + number_text(array.freq_start_hz) +
                                " to " + number_text(last_hz) + " Hz; every channel must be above 0 Hz");
  if (array.num_channels > 1 && !(array.freq_inc_hz != 0))
    SPIP_THROW(ConfigError, "--freq-inc 0 puts every channel at one frequency");
  if (!(array.dump_s > 0 && std::isfinite(array.dump_s)))
    SPIP_THROW(ConfigError, "--dump " + number_text(array.dump_s) + ": expected a dump time above 0 s");
  if (!(std::abs(array.dec_rad) <= M_PI / 2 && std::isfinite(array.ra_rad)))
    SPIP_THROW(ConfigError, "--ra/--dec: the declination must lie in [-90, 90] degrees");
  const std::size_t n = array.station_enu_m.size();
  const cc::rownr_t num_rows = array.num_times * n * (n - 1) / 2;
  check_space(out_ms, static_cast<double>(num_rows) * array.num_channels * 4 * (sizeof(cc::Complex) + 1));
  write_atomically(out_ms, [&](const std::string& partial) {
    const std::vector<cc::MVPosition> stations = itrf_positions(array);
    cc::MeasurementSet ms = create_ms(partial, array, num_rows);
    fill_subtables(ms, array, stations);
    fill_main(ms, array, stations);
    fill_data(ms, sky, corruption);
  });
}

namespace {

// The input's rows of a main-table column, repeated once per window.
template <typename T>
void repeat_scalar(const cc::Table& in, cc::Table& out, const char* column, std::size_t windows) {
  const cc::Vector<T> values = cc::ScalarColumn<T>(in, column).getColumn();
  cc::ScalarColumn<T> target(out, column);
  for (std::size_t w = 0; w < windows; ++w) target.putColumnRange(cc::Slicer(cc::IPosition(1, w * in.nrow()), cc::IPosition(1, in.nrow())), values);
}

template <typename T>
void repeat_cells(const cc::Table& in, cc::Table& out, const char* column, std::size_t windows) {
  const cc::Array<T> values = cc::ArrayColumn<T>(in, column).getColumn();
  cc::ArrayColumn<T> target(out, column);
  for (std::size_t w = 0; w < windows; ++w)
    target.putColumnRange(cc::Slicer(cc::IPosition(1, w * in.nrow()), cc::IPosition(1, in.nrow())), values);
}

// DATA or FLAG: window w's rows take the input's channels windows[w], cell by cell,
// which also gives each cell its shape where the windows' channel counts differ.
template <typename T>
void split_channels(const cc::Table& in, cc::Table& out, const char* column, const std::vector<std::vector<int>>& windows) {
  const cc::Array<T> values = cc::ArrayColumn<T>(in, column).getColumn();  // [corr][chan][row]
  const cc::IPosition shape = values.shape();
  cc::ArrayColumn<T> target(out, column);
  for (std::size_t w = 0; w < windows.size(); ++w) {
    const auto n = static_cast<long>(windows[w].size());
    cc::Matrix<T> cell(shape(0), n);
    for (long r = 0; r < shape(2); ++r) {
      for (long c = 0; c < n; ++c)
        for (long k = 0; k < shape(0); ++k) cell(k, c) = values(cc::IPosition(3, k, windows[w][c], r));
      target.put(w * in.nrow() + static_cast<cc::rownr_t>(r), cell);
    }
  }
}

void copy_subtable(const cc::MeasurementSet& in, cc::MeasurementSet& out, const char* name) {
  const cc::Table from = in.keywordSet().asTable(name);
  cc::Table to = out.keywordSet().asTable(name);
  to.addRow(from.nrow());
  cc::TableCopy::copyRows(to, from);
}

}  // namespace

void split_windows(const std::string& in_ms, const std::string& out_ms, const std::vector<std::vector<int>>& windows) {
  if (!cc::Table::isReadable(in_ms)) SPIP_THROW(InputError, in_ms + ": not a readable MeasurementSet (--split)");
  if (windows.empty()) SPIP_THROW(InputError, "--windows: no window given");
  check_distinct(in_ms, out_ms, "--split");
  write_atomically(out_ms, [&](const std::string& partial) {
    const cc::MeasurementSet in(in_ms, cc::TableLock(cc::TableLock::NoLocking));
    const cc::MSColumns columns(in);
    const cc::Vector<double> freq = columns.spectralWindow().chanFreq()(0);
    const cc::Vector<double> width = columns.spectralWindow().chanWidth()(0);
    ArrayDescription layout;
    bool varying = false;
    for (const std::vector<int>& window : windows) {
      if (window.empty()) SPIP_THROW(InputError, "--windows: a window without channels");
      for (int c : window)
        if (c < 0 || c >= static_cast<int>(freq.size()))
          SPIP_THROW(InputError, "--windows: channel " + std::to_string(c) + " is not one of the " +
                                     std::to_string(freq.size()) + " in " + in_ms);
      varying = varying || window.size() != windows.front().size();
      layout.num_channels = std::max(layout.num_channels, static_cast<int>(window.size()));
    }
    cc::MeasurementSet out = create_ms(partial, layout, in.nrow() * windows.size(), varying);
    for (const char* name : {"ANTENNA", "FEED", "FIELD", "POLARIZATION", "OBSERVATION"}) copy_subtable(in, out, name);
    cc::MSColumns target(out);
    for (std::size_t w = 0; w < windows.size(); ++w) {
      out.spectralWindow().addRow();
      out.dataDescription().addRow();
      cc::Vector<double> f(windows[w].size()), b(windows[w].size());
      double total = 0;
      for (std::size_t c = 0; c < windows[w].size(); ++c) {
        f(c) = freq(windows[w][c]);
        b(c) = width(windows[w][c]);
        total += std::abs(b(c));
      }
      auto& spw = target.spectralWindow();
      spw.chanFreq().put(w, f);
      spw.chanWidth().put(w, b);
      spw.effectiveBW().put(w, b);
      spw.resolution().put(w, b);
      spw.numChan().put(w, static_cast<int>(f.size()));
      spw.refFrequency().put(w, f(0));
      spw.totalBandwidth().put(w, total);
      spw.measFreqRef().put(w, columns.spectralWindow().measFreqRef()(0));
      spw.netSideband().put(w, 1);
      target.dataDescription().spectralWindowId().put(w, static_cast<int>(w));
      target.dataDescription().polarizationId().put(w, 0);
    }
    for (const char* column : {"ANTENNA1", "ANTENNA2", "FIELD_ID", "SCAN_NUMBER"}) repeat_scalar<int>(in, out, column, windows.size());
    for (const char* column : {"TIME", "TIME_CENTROID", "INTERVAL", "EXPOSURE"}) repeat_scalar<double>(in, out, column, windows.size());
    repeat_scalar<bool>(in, out, "FLAG_ROW", windows.size());
    repeat_cells<double>(in, out, "UVW", windows.size());
    for (const char* column : {"WEIGHT", "SIGMA"}) repeat_cells<float>(in, out, column, windows.size());
    split_channels<cc::Complex>(in, out, "DATA", windows);
    split_channels<bool>(in, out, "FLAG", windows);
    cc::ScalarColumn<int> ddid(out, "DATA_DESC_ID");
    for (std::size_t w = 0; w < windows.size(); ++w)
      for (cc::rownr_t r = 0; r < in.nrow(); ++r) ddid.put(w * in.nrow() + r, static_cast<int>(w));
  });
}

}  // namespace spip::sim
