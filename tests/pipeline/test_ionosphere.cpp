// Ionospheric Faraday rotation end to end: spip-simulate rotates a source of RM +20 by an
// ionospheric RM that drifts from 0.5 to 2.5 rad/m^2 over the sample's 4 hours; spip
// with the same table (faraday.ionosphere) recovers RM +20 and the full PI. Without it,
// each channel adds angles that turned by 2 rad/m^2 lambda^2 (8 to 12 rad) over the
// night: the source is depolarised to the peak of the FDF of the time-averaged
// polarisation, computed here directly, and its peak leaves +20.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <numbers>
#include <vector>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>

#include "spip/error.hpp"
#include "spip/fits/fits_image.hpp"
#include "spip/ms/ionosphere.hpp"
#include "spip/ms/ms_reader.hpp"
#include "scratch.hpp"

namespace fs = std::filesystem;

namespace {

const std::string data_dir = SPIP_TEST_DATA;
constexpr double start_mjd_s = 60754.0 * 86400;  // 2025-03-20 00:00 UTC, the sample's start

struct Peak {
  double phi = 0, pi = 0;
};

class Ionosphere : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = spip::test::scratch_dir().string();
    std::ofstream(dir_ + "/rm.txt") << "# time [MJD s]  RM_ion [rad/m^2]\n"
                                    << std::setprecision(12) << start_mjd_s << " 0.5\n"
                                    << start_mjd_s + 4 * 3600 << " 2.5\n";
    std::ofstream(dir_ + "/sky.txt")
        << "Format = Name, RaD, DecD, I, Q, U, V, ReferenceFrequency, SpectralIndex, RotationMeasure, "
           "PolarizedFraction, PolarizationAngle, MajorAxis, MinorAxis, Orientation\n"
        << "\"rm20\", 0.0, 60.0, 1.0, , , 0.0, 144e6, 0, 20.0, 0.3, 30.0, , , \n";
    const std::string simulate = std::string(SPIP_SIMULATE_BIN) + " --template " + data_dir +
                                 "/oskar_small.ms --sky " + dir_ + "/sky.txt --ionosphere " + dir_ + "/rm.txt --out " +
                                 dir_ + "/rotated.ms > " + dir_ + "/sim.log 2>&1";
    status_ = std::system(simulate.c_str());
    if (status_ == 0) corrected_ = run("corrected", " --faraday.ionosphere " + dir_ + "/rm.txt");
    if (status_ == 0) uncorrected_ = run("uncorrected", "");
  }

  static Peak run(const std::string& name, const std::string& extra) {
    const std::string command = std::string(SPIP_MPIEXEC) + " 2 " + SPIP_BIN + " --config " + SPIP_DEMO_CONFIG +
                                " --input.ms " + dir_ + "/rotated.ms --output.dir " + dir_ + "/" + name +
                                " --image.size 128 --faraday.cubes none --parallel.threads 1" + extra + " > " + dir_ +
                                "/" + name + ".log 2>&1";
    if (std::system(command.c_str()) != 0) {
      status_ = -1;
      return {};
    }
    const std::size_t centre = 64 * 128 + 64;
    return {spip::fits::read_image(dir_ + "/" + name + "/demo-peak-phi.fits").data[centre],
            spip::fits::read_image(dir_ + "/" + name + "/demo-peak-pi.fits").data[centre]};
  }

  static std::string dir_;
  static int status_;
  static Peak corrected_, uncorrected_;
};
std::string Ionosphere::dir_;
int Ionosphere::status_ = -1;
Peak Ionosphere::corrected_, Ionosphere::uncorrected_;

}  // namespace

TEST(IonosphereTable, InterpolatesLinearlyAndRefusesTimesOutsideIt) {
  const spip::ms::IonosphereTable table("t", {100.0, 200.0, 400.0}, {1.0, 3.0, 2.0});
  EXPECT_DOUBLE_EQ(table.rm_at(150.0), 2.0);
  EXPECT_DOUBLE_EQ(table.rm_at(300.0), 2.5);
  EXPECT_DOUBLE_EQ(table.rm_at(400.0), 2.0);
  EXPECT_THROW(table.rm_at(99.0), spip::InputError);
  EXPECT_THROW(table.rm_at(401.0), spip::InputError);
}

TEST(IonosphereTable, RotationTurnsTheAngleAndBackAgain) {
  // Q + iU = p exp(2i chi) for each of Q's and U's visibility parts.
  std::complex<float> q(0.3f * std::cos(0.4f), 0.1f), u(0.3f * std::sin(0.4f), -0.2f);
  const std::complex<float> q0 = q, u0 = u;
  spip::ms::rotate_linear_polarisation(q, u, 0.25);
  EXPECT_NEAR(std::atan2(u.real(), q.real()), 0.4 + 0.5, 1e-6);  // chi turns by 0.25: 2 chi by 0.5
  spip::ms::rotate_linear_polarisation(q, u, -0.25);
  EXPECT_NEAR(std::abs(q - q0), 0.0, 1e-6);
  EXPECT_NEAR(std::abs(u - u0), 0.0, 1e-6);
}

// Derotating a block: a sample whose Q or U is flagged loses both (each rotated value
// needs the two), and unequal weights are shared as the rotation shares the variances.
TEST(IonosphereTable, DerotationFlagsQAndUTogetherAndSharesTheirWeights) {
  spip::ms::VisBlock block;
  block.chan_begin = 0;
  block.chan_end = 1;
  block.freq_hz = {299792458.0};  // lambda^2 = 1 m^2
  block.uvw_m = {10, 0, 0, 20, 0, 0};
  block.time_mjd_s = {150, 150};
  block.vis.assign(8, {0.5f, 0.25f});
  block.weight = {1, 1, 4, 1, 1, 0, 4, 1};  // row 0: Q weight 1, U 4; row 1: Q flagged
  const spip::ms::IonosphereTable table("t", {100.0, 200.0}, {0.3, 0.3});  // angle -0.3: 2a = -0.6
  spip::ms::derotate(block, table);
  const double c2 = std::pow(std::cos(0.6), 2), s2 = 1 - c2;
  EXPECT_NEAR(block.weight[1], 1 / (c2 / 1 + s2 / 4), 1e-6);
  EXPECT_NEAR(block.weight[2], 1 / (s2 / 1 + c2 / 4), 1e-6);
  EXPECT_EQ(block.weight[0], 1.0f);  // I and V are not turned
  const std::complex<double> v(0.5, 0.25);
  const double c = std::cos(-0.6), s = std::sin(-0.6);
  EXPECT_NEAR(std::abs(std::complex<double>(block.vis[1]) - (c - s) * v), 0.0, 1e-6);  // Q' = Q cos 2a - U sin 2a
  EXPECT_NEAR(std::abs(std::complex<double>(block.vis[2]) - (s + c) * v), 0.0, 1e-6);  // U' = Q sin 2a + U cos 2a
  EXPECT_EQ(block.weight[5], 0.0f);
  EXPECT_EQ(block.weight[6], 0.0f);
  EXPECT_EQ(block.vis[6], std::complex<float>());
  EXPECT_EQ(block.weight[4], 1.0f);
}

TEST_F(Ionosphere, CorrectionRecoversTheRmAndThePolarisedIntensity) {
  ASSERT_EQ(status_, 0) << "see " << dir_;
  std::cout << "[ measured ] corrected: phi " << corrected_.phi << ", PI " << corrected_.pi << "; uncorrected: phi "
            << uncorrected_.phi << ", PI " << uncorrected_.pi << "\n";
  EXPECT_NEAR(corrected_.phi, 20.0, 0.05);
  EXPECT_NEAR(corrected_.pi, 0.3, 0.02 * 0.3);
  // Q + iU of each channel averaged over the 36 dumps (midpoints 200 + 400 k s), then the
  // FDF's peak on a fine grid by a direct sum.
  const double c = 299792458.0;
  std::vector<double> lambda_sq;
  std::vector<std::complex<double>> p;
  double lambda0_sq = 0;
  for (int ch = 0; ch < 40; ++ch) {
    lambda_sq.push_back(std::pow(c / (120.6e6 + 1.2e6 * ch), 2));
    lambda0_sq += lambda_sq.back() / 40;
    std::complex<double> sum = 0;
    for (int k = 0; k < 36; ++k) {
      const double rm_ion = 0.5 + 2.0 * (200 + 400 * k) / (4 * 3600.0);
      sum += 0.3 * std::polar(1.0, 2 * (30 * std::numbers::pi / 180 + (20 + rm_ion) * lambda_sq.back())) / 36.0;
    }
    p.push_back(sum);
  }
  double depolarised = 0;
  for (double phi = -60; phi <= 60; phi += 0.01) {
    std::complex<double> f = 0;
    for (int ch = 0; ch < 40; ++ch) f += p[ch] * std::polar(1.0, -2 * phi * (lambda_sq[ch] - lambda0_sq)) / 40.0;
    depolarised = std::max(depolarised, std::abs(f));
  }
  std::cout << "[ measured ] uncorrected PI " << uncorrected_.pi << ", predicted FDF peak " << depolarised << "\n";
  EXPECT_NEAR(uncorrected_.pi, depolarised, 0.1 * depolarised);
  EXPECT_LT(depolarised, 0.1 * 0.3);
  EXPECT_GT(std::abs(uncorrected_.phi - 20.0), 0.25);
}
