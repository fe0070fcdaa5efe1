// The simulator against OSKAR: the same sky on the same template must reproduce
// OSKAR's DATA, and array mode must reproduce OSKAR's UVW.
#include <casacore/casa/Arrays/Array.h>
#include <casacore/tables/Tables/ArrayColumn.h>
#include <casacore/tables/Tables/ScalarColumn.h>
#include <casacore/measures/Measures/MCDirection.h>
#include <casacore/measures/Measures/MDirection.h>
#include <casacore/ms/MeasurementSets/MSColumns.h>
#include <casacore/ms/MeasurementSets/MeasurementSet.h>
#include <casacore/tables/Tables/ArrColDesc.h>
#include <casacore/tables/Tables/Table.h>
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <filesystem>
#include <array>
#include <fstream>
#include <utility>

#include "spip/error.hpp"
#include "spip/sim/ms_writer.hpp"
#include "spip/sim/sky_model.hpp"
#include "ms_edit.hpp"
#include "scratch.hpp"

namespace cc = casacore;
namespace fs = std::filesystem;
using spip::sim::Corruption;
using spip::sim::SkyModel;

namespace {

const std::string data_dir = SPIP_TEST_DATA;
const std::string oskar_ms = data_dir + "/oskar_small.ms";
const std::string oskar_sky = data_dir + "/oskar_small.sky.txt";

std::string scratch(const std::string& name) { return spip::test::scratch_path(name).string(); }

cc::Array<cc::Complex> column_data(const std::string& ms, const char* column = "DATA") {
  return cc::ArrayColumn<cc::Complex>(cc::Table(ms), column).getColumn();
}

double max_abs_difference(const cc::Array<cc::Complex>& a, const cc::Array<cc::Complex>& b) {
  EXPECT_EQ(a.shape(), b.shape());
  double worst = 0;
  const cc::Complex* pa = a.data();
  const cc::Complex* pb = b.data();
  for (std::size_t k = 0; k < a.nelements(); ++k)
    worst = std::max(worst, static_cast<double>(std::abs(pa[k] - pb[k])));
  return worst;
}

spip::sim::ArrayDescription oskar_small_array() {
  spip::sim::ArrayDescription array;
  spip::sim::read_oskar_telescope(data_dir + "/oskar_small.tm", array);
  array.ra_rad = 0.0;
  array.dec_rad = 60.0 * M_PI / 180.0;
  array.apparent_phase_centre = true;  // as OSKAR
  array.freq_start_hz = 120.6e6;
  array.freq_inc_hz = 1.2e6;
  array.num_channels = 40;
  array.start_mjd_s = spip::sim::parse_utc("2025-03-20 00:00:00");
  array.dump_s = 400.0;
  array.num_times = 36;
  return array;
}

}  // namespace

TEST(SkyModel, ReadsOskarNamedColumnsAsTheTruthTableStatesThem) {
  const SkyModel sky = spip::sim::read_sky_model(oskar_sky);
  ASSERT_EQ(sky.components.size(), 4u);
  const auto& s3 = sky.components[2];
  EXPECT_EQ(s3.name, "S3_rm-45");
  EXPECT_NEAR(s3.ra_rad * 180 / M_PI, 359.1517021386885, 1e-9);
  EXPECT_DOUBLE_EQ(s3.pol_frac, 0.15);
  EXPECT_DOUBLE_EQ(s3.rm_rad_m2, -45.0);
  EXPECT_NEAR(s3.stokes_v(144e6), -0.024, 1e-15);
  // Truth table: Q0, U0 at the reference frequency 144 MHz.
  const std::complex<double> p = s3.linear_pol(144e6);
  EXPECT_NEAR(p.real(), 0.04063336264583302, 1e-12);
  EXPECT_NEAR(p.imag(), -0.11291115905920115, 1e-12);
  // Truth table: l, m of S1.
  const auto lmn = spip::sim::direction_cosines(sky.components[0].ra_rad, sky.components[0].dec_rad,
                                                0.0, M_PI / 3);
  EXPECT_NEAR(lmn.l, 0.008726646259971648, 1e-11);
  EXPECT_NEAR(lmn.m, 0.005817764173314432, 1e-11);
}

TEST(SkyModel, GaussianVisibilityIsTheAnalyticFourierTransform) {
  SkyModel sky;
  spip::sim::Component g;
  g.i0_jy = 3.0;
  g.ra_rad = 0;
  g.dec_rad = M_PI / 3;
  g.major_fwhm_rad = 60.0 / 206264.806;
  g.minor_fwhm_rad = 30.0 / 206264.806;
  g.pa_rad = 0;  // major axis north-south: broad in m, narrow in v
  sky.components = {g};
  const double c = 299792458.0;
  const std::vector<double> freq = {c};  // lambda = 1 m: uvw in wavelengths
  const double uvw[] = {0, 0, 0, 1000, 0, 0, 0, 1000, 0};
  std::complex<float> vis[12];
  spip::sim::predict(sky, 0, M_PI / 3, uvw, 3, freq, vis);
  const double k = M_PI * M_PI / (4 * std::log(2.0));
  EXPECT_NEAR(vis[0].real(), 3.0, 1e-6);
  EXPECT_NEAR(vis[4].real(), 3.0 * std::exp(-k * g.minor_fwhm_rad * g.minor_fwhm_rad * 1e6), 1e-6);
  EXPECT_NEAR(vis[8].real(), 3.0 * std::exp(-k * g.major_fwhm_rad * g.major_fwhm_rad * 1e6), 1e-6);
}

TEST(SkyModel, RejectsMalformedFiles) {
  const std::string path = scratch("bad_sky.txt");
  {
    std::ofstream(path) << "Format = Name, RaD, DecD, I\n\"a\", 1.0, xyz, 2.0\n";
  }
  try {
    spip::sim::read_sky_model(path);
    FAIL() << "expected an InputError";
  } catch (const spip::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("DecD"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(":2"), std::string::npos) << e.what();
  }
  EXPECT_THROW(spip::sim::read_sky_model(scratch("missing.txt")), spip::InputError);
}

TEST(Simulator, TemplateModeReproducesOskarDataTo1e5Jy) {
  const std::string out = scratch("template.ms");
  spip::sim::simulate_from_template(oskar_ms, out, spip::sim::read_sky_model(oskar_sky), {});
  EXPECT_FALSE(fs::exists(out + ".partial"));
  const double worst = max_abs_difference(column_data(out), column_data(oskar_ms));
  EXPECT_LT(worst, 1e-5) << "largest |spip - OSKAR| over every visibility";
  std::cout << "[ measured ] template mode max |spip - OSKAR| = " << worst << " Jy\n";
}

TEST(Simulator, ArrayModeReproducesOskarUvwAndData) {
  const std::string out = scratch("array.ms");
  spip::sim::simulate_from_array(oskar_small_array(), out, spip::sim::read_sky_model(oskar_sky), {});
  const cc::Table ours(out), theirs(oskar_ms);
  ASSERT_EQ(ours.nrow(), theirs.nrow());
  EXPECT_TRUE(cc::allEQ(cc::ScalarColumn<int>(ours, "ANTENNA1").getColumn(),
                        cc::ScalarColumn<int>(theirs, "ANTENNA1").getColumn()));
  EXPECT_TRUE(cc::allEQ(cc::ScalarColumn<int>(ours, "ANTENNA2").getColumn(),
                        cc::ScalarColumn<int>(theirs, "ANTENNA2").getColumn()));
  EXPECT_TRUE(cc::allNear(cc::ScalarColumn<double>(ours, "TIME").getColumn(),
                          cc::ScalarColumn<double>(theirs, "TIME").getColumn(), 1e-12));
  const cc::Array<double> uvw_ours = cc::ArrayColumn<double>(ours, "UVW").getColumn();
  const cc::Array<double> uvw_theirs = cc::ArrayColumn<double>(theirs, "UVW").getColumn();
  double worst_uvw = 0;
  for (std::size_t k = 0; k < uvw_ours.nelements(); ++k)
    worst_uvw = std::max(worst_uvw, std::abs(uvw_ours.data()[k] - uvw_theirs.data()[k]));
  // OSKAR's own sidereal time and casacore's differ by milliseconds of rotation.
  EXPECT_LT(worst_uvw, 0.01);
  const double worst_data = max_abs_difference(column_data(out), column_data(oskar_ms));
  EXPECT_LT(worst_data, 1e-3);
  std::cout << "[ measured ] array mode max |dUVW| = " << worst_uvw
            << " m, max |dDATA| = " << worst_data << " Jy\n";
}

TEST(Simulator, NoiseHasTheRequestedSigmaAndIsReproducible) {
  const SkyModel sky = spip::sim::read_sky_model(oskar_sky);
  Corruption noisy;
  noisy.noise_sigma_jy = 0.5;
  noisy.seed = 7;
  spip::sim::simulate_from_template(oskar_ms, scratch("noisy_a.ms"), sky, noisy);
  spip::sim::simulate_from_template(oskar_ms, scratch("noisy_b.ms"), sky, noisy);
  const cc::Array<cc::Complex> a = column_data(scratch("noisy_a.ms"));
  EXPECT_EQ(max_abs_difference(a, column_data(scratch("noisy_b.ms"))), 0.0);
  const cc::Array<cc::Complex> clean = column_data(oskar_ms);
  double sum_sq = 0;
  for (std::size_t k = 0; k < a.nelements(); ++k) sum_sq += std::norm(a.data()[k] - clean.data()[k]);
  const double sigma = std::sqrt(sum_sq / (2.0 * a.nelements()));
  EXPECT_NEAR(sigma, 0.5, 0.005);
  const cc::Array<float> weight = cc::ArrayColumn<float>(cc::Table(scratch("noisy_a.ms")), "WEIGHT").getColumn();
  EXPECT_FLOAT_EQ(weight.data()[0], 4.0f);
}

TEST(Simulator, FlagFractionIsHonoured) {
  Corruption flags;
  flags.flag_fraction = 0.25;
  spip::sim::simulate_from_template(oskar_ms, scratch("flagged.ms"), spip::sim::read_sky_model(oskar_sky), flags);
  const cc::Array<bool> flag = cc::ArrayColumn<bool>(cc::Table(scratch("flagged.ms")), "FLAG").getColumn();
  const double fraction = static_cast<double>(cc::ntrue(flag)) / flag.nelements();
  EXPECT_NEAR(fraction, 0.25, 0.01);
}

// An apparent sky: a point source 0.2 degrees from the pointing, seen through a Gaussian
// beam of a 25 m dish, has in every correlation and channel its true visibility times
// exp(-4 ln 2 theta^2 / FWHM^2) at its angular distance theta (the spherical formula,
// not the simulator's direction cosines) and FWHM = 1.02 lambda / D: from 0.80 at the
// band's bottom (1.0 GHz) to 0.68 at its top (1.3 GHz), so the beam's frequency slope is
// in the data. The MS's ANTENNA table carries the dish.
TEST(Simulator, APrimaryBeamAttenuatesEachComponentAtItsDistanceAndFrequency) {
  SkyModel sky;
  spip::sim::Component source;
  source.i0_jy = 2.0;
  source.v0_jy = 0.1;
  source.pol_frac = 0.3;
  source.rm_rad_m2 = 20;
  source.ra_rad = 0.2 * M_PI / 180.0 / std::cos(60.0 * M_PI / 180.0);  // about 0.2 deg east at Dec 60
  source.dec_rad = 60.0 * M_PI / 180.0;
  sky.components = {source};
  spip::sim::ArrayDescription array = oskar_small_array();
  array.num_times = 2;
  array.freq_start_hz = 1.0e9;
  array.freq_inc_hz = 100e6;
  array.num_channels = 4;
  array.dish_diameter_m = 25.0;
  array.apparent_phase_centre = false;
  Corruption seen;
  spip::beam::PrimaryBeam gaussian;  // the default model, FWHM 1.02 lambda / D
  gaussian.dish_diameter_m = 25.0;
  seen.primary_beam = gaussian;
  spip::sim::simulate_from_array(array, scratch("true.ms"), sky, {});
  spip::sim::simulate_from_array(array, scratch("seen.ms"), sky, seen);
  const cc::Array<cc::Complex> truth = column_data(scratch("true.ms")), apparent = column_data(scratch("seen.ms"));
  const double theta = std::acos(std::sin(source.dec_rad) * std::sin(array.dec_rad) +
                                 std::cos(source.dec_rad) * std::cos(array.dec_rad) * std::cos(source.ra_rad));
  double worst = 0, lowest = 1, highest = 0;
  for (int c = 0; c < array.num_channels; ++c) {
    const double lambda = 299792458.0 / (array.freq_start_hz + c * array.freq_inc_hz);
    const double fwhm = 1.02 * lambda / 25.0;
    const double expected = std::exp(-4 * std::log(2.0) * theta * theta / (fwhm * fwhm));
    lowest = std::min(lowest, expected);
    highest = std::max(highest, expected);
    for (long long row = 0; row < static_cast<long long>(truth.shape()[2]); ++row)
      for (int k = 0; k < 4; ++k) {
        const cc::IPosition at(3, k, c, row);
        worst = std::max(worst, static_cast<double>(std::abs(apparent(at) - static_cast<float>(expected) * truth(at))));
      }
  }
  EXPECT_LT(worst, 1e-5);
  EXPECT_LT(lowest, 0.7);
  EXPECT_GT(highest, 0.78);
  const cc::Table antennas(scratch("seen.ms") + "/ANTENNA");
  EXPECT_DOUBLE_EQ(cc::ScalarColumn<double>(antennas, "DISH_DIAMETER")(0), 25.0);
  std::cout << "[ measured ] beam attenuation from " << highest << " to " << lowest << ", max |seen - B true| = "
            << worst << " Jy\n";
}

namespace {

// The J2000 phase centre of an MS's field `f`.
std::pair<double, double> phase_centre(const std::string& ms, int f = 0) {
  const cc::MeasurementSet table(ms);
  const cc::MSColumns columns(table);
  const cc::MDirection centre =
      cc::MDirection::Convert(columns.field().phaseDirMeasCol()(f)(cc::IPosition(1, 0)), cc::MDirection::J2000)();
  const cc::Vector<double> angles = centre.getAngle("rad").getValue();
  return {angles(0), angles(1)};
}

// A flat-spectrum point at (ra, dec) with I 1, Q 0.5, U 0.25, V 0.1 Jy at every frequency.
SkyModel polarised_point(std::pair<double, double> at) {
  spip::sim::Component c;
  c.ra_rad = at.first;
  c.dec_rad = at.second;
  c.i0_jy = 1.0;
  c.v0_jy = 0.1;
  c.pol_frac = std::hypot(0.5, 0.25);
  c.chi0_rad = 0.5 * std::atan2(0.25, 0.5);
  return SkyModel{{c}};
}

}  // namespace

// At the phase centre every visibility is the source's flux, so each correlation must be
// the IAU combination of I, Q, U, V its CORR_TYPE names: circular VLA feeds, and
// OVRO-LWA's linear feeds stored as XX YY XY YX. The simulator once wrote XX, XY, YX,
// YY into every template's slots (RR 1.5 for I 1 and Q 0.5).
TEST(Simulator, TemplateModeWritesTheTemplatesOwnCorrelations) {
  const std::complex<float> j(0, 1), i(1, 0), q(0.5f, 0), u(0.25f, 0), v(0.1f, 0);
  for (const auto& [name, expected] :
       {std::pair{"vla_j1008_36ghz.ms", std::array{i + v, q + j * u, q - j * u, i - v}},
        std::pair{"ovrolwa_zenith_28mhz.ms", std::array{i + q, i - q, u + j * v, u - j * v}}}) {
    const std::string real = data_dir + "/real/" + name, out = scratch(std::string("sim-") + name);
    spip::sim::simulate_from_template(real, out, polarised_point(phase_centre(real)), {});
    const cc::Array<cc::Complex> data = column_data(out);
    ASSERT_EQ(data.shape()(0), 4) << name;
    double worst = 0;
    for (long row = 0; row < data.shape()(2); ++row)
      for (long c = 0; c < data.shape()(1); ++c)
        for (int k = 0; k < 4; ++k)
          worst = std::max(worst, static_cast<double>(std::abs(data(cc::IPosition(3, k, c, row)) - expected[k])));
    EXPECT_LT(worst, 1e-5) << name;
  }
}

// Rows of every spectral window are predicted at their window's frequencies, and rows of
// every field about their field's centre: a template split into two windows gives each
// window's rows the channels of the whole band's simulation, and a second field's rows
// are those that field simulated alone.
TEST(Simulator, TemplateModeSimulatesEachWindowAndFieldWithItsOwnAxisAndCentre) {
  const SkyModel sky = spip::sim::read_sky_model(oskar_sky);
  const std::string whole = scratch("whole.ms"), split = scratch("split.ms"), resimulated = scratch("resimulated.ms");
  spip::sim::simulate_from_template(oskar_ms, whole, sky, {});
  std::vector<int> low(20), high(20);
  for (int c = 0; c < 20; ++c) low[c] = c, high[c] = 20 + c;
  spip::sim::split_windows(oskar_ms, split, {low, high});
  spip::sim::simulate_from_template(split, resimulated, sky, {});
  const cc::Array<cc::Complex> all = column_data(whole);
  const cc::Table rows(resimulated);
  const cc::ArrayColumn<cc::Complex> data(rows, "DATA");
  const cc::rownr_t per_window = rows.nrow() / 2;
  double worst = 0;
  for (cc::rownr_t r = 0; r < rows.nrow(); ++r) {
    const cc::Matrix<cc::Complex> cell = data(r);
    for (int c = 0; c < 20; ++c)
      for (int k = 0; k < 4; ++k)
        worst = std::max(worst, static_cast<double>(std::abs(
                                    cell(k, c) - all(cc::IPosition(3, k, (r < per_window ? 0 : 20) + c,
                                                                   static_cast<long>(r % per_window))))));
  }
  EXPECT_LT(worst, 1e-6) << "a window's rows differ from the band's channels they hold";

  spip::sim::ArrayDescription elsewhere = oskar_small_array();
  elsewhere.dec_rad = 61.0 * M_PI / 180.0;
  const std::string second = scratch("second.ms"), two_fields = scratch("two_fields.ms");
  spip::sim::simulate_from_array(elsewhere, second, sky, {});
  fs::copy(oskar_ms, two_fields, fs::copy_options::recursive);
  spip::test::append_as_field(two_fields, second);
  const std::string both = scratch("both.ms");
  spip::sim::simulate_from_template(two_fields, both, sky, {});
  const cc::Array<cc::Complex> joined = column_data(both), alone = column_data(second);
  const long first_of_second = joined.shape()(2) - alone.shape()(2);
  double worst_field = 0;
  for (long r = 0; r < alone.shape()(2); ++r)
    for (long c = 0; c < alone.shape()(1); ++c)
      for (int k = 0; k < 4; ++k)
        worst_field = std::max(worst_field, static_cast<double>(std::abs(
                                                joined(cc::IPosition(3, k, c, first_of_second + r)) -
                                                alone(cc::IPosition(3, k, c, r)))));
  EXPECT_LT(worst_field, 1e-5) << "the second field's rows were not predicted about its centre";
}

// What the template held that is not the simulated sky goes: its WEIGHT_SPECTRUM (which
// readers take before WEIGHT) says the simulated noise, CORRECTED_DATA and MODEL_DATA
// (which imagers take before DATA) are removed, and no row stays flagged whole.
TEST(Simulator, TemplateModeLeavesNoneOfTheTemplatesWeightsOrCalibratedData) {
  const std::string calibrated = scratch("calibrated.ms");
  fs::copy(data_dir + "/real/mwa_1102865728_small.ms", calibrated, fs::copy_options::recursive);
  {
    cc::Table table(calibrated, cc::Table::Update);
    table.addColumn(cc::ArrayColumnDesc<cc::Complex>("CORRECTED_DATA", 2));
    const cc::ArrayColumn<cc::Complex> data(table, "DATA");
    cc::ArrayColumn<cc::Complex> corrected(table, "CORRECTED_DATA");
    for (cc::rownr_t r = 0; r < table.nrow(); ++r) corrected.put(r, data(r));
    cc::ScalarColumn<bool>(table, "FLAG_ROW").put(0, true);
  }
  Corruption noisy;
  noisy.noise_sigma_jy = 0.5;
  const std::string out = scratch("from_calibrated.ms");
  spip::sim::simulate_from_template(calibrated, out, spip::sim::read_sky_model(oskar_sky), noisy);
  const cc::Table table(out);
  EXPECT_FALSE(table.tableDesc().isColumn("CORRECTED_DATA"));
  const cc::Array<float> weights = cc::ArrayColumn<float>(table, "WEIGHT_SPECTRUM").getColumn();
  EXPECT_EQ(cc::min(weights), 4.0f);
  EXPECT_EQ(cc::max(weights), 4.0f);
  EXPECT_FALSE(cc::anyEQ(cc::ScalarColumn<bool>(table, "FLAG_ROW").getColumn(), true));
}

// However a simulation fails, no partial MS is left; --out replaces an MS but never
// another folder, and never the template it reads.
TEST(Simulator, AFailedSimulationLeavesNothingAndReplacesOnlyMeasurementSets) {
  const SkyModel sky = spip::sim::read_sky_model(oskar_sky);
  Corruption outside;
  outside.flag_channels = {40};
  const std::string out = scratch("failed.ms");
  EXPECT_THROW(spip::sim::simulate_from_template(oskar_ms, out, sky, outside), spip::InputError);
  EXPECT_FALSE(fs::exists(out + ".partial"));
  EXPECT_FALSE(fs::exists(out));

  const std::string notes = scratch("notes");
  fs::create_directories(notes);
  std::ofstream(notes + "/keep.txt") << "mine";
  EXPECT_THROW(spip::sim::simulate_from_template(oskar_ms, notes, sky, {}), spip::InputError);
  EXPECT_TRUE(fs::exists(notes + "/keep.txt"));
  EXPECT_THROW(spip::sim::simulate_from_template(oskar_ms, oskar_ms, sky, {}), spip::InputError);
  const std::string copy = scratch("template_copy.ms");
  fs::copy(oskar_ms, copy, fs::copy_options::recursive);
  EXPECT_THROW(spip::sim::simulate_from_template(copy, copy + "/SOURCE", sky, {}), spip::InputError);
  EXPECT_FALSE(fs::exists(copy + "/SOURCE/table.f0") && fs::exists(copy + "/SOURCE/ANTENNA"))
      << "a subtable of the template was replaced by an MS";

  // The options' values out of range: usage errors (exit 2).
  spip::sim::ArrayDescription array = oskar_small_array();
  array.freq_start_hz = 0;
  EXPECT_THROW(spip::sim::simulate_from_array(array, out, sky, {}), spip::ConfigError);
  array = oskar_small_array();
  array.dump_s = 0;
  EXPECT_THROW(spip::sim::simulate_from_array(array, out, sky, {}), spip::ConfigError);
  EXPECT_FALSE(fs::exists(out));
}

// OSKAR's layout.txt may give each station's height: a station 100 m up moves its
// baselines' UVW by the rotated height difference, which the stations' ITRF positions
// must show.
TEST(Simulator, ALayoutsThirdColumnIsTheStationsHeight) {
  const std::string flat = scratch("flat.tm"), raised = scratch("raised.tm");
  for (const std::string& dir : {flat, raised}) {
    fs::create_directories(dir);
    std::ofstream(dir + "/position.txt") << "116.67 -26.70 377\n";
  }
  std::ofstream(flat + "/layout.txt") << "0,0\n100,0\n0,100\n";
  std::ofstream(raised + "/layout.txt") << "0,0,0\n100,0,100\n0,100,0\n";
  spip::sim::ArrayDescription a = oskar_small_array(), b = oskar_small_array();
  spip::sim::read_oskar_telescope(flat, a);
  spip::sim::read_oskar_telescope(raised, b);
  EXPECT_EQ(b.station_enu_m[1][2], 100.0);
  for (spip::sim::ArrayDescription* array : {&a, &b}) {
    array->num_channels = 1;
    array->num_times = 1;
  }
  const SkyModel sky = spip::sim::read_sky_model(oskar_sky);
  spip::sim::simulate_from_array(a, scratch("flat.ms"), sky, {});
  spip::sim::simulate_from_array(b, scratch("raised.ms"), sky, {});
  const cc::Matrix<double> pa = cc::ArrayColumn<double>(cc::Table(scratch("flat.ms") + "/ANTENNA"), "POSITION").getColumn();
  const cc::Matrix<double> pb = cc::ArrayColumn<double>(cc::Table(scratch("raised.ms") + "/ANTENNA"), "POSITION").getColumn();
  // Station 1 is 100 m further from the Earth's centre; the others are where they were.
  const auto radius = [](const cc::Matrix<double>& p, int s) { return std::hypot(p(0, s), p(1, s), p(2, s)); };
  EXPECT_NEAR(radius(pb, 1) - radius(pa, 1), 100.0, 0.01);
  EXPECT_NEAR(radius(pb, 2) - radius(pa, 2), 0.0, 1e-6);
}

// Polarisation that no Faraday depth describes is refused: Q and U with I = 0 (kept
// as a fraction of I), and a RotationMeasure for Q and U without the frequency they are
// given at (which OSKAR would leave unrotated). OSKAR's space-separated rows are read.
TEST(SkyModel, RefusesPolarisationWithoutItsReferenceAndReadsSpaceSeparatedRows) {
  const std::string path = scratch("pol_sky.txt");
  const auto refuses = [&](const std::string& row, const std::string& says) {
    std::ofstream(path) << "Format = RaD, DecD, I, Q, U, V, ReferenceFrequency, SpectralIndex, RotationMeasure\n" << row;
    try {
      spip::sim::read_sky_model(path);
      ADD_FAILURE() << "accepted: " << row;
    } catch (const spip::InputError& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  refuses("0, 60, 0, 0.5, 0, 0, 1e8, 0, 0\n", "need I other than 0");
  refuses("0, 60, 1, 0.5, 0, 0, 0, 0, 20\n", "needs the ReferenceFrequency");
  refuses("0, 60, nan, 0, 0, 0, 0, 0, 0\n", "not a finite number");
  // Unpolarised rows keep OSKAR's meaning: a pure Stokes V source (Q and U 0 with I 0),
  // and an RM without a reference frequency that has nothing to rotate.
  std::ofstream(path) << "0 60 0 0 0 1\n0 60 1 0 0 0 0 0 50\n";
  const SkyModel unpolarised = spip::sim::read_sky_model(path);
  ASSERT_EQ(unpolarised.components.size(), 2u);
  EXPECT_EQ(unpolarised.components[0].pol_frac, 0.0);
  EXPECT_EQ(unpolarised.components[0].stokes_v(1e8), 1.0);
  EXPECT_EQ(unpolarised.components[1].pol_frac, 0.0);
  std::ofstream(path) << "0 60 2 0.5 0 0 1e8 -0.7 20\n";
  const SkyModel sky = spip::sim::read_sky_model(path);
  ASSERT_EQ(sky.components.size(), 1u);
  EXPECT_DOUBLE_EQ(sky.components[0].i0_jy, 2.0);
  EXPECT_DOUBLE_EQ(sky.components[0].spectral_index, -0.7);
  EXPECT_NEAR(std::abs(sky.components[0].linear_pol(1e8)), 0.5, 1e-12);
}
