// MsReader on real casacore tables: the OSKAR sample and simulator-made variants.
#include <numeric>
#include <casacore/casa/Arrays/Array.h>
#include <casacore/casa/Arrays/Matrix.h>
#include <casacore/tables/DataMan/StandardStMan.h>
#include <casacore/tables/DataMan/TiledStManAccessor.h>
#include <casacore/tables/Tables/ArrColDesc.h>
#include <casacore/tables/Tables/ArrayColumn.h>
#include <casacore/tables/Tables/ScalarColumn.h>
#include <casacore/tables/Tables/Table.h>
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <filesystem>

#include "spip/error.hpp"
#include "spip/ms/band.hpp"
#include "spip/ms/ms_reader.hpp"
#include "spip/sim/ms_writer.hpp"
#include "spip/sim/sky_model.hpp"
#include "scratch.hpp"

namespace cc = casacore;
namespace fs = std::filesystem;
using spip::ms::MsReader;
using spip::ms::Selection;
using spip::ms::VisBlock;

namespace {

const std::string data_dir = SPIP_TEST_DATA;
const std::string oskar_ms = data_dir + "/oskar_small.ms";

std::string scratch(const std::string& name) { return spip::test::scratch_path(name).string(); }

std::string simulated(const std::string& name, spip::sim::Corruption corruption = {}) {
  const std::string out = scratch(name);
  spip::sim::simulate_from_template(
      oskar_ms, out, spip::sim::read_sky_model(data_dir + "/oskar_small.sky.txt"), corruption);
  return out;
}

// Expects an InputError whose one-line message contains every fragment.
template <typename F>
void expect_input_error(F&& action, std::initializer_list<std::string> fragments) {
  try {
    action();
    FAIL() << "expected an InputError";
  } catch (const spip::InputError& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    for (const std::string& fragment : fragments)
      EXPECT_NE(message.find(fragment), std::string::npos) << "'" << fragment << "' not in: " << message;
  }
}

void add_row_copy(const std::string& table_path) {
  cc::Table table(table_path, cc::Table::Update);
  table.addRow();
  for (const auto& name : table.tableDesc().columnNames()) {
    cc::TableColumn column(table, name);
    column.put(table.nrow() - 1, column, cc::rownr_t{0});
  }
}

}  // namespace

TEST(MsReader, DescribesTheOskarSample) {
  const MsReader reader(oskar_ms, Selection{});
  const auto& info = reader.info();
  EXPECT_EQ(info.num_rows, 9936);
  ASSERT_EQ(info.num_channels(), 40);
  EXPECT_DOUBLE_EQ(info.freq_hz.front(), 120.6e6);
  EXPECT_DOUBLE_EQ(info.freq_hz.back(), 167.4e6);
  EXPECT_EQ(info.corr_types, (std::vector<int>{9, 10, 11, 12}));
  EXPECT_NEAR(info.ra_rad, 0.0, 1e-12);
  EXPECT_NEAR(info.dec_rad, M_PI / 3, 1e-12);
  EXPECT_EQ(info.stokes_summary(), "XX XY YX YY");
  EXPECT_EQ(info.date_obs().substr(0, 19), "2025-03-20T00:00:00");  // the first 400 s dump's start
  // 36 dumps of 400 s from MJD 60754 (2025-03-20): 4 h on source, the median between the
  // 18th and 19th dumps' middles.
  const double start = 60754.0 * 86400;
  const spip::ms::ObservingTime time = spip::ms::observing_time(info.integrations);
  EXPECT_EQ(info.integrations.size(), 36u);
  EXPECT_NEAR(time.start_mjd_s, start, 1e-3);
  EXPECT_NEAR(time.end_mjd_s, start + 14400, 1e-3);
  EXPECT_NEAR(time.median_mjd_s, start + 7200, 1e-3);
  EXPECT_NEAR(time.on_source_s, 14400, 1e-3);
  EXPECT_EQ(info.spectral_frame, "TOPOCENT");
  for (bool determined : info.stokes_determined) EXPECT_TRUE(determined);
}

TEST(MsReader, BlockMatchesTheCorrelationsAndTheExactSky) {
  const MsReader reader(oskar_ms, Selection{});
  const VisBlock block = reader.read(5, 9);
  ASSERT_EQ(block.num_rows(), 9936u);
  ASSERT_EQ(block.num_channels(), 4);
  // Independent reference: raw correlations through casacore, IAU formulas in double.
  const cc::Table table(oskar_ms);
  const cc::Array<cc::Complex> data = cc::ArrayColumn<cc::Complex>(table, "DATA").getColumn();
  const cc::Array<double> uvw = cc::ArrayColumn<double>(table, "UVW").getColumn();
  const std::complex<double> j(0, 1);
  double worst = 0;
  for (std::size_t r = 0; r < block.num_rows(); r += 97)
    for (int c = 0; c < 4; ++c) {
      auto corr = [&](int k) {
        return std::complex<double>(data(cc::IPosition(3, k, 5 + c, r)));
      };
      const std::complex<double> truth[4] = {(corr(0) + corr(3)) / 2.0, (corr(0) - corr(3)) / 2.0,
                                             (corr(1) + corr(2)) / 2.0, -j * (corr(1) - corr(2)) / 2.0};
      for (int s = 0; s < 4; ++s)
        worst = std::max(worst, std::abs(std::complex<double>(block.vis[block.index(r, c, s)]) - truth[s]));
      EXPECT_EQ(block.uvw_m[3 * r + 2], uvw(cc::IPosition(2, 2, r)));
    }
  EXPECT_LT(worst, 1e-6);
  // Stokes V of the sky is only S3's -0.024 Jy (nu/nu0)^-0.8: |V| at a visibility is at most that.
  const double v_max = 0.024 * std::pow(block.freq_hz[0] / 144e6, -0.8);
  for (std::size_t r = 0; r < block.num_rows(); ++r)
    ASSERT_LE(std::abs(block.vis[block.index(r, 0, 3)]), v_max * (1 + 1e-5));
}

TEST(MsReader, RowChunkingDoesNotChangeTheBlock) {
  Selection small_chunks;
  small_chunks.row_chunk = 1000;
  const VisBlock a = MsReader(oskar_ms, Selection{}).read(10, 13);
  const VisBlock b = MsReader(oskar_ms, small_chunks).read(10, 13);
  EXPECT_EQ(a.uvw_m, b.uvw_m);
  EXPECT_EQ(a.vis, b.vis);
  EXPECT_EQ(a.weight, b.weight);
}

// The data column's cache holds the tiles of one band of rows, one tile in the sample's
// layout (each tile holds every channel of its rows): for a block of a few channels,
// casacore would size it for every tile of the column (12 here). The table is opened
// again here; casacore shares one open table, and its caches, within a process.
TEST(MsReader, KeepsOneBandOfTilesInTheDataColumnsCache) {
  Selection selection;
  selection.row_chunk = 1000;
  const MsReader reader(oskar_ms, selection);
  EXPECT_EQ(reader.info().data_tile_channels, 40);
  const cc::Table table(oskar_ms);
  const cc::ROTiledStManAccessor data(table, "DATA", true);
  ASSERT_EQ(data.nhypercubes(), 1u);
  EXPECT_EQ(data.getCacheSize(0), 1u) << "set when the MS is opened";
  const VisBlock block = reader.read(10, 13);
  ASSERT_EQ(block.num_rows(), 9936u);
  EXPECT_EQ(data.getCacheSize(0), 1u) << "and kept through a read";
  EXPECT_LT(data.getTileShape(0)(2), 9936);  // several bands of rows were read through it
}

// A block holds one plane per channel; with rows left out (FLAG_ROW, an
// autocorrelation) the planes are closed up, and every plane equals the block of its
// channel alone. Every block has the rows, and coordinates, that uvw_m() lists.
TEST(MsReader, ChannelPlanesEqualSingleChannelReadsWithRowsLeftOut) {
  const std::string path = simulated("rows_left_out.ms");
  {
    cc::Table table(path, cc::Table::Update);
    cc::ScalarColumn<bool> flag_row(table, "FLAG_ROW");
    for (cc::rownr_t r = 0; r < table.nrow(); r += 7) flag_row.put(r, true);
    cc::ScalarColumn<int> ant2(table, "ANTENNA2");
    ant2.put(3, cc::ScalarColumn<int>(table, "ANTENNA1")(3));
    flag_row.put(3, true);  // an autocorrelation flagged whole is still no cross-correlation row
  }
  Selection selection;
  selection.row_chunk = 1000;
  const MsReader reader(path, selection);
  const VisBlock block = reader.read(5, 9);
  ASSERT_EQ(block.num_rows(), 9936u - 1420u - 1u);  // rows 0, 7, ..., 9933 and row 3 left out
  EXPECT_EQ(block.flagged_rows, 1420) << "FLAG_ROW counts; a flagged autocorrelation does not";
  EXPECT_EQ(block.vis.size(), 4 * 4 * block.num_rows());
  EXPECT_EQ(reader.uvw_m(), block.uvw_m);
  for (int c = 0; c < 4; ++c) {
    const VisBlock single = reader.read(5 + c, 6 + c);
    ASSERT_EQ(single.uvw_m, block.uvw_m);
    for (std::size_t r = 0; r < block.num_rows(); ++r)
      for (int s = 0; s < 4; ++s) {
        ASSERT_EQ(block.vis[block.index(r, c, s)], single.vis[single.index(r, 0, s)]) << r << " " << c << " " << s;
        ASSERT_EQ(block.weight[block.index(r, c, s)], single.weight[single.index(r, 0, s)]);
      }
  }
  // The planes one after another, channel by channel.
  EXPECT_EQ(block.index(0, 1, 0), 4 * block.num_rows());
  EXPECT_EQ(block.index(2, 3, 1), (3 * block.num_rows() + 2) * 4 + 1);
}

TEST(MsReader, FlaggedCorrelationsGetZeroWeightAndAreNotCounted) {
  spip::sim::Corruption corruption;
  corruption.flag_fraction = 0.3;
  const std::string path = simulated("flagged.ms", corruption);
  Selection selection;
  selection.row_chunk = 777;
  const MsReader reader(path, selection);
  const VisBlock block = reader.read(0, 40);
  const cc::Array<bool> flag = cc::ArrayColumn<bool>(cc::Table(path), "FLAG").getColumn();
  std::vector<std::int64_t> expected(40, 0);
  for (std::size_t r = 0; r < block.num_rows(); ++r)
    for (int c = 0; c < 40; ++c) {
      const bool flagged = flag(cc::IPosition(3, 0, c, r)) || flag(cc::IPosition(3, 3, c, r));
      expected[c] += !flagged;
      ASSERT_EQ(block.weight[block.index(r, c, 0)] == 0.0f, flagged);
    }
  EXPECT_EQ(reader.unflagged_per_channel(), expected);
  // Shares of the rows, as the ranks count them, add up to the whole.
  std::vector<std::int64_t> sum(40, 0);
  for (std::int64_t first = 0; first < 9936; first += 3000) {
    const auto share = reader.unflagged_per_channel(first, std::min<std::int64_t>(first + 3000, 9936));
    for (int c = 0; c < 40; ++c) sum[c] += share[c];
  }
  EXPECT_EQ(sum, expected);
}

TEST(MsReader, WeightColumnGivesInverseVariances) {
  spip::sim::Corruption corruption;
  corruption.noise_sigma_jy = 2.0;  // the simulator writes WEIGHT = 1/SIGMA^2 = 1/4
  const VisBlock block = MsReader(simulated("noisy.ms", corruption), Selection{}).read(0, 1);
  EXPECT_FLOAT_EQ(block.weight[block.index(0, 0, 0)], 0.5f);  // 4 w_a w_b / (w_a + w_b), w = 1/4
}

// DATE-OBS is when the observation started, as FITS means it: the earliest row's TIME
// (the middle of its integration) less half its INTERVAL, wherever that row is in the
// table. SPECSYS follows the window's MEAS_FREQ_REF, and inputs in two frames cannot
// share one frequency axis.
TEST(MsReader, StartTimeAndFrequencyFrameAsTheTablesGiveThem) {
  const std::string ms = simulated("frames.ms");
  {
    cc::Table table(ms, cc::Table::Update);
    cc::ScalarColumn<double> time(table, "TIME");
    time.put(0, time(table.nrow() - 1) + 3600);  // the first row, an hour after the last
    cc::Table windows(ms + "/SPECTRAL_WINDOW", cc::Table::Update);
    cc::ScalarColumn<int>(windows, "MEAS_FREQ_REF").put(0, 1);  // LSRK
  }
  const spip::ms::MsInfo lsrk = MsReader(ms, Selection{}).info();
  EXPECT_EQ(lsrk.date_obs().substr(0, 19), "2025-03-20T00:00:00");
  // That row makes a 37th integration after a gap of 3200 s, which is not on source.
  const spip::ms::ObservingTime time = spip::ms::observing_time(lsrk.integrations);
  EXPECT_NEAR(time.end_mjd_s - time.start_mjd_s, 14400 + 3600, 1e-3);
  EXPECT_NEAR(time.on_source_s, 14400 + 400, 1e-3);
  EXPECT_EQ(lsrk.spectral_frame, "LSRK");
  const spip::ms::MsInfo topo = MsReader(oskar_ms, Selection{}).info();
  std::vector<int> every(40);
  std::iota(every.begin(), every.end(), 0);
  expect_input_error([&] { spip::ms::merge_band({topo, lsrk}, {every, every}); },
                     {"frames.ms's frequencies are LSRK", "oskar_small.ms's TOPOCENT", "one frame"});
}

// A table ordered by baseline, not by time, has the same 36 integrations: its time
// stamps do not follow one another, and the reader still keeps each once (its list,
// made distinct whenever it doubles, is so nine times over its 9936 rows).
TEST(MsReader, AnMsOrderedByBaselineHasTheSameIntegrations) {
  const std::string ms = scratch("by_baseline.ms");
  {
    cc::Table sample(oskar_ms);
    cc::Block<cc::String> keys(3);
    keys[0] = "ANTENNA1";
    keys[1] = "ANTENNA2";
    keys[2] = "TIME";
    sample.sort(keys).deepCopy(ms, cc::Table::New, true);
  }
  const spip::ms::MsInfo info = MsReader(ms, Selection{}).info();
  {
    const cc::Table sorted(ms);
    const cc::ScalarColumn<double> time(sorted, "TIME");
    ASSERT_NE(time(0), time(1));  // the first two rows are of one baseline at two times
  }
  EXPECT_EQ(info.integrations.size(), 36u);
  const spip::ms::ObservingTime time = spip::ms::observing_time(info.integrations);
  EXPECT_NEAR(time.on_source_s, 14400, 1e-3);
  EXPECT_NEAR(time.median_mjd_s, 60754.0 * 86400 + 7200, 1e-3);
}

// Spectral windows of different channel counts, as the VLA records them: their DATA
// and FLAG cells differ in shape, which casacore cannot stack in one range of rows. Each
// window reads exactly the sample's channels it holds, and the merged band is the
// sample's, channels 0-7 and 8-11 from two windows.
TEST(MsReader, WindowsOfDifferentChannelCountsReadAsTheChannelsTheyHold) {
  const std::string split = scratch("unequal_windows.ms");
  std::vector<int> wide(8), narrow(4);
  std::iota(wide.begin(), wide.end(), 0);
  std::iota(narrow.begin(), narrow.end(), 8);
  spip::sim::split_windows(oskar_ms, split, {wide, narrow});
  const MsReader whole(oskar_ms, Selection{});
  std::vector<spip::ms::MsInfo> infos;
  for (int spw : {0, 1}) {
    Selection selection;
    selection.spw = spw;
    const MsReader reader(split, selection);
    infos.push_back(reader.info());
    EXPECT_EQ(reader.info().num_rows, 9936) << spw;  // the window's rows alone
    const int channels = spw == 0 ? 8 : 4, first = spw == 0 ? 0 : 8;
    ASSERT_EQ(reader.info().num_channels(), channels);
    const VisBlock block = reader.read(0, channels), reference = whole.read(first, first + channels);
    ASSERT_EQ(block.vis.size(), reference.vis.size()) << spw;
    EXPECT_EQ(block.vis, reference.vis) << spw;
    EXPECT_EQ(block.weight, reference.weight) << spw;
    EXPECT_EQ(block.uvw_m, reference.uvw_m) << spw;
    const std::vector<std::int64_t> unflagged = whole.unflagged_per_channel();
    EXPECT_EQ(reader.unflagged_per_channel(),
              std::vector<std::int64_t>(unflagged.begin() + first, unflagged.begin() + first + channels));
  }
  const spip::ms::Band band = spip::ms::merge_band(infos, {wide, {0, 1, 2, 3}});
  ASSERT_EQ(band.size(), 12);
  for (int c = 0; c < 12; ++c) EXPECT_DOUBLE_EQ(band.channels[c].freq_hz, whole.info().freq_hz[c]) << c;
}

// input.column auto reads CORRECTED_DATA where the MS has it (after CASA's applycal),
// else DATA, as WSClean does: an MS calibrated in CASA is not imaged uncalibrated.
TEST(MsReader, AutoReadsCorrectedDataWhereTheMsHasIt) {
  EXPECT_EQ(MsReader(oskar_ms, Selection{}).info().column, "DATA");
  const std::string ms = simulated("corrected.ms");
  {
    cc::Table table(ms, cc::Table::Update);
    table.addColumn(cc::ArrayColumnDesc<cc::Complex>("CORRECTED_DATA", 2), cc::StandardStMan("CorrectedData"));
    cc::Array<cc::Complex> all = cc::ArrayColumn<cc::Complex>(table, "DATA").getColumn();
    all *= cc::Complex(3.0f, 0.0f);
    cc::ArrayColumn<cc::Complex>(table, "CORRECTED_DATA").putColumn(all);
  }
  Selection data;
  data.column = "DATA";
  const VisBlock raw = MsReader(ms, data).read(0, 2);
  const MsReader automatic(ms, Selection{});
  EXPECT_EQ(automatic.info().column, "CORRECTED_DATA");
  const VisBlock corrected = automatic.read(0, 2);
  ASSERT_EQ(corrected.vis.size(), raw.vis.size());
  double largest = 0;
  for (std::size_t i = 0; i < raw.vis.size(); ++i) {
    ASSERT_LE(std::abs(corrected.vis[i] - 3.0f * raw.vis[i]), 1e-6f * (1 + std::abs(raw.vis[i]))) << i;
    largest = std::max(largest, static_cast<double>(std::abs(raw.vis[i])));
  }
  EXPECT_GT(largest, 0.1);
}

// An ASKAP MS read from DATA as the observatory wrote it is marked (the planner warns),
// but not after FixMS: its CORRECTED_DATA (which auto reads), or DATA beside DATA_ASKAP.
TEST(MsReader, MarksAskapCorrelationsInTheInstrumentFrame) {
  const std::string ms = simulated("askap.ms");
  EXPECT_FALSE(MsReader(ms, Selection{}).info().askap_instrument_frame);
  {
    cc::Table observation(ms + "/OBSERVATION", cc::Table::Update);
    cc::ScalarColumn<cc::String>(observation, "TELESCOPE_NAME").put(0, "ASKAP");
  }
  EXPECT_TRUE(MsReader(ms, Selection{}).info().askap_instrument_frame);
  const auto add_copy_of_data = [&](const char* name) {
    cc::Table table(ms, cc::Table::Update);
    table.addColumn(cc::ArrayColumnDesc<cc::Complex>(name, 2), cc::StandardStMan(name));
    cc::ArrayColumn<cc::Complex>(table, name).putColumn(cc::ArrayColumn<cc::Complex>(table, "DATA").getColumn());
  };
  add_copy_of_data("DATA_ASKAP");
  EXPECT_FALSE(MsReader(ms, Selection{}).info().askap_instrument_frame);
  const std::string fixed = simulated("askap_fixed.ms");
  {
    cc::Table observation(fixed + "/OBSERVATION", cc::Table::Update);
    cc::ScalarColumn<cc::String>(observation, "TELESCOPE_NAME").put(0, "ASKAP");
  }
  {
    cc::Table table(fixed, cc::Table::Update);
    table.addColumn(cc::ArrayColumnDesc<cc::Complex>("CORRECTED_DATA", 2), cc::StandardStMan("CorrectedData"));
    cc::ArrayColumn<cc::Complex>(table, "CORRECTED_DATA").putColumn(cc::ArrayColumn<cc::Complex>(table, "DATA").getColumn());
  }
  const MsReader automatic(fixed, Selection{});
  EXPECT_EQ(automatic.info().column, "CORRECTED_DATA");
  EXPECT_FALSE(automatic.info().askap_instrument_frame);
}

TEST(MsReaderErrors, PathThatDoesNotExist) {
  expect_input_error([] { MsReader(scratch("nowhere.ms"), Selection{}); }, {"nowhere.ms", "no such file"});
}

TEST(MsReaderErrors, DirectoryThatIsNotAnMs) {
  const std::string dir = scratch("plain_dir");
  fs::create_directories(dir);
  expect_input_error([&] { MsReader(dir, Selection{}); }, {"plain_dir", "not a casacore table"});
}

TEST(MsReaderErrors, MissingDataColumn) {
  Selection selection;
  selection.column = "CORRECTED_DATA";
  expect_input_error([&] { MsReader(oskar_ms, selection); }, {"oskar_small.ms", "CORRECTED_DATA", "not found"});
}

TEST(MsReaderErrors, SeveralFieldsWithoutASelection) {
  const std::string path = simulated("two_fields.ms");
  add_row_copy(path + "/FIELD");
  expect_input_error([&] { MsReader(path, Selection{}); }, {"two_fields.ms", "2 fields", "input.field"});
  Selection selection;
  selection.field = 1;
  EXPECT_NO_THROW(MsReader(path, selection));
  selection.field = 2;
  expect_input_error([&] { MsReader(path, selection); }, {"input.field = 2"});
}

TEST(MsReaderErrors, SeveralSpectralWindowsWithoutASelection) {
  const std::string path = simulated("two_windows.ms");
  add_row_copy(path + "/SPECTRAL_WINDOW");
  expect_input_error([&] { MsReader(path, Selection{}); }, {"2 spectral windows", "input.spw"});
  Selection selection;
  selection.spw = 1;  // no DATA_DESCRIPTION points at it
  expect_input_error([&] { MsReader(path, selection); }, {"DATA_DESCRIPTION", "spectral window 1"});
}

TEST(MsReaderErrors, ChannelRangeOutsideTheBand) {
  const MsReader reader(oskar_ms, Selection{});
  expect_input_error([&] { reader.read(38, 41); }, {"[38, 41)", "40 channels"});
  expect_input_error([&] { reader.read(-1, 3); }, {"[-1, 3)"});
  expect_input_error([&] { reader.read(5, 5); }, {"[5, 5)"});
}

TEST(MsReaderErrors, NoUnflaggedData) {
  spip::sim::Corruption corruption;
  corruption.flag_fraction = 1.0;
  const MsReader reader(simulated("all_flagged.ms", corruption), Selection{});
  expect_input_error([&] { reader.unflagged_per_channel(); }, {"all_flagged.ms", "no unflagged"});
}

TEST(MsReaderErrors, SetsWithOverlappingChannels) {
  spip::sim::ArrayDescription array;
  spip::sim::read_oskar_telescope(data_dir + "/oskar_small.tm", array);
  array.dec_rad = M_PI / 3;
  array.freq_start_hz = 120.6e6;
  array.freq_inc_hz = 1.25e6;
  array.num_channels = 40;
  array.start_mjd_s = spip::sim::parse_utc("2025-03-20 00:00:00");
  array.dump_s = 400;
  array.num_times = 2;
  const std::string other = scratch("other_band.ms");
  spip::sim::simulate_from_array(array, other, spip::sim::read_sky_model(data_dir + "/oskar_small.sky.txt"), {});
  const std::vector<spip::ms::MsInfo> sets = {MsReader(oskar_ms, Selection{}).info(),
                                              MsReader(other, Selection{}).info()};
  // Channel 0 has the same centre in both but another width: an overlap.
  const std::vector<std::vector<int>> every = {std::vector<int>(40), std::vector<int>(40)};
  std::vector<std::vector<int>> selected = every;
  for (auto& s : selected) std::iota(s.begin(), s.end(), 0);
  expect_input_error([&] { spip::ms::merge_band(sets, selected); }, {"other_band.ms", "channel 0", "oskar_small.ms", "overlaps"});
  const spip::ms::Band same = spip::ms::merge_band({sets[0], sets[0]}, selected);
  EXPECT_EQ(same.size(), 40);
  EXPECT_EQ(same.channels[7].parts.size(), 2u);
}
