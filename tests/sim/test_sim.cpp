// The simulator against OSKAR: the same sky on the same template must reproduce
// OSKAR's DATA, and array mode must reproduce OSKAR's UVW.
#include <casacore/casa/Arrays/Array.h>
#include <casacore/tables/Tables/ArrayColumn.h>
#include <casacore/tables/Tables/ScalarColumn.h>
#include <casacore/tables/Tables/Table.h>
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <filesystem>
#include <fstream>

#include "spip/error.hpp"
#include "spip/sim/ms_writer.hpp"
#include "spip/sim/sky_model.hpp"
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
