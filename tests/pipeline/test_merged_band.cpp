// One frequency axis from several Measurement Sets and spectral windows: the sample
// split by `spip-simulate --split` into MSs, windows and sub-bands, given in any order,
// must give the products of the single MS; gaps and flagged channels are blank planes
// that RM synthesis leaves out.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sys/wait.h>

#include <cmath>
#include <complex>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <numbers>
#include <sstream>
#include <string>
#include <vector>

#include "ms_dft.hpp"
#include "product_compare.hpp"
#include "scratch.hpp"
#include "split_ms.hpp"
#include "spip/fits/fits_image.hpp"
#include "spip/sim/sky_model.hpp"

namespace fs = std::filesystem;

namespace {

const std::string sample = std::string(SPIP_TEST_DATA) + "/oskar_small.ms";
// For runs whose images agree only to rounding: RM-CLEAN's choices between near-equal
// peaks are not continuous in the last bits (see tests/pipeline/test_rank_groups).
const std::string no_rmclean = " --faraday.rmclean_niter 0";
constexpr int size = 256;
constexpr double cell = 40.0 / 206264.80624709636;
constexpr double speed_of_light = 299792458.0;

void shell(const std::string& command, const fs::path& log) {
  const int status = std::system((command + " > " + log.string() + " 2>&1").c_str());
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << command << "\n" << spip::test::file_text(log);
}

std::vector<std::string> split(const std::string& ms, const std::vector<std::string>& windows, const std::string& name) {
  return spip::test::split_ms(SPIP_SIMULATE_BIN, ms, windows, name);
}

// The demo's configuration on 256^2 images of 40", one thread per rank.
fs::path run(int ranks, const std::vector<std::string>& inputs, const std::string& extra, const std::string& name) {
  const fs::path out = spip::test::scratch_path(name);
  std::string command = "TMPDIR=" + spip::test::scratch_dir().string() + " " + SPIP_MPIEXEC + " " +
                        std::to_string(ranks) + " " + SPIP_BIN + " --config " + SPIP_DEMO_CONFIG + " --output.dir " +
                        out.string() + " --image.size 256 --image.scale 40 --parallel.threads 1 " + extra;
  for (const std::string& ms : inputs) command += " --input.ms " + ms;
  shell(command, out.string() + ".log");
  return out;
}

std::string log_of(const fs::path& out) { return spip::test::file_text(out.string() + ".log"); }

// astropy reads every channel cube's frequency axis as qa.json records it, blank
// planes included (tests/scripts/check_band_axis.py).
void expect_astropy_reads_the_axis(const fs::path& out) {
  if (std::system("python3 -c 'import astropy' > /dev/null 2>&1") != 0)
    GTEST_SKIP() << "python3 cannot import astropy (scripts/install-deps.sh installs it)";
  const fs::path log = out.string() + "-astropy.log";
  EXPECT_EQ(std::system(("python3 " + std::string(SPIP_CHECK_BAND_AXIS) + " " + out.string() + " demo > " +
                         log.string() + " 2>&1")
                            .c_str()),
            0)
      << spip::test::file_text(log);
  std::cout << spip::test::file_text(log);
}

nlohmann::json channel_records(const fs::path& out) {
  return nlohmann::json::parse(spip::test::file_text(out / "demo-qa.json")).at("channels");
}

// Planes of a cube whose every pixel is NaN.
std::vector<int> blank_planes(const fs::path& cube) {
  const spip::fits::FitsImage image = spip::fits::read_image(cube.string());
  const std::size_t plane = static_cast<std::size_t>(size) * size;
  std::vector<int> blank;
  for (std::size_t p = 0; p * plane < image.data.size(); ++p) {
    std::size_t nan = 0;
    for (std::size_t i = 0; i < plane; ++i) nan += std::isnan(image.data[p * plane + i]);
    if (nan == plane) blank.push_back(static_cast<int>(p));
    else EXPECT_EQ(nan, 0u) << cube << " plane " << p;
  }
  return blank;
}

class MergedBand : public testing::Test {
 protected:
  // The single MS's products, once for the suite.
  static void SetUpTestSuite() { reference_ = run(1, {sample}, "", "reference"); }
  static fs::path reference_;
};
fs::path MergedBand::reference_;

// The sample as 4 MSs of 10 channels, given in shuffled order, on 2 ranks: a rank's
// channels come from two of them.
TEST_F(MergedBand, FourMeasurementSetsInShuffledOrder) {
  const std::vector<std::string> parts = split(sample, {"20-29", "0-9", "30-39", "10-19"}, "part");
  const fs::path out = run(2, parts, "", "four_ms");
  EXPECT_NE(log_of(out).find("frequency axis: 40 channels from 120.6000 MHz in steps of 1200.000 kHz"),
            std::string::npos) << log_of(out);
  EXPECT_GE(spip::test::expect_equal_products(reference_, out, "4 MSs in shuffled order", 1e-6), 50);
}

// Groups of ranks sharing each channel's rows (parallel.ranks_per_channel): a channel
// holds one of the inputs, so a member may hold all of its rows, and planning sizes each
// member for that. On the first 8 channels, as tests/pipeline/test_rank_groups: over 40,
// near ties of Hogbom's peak search let CLEAN take other components on a group than on
// one rank (3.7e-4 of the peak in model-I, with one MS as with four). Without RM-CLEAN:
// over 8 channels its peak search on a bright pixel's spectrum meets near ties too
// (images equal to 3e-8 of the peak moved m2 there from 0.012 to 0.46), and RM-CLEAN
// sees only the products the groups make, which the rest compare.
TEST_F(MergedBand, FourMeasurementSetsOnGroupsOfRanks) {
  const fs::path reference = run(1, {sample}, "--input.channel_end 8" + no_rmclean, "eight_channels");
  const fs::path grouped = run(4, split(sample, {"4-5", "0-1", "6-7", "2-3"}, "quarter"),
                               "--parallel.ranks_per_channel 2" + no_rmclean, "groups");
  EXPECT_NE(log_of(grouped).find("member 1 of a group of 2"), std::string::npos) << log_of(grouped);
  // Skewness and kurtosis are ratios of moments: they enlarge the images' rounding (3e-8
  // of I's peak) by the inverse of a spread, and skewness of I reached 4.3e-6 of its peak;
  // 2e-5 leaves room for other machines' FFTW plans.
  EXPECT_GE(spip::test::expect_equal_products(reference, grouped, "4 MSs on groups of 2 ranks", 2e-5), 50);
}

// One MS with 4 spectral windows stored in shuffled order, input.spw = all.
TEST_F(MergedBand, FourSpectralWindows) {
  const std::vector<std::string> ms = split(sample, {"20-29 0-9 30-39 10-19"}, "windows");
  const fs::path out = run(2, ms, "--input.spw all", "four_spw");
  EXPECT_NE(log_of(out).find("(spectral window 3): "), std::string::npos) << log_of(out);
  EXPECT_GE(spip::test::expect_equal_products(reference_, out, "4 spectral windows", 1e-6), 50);
  // A listed subset: windows 1 and 3 are channels 0-19, the single MS's first half.
  const fs::path half = run(1, ms, "--input.spw 3,1", "two_spw");
  EXPECT_NE(log_of(half).find("frequency axis: 20 channels from 120.6000 MHz"), std::string::npos) << log_of(half);
  const fs::path first_half = run(1, {sample}, "--input.channel_end 20", "first_half");
  EXPECT_GE(spip::test::expect_equal_products(first_half, half, "spectral windows 3 and 1", 1e-6), 50);
  // The same half by frequency, of every window (channel 19 is at 143.4 MHz).
  const fs::path below = run(1, ms, "--input.spw all --input.freq_max 143.5e6", "below_143_5_mhz");
  EXPECT_GE(spip::test::expect_equal_products(first_half, below, "input.freq_max", 1e-6), 50);
  // --plan sizes the job on the merged and binned axis.
  const fs::path plan = spip::test::scratch_path("plan");
  shell(std::string(SPIP_BIN) + " --plan --input.ms " + ms.front() + " --input.spw all --image.channels_out 10" +
            " --output.dir " + plan.string(),
        plan.string() + ".log");
  EXPECT_NE(log_of(plan).find("channels [0, 10) of 1 Measurement Set(s) (4 spectral windows)"), std::string::npos)
      << log_of(plan);
  // Channel numbers are those of one window: with several inputs they are refused.
  const fs::path refused = spip::test::scratch_path("refused");
  const std::string command = std::string(SPIP_BIN) + " --input.ms " + ms.front() + " --input.spw all" +
                              " --input.channel_begin 3 --output.dir " + refused.string() + " > " + refused.string() +
                              ".log 2>&1";
  const int status = std::system(command.c_str());
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << status;
  EXPECT_NE(log_of(refused).find("select with input.freq_min and input.freq_max"), std::string::npos)
      << log_of(refused);
}

// Two MSs of the same band (observations of one field, here the sample and a copy):
// each channel is gridded from both. With uniform weights a visibility given twice
// changes no cell's share, so the products are those of the one MS, and the channels
// count twice the visibilities. The first 8 channels without RM-CLEAN, as
// tests/pipeline/test_rank_groups.
TEST_F(MergedBand, TheSameBandTwiceIsGriddedTogether) {
  const fs::path copy = spip::test::scratch_path("copy.ms");
  fs::copy(sample, copy, fs::copy_options::recursive);
  const std::string uniform = "--image.weighting uniform --input.freq_max 130e6" + no_rmclean;
  const fs::path one = run(1, {sample}, uniform, "one");
  const fs::path both = run(1, {sample, copy.string()}, uniform, "both");
  // Float sums over twice the rows, in another order: agreement to rounding, as groups of
  // ranks (kurtosis of I, a ratio of moments, reached 7.5e-6 of its peak; 2e-5 leaves room
  // for other machines' FFTW plans).
  EXPECT_GE(spip::test::expect_equal_products(one, both, "the same band twice", 2e-5), 30);
  const nlohmann::json a = channel_records(one), b = channel_records(both);
  ASSERT_EQ(a.size(), 8u);
  ASSERT_EQ(b.size(), 8u);
  for (std::size_t k = 0; k < a.size(); ++k)
    EXPECT_EQ(b[k].at("visibilities").get<double>(), 2 * a[k].at("visibilities").get<double>()) << k;
}

// Channels stored high to low: the axis runs low to high all the same.
TEST_F(MergedBand, ChannelsStoredHighToLow) {
  const fs::path out = run(1, split(sample, {"39-0"}, "reversed"), "", "reversed");
  EXPECT_GE(spip::test::expect_equal_products(reference_, out, "channels stored high to low", 1e-6), 50);
}


std::size_t pixel_of(const spip::sim::Component& c) {
  const auto lmn = spip::sim::direction_cosines(c.ra_rad, c.dec_rad, 0.0, std::numbers::pi / 3);
  const long x = std::lround(size / 2 - lmn.l / cell), y = std::lround(size / 2 + lmn.m / cell);
  return static_cast<std::size_t>(y) * size + static_cast<std::size_t>(x);
}

// rmsf.txt's rows: phi, real, imaginary; and lambda0^2 from its header.
struct Rmsf {
  double lambda0_sq = 0;
  std::vector<double> phi;
  std::vector<std::complex<double>> value;
};

Rmsf read_rmsf(const fs::path& path) {
  Rmsf rmsf;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind('#', 0) == 0) {
      if (const std::size_t at = line.find("lambda0^2 "); at != std::string::npos)
        rmsf.lambda0_sq = std::stod(line.substr(at + 10));
      continue;
    }
    std::istringstream fields(line);
    double phi = 0, re = 0, im = 0;
    fields >> phi >> re >> im;
    rmsf.phi.push_back(phi);
    rmsf.value.emplace_back(re, im);
  }
  return rmsf;
}

// LOFAR delivers one MS per sub-band: the sample's first 16 channels as 8 sub-bands of 2,
// sub-band 5 (channels 10 and 11) missing. The RMSF is that of the 14 channels present,
// and the sources' RMs are found as with the whole band.
TEST_F(MergedBand, SubBandsWithOneMissing) {
  std::vector<std::string> bands;
  for (int sb : {7, 0, 3, 1, 6, 2, 4}) bands.push_back(std::to_string(2 * sb) + "-" + std::to_string(2 * sb + 1));
  const fs::path out = run(2, split(sample, bands, "sb"), "", "sub_bands");
  EXPECT_NE(log_of(out).find("16 channels from 120.6000 MHz in steps of 1200.000 kHz, 2 of them in gaps"),
            std::string::npos) << log_of(out);
  EXPECT_EQ(blank_planes(out / "demo-image-Q.fits"), (std::vector<int>{10, 11}));
  for (const auto& record : channel_records(out)) {
    const int channel = record.at("channel").get<int>();
    if (channel == 10 || channel == 11)
      EXPECT_EQ(record.at("blank"), "gap: no input has this frequency") << record;
    else
      EXPECT_TRUE(record.at("blank").is_null()) << record;
  }

  // Uniform weights over the channels present: R(phi) = mean_k exp(-2i phi (lambda_k^2 - lambda_0^2)).
  std::vector<double> lambda_sq;
  for (int k = 0; k < 16; ++k)
    if (k != 10 && k != 11) lambda_sq.push_back(std::pow(speed_of_light / (120.6e6 + 1.2e6 * k), 2));
  double lambda0_sq = 0;
  for (double l : lambda_sq) lambda0_sq += l / static_cast<double>(lambda_sq.size());
  const Rmsf rmsf = read_rmsf(out / "demo-rmsf.txt");
  ASSERT_GT(rmsf.phi.size(), 100u);
  EXPECT_NEAR(rmsf.lambda0_sq, lambda0_sq, 1e-5);
  double worst = 0;
  for (std::size_t j = 0; j < rmsf.phi.size(); ++j) {
    std::complex<double> want = 0;
    for (double l : lambda_sq)
      want += std::exp(std::complex<double>(0, -2 * rmsf.phi[j] * (l - lambda0_sq))) / static_cast<double>(lambda_sq.size());
    worst = std::max(worst, std::abs(rmsf.value[j] - want));
  }
  EXPECT_LT(worst, 1e-6);
  std::cout << "[ measured ] RMSF of 14 of 16 channels against the analytic one: largest |difference| " << worst
            << "\n";

  const auto sky = spip::sim::read_sky_model(std::string(SPIP_TEST_DATA) + "/oskar_small.sky.txt");
  const auto phi = spip::fits::read_image((out / "demo-peak-phi.fits").string());
  double worst_phi = 0;
  for (const auto& c : sky.components) {
    if (c.pol_frac == 0) continue;
    EXPECT_NEAR(phi.data[pixel_of(c)], c.rm_rad_m2, 0.05) << c.name;
    worst_phi = std::max(worst_phi, std::abs(phi.data[pixel_of(c)] - c.rm_rad_m2));
  }
  std::cout << "[ measured ] sub-bands with one missing: max |peak phi - RM| = " << worst_phi << " rad/m^2\n";
  expect_astropy_reads_the_axis(out);
}

// Three channels wholly flagged and one missing (a gap between two MSs) against the same
// data without those four channels at all: the same products, blank planes in both, and
// qa.json says why each is blank.
TEST_F(MergedBand, FlaggedAndEmptyChannelsAreLeftOut) {
  const fs::path flagged = spip::test::scratch_path("flagged.ms");
  shell(std::string(SPIP_SIMULATE_BIN) + " --sky " + SPIP_TEST_DATA + "/oskar_small.sky.txt --template " + sample +
            " --out " + flagged.string() + " --flag-channels 5 12 30",
        flagged.string() + ".log");
  const fs::path with = run(2, split(flagged.string(), {"0-19", "21-39"}, "with"), "", "with_flags");
  const fs::path without =
      run(2, split(flagged.string(), {"0-4", "6-11", "13-19", "21-29", "31-39"}, "without"), "", "without");
  EXPECT_EQ(blank_planes(with / "demo-image-I.fits"), (std::vector<int>{5, 12, 20, 30}));
  EXPECT_EQ(blank_planes(without / "demo-dirty-U.fits"), (std::vector<int>{5, 12, 20, 30}));
  for (const auto& record : channel_records(with)) {
    const int channel = record.at("channel").get<int>();
    if (channel == 5 || channel == 12 || channel == 30)
      EXPECT_EQ(record.at("blank"), "every visibility flagged") << record;
    else if (channel == 20)
      EXPECT_EQ(record.at("blank"), "gap: no input has this frequency") << record;
    else
      EXPECT_TRUE(record.at("blank").is_null()) << record;
  }
  // The restoring beam, the moments and the Faraday products do not see them.
  EXPECT_GE(spip::test::expect_equal_products(without, with, "flagged against absent channels", 1e-6), 50);
  const auto beam = [](const fs::path& out) {
    const spip::fits::FitsImage image = spip::fits::read_image((out / "demo-image-I.fits").string());
    return std::vector<double>{image.number("BMAJ"), image.number("BMIN"), image.number("BPA")};
  };
  EXPECT_EQ(beam(with), beam(without));
}

// image.channels_out 10 bins the sample's 40 channels by 4: each image channel equals a
// direct DFT of its 4 channels' rows, every visibility at its own frequency, to 1e-5
// of the peak; the cubes' axis is that of the bins' centres.
// 40 channels into 31 bins: most bins hold their one or two channels off their centre.
// RM synthesis takes each bin where its data lie, so the sample's sources keep their
// Faraday depths and angles (data/oskar_small.sky.txt: S2 +20 rad/m^2 at 30 deg, S3 -45
// at -20 deg); at the bins' centres S2's angle came out 21 deg, and S3's depth more
// than 1 rad/m^2 off.
TEST(ChannelBinning, BinsThatDoNotDivideTheChannelsKeepTheDepthsAndAngles) {
  const fs::path out = run(2, {sample}, "--image.channels_out 31 --faraday.cubes none", "odd_bins");
  EXPECT_NE(log_of(out).find("30 of the bins hold channels off their centre"), std::string::npos) << log_of(out);
  // qa.json gives each bin's centre and its channels' mean: the sample's channels lie at
  // 120.6 + 1.2 k MHz, the 31 bins span 120.0 to 168.0 MHz.
  const nlohmann::json channels = channel_records(out);
  ASSERT_EQ(channels.size(), 31u);
  const double width = 48e6 / 31;
  std::vector<double> sum(31, 0.0), count(31, 0.0);
  for (int k = 0; k < 40; ++k) {
    const double freq = 120.6e6 + 1.2e6 * k;
    const auto bin = static_cast<std::size_t>((freq - 120e6) / width);
    sum[bin] += freq;
    ++count[bin];
  }
  for (std::size_t bin = 0; bin < 31; ++bin) {
    EXPECT_NEAR(channels[bin].at("freq_hz").get<double>(), 120e6 + (bin + 0.5) * width, 1e-3) << bin;
    EXPECT_NEAR(channels[bin].at("data_freq_hz").get<double>(), sum[bin] / count[bin], 1e-3) << bin;
  }
  std::ifstream csv(out / "demo-catalogue.csv");
  std::string line;
  ASSERT_TRUE(std::getline(csv, line));
  std::vector<std::string> names;
  for (std::stringstream header(line); std::getline(header, line, ',');) names.push_back(line);
  const auto at = [&](const std::string& name) { return std::find(names.begin(), names.end(), name) - names.begin(); };
  int matched = 0;
  while (std::getline(csv, line)) {
    std::vector<std::string> fields;
    for (std::stringstream row(line); std::getline(row, line, ',');) fields.push_back(line);
    const double phi = std::stod(fields.at(static_cast<std::size_t>(at("phi"))));
    const double chi0 = std::stod(fields.at(static_cast<std::size_t>(at("chi0"))));
    for (const auto& [rm, angle] : {std::pair{20.0, 30.0}, {-45.0, -20.0}})
      if (std::abs(phi - rm) < 1) {
        ++matched;
        EXPECT_NEAR(phi, rm, 0.05);
        EXPECT_NEAR(chi0, angle, 1.5) << "RM " << rm;
        std::printf("[ measured ] 31 bins: phi %.3f (truth %.0f), chi0 %.2f deg (truth %.0f)\n", phi, rm, chi0, angle);
      }
  }
  EXPECT_EQ(matched, 2);
}

TEST(ChannelBinning, TenBinsOfFourChannelsEqualADirectDftOfTheirRows) {
  const fs::path out = spip::test::scratch_path("binned");
  shell(std::string(SPIP_BIN) + " --input.ms " + sample + " --output.dir " + out.string() +
            " --output.prefix demo --image.size 128 --image.scale 60 --image.weighting natural --image.accuracy 1e-6"
            " --clean.niter 0 --faraday.phi_max 60 --image.channels_out 10 --parallel.threads 2",
        out.string() + ".log");
  EXPECT_NE(log_of(out).find("frequency axis: 10 channels from 122.4000 MHz in steps of 4800.000 kHz"),
            std::string::npos) << log_of(out);
  std::vector<spip::fits::FitsImage> cubes;
  for (const char* stokes : {"I", "Q", "U", "V"})
    cubes.push_back(spip::fits::read_image((out / (std::string("demo-dirty-") + stokes + ".fits")).string()));
  const spip::fits::FitsImage& first = cubes.front();
  ASSERT_EQ(first.shape.at(2), 10);
  EXPECT_DOUBLE_EQ(first.number("CRVAL3"), 122.4e6);
  EXPECT_DOUBLE_EQ(first.number("CDELT3"), 4.8e6);
  const spip::test::DftGrid grid{first.number("CRPIX1"), first.number("CRPIX2"), first.number("CDELT1") * M_PI / 180,
                                 first.number("CDELT2") * M_PI / 180};
  std::vector<spip::test::DftPixel> pixels;
  for (int y = 0; y < 128; y += 5)
    for (int x = 0; x < 128; x += 5) pixels.push_back({x, y});
  const std::size_t plane = 128 * 128;
  double worst = 0;
  for (int bin : {0, 4, 9}) {
    const auto dft = spip::test::direct_dft(sample, {4 * bin, 4 * bin + 1, 4 * bin + 2, 4 * bin + 3}, grid, pixels);
    for (int s = 0; s < 4; ++s) {
      const float* image = cubes[static_cast<std::size_t>(s)].data.data() + bin * plane;
      double peak = 0, difference = 0;
      for (std::size_t k = 0; k < plane; ++k) peak = std::max(peak, std::abs(static_cast<double>(image[k])));
      for (std::size_t k = 0; k < pixels.size(); ++k)
        difference = std::max(difference, std::abs(image[pixels[k].y * 128 + pixels[k].x] - dft[s][k]));
      EXPECT_LE(difference, 1e-5 * peak) << "bin " << bin << " Stokes " << "IQUV"[s];
      worst = std::max(worst, difference / peak);
    }
  }
  std::cout << "[ measured ] 40 channels binned into 10: largest |spip - DFT of the bin's rows| " << worst
            << " of the peak over I, Q, U, V in bins 0, 4 and 9\n";
  // The RMSF is that of the bins' centres, and the bandwidth-depolarisation limit
  // sqrt(3) / dlambda^2 that of the bins' spacing (the lowest two bins').
  const Rmsf rmsf = read_rmsf(out / "demo-rmsf.txt");
  double lambda0_sq = 0;
  for (int k = 0; k < 10; ++k) lambda0_sq += std::pow(speed_of_light / (122.4e6 + 4.8e6 * k), 2) / 10;
  EXPECT_NEAR(rmsf.lambda0_sq, lambda0_sq, 1e-5);
  const double step = std::pow(speed_of_light / 122.4e6, 2) - std::pow(speed_of_light / 127.2e6, 2);
  std::ostringstream limit;
  limit << "exceeds sqrt(3)/dlambda^2_max = " << std::fixed << std::setprecision(1) << std::sqrt(3.0) / step
        << " rad/m^2";
  EXPECT_NE(log_of(out).find(limit.str()), std::string::npos) << limit.str() << "\n" << log_of(out);
  expect_astropy_reads_the_axis(out);
}

}  // namespace
