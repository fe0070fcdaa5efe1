// The catalogue of whole runs on skies simulated with noise (the sample's UVW and band,
// 0.5 Jy per correlation):
//  - noise alone: nothing. With 128^2 pixels of beams of ~80 pixels and 241 depths at
//    2.5 per RMSF FWHM there are ~2e4 independent FDF samples; above 8 sigma each is a
//    false detection with probability exp(-32) = 1.3e-14, so 3e-10 are expected and one
//    fails the test;
//  - a Faraday-thin and a Faraday-complex source (two thin components 30 rad/m^2 apart):
//    each found once, only the second flagged complex, by m2 and by sigma_add;
//  - a faint thin source (30 mJy polarised, 5 times the channels' noise, 32 times the
//    FDF's) that CLEAN, stopping at 3 times the noise of its joined search, leaves partly
//    in the residual: its noise is the field's, not raised by itself.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <vector>

#include "spip/fits/fits_image.hpp"
#include "spip/fits/fits_table.hpp"
#include "scratch.hpp"

namespace fs = std::filesystem;

namespace {

const std::string data_dir = SPIP_TEST_DATA;
const char* const sky_format =
    "Format = Name, RaD, DecD, I, Q, U, V, ReferenceFrequency, SpectralIndex, RotationMeasure, "
    "PolarizedFraction, PolarizationAngle, MajorAxis, MinorAxis, Orientation\n";

class CatalogueSky : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = spip::test::scratch_dir().string();
    // spip-simulate needs a component: the noise-only sky has one of zero flux.
    noise_status_ = simulate_and_run("noise", "\"nothing\", 0.0, 60.0, 0.0, , , 0.0, 144e6, 0, , , , , , \n");
    sources_status_ = simulate_and_run("sources",
                                       "\"thin\", 0.2, 60.05, 0.2, , , 0.0, 144e6, 0, 12.0, 0.25, 30.0, , , \n"
                                       "\"double_a\", 359.8, 59.9, 0.1, , , 0.0, 144e6, 0, -15.0, 0.3, 10.0, , , \n"
                                       "\"double_b\", 359.8, 59.9, 0.1, , , 0.0, 144e6, 0, 15.0, 0.3, 60.0, , , \n");
    faint_status_ = simulate_and_run("faint", "\"faint\", 0.2, 60.05, 0.06, , , 0.0, 144e6, 0, 12.0, 0.5, 30.0, , , \n");
  }

  static int simulate_and_run(const std::string& name, const std::string& components) {
    const std::string sky = dir_ + "/" + name + ".sky.txt";
    std::ofstream(sky) << sky_format << components;
    const std::string ms = dir_ + "/" + name + ".ms";
    const std::string simulate = std::string(SPIP_SIMULATE_BIN) + " --template " + data_dir +
                                 "/oskar_small.ms --sky " + sky + " --out " + ms + " --noise 0.5 --seed 7 > " + dir_ +
                                 "/" + name + "-sim.log 2>&1";
    if (std::system(simulate.c_str()) != 0) return -1;
    // Q and U as measured: faraday.fractional, on in the demo, would blank the noise-only
    // field, whose Stokes I is below its threshold, and leave nothing to test there.
    const std::string run = std::string(SPIP_MPIEXEC) + " 2 " + SPIP_BIN + " --config " + SPIP_DEMO_CONFIG +
                            " --input.ms " + ms + " --output.dir " + dir_ + "/" + name + " --output.prefix " + name +
                            " --image.size 128 --clean.niter 2000 --clean.threshold 0 --clean.auto_threshold 3"
                            " --faraday.fractional false --faraday.cubes none --parallel.threads 1 > " + dir_ + "/" +
                            name + ".log 2>&1";
    return std::system(run.c_str());
  }

  static spip::fits::Table catalogue(const std::string& name) {
    return spip::fits::read_table(dir_ + "/" + name + "/" + name + "-catalogue.fits");
  }

  static std::string dir_;
  static int noise_status_, sources_status_, faint_status_;
};
std::string CatalogueSky::dir_;
int CatalogueSky::noise_status_ = -1;
int CatalogueSky::sources_status_ = -1;
int CatalogueSky::faint_status_ = -1;

}  // namespace

TEST_F(CatalogueSky, NoiseAloneGivesNoSource) {
  ASSERT_EQ(noise_status_, 0) << "see " << dir_ << "/noise.log";
  const spip::fits::Table table = catalogue("noise");
  EXPECT_EQ(table.columns.front().rows(), 0u);
  // The noise the finder divides by is the noise that is there: the peak PI map's
  // brightest pixel in pure noise is a few sigma, not a fraction of one.
  const auto pi = spip::fits::read_image(dir_ + "/noise/noise-peak-pi.fits");
  const auto sigma = spip::fits::read_image(dir_ + "/noise/noise-peak-pi-err.fits");
  double largest = 0;
  for (std::size_t i = 0; i < pi.data.size(); ++i) largest = std::max(largest, double(pi.data[i] / sigma.data[i]));
  std::cout << "[ measured ] noise only: largest peak PI / sigma = " << largest << "\n";
  EXPECT_GT(largest, 2.5);
  EXPECT_LT(largest, 8.0);
}

TEST_F(CatalogueSky, ThinAndComplexSourcesFoundOnceAndTold) {
  ASSERT_EQ(sources_status_, 0) << "see " << dir_ << "/sources.log";
  const spip::fits::Table table = catalogue("sources");
  const auto& ra = table.values<double>("ra");
  const auto& phi = table.values<double>("phi");
  const auto& pi = table.values<double>("pi");
  const auto& m2 = table.values<double>("m2");
  const auto& complex = table.values<std::int32_t>("faraday_complex");
  const auto& sigma_add = table.values<double>("sigma_add");
  const auto& sigma_add_minus = table.values<double>("sigma_add_err_minus");
  const auto& complex_sigma_add = table.values<std::int32_t>("complex_sigma_add");
  ASSERT_EQ(ra.size(), 2u) << "rows of sources-catalogue.fits";
  for (std::size_t r = 0; r < ra.size(); ++r) {
    std::cout << "[ measured ] ra " << ra[r] << " phi " << phi[r] << " pi " << pi[r] << " m2 " << m2[r]
              << " sigma_add " << sigma_add[r] << " -" << sigma_add_minus[r] << "\n";
    const bool thin = std::abs(ra[r] - 0.2) < 0.01;
    EXPECT_TRUE(thin || std::abs(ra[r] - 359.8) < 0.01) << ra[r];
    EXPECT_EQ(complex[r], thin ? 0 : 1) << "ra " << ra[r] << ", m2 " << m2[r];
    // The channels say so too: the thin source's sigma_add is consistent with zero, the
    // two components' is significant.
    EXPECT_EQ(complex_sigma_add[r], thin ? 0 : 1) << "ra " << ra[r] << ", sigma_add " << sigma_add[r];
    if (thin) {
      EXPECT_NEAR(phi[r], 12.0, 0.1);
      EXPECT_NEAR(pi[r], 0.05, 0.005);
    } else {
      EXPECT_NEAR(std::abs(phi[r]), 15.0, 0.2);
      EXPECT_NEAR(m2[r], 15.0, 1.5);
    }
  }
  // The log counts what each test flags.
  const std::string text = spip::test::file_text(dir_ + "/sources.log");
  EXPECT_NE(text.find("catalogue: 2 polarised source(s) above"), std::string::npos) << text;
  EXPECT_NE(text.find("1 Faraday-complex by m2 and 1 by sigma_add"), std::string::npos) << text;
}

// The residual's own thin source is taken out of its pixels' noise
// (faraday::residual_noise()): before, the source's error was 1.8 times the field's FDF
// noise (1.66 against 0.91 mJy) and its signal-to-noise 17.5 instead of 31.
TEST_F(CatalogueSky, AFaintSourceLeftInTheResidualIsNotItsOwnNoise) {
  ASSERT_EQ(faint_status_, 0) << "see " << dir_ << "/faint.log";
  const spip::fits::Table table = catalogue("faint");
  ASSERT_EQ(table.columns.front().rows(), 1u) << "rows of faint-catalogue.fits";
  std::vector<float> noise = spip::fits::read_image(dir_ + "/faint/faint-peak-pi-err.fits").data;
  std::erase_if(noise, [](float v) { return !std::isfinite(v); });
  std::nth_element(noise.begin(), noise.begin() + noise.size() / 2, noise.end());
  const double field = noise[noise.size() / 2];
  const double pi = table.values<double>("pi")[0], pi_err = table.values<double>("pi_err")[0];
  std::cout << "[ measured ] faint source: pi " << pi << " pi_err " << pi_err << " field FDF noise " << field
            << " snr " << table.values<double>("snr")[0] << "\n";
  EXPECT_NEAR(pi, 0.03, 0.003);
  EXPECT_NEAR(pi_err / field, 1.0, 0.1);
}
