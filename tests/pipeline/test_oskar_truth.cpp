// The demo run (2 ranks) on oskar_small.ms against OSKAR's truth: restored I, Q, U and
// V at the four sources within 1 % or 2 mJy in every channel, residuals below 1 % of
// the peak, sources where the truth puts them, and the cubes' WCS and beam keywords.
// Built twice: as is, and with SPIP_TRUTH_ARGS (multiscale CLEAN) added to the run.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <numbers>
#include <numeric>

#include <nlohmann/json.hpp>

#include "spip/fits/fits_image.hpp"
#include "spip/fits/fits_table.hpp"
#include "spip/sim/sky_model.hpp"
#include "scratch.hpp"

namespace fs = std::filesystem;

namespace {

const std::string data_dir = SPIP_TEST_DATA;
#ifndef SPIP_TRUTH_ARGS
#define SPIP_TRUTH_ARGS ""
#endif
constexpr int size = 512;
constexpr double cell = 20.0 / 206264.80624709636;
constexpr double speed_of_light = 299792458.0;

class OskarTruth : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    out_ = spip::test::scratch_path("products").string();
    const std::string command = std::string(SPIP_MPIEXEC) + " 2 " + SPIP_BIN + " --config " + SPIP_DEMO_CONFIG +
                                " --input.ms " + data_dir + "/oskar_small.ms --output.dir " + out_ +
                                " --parallel.threads 1 " + SPIP_TRUTH_ARGS + " > " + out_ + ".log 2>&1";
    status_ = std::system(command.c_str());
  }
  static std::string product(const std::string& name) { return out_ + "/demo-" + name + ".fits"; }
  static std::string out_;
  static int status_;
};
std::string OskarTruth::out_;
int OskarTruth::status_ = -1;

struct SourcePixel {
  int x, y;
};

SourcePixel pixel_of(const spip::sim::Component& c) {
  const auto lmn = spip::sim::direction_cosines(c.ra_rad, c.dec_rad, 0.0, std::numbers::pi / 3);
  return {static_cast<int>(std::lround(size / 2 - lmn.l / cell)), static_cast<int>(std::lround(size / 2 + lmn.m / cell))};
}

double truth(const spip::sim::Component& c, int stokes, double freq) {
  switch (stokes) {
    case 0: return c.stokes_i(freq);
    case 1: return c.linear_pol(freq).real();
    case 2: return c.linear_pol(freq).imag();
    default: return c.stokes_v(freq);
  }
}

}  // namespace

TEST_F(OskarTruth, RunSucceeds) { ASSERT_EQ(status_, 0) << "see " << out_ << ".log"; }

// qa.json says where each channel's iterations went: over multiscale's scales, 0 first,
// when multiscale CLEAN ran, and nowhere otherwise; so this build is known to test the
// CLEAN it names.
TEST_F(OskarTruth, QaRecordsTheIterationsPerScale) {
  ASSERT_EQ(status_, 0);
#ifdef SPIP_TRUTH_MULTISCALE
  constexpr bool multiscale = true;
#else
  constexpr bool multiscale = false;
#endif
  std::ifstream in(out_ + "/demo-qa.json");
  const nlohmann::json qa = nlohmann::json::parse(in);
  ASSERT_EQ(qa.at("channels").size(), 40u);
  for (const nlohmann::json& channel : qa.at("channels")) {
    const auto scales = channel.at("scales_px").get<std::vector<double>>();
    const auto counts = channel.at("scale_iterations").get<std::vector<int>>();
    ASSERT_EQ(scales.size(), counts.size());
    if (!multiscale) {
      EXPECT_TRUE(scales.empty());
      continue;
    }
    ASSERT_GE(scales.size(), 2u) << "channel " << channel.at("channel");
    EXPECT_EQ(scales.front(), 0.0);
    EXPECT_EQ(std::accumulate(counts.begin(), counts.end(), 0), channel.at("iterations").get<int>());
  }
}

TEST_F(OskarTruth, RestoredStokesMatchTheTruthInEveryChannel) {
  ASSERT_EQ(status_, 0);
  const auto sky = spip::sim::read_sky_model(data_dir + "/oskar_small.sky.txt");
  double worst = 0;
  for (int s = 0; s < 4; ++s) {
    const spip::fits::FitsImage image = spip::fits::read_image(product(std::string("image-") + "IQUV"[s]));
    ASSERT_EQ(image.shape, (std::vector<long>{size, size, 40, 1}));
    for (int ch = 0; ch < 40; ++ch) {
      const double freq = image.number("CRVAL3") + ch * image.number("CDELT3");
      for (const auto& c : sky.components) {
        const SourcePixel p = pixel_of(c);
        const double got = image.data[(static_cast<std::size_t>(ch) * size + p.y) * size + p.x];
        const double want = truth(c, s, freq);
        const double tolerance = std::max(0.01 * std::abs(want), 0.002);
        EXPECT_NEAR(got, want, tolerance) << "Stokes " << "IQUV"[s] << " channel " << ch << " " << c.name;
        worst = std::max(worst, std::abs(got - want));
      }
    }
  }
  std::cout << "[ measured ] largest |restored - truth| over 4 Stokes x 40 channels x 4 sources: " << worst << " Jy\n";
}

TEST_F(OskarTruth, ResidualsAreBelowOnePercentOfThePeak) {
  ASSERT_EQ(status_, 0);
  const spip::fits::FitsImage peak_image = spip::fits::read_image(product("image-I"));
  for (int s = 0; s < 4; ++s) {
    const spip::fits::FitsImage residual = spip::fits::read_image(product(std::string("residual-") + "IQUV"[s]));
    for (int ch = 0; ch < 40; ++ch) {
      const std::size_t plane = static_cast<std::size_t>(size) * size;
      float peak = 0, largest = 0;
      for (std::size_t i = 0; i < plane; ++i) {
        peak = std::max(peak, peak_image.data[ch * plane + i]);
        largest = std::max(largest, std::abs(residual.data[ch * plane + i]));
      }
      EXPECT_LT(largest, 0.01 * peak) << "Stokes " << "IQUV"[s] << " channel " << ch;
    }
  }
}

TEST_F(OskarTruth, SourcesAreWhereTheTruthPutsThemNotMirrored) {
  ASSERT_EQ(status_, 0);
  const spip::fits::FitsImage dirty = spip::fits::read_image(product("dirty-I"));
  const auto sky = spip::sim::read_sky_model(data_dir + "/oskar_small.sky.txt");
  for (const auto& c : sky.components) {
    const SourcePixel p = pixel_of(c);
    // The brightest pixel within 3 pixels is the source pixel itself (channel 0).
    float best = -1;
    SourcePixel at{0, 0};
    for (int y = p.y - 3; y <= p.y + 3; ++y)
      for (int x = p.x - 3; x <= p.x + 3; ++x)
        if (dirty.data[static_cast<std::size_t>(y) * size + x] > best) {
          best = dirty.data[static_cast<std::size_t>(y) * size + x];
          at = {x, y};
        }
    EXPECT_EQ(at.x, p.x) << c.name;
    EXPECT_EQ(at.y, p.y) << c.name;
  }
}

TEST_F(OskarTruth, CubesCarryWcsBeamAndUnits) {
  ASSERT_EQ(status_, 0);
  const spip::fits::FitsImage image = spip::fits::read_image(product("image-Q"));
  EXPECT_EQ(image.text("CTYPE1"), "RA---SIN");
  EXPECT_EQ(image.text("CTYPE3"), "FREQ");
  EXPECT_DOUBLE_EQ(image.number("CRVAL3"), 120.6e6);
  EXPECT_DOUBLE_EQ(image.number("CDELT3"), 1.2e6);
  EXPECT_EQ(image.text("CTYPE4"), "STOKES");
  EXPECT_DOUBLE_EQ(image.number("CRVAL4"), 2.0);
  EXPECT_NEAR(image.number("CRVAL2"), 60.0, 1e-9);
  EXPECT_EQ(image.text("BUNIT"), "Jy/beam");
  // The common beam is the largest fitted one, which holds the others: the lowest
  // channel's, a few arcmin.
  std::ifstream in(out_ + "/demo-qa.json");
  const nlohmann::json channels = nlohmann::json::parse(in).at("channels");
  const nlohmann::json& lowest = channels.front();
  double largest_major = 0;
  for (const nlohmann::json& channel : channels)
    largest_major = std::max(largest_major, channel.at("beam_major_arcsec").get<double>());
  EXPECT_EQ(lowest.at("beam_major_arcsec").get<double>(), largest_major);
  EXPECT_NEAR(image.number("BMAJ") * 3600, largest_major, 1e-6);
  EXPECT_NEAR(image.number("BMIN") * 3600, lowest.at("beam_minor_arcsec").get<double>(), 1e-6);
  EXPECT_NEAR(image.number("BPA"), lowest.at("beam_pa_deg").get<double>(), 1e-6);
  EXPECT_GT(largest_major / 60, 2.0);
  EXPECT_LT(largest_major / 60, 5.0);
  EXPECT_EQ(spip::fits::read_image(product("model-I")).text("BUNIT"), "Jy/pixel");
  EXPECT_FALSE(fs::exists(product("image-Q") + ".partial"));
}

// BTYPE in casacore's image types, which CASA's imhead and CARTA show: a map of
// Faraday depth is not an intensity, and a quantity casacore has no type for has none.
TEST_F(OskarTruth, ProductsSayWhatTheirPixelsAre) {
  ASSERT_EQ(status_, 0);
  const auto btype = [&](const std::string& name) {
    const auto image = spip::fits::read_header(product(name));
    const auto it = image.keywords.find("BTYPE");
    return it == image.keywords.end() ? std::string("(none)") : image.text("BTYPE");
  };
  EXPECT_EQ(btype("image-Q"), "Intensity");
  EXPECT_EQ(btype("peak-pi"), "Intensity");
  EXPECT_EQ(btype("moment-mean-P"), "Intensity");
  EXPECT_EQ(btype("psf"), "Beam");
  EXPECT_EQ(btype("peak-phi"), "Rotation Measure");
  EXPECT_EQ(btype("stokes-i-alpha"), "Spectral Index");
  for (const char* name : {"peak-chi0", "peak-phi-err", "peak-fracpol", "fdf-m2", "moment-skew-Q", "sigma-add"})
    EXPECT_EQ(btype(name), "(none)") << name;
}

TEST_F(OskarTruth, PeakMapsRecoverEachSourcesRotationMeasureAngleAndIntensity) {
  ASSERT_EQ(status_, 0);
  const auto sky = spip::sim::read_sky_model(data_dir + "/oskar_small.sky.txt");
  const auto phi = spip::fits::read_image(product("peak-phi"));
  const auto pi = spip::fits::read_image(product("peak-pi"));
  const auto chi0 = spip::fits::read_image(product("peak-chi0"));
  const auto phi_err = spip::fits::read_image(product("peak-phi-err"));
  const double nu0 = speed_of_light / std::sqrt(pi.number("LAMSQ0"));
  double worst_phi = 0, worst_chi0_deg = 0, worst_pi_fraction = 0;
  for (const auto& c : sky.components) {
    if (c.pol_frac == 0) continue;
    const SourcePixel p = pixel_of(c);
    const std::size_t at = static_cast<std::size_t>(p.y) * size + p.x;
    // The demo divides Q and U by each pixel's I power law (faraday.fractional): the FDF
    // peak of a Faraday-thin source is then its polarised flux at nu0.
    const double want_pi = c.pol_frac * c.stokes_i(nu0);
    EXPECT_NEAR(phi.data[at], c.rm_rad_m2, 0.05) << c.name;
    EXPECT_NEAR(pi.data[at], want_pi, 1e-3 * want_pi) << c.name;
    EXPECT_NEAR(chi0.data[at], c.chi0_rad, 1.0 * std::numbers::pi / 180) << c.name;
    EXPECT_GT(phi_err.data[at], 0.0f) << c.name;
    EXPECT_LT(phi_err.data[at], 0.05f) << c.name;
    worst_phi = std::max(worst_phi, std::abs(phi.data[at] - c.rm_rad_m2));
    worst_chi0_deg = std::max(worst_chi0_deg, std::abs(chi0.data[at] - c.chi0_rad) * 180 / std::numbers::pi);
    worst_pi_fraction = std::max(worst_pi_fraction, std::abs(pi.data[at] - want_pi) / want_pi);
  }
  std::cout << "[ measured ] peak maps at the 3 polarised sources: max |phi - RM| = " << worst_phi
            << " rad/m^2, max |chi0 error| = " << worst_chi0_deg << " deg, max |PI / p I(nu0) - 1| = "
            << worst_pi_fraction << "\n";
}

// Each polarised source once, where the truth puts it, with the peak maps' tolerances;
// the unpolarised S1 (2 Jy, the brightest in I) not at all; the CSV says the same.
TEST_F(OskarTruth, CatalogueListsEachPolarisedSourceOnce) {
  ASSERT_EQ(status_, 0);
  const auto sky = spip::sim::read_sky_model(data_dir + "/oskar_small.sky.txt");
  const spip::fits::Table table = spip::fits::read_table(out_ + "/demo-catalogue.fits", {"THRESHLD"});
  EXPECT_EQ(table.keys.at(0).value, 8.0);
  const auto& x = table.values<double>("x_pix");
  const auto& y = table.values<double>("y_pix");
  const auto& ra = table.values<double>("ra");
  const auto& dec = table.values<double>("dec");
  const auto& phi = table.values<double>("phi");
  const auto& pi = table.values<double>("pi");
  const auto& snr = table.values<double>("snr");
  const auto& frac_pol = table.values<double>("frac_pol");
  const auto& complex = table.values<std::int32_t>("faraday_complex");
  const auto& sigma_add = table.values<double>("sigma_add");
  const auto& complex_sigma_add = table.values<std::int32_t>("complex_sigma_add");
  const double nu0 = speed_of_light / std::sqrt(spip::fits::read_image(product("peak-pi")).number("LAMSQ0"));
  ASSERT_EQ(x.size(), 3u) << "rows of demo-catalogue.fits";
  for (const auto& c : sky.components) {
    const SourcePixel p = pixel_of(c);
    int matches = 0;
    for (std::size_t r = 0; r < x.size(); ++r) {
      if (std::hypot(x[r] - p.x, y[r] - p.y) > 1.0) continue;
      ++matches;
      const double want_pi = c.pol_frac * c.stokes_i(nu0);
      EXPECT_NEAR(phi[r], c.rm_rad_m2, 0.05) << c.name;
      EXPECT_NEAR(pi[r], want_pi, 1e-3 * want_pi) << c.name;
      EXPECT_NEAR(frac_pol[r], c.pol_frac, 1e-3 * c.pol_frac) << c.name;
      EXPECT_EQ(complex[r], 0) << c.name << " is Faraday-thin";
      EXPECT_EQ(complex_sigma_add[r], 0) << c.name << " is Faraday-thin, but sigma_add is " << sigma_add[r];
      std::cout << "[ measured ] " << c.name << ": sigma_add " << sigma_add[r] << "\n";
      EXPECT_NEAR(std::remainder(ra[r] - c.ra_rad * 180 / std::numbers::pi, 360.0), 0.0,
                  20.0 / 3600 / std::cos(c.dec_rad)) << c.name;
      EXPECT_NEAR(dec[r], c.dec_rad * 180 / std::numbers::pi, 20.0 / 3600) << c.name;
      EXPECT_GT(snr[r], 8.0) << c.name;
    }
    EXPECT_EQ(matches, c.pol_frac > 0 ? 1 : 0) << c.name;
  }
  std::ifstream csv(out_ + "/demo-catalogue.csv");
  std::string line;
  int rows = -1;  // the header row
  while (std::getline(csv, line)) ++rows;
  EXPECT_EQ(rows, 3);
}

// The RMTable says when the sample was observed, from its 36 dumps of 400 s from MJD
// 60754: epoch the median of their middles, 2 h in; int_time 4 h; obs_interval 4 h in
// days. The standard's columns are single precision: MJD 60754 is held to 1/256 d.
TEST_F(OskarTruth, RmTableGivesStokesVAndWhenTheSampleWasObserved) {
  ASSERT_EQ(status_, 0);
  const spip::fits::Table table = spip::fits::read_table(out_ + "/demo-rmtable.fits");
  // Stokes V too, each source's mean over the 40 channels: S3's -0.024 Jy at 144 MHz on
  // its spectral index, the others' 0, within the catalogue's noise.
  const auto sky = spip::sim::read_sky_model(data_dir + "/oskar_small.sky.txt");
  const auto& x = table.values<double>("x_pix");
  const auto& y = table.values<double>("y_pix");
  const auto& stokes_v = table.values<double>("stokesV");
  const auto& stokes_v_err = table.values<double>("stokesV_err");
  // spip's own catalogue lists the same Stokes V, row for row.
  const spip::fits::Table catalogue = spip::fits::read_table(out_ + "/demo-catalogue.fits");
  ASSERT_EQ(catalogue.values<double>("stokes_v").size(), stokes_v.size());
  for (std::size_t r = 0; r < stokes_v.size(); ++r)
    EXPECT_FLOAT_EQ(static_cast<float>(catalogue.values<double>("stokes_v")[r]), static_cast<float>(stokes_v[r])) << r;
  int listed = 0;
  for (const auto& c : sky.components) {
    const SourcePixel p = pixel_of(c);
    double mean_v = 0;
    for (int k = 0; k < 40; ++k) mean_v += c.stokes_v(120.6e6 + 1.2e6 * k) / 40;
    for (std::size_t r = 0; r < x.size(); ++r)
      if (std::hypot(x[r] - p.x, y[r] - p.y) <= 1.0) {
        ++listed;
        EXPECT_NEAR(stokes_v[r], mean_v, 3 * stokes_v_err[r] + 1e-3 * std::abs(mean_v)) << c.name;
        EXPECT_GT(stokes_v_err[r], 0) << c.name;
      }
  }
  EXPECT_EQ(listed, 3);
  const auto& epoch = table.values<double>("epoch");
  const auto& int_time = table.values<double>("int_time");
  const auto& interval = table.values<double>("obs_interval");
  ASSERT_EQ(epoch.size(), 3u);
  for (std::size_t r = 0; r < epoch.size(); ++r) {
    EXPECT_NEAR(epoch[r], 60754.0 + 7200.0 / 86400, 1.0 / 256) << r;
    EXPECT_EQ(int_time[r], 14400.0) << r;
    EXPECT_EQ(interval[r], static_cast<float>(14400.0 / 86400)) << r;
  }
}

// faraday.fractional (on in the demo) on the sample: Q and U divided by each pixel's I
// power law make every source's FDF RMSF-shaped, so RM-CLEAN converges before its 1000
// iterations with its components at one depth, and the peak is PI at nu0 = c / lambda0 to
// 0.1 %. A second run without it shows what it fixes: the components of the
// steep-spectrum S4 spread over several RMSF widths.
TEST_F(OskarTruth, FractionalPolarisationRecoversPiAtTheReferenceFrequency) {
  ASSERT_EQ(status_, 0);
  const std::string out = out_ + "-plain";
  const std::string command = std::string(SPIP_MPIEXEC) + " 2 " + SPIP_BIN + " --config " + SPIP_DEMO_CONFIG +
                              " --input.ms " + data_dir + "/oskar_small.ms --output.dir " + out +
                              " --faraday.fractional false --faraday.cubes none --parallel.threads 1 > " + out +
                              ".log 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0) << "see " << out << ".log";
  const auto sky = spip::sim::read_sky_model(data_dir + "/oskar_small.sky.txt");
  const auto pi = spip::fits::read_image(product("peak-pi"));
  const auto fracpol = spip::fits::read_image(product("peak-fracpol"));
  const auto iterations = spip::fits::read_image(product("rmclean-iterations"));
  const auto m2 = spip::fits::read_image(product("fdf-m2"));
  const auto plain_m2 = spip::fits::read_image(out + "/demo-fdf-m2.fits");
  EXPECT_FALSE(fs::exists(out + "/demo-peak-fracpol.fits"));
  const double nu0 = speed_of_light / std::sqrt(pi.number("LAMSQ0"));
  double worst = 0;
  for (const auto& c : sky.components) {
    if (c.pol_frac == 0) continue;
    const SourcePixel p = pixel_of(c);
    const std::size_t at = static_cast<std::size_t>(p.y) * size + p.x;
    const double want = c.pol_frac * c.stokes_i(nu0);
    EXPECT_NEAR(pi.data[at], want, 1e-3 * want) << c.name;
    EXPECT_NEAR(fracpol.data[at], c.pol_frac, 1e-3 * c.pol_frac) << c.name;
    EXPECT_LT(iterations.data[at], 1000.0f) << c.name;
    EXPECT_LT(m2.data[at], 0.5f) << c.name;
    if (c.spectral_index == -2.0) {
      EXPECT_GT(plain_m2.data[at], 2.0f) << c.name << " without faraday.fractional";
    }
    worst = std::max(worst, std::abs(pi.data[at] / want - 1));
  }
  std::cout << "[ measured ] faraday.fractional: max |PI / p I(nu0) - 1| = " << worst << " at nu0 = " << nu0 / 1e6
            << " MHz\n";
  // The noise map is the same with and without it where faint Stokes I leaves no power
  // law to divide by (a corner of the field), and scaled as the spectra were elsewhere:
  // the catalogue's noise is the local one over boxes of 20 beams around each source, as
  // the plain run's within the scaling's few per cent (it was 3 times that when the
  // unfitted pixels were left out of the boxes), or the source pixel's own where that is
  // higher, and the same three sources are listed. At a source, the pixel's own is what
  // CLEAN left less the rest of the source (faraday::residual_noise): its errors, thin
  // before the spectrum is divided by its power law, less so after, so that at the steep
  // S4 (alpha = -2) it is some 2.6 times the plain run's (printed), and below 4 times.
  const auto pi_err = spip::fits::read_image(product("peak-pi-err"));
  const auto plain_pi_err = spip::fits::read_image(out + "/demo-peak-pi-err.fits");
  EXPECT_TRUE(std::isnan(pi.data[0])) << "faraday.fractional blanks the faint corner";
  EXPECT_NEAR(pi_err.data[0], plain_pi_err.data[0], 1e-4 * plain_pi_err.data[0]);  // two runs: FFTW's rounding
  const spip::fits::Table table = spip::fits::read_table(out_ + "/demo-catalogue.fits");
  const spip::fits::Table plain = spip::fits::read_table(out + "/demo-catalogue.fits");
  const auto& sigma_qu = table.values<double>("sigma_qu");
  ASSERT_EQ(sigma_qu.size(), 3u);
  for (std::size_t r = 0; r < sigma_qu.size(); ++r) {
    int matches = 0;
    for (std::size_t k = 0; k < plain.values<double>("x_pix").size(); ++k) {
      if (std::hypot(plain.values<double>("x_pix")[k] - table.values<double>("x_pix")[r],
                     plain.values<double>("y_pix")[k] - table.values<double>("y_pix")[r]) > 1.0)
        continue;
      ++matches;
      const int x = static_cast<int>(std::lround(table.values<double>("x_pix")[r]));
      const int y = static_cast<int>(std::lround(table.values<double>("y_pix")[r]));
      const double own = pi_err.data[static_cast<std::size_t>(y) * static_cast<std::size_t>(pi_err.shape[0]) + static_cast<std::size_t>(x)];
      EXPECT_GE(sigma_qu[r], own * (1 - 1e-6)) << r;
      EXPECT_NEAR(std::max(plain.values<double>("sigma_qu")[k], own), sigma_qu[r], 0.03 * sigma_qu[r]) << r;
      // Counting the source's own remainder, as once, made it some 10 times the plain run's.
      std::cout << "[ measured ] row " << r << ": sigma_qu with faraday.fractional / without: "
                << sigma_qu[r] / plain.values<double>("sigma_qu")[k] << "\n";
      EXPECT_LT(sigma_qu[r], 4 * plain.values<double>("sigma_qu")[k]) << r;
    }
    EXPECT_EQ(matches, 1) << "row " << r << " of the catalogue without faraday.fractional";
  }
  fs::remove_all(out);
}

TEST_F(OskarTruth, FaradayCubesAndMomentsFollowTheirConventions) {
  ASSERT_EQ(status_, 0);
  const spip::fits::FitsImage fdf = spip::fits::read_image(product("FDF_clean_tot"));
  EXPECT_EQ(fdf.text("CTYPE3"), "FDEP");
  EXPECT_EQ(fdf.text("CUNIT3"), "rad/m^2");
  const int depths = static_cast<int>(fdf.number("NAXIS3"));
  EXPECT_NEAR(fdf.number("CRVAL3") + (depths - 1) / 2 * fdf.number("CDELT3"), 0.0, 1e-9);
  // lambda0^2: the mean of lambda^2 over the 40 uniformly weighted channels.
  double lambda0_sq = 0;
  for (int ch = 0; ch < 40; ++ch) lambda0_sq += std::pow(speed_of_light / (120.6e6 + 1.2e6 * ch), 2) / 40;
  EXPECT_NEAR(fdf.number("LAMSQ0"), lambda0_sq, 1e-9);
  // The mean-I moment at the unpolarised source is its channel-mean restored flux.
  const auto sky = spip::sim::read_sky_model(data_dir + "/oskar_small.sky.txt");
  const auto mean_i = spip::fits::read_image(product("moment-mean-I"));
  const auto std_q = spip::fits::read_image(product("moment-std-Q"));
  const SourcePixel s1 = pixel_of(sky.components[0]);
  double expected = 0;
  for (int ch = 0; ch < 40; ++ch) expected += sky.components[0].stokes_i(120.6e6 + 1.2e6 * ch) / 40;
  EXPECT_NEAR(mean_i.data[static_cast<std::size_t>(s1.y) * size + s1.x], expected, 0.01 * expected);
  // Q of the RM +20 source rotates through several turns: its std is near p I / sqrt(2).
  const SourcePixel s2 = pixel_of(sky.components[1]);
  EXPECT_NEAR(std_q.data[static_cast<std::size_t>(s2.y) * size + s2.x], 0.3 / std::sqrt(2.0), 0.03);
  EXPECT_TRUE(fs::exists(out_ + "/demo-rmsf.txt"));
}

namespace {

// Python's str.replace, as RM-Tools applies it to a whole path.
std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

}  // namespace

// RM-Tools' FDF readers (rmtools_peakfitcube's read_files, rmclean3d's read_FDF_cubes)
// are given one cube and find its real and imaginary partners and the RMSF width map by
// rewriting its name; from each of spip's six cubes they must reach the right files.
TEST_F(OskarTruth, RmToolsNameRulesFindEveryFaradayCubesPartners) {
  ASSERT_EQ(status_, 0);
  const std::string real_name = product("FDF_clean_real"), imag_name = product("FDF_clean_im");
  const auto real = spip::fits::read_image(real_name), imag = spip::fits::read_image(imag_name);
  const auto amp = spip::fits::read_image(product("FDF_clean_tot"));
  ASSERT_EQ(real.data.size(), amp.data.size());
  const std::size_t s2 = [] {
    const SourcePixel p = pixel_of(spip::sim::read_sky_model(data_dir + "/oskar_small.sky.txt").components[1]);
    return static_cast<std::size_t>(p.y) * size + p.x;
  }();
  for (std::size_t at = s2; at < amp.data.size(); at += static_cast<std::size_t>(size) * size)
    ASSERT_NEAR(std::hypot(real.data[at], imag.data[at]), amp.data[at], 1e-6 * (1 + amp.data[at]));

  const double fwhm = spip::fits::read_image(product("rmsf")).number("RMSFFWHM");
  for (const char* name : {"FDF_real_dirty", "FDF_im_dirty", "FDF_tot_dirty", "FDF_clean_real", "FDF_clean_im",
                           "FDF_clean_tot"}) {
    const std::string given = product(name);
    const std::string as_real = replace_all(replace_all(given, "_tot", "_real"), "_im", "_real");
    const std::string as_imag = replace_all(replace_all(given, "_tot", "_im"), "_real", "_im");
    std::string as_fwhm = given;
    for (const char* cube : {"FDF_tot_dirty", "FDF_real_dirty", "FDF_im_dirty", "FDF_clean_tot", "FDF_clean_real",
                             "FDF_clean_im"})
      as_fwhm = replace_all(as_fwhm, cube, "RMSF_FWHM");
    const bool clean = std::string(name).find("clean") != std::string::npos;
    EXPECT_EQ(as_real, clean ? real_name : product("FDF_real_dirty")) << name;
    EXPECT_EQ(as_imag, clean ? imag_name : product("FDF_im_dirty")) << name;
    EXPECT_TRUE(fs::exists(as_real) && fs::exists(as_imag)) << name;
    const auto width = spip::fits::read_image(as_fwhm);
    EXPECT_EQ(width.text("BUNIT"), "rad/m^2");
    ASSERT_EQ(width.data.size(), static_cast<std::size_t>(size) * size) << as_fwhm;
    EXPECT_FLOAT_EQ(width.data[s2], static_cast<float>(fwhm));
  }
}
