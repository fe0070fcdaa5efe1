// spip on Measurement Sets from four real telescopes (data/real, converted from
// pyuvdata's test data): MWA, OVRO-LWA (correlations stored XX YY XY YX), HERA (a drift
// scan with autocorrelations) and the VLA at 36 GHz (circular feeds; WEIGHT differs from
// WEIGHT_SPECTRUM). The dirty images of each set's first and last channel must equal a
// double-precision direct DFT of the MS's own rows (tests/common/ms_dft.hpp) to 1e-4 of
// the peak, and the default pipeline (CLEAN, Faraday stage, catalogue) must complete and
// write products astropy opens with a valid WCS.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "ms_dft.hpp"
#include "parallel_hands.hpp"
#include "scratch.hpp"
#include "spip/fits/fits_image.hpp"

namespace fs = std::filesystem;

namespace {

struct RealSet {
  const char* name;  // data/real/NAME.ms
  int size;          // pixels: about four per beam at the top of the band, a field well inside the horizon
  double scale_arcsec;
};

// Pixels of about a quarter of the beam at the highest frequency (max baselines: HERA
// 39 m, OVRO-LWA 92 m, MWA 2.9 km, VLA 1.0 km); the all-sky arrays' fields stay within
// 32 degrees of the phase centre, so that n = sqrt(1 - l^2 - m^2) is well defined.
const RealSet sets[] = {
    {"mwa_1102865728_small", 128, 30.0},
    {"ovrolwa_zenith_28mhz", 64, 3600.0},
    {"hera_drift_zen2458432", 64, 3600.0},
    {"vla_j1008_36ghz", 128, 0.4},
};

void PrintTo(const RealSet& set, std::ostream* out) { *out << set.name; }

std::string ms_path(const RealSet& set) { return std::string(SPIP_TEST_DATA) + "/real/" + set.name + ".ms"; }

int run(const std::string& command, const fs::path& log) {
  const int status = std::system((command + " > " + log.string() + " 2>&1").c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string geometry(const RealSet& set) {
  return " --image.size " + std::to_string(set.size) + " --image.scale " + std::to_string(set.scale_arcsec);
}

// Every third pixel or so of each axis, always including both edges.
std::vector<spip::test::DftPixel> sample_pixels(int size) {
  std::vector<int> axis;
  for (int x = 0; x < size; x += 3) axis.push_back(x);
  if (axis.back() != size - 1) axis.push_back(size - 1);
  std::vector<spip::test::DftPixel> pixels;
  for (int y : axis)
    for (int x : axis) pixels.push_back({x, y});
  return pixels;
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class RealData : public testing::TestWithParam<RealSet> {};

TEST_P(RealData, DirtyImagesOfFirstAndLastChannelEqualADirectDft) {
  const RealSet& set = GetParam();
  const fs::path out = spip::test::scratch_path("dirty");
  const std::string command = std::string(SPIP_BIN) + " --input.ms " + ms_path(set) + " --output.dir " +
                              out.string() + geometry(set) +
                              " --image.weighting natural --clean.niter 0 --faraday.cubes none"
                              " --catalogue.threshold 0 --parallel.threads 2";
  ASSERT_EQ(run(command, out.string() + ".log"), 0) << "see " << out << ".log";

  const int channels = spip::test::channel_count(ms_path(set));
  const std::vector<spip::test::DftPixel> pixels = sample_pixels(set.size);
  const char* stokes_names[] = {"I", "Q", "U", "V"};
  std::vector<spip::fits::FitsImage> cubes;
  for (const char* stokes : stokes_names)
    cubes.push_back(spip::fits::read_image((out / (std::string("spip-dirty-") + stokes + ".fits")).string()));
  // The grid the command asked for, not the product's header: a header and an image
  // wrong the same way would otherwise agree.
  const double cell = set.scale_arcsec / 3600 * M_PI / 180;
  const spip::test::DftGrid grid{set.size / 2 + 1.0, set.size / 2 + 1.0, -cell, cell};
  const std::size_t plane_pixels = static_cast<std::size_t>(set.size) * set.size;
  double worst = 0;
  for (int channel : {0, channels - 1}) {
    const auto dft = spip::test::direct_dft(ms_path(set), channel, grid, pixels);
    for (int s = 0; s < 4; ++s) {
      ASSERT_EQ(cubes[s].shape[2], channels);
      ASSERT_FALSE(dft[s].empty()) << set.name << " determines Stokes " << stokes_names[s];
      const float* plane = cubes[s].data.data() + channel * plane_pixels;
      double peak = 0, difference = 0;
      for (std::size_t k = 0; k < plane_pixels; ++k) {
        ASSERT_TRUE(std::isfinite(plane[k])) << set.name << " Stokes " << stokes_names[s] << " pixel " << k;
        peak = std::max(peak, std::abs(static_cast<double>(plane[k])));
      }
      ASSERT_GT(peak, 0) << set.name << " Stokes " << stokes_names[s] << " channel " << channel;
      for (std::size_t k = 0; k < pixels.size(); ++k)
        difference = std::max(difference, std::abs(plane[pixels[k].y * set.size + pixels[k].x] - dft[s][k]));
      EXPECT_LE(difference, 1e-4 * peak) << set.name << " Stokes " << stokes_names[s] << " channel " << channel;
      worst = std::max(worst, difference / peak);
    }
  }
  std::printf("[ measured ] %s: largest |spip - DFT| %.2e of the peak over I, Q, U, V, first and last channel\n",
              set.name, worst);
}

TEST_P(RealData, DefaultPipelineCompletesAndEveryProductOpensInAstropy) {
  const RealSet& set = GetParam();
  const fs::path out = spip::test::scratch_path("pipeline");
  const std::string command = std::string(SPIP_MPIEXEC) + " 2 " + SPIP_BIN + " --input.ms " + ms_path(set) +
                              " --output.dir " + out.string() + geometry(set) +
                              " --clean.niter 1000 --clean.auto_threshold 3 --parallel.threads 1";
  ASSERT_EQ(run(command, out.string() + ".log"), 0) << "see " << out << ".log";
  // The bandwidth-depolarisation warning never reads "8.3 exceeds 8.3", and OVRO-LWA, whose
  // default phi_max is that limit itself, gets none (MWA's default, 10 RMSF widths, is beyond
  // it). The default is named as such: these runs set no faraday.phi_max.
  std::smatch warning;
  const std::string log = read_text(out.string() + ".log");
  if (std::regex_search(log, warning, std::regex(R"((\S+) rad/m\^2 exceeds \S+ = (\S+) rad)"))) {
    EXPECT_NE(warning[1].str(), warning[2].str()) << warning[0];
    EXPECT_NE(std::string(set.name).rfind("ovrolwa", 0), 0u) << warning[0];
    EXPECT_NE(log.find("warning: the default Faraday depth range"), std::string::npos) << warning[0];
  }
  std::vector<std::string> products;
  for (const auto& entry : fs::directory_iterator(out))
    if (entry.path().extension() == ".fits") products.push_back(entry.path().string());
  EXPECT_TRUE(std::find(products.begin(), products.end(), (out / "spip-image-I.fits").string()) != products.end());
  if (run("python3 -c 'import astropy'", out.string() + "-python.log") != 0)
    GTEST_SKIP() << "python3 cannot import astropy (scripts/install-deps.sh installs it)";
  std::string check = std::string("python3 ") + SPIP_CHECK_FITS;
  for (const std::string& product : products) check += " " + product;
  EXPECT_EQ(run(check, out.string() + "-astropy.log"), 0) << "see " << out << "-astropy.log";
}

INSTANTIATE_TEST_SUITE_P(Telescopes, RealData, testing::ValuesIn(sets),
                         [](const testing::TestParamInfo<RealSet>& info) {
                           return std::string(info.param.name).substr(0, std::string(info.param.name).find('_'));
                         });

// An all-sky image of OVRO-LWA (256^2 of 1600": 114 degrees across, its corners at
// l^2 + m^2 = 2) holds no sky beyond the horizon: no Faraday product has a value there,
// and no catalogue source comes from there, where the WCS gives no position.
TEST(AllSky, NoFaradayProductOrSourceBeyondTheHorizon) {
  const fs::path out = spip::test::scratch_path("allsky");
  const std::string command = std::string(SPIP_MPIEXEC) + " 2 " + SPIP_BIN + " --input.ms " + std::string(SPIP_TEST_DATA) +
                              "/real/ovrolwa_zenith_28mhz.ms --output.dir " + out.string() +
                              " --image.size 256 --image.scale 1600 --clean.niter 500 --clean.auto_threshold 3"
                              " --faraday.cubes none --parallel.threads 1";
  ASSERT_EQ(run(command, out.string() + ".log"), 0) << "see " << out << ".log";
  const int n = 256;
  const double cell = 1600.0 / 3600 * M_PI / 180;
  const auto beyond = [&](double x, double y) { return std::hypot(x - n / 2, y - n / 2) * cell > 1; };
  for (const char* product : {"peak-pi", "peak-phi", "moment-mean-I", "moment-mean-P"}) {
    const spip::fits::FitsImage map = spip::fits::read_image((out / (std::string("spip-") + product + ".fits")).string());
    int outside = 0, inside = 0;
    for (int y = 0; y < n; ++y)
      for (int x = 0; x < n; ++x) {
        const bool finite = std::isfinite(map.data[static_cast<std::size_t>(y) * n + x]);
        if (beyond(x, y)) {
          outside += finite;
        } else {
          inside += finite;
        }
      }
    EXPECT_EQ(outside, 0) << product << ": pixels with a value beyond the horizon";
    EXPECT_GT(inside, n * n / 2) << product << ": pixels with a value within it";
  }
  std::ifstream catalogue(out / "spip-catalogue.csv");
  std::string line;
  ASSERT_TRUE(std::getline(catalogue, line));
  std::vector<std::string> columns;
  for (std::stringstream header(line); std::getline(header, line, ',');) columns.push_back(line);
  const auto column = [&](const std::string& name) {
    return static_cast<std::size_t>(std::find(columns.begin(), columns.end(), name) - columns.begin());
  };
  const std::size_t x_column = column("x_pix"), y_column = column("y_pix"), ra_column = column("ra");
  ASSERT_LT(std::max({x_column, y_column, ra_column}), columns.size());
  int rows = 0;
  while (std::getline(catalogue, line)) {
    std::vector<std::string> fields;
    for (std::stringstream row(line); std::getline(row, line, ',');) fields.push_back(line);
    ASSERT_EQ(fields.size(), columns.size());
    EXPECT_FALSE(beyond(std::stod(fields[x_column]), std::stod(fields[y_column]))) << fields[0];
    ++rows;
  }
  std::printf("[ measured ] all-sky OVRO-LWA: %d catalogue rows, none beyond the horizon\n", rows);
}

// An MS with only parallel hands (the sample's XX and YY, labelled RR LL or kept XX YY)
// determines I and V, or I and Q: spip writes those cubes, says in one line what it
// skips, and writes no Faraday products. Its dirty I equals the full sample's, and its
// V (RR - LL)/2 the sample's Q (XX - YY)/2.
// An input of XX and YY alone beside one with all four correlations, on channels only the
// first covers: U and V would be imaged as zero there and weigh fully in RM synthesis.
// The band is refused in one line that names the channels and the input.
TEST(ParallelHandsOnly, BesideAFullInputOnChannelsOfTheirOwnAreRefused) {
  const std::string sample = std::string(SPIP_TEST_DATA) + "/oskar_small.ms";
  const std::string xxyy = spip::test::scratch_path("xxyy.ms").string();
  spip::test::copy_parallel_hands(sample, xxyy, false);
  const fs::path above = spip::test::scratch_path("above.ms");  // four channels above the sample's 40
  ASSERT_EQ(run(std::string(SPIP_SIMULATE_BIN) + " --sky " + SPIP_TEST_DATA + "/oskar_small.sky.txt --telescope " +
                    SPIP_TEST_DATA + "/oskar_small.tm --freq-start 168.6e6 --channels 4 --times 4 --out " + above.string(),
                spip::test::scratch_path("sim.log")),
            0);
  const fs::path out = spip::test::scratch_path("mixed");
  EXPECT_EQ(run(std::string(SPIP_BIN) + " --input.ms " + xxyy + " --input.ms " + above.string() +
                    " --image.size 64 --image.scale 120 --output.dir " + out.string(),
                out.string() + ".log"),
            3);
  const std::string log = read_text(out.string() + ".log");
  EXPECT_NE(log.find("spip: error: Stokes U is given by other inputs but not on channels 0-39 (120.6000-167.4000 MHz), "
                     "which only inputs such as " + xxyy + " (correlations [XX YY]) cover"),
            std::string::npos)
      << log;
  EXPECT_FALSE(fs::exists(out)) << "nothing may be written";
}

TEST(ParallelHandsOnly, WritesTheStokesTheyDetermineAndNoFaradayProducts) {
  const std::string sample = std::string(SPIP_TEST_DATA) + "/oskar_small.ms";
  const std::string args = " --image.size 64 --image.scale 120 --clean.niter 50 --parallel.threads 1 --output.dir ";
  const fs::path full = spip::test::scratch_path("full");
  ASSERT_EQ(run(std::string(SPIP_MPIEXEC) + " 2 " + SPIP_BIN + " --input.ms " + sample + args + full.string(),
                full.string() + ".log"),
            0);
  const auto plane = [](const fs::path& dir, const std::string& name) {
    return spip::fits::read_image((dir / ("spip-dirty-" + name + ".fits")).string()).data;
  };
  for (const bool circular : {true, false}) {
    const std::string hands = circular ? "RR LL" : "XX YY";
    SCOPED_TRACE(hands);
    const std::string ms = spip::test::scratch_path(circular ? "rrll.ms" : "xxyy.ms").string();
    spip::test::copy_parallel_hands(sample, ms, circular);
    const fs::path out = spip::test::scratch_path(circular ? "rrll" : "xxyy");
    ASSERT_EQ(run(std::string(SPIP_MPIEXEC) + " 2 " + SPIP_BIN + " --input.ms " + ms + args + out.string(),
                  out.string() + ".log"),
              0)
        << "see " << out << ".log";
    const std::string log = read_text(out.string() + ".log");
    const std::string missing = circular ? "Q, U" : "U, V";
    const std::string line = "Stokes " + missing + " not determined by the correlations [" + hands + "]: no cubes of " +
                             missing + ", and no Faraday products";
    EXPECT_NE(log.find(line), std::string::npos) << log;
    EXPECT_EQ(log.find("RM synthesis:"), std::string::npos) << log;

    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(out)) names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    const std::string kept = circular ? "V" : "Q";
    std::vector<std::string> expected = {"spip-config.ini", "spip-psf.fits", "spip-qa.json"};
    for (const char* product : {"dirty", "image", "model", "residual"})
      for (const std::string& stokes : {std::string("I"), kept})
        expected.push_back(std::string("spip-") + product + "-" + stokes + ".fits");
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(names, expected);

    const std::vector<float> i = plane(out, "I"), i_full = plane(full, "I");
    const std::vector<float> second = plane(out, kept), q_full = plane(full, "Q");
    ASSERT_EQ(i.size(), i_full.size());
    double peak = 0, worst = 0;
    for (std::size_t k = 0; k < i.size(); ++k) {
      ASSERT_TRUE(std::isfinite(i[k]) && std::isfinite(second[k]) && std::isfinite(i_full[k]) && std::isfinite(q_full[k]))
          << "pixel " << k;
      peak = std::max(peak, static_cast<double>(std::abs(i_full[k])));
      worst = std::max({worst, static_cast<double>(std::abs(i[k] - i_full[k])),
                        static_cast<double>(std::abs(second[k] - q_full[k]))});
    }
    ASSERT_GT(peak, 0);
    EXPECT_LE(worst, 1e-5 * peak);  // float gridding of the same samples from other slots
    std::printf("[ measured ] %s: dirty I and %s against the full sample's I and Q: largest difference %.2e of the peak\n",
                hands.c_str(), kept.c_str(), worst / peak);
  }
}

}  // namespace
