// CLEAN on a real ATCA snapshot of PKS 1934-638 (data/real/atca_1934_snapshot.ms: one
// time, six antennas on an east-west line, uncalibrated, XX and YY 20 % apart), whose
// PSF is a ridge as high as its peak. With a PSF of the image's side the minor cycles
// ran away to 1e16 Jy; with one of twice the side they converge, as a double-precision
// Hogbom loop on a direct DFT of the same rows does; where the minor cycles still have
// only the image-sized PSF, the divergence guard stops them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "clean_marks.hpp"
#include "ms_dft.hpp"
#include "ms_edit.hpp"
#include "product_compare.hpp"
#include "scratch.hpp"
#include "spip/deconv/clean.hpp"
#include "spip/deconv/clean_math.hpp"
#include "spip/fits/fits_image.hpp"
#include "spip/imaging/geometry.hpp"

namespace fs = std::filesystem;

namespace {

constexpr int n = 256;
constexpr double scale_arcsec = 1.5;
const std::string ms = std::string(SPIP_TEST_DATA) + "/real/atca_1934_snapshot.ms";
const char* stokes_names[] = {"I", "Q", "U", "V"};

int run(const std::string& command, const fs::path& log) {
  const int status = std::system((command + " > " + log.string() + " 2>&1").c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// spip's dirty images and PSF, `size` pixels of 1.5", of the snapshot's 1 MHz channel
// that degenerate_channel_case (clean_marks.hpp) cleans, into a fresh folder.
fs::path dirty_images(const std::string& name, int size) {
  const fs::path out = spip::test::scratch_path(name);
  const std::string command = std::string(SPIP_BIN) + " --input.ms " + ms + " --output.dir " + out.string() +
                              " --image.size " + std::to_string(size) + " --image.scale 1.5" +
                              " --input.freq_min 2.6275e9 --input.freq_max 2.6285e9 --clean.niter 0" +
                              " --faraday.cubes none --parallel.threads 2";
  EXPECT_EQ(run(command, out.string() + ".log"), 0) << "see " << out << ".log";
  return out;
}

// spip on one of issue 41's cases (clean_marks.hpp) into `out`; its exit status.
int run_case(const fs::path& out, const std::string& issue41_case) {
  const std::string command = std::string(SPIP_BIN) + " --output.dir " + out.string() +
                              " --faraday.cubes none --parallel.threads 2" + issue41_case;
  return run(command, out.string() + ".log");
}

double sum(const std::vector<double>& values) { return std::accumulate(values.begin(), values.end(), 0.0); }

// Every pixel of a side x side image centred on the phase centre.
std::vector<spip::test::DftPixel> all_pixels(int side) {
  std::vector<spip::test::DftPixel> pixels;
  for (int y = 0; y < side; ++y)
    for (int x = 0; x < side; ++x) pixels.push_back({x, y});
  return pixels;
}

spip::test::DftGrid grid_of(int side) {
  const double cell = scale_arcsec / 3600 * M_PI / 180;
  return {side / 2 + 1.0, side / 2 + 1.0, -cell, cell};
}

struct Reference {
  int iterations = 0;
  std::array<std::vector<double>, 4> residual, model;
};

// Joined I, Q, U, V Hogbom in double precision on the DFT's dirty images with the DFT's
// PSF of twice the side, down to `stop`: an independent reference for one minor cycle.
Reference reference_hogbom(std::array<std::vector<double>, 4> dirty, const std::vector<double>& psf2, double stop) {
  Reference ref;
  ref.residual = std::move(dirty);
  for (auto& m : ref.model) m.assign(static_cast<std::size_t>(n) * n, 0.0);
  for (;; ++ref.iterations) {
    std::size_t at = 0;
    double best = -1;
    for (std::size_t p = 0; p < ref.residual[0].size(); ++p) {
      double v = 0;
      for (const auto& r : ref.residual) v += r[p] * r[p];
      if (v > best) best = v, at = p;
    }
    if (!(std::sqrt(best) > stop) || ref.iterations == 2000) break;
    const int px = static_cast<int>(at % n), py = static_cast<int>(at / n);
    for (int s = 0; s < 4; ++s) {
      const double flux = 0.1 * ref.residual[s][at];
      ref.model[s][at] += flux;
      for (int y = 0; y < n; ++y)
        for (int x = 0; x < n; ++x)
          ref.residual[s][static_cast<std::size_t>(y) * n + x] -=
              flux * psf2[static_cast<std::size_t>(y - py + n) * 2 * n + (x - px + n)];
    }
  }
  return ref;
}

// 1.4826 times the median absolute deviation from the median, in double precision.
double mad_sigma_of(std::vector<double> values) {
  const auto median = [](std::vector<double>& v) {
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  const double centre = median(values);
  for (double& v : values) v = std::abs(v - centre);
  return 1.482602218505602 * median(values);
}

}  // namespace

// The issue's case, natural weighting (the DFT's): spip's one minor cycle takes the
// components the reference takes, to its threshold. WSClean 3.1 (Briggs 0) stops after 17
// iterations with 12 Jy of I and -1.05 Jy of Q in its model: its PSF of the image's side
// leaves a far copy of each component unsubtracted, and it takes that copy as a further
// component, so its model holds nearly twice the flux the dirty peak (9.8 Jy) allows.
TEST(AtcaSnapshot, ThirtyTwoChannelsConvergeAsADirectDftHogbomDoes) {
  const fs::path out = spip::test::scratch_path("band32");
  ASSERT_EQ(run_case(out, spip::test::merged_band_case() + " --image.weighting natural"), 0) << "see " << out << ".log";
  const nlohmann::json qa = spip::test::channel_qa(out);
  EXPECT_EQ(qa.at("clean_stop"), "threshold");
  EXPECT_GE(qa.at("psf_sidelobe").get<double>(), 0.999) << "one line of baselines: a degenerate PSF";
  const double stop = qa.at("clean_threshold_jy").get<double>();

  std::vector<int> channels;  // the case's band: channel k is at 2660 - k MHz
  for (int k = 16; k < 48; ++k) channels.push_back(k);
  const auto dirty = spip::test::direct_dft(ms, channels, grid_of(n), all_pixels(n));
  const std::vector<double> psf2 = spip::test::direct_psf(ms, channels, grid_of(2 * n), all_pixels(2 * n));
  const Reference ref = reference_hogbom(dirty, psf2, stop);
  // auto_threshold 3 of the joined search's noise, the four Stokes' MAD sigmas added in
  // quadrature, here of the DFT's dirty images (CLEAN stops in its first major cycle).
  double variance = 0;
  for (const auto& stokes : dirty) variance += std::pow(mad_sigma_of(stokes), 2);
  EXPECT_NEAR(stop, 3 * std::sqrt(variance), 0.01 * stop);

  EXPECT_NEAR(qa.at("iterations").get<int>(), ref.iterations, 1);
  for (int s = 0; s < 2; ++s) {
    const std::vector<float> model = spip::test::product_plane(out, "model", stokes_names[s]);
    const double spip_flux = std::accumulate(model.begin(), model.end(), 0.0);
    const double ref_flux = sum(ref.model[s]);
    std::printf("[ measured ] 32 channels, Stokes %s: model %.4f Jy (reference %.4f) in %d iterations (%d)\n",
                stokes_names[s], spip_flux, ref_flux, qa.at("iterations").get<int>(), ref.iterations);
    EXPECT_NEAR(spip_flux, ref_flux, 0.05 * std::abs(ref_flux)) << stokes_names[s];
  }
  // The residual's search peak, where the reference's minor cycle stopped.
  double ref_peak = 0;
  for (std::size_t p = 0; p < ref.residual[0].size(); ++p) {
    double v = 0;
    for (const auto& r : ref.residual) v += r[p] * r[p];
    ref_peak = std::max(ref_peak, std::sqrt(v));
  }
  std::array<std::vector<float>, 4> residual;
  for (int s = 0; s < 4; ++s) residual[s] = spip::test::product_plane(out, "residual", stokes_names[s]);
  double spip_peak = 0;
  for (std::size_t p = 0; p < residual[0].size(); ++p) {
    double v = 0;
    for (const auto& r : residual) v += static_cast<double>(r[p]) * r[p];
    spip_peak = std::max(spip_peak, std::sqrt(v));
  }
  EXPECT_NEAR(spip_peak, ref_peak, 0.05 * ref_peak);
  EXPECT_LE(spip_peak, stop * 1.05);
}

// One 1 MHz channel, where WSClean 3.1 runs away to 8e16 Jy: point CLEAN converges and
// the channel is marked degenerate; multiscale CLEAN, whose minor cycles have only the
// image-sized PSF, does not start on it. No product is above 100 times the dirty peak.
TEST(AtcaSnapshot, OneChannelIsMarkedAndNoProductRunsAway) {
  for (const bool multiscale : {false, true}) {
    SCOPED_TRACE(multiscale ? "multiscale" : "point CLEAN");
    const fs::path out = spip::test::scratch_path(multiscale ? "multiscale" : "point");
    ASSERT_EQ(run_case(out, spip::test::degenerate_channel_case(multiscale)), 0) << "see " << out << ".log";
    spip::test::expect_degenerate_channel_marked(out, multiscale);
  }
}

// The minor cycles alone on that channel's dirty images: with its PSF of the image's
// side (what spip used, and what multiscale still uses) Hogbom runs away, and
// the guard stops it once the peak is 4 times its start; with the PSF of twice the side
// it reaches the threshold without the guard.
TEST(AtcaSnapshot, TheGuardStopsHogbomThatAnImageSizedPsfMakesRunAway) {
  const fs::path small = dirty_images("small", n);
  const fs::path wide = dirty_images("wide", 2 * n);
  std::vector<float> dirty;
  for (const char* stokes : stokes_names) {
    const std::vector<float> p = spip::test::product_plane(small, "dirty", stokes);
    dirty.insert(dirty.end(), p.begin(), p.end());
  }
  const std::vector<float> psf = spip::fits::read_image((small / "spip-psf.fits").string()).data;
  const std::vector<float> psf2 = spip::fits::read_image((wide / "spip-psf.fits").string()).data;
  const auto geometry = spip::imaging::ImageGeometry::make(n, scale_arcsec / 206264.806, 1.2);
  double start = 0;
  for (std::size_t p = 0; p < geometry.pixels(); ++p)
    start = std::max(start, std::sqrt(static_cast<double>(
                                spip::deconv::squared_search_value(spip::PeakSearch::full_stokes, dirty.data(),
                                                                   static_cast<long long>(p), n * n))));
  const double stop = 0.45 * start;  // about the auto-threshold: 3 sigma of this residual

  std::vector<float> residual = dirty, model(dirty.size(), 0.0f);
  const auto truncated = spip::deconv::hogbom(residual.data(), {psf.data(), n}, geometry, spip::PeakSearch::full_stokes,
                                              0.1, stop, 2000, model.data(), nullptr, 4 * start);
  EXPECT_TRUE(truncated.diverged) << "peak " << truncated.peak << " after " << truncated.iterations;
  EXPECT_LT(truncated.iterations, 2000);
  EXPECT_TRUE(std::all_of(residual.begin(), residual.end(), [](float v) { return std::isfinite(v); }));
  EXPECT_LE(spip::test::peak_of(residual), 5 * start);

  residual = dirty;
  std::fill(model.begin(), model.end(), 0.0f);
  const auto whole = spip::deconv::hogbom(residual.data(), {psf2.data(), 2 * n}, geometry,
                                          spip::PeakSearch::full_stokes, 0.1, stop, 2000, model.data(), nullptr,
                                          4 * start);
  std::printf("[ measured ] one channel: the image-sized PSF diverged after %d iterations; twice the side stopped "
              "at %.3f Jy after %d\n",
              truncated.iterations, whole.peak, whole.iterations);
  EXPECT_FALSE(whole.diverged);
  EXPECT_LE(whole.peak, stop);
  EXPECT_LT(whole.iterations, 100);
}

// The whole file, 64 channels of 1 MHz, on 2 ranks: every channel reaches its threshold
// or is marked (and none diverges), and the peak maps stay within 100 times the dirty
// peak, as they did not when two channels ran away to 1e16 Jy.
TEST(AtcaSnapshot, SixtyFourChannelsOnTwoRanksConvergeOrAreMarked) {
  const fs::path out = spip::test::scratch_path("band64");
  const std::string command = std::string(SPIP_MPIEXEC) + " 2 " + SPIP_BIN + " --input.ms " + ms + " --output.dir " +
                              out.string() + " --image.size 256 --image.scale 1.5 --image.channels_out 64" +
                              " --clean.niter 2000 --clean.auto_threshold 3 --parallel.threads 1";
  ASSERT_EQ(run(command, out.string() + ".log"), 0) << "see " << out << ".log";
  std::ifstream in(out / "spip-qa.json");
  const nlohmann::json channels = nlohmann::json::parse(in).at("channels");
  int imaged = 0;
  for (const nlohmann::json& qa : channels) {
    if (!qa.at("blank").is_null()) continue;
    ++imaged;
    EXPECT_TRUE(qa.at("clean_stop") == "threshold" || qa.at("clean_stop") == "degenerate_psf")
        << "channel " << qa.at("channel") << ": " << qa.at("clean_stop");
  }
  EXPECT_GE(imaged, 60);
  double dirty_peak = 0;
  for (const char* stokes : stokes_names)
    dirty_peak = std::max(dirty_peak, spip::test::peak_of(spip::test::product_plane(out, "dirty", stokes)));
  for (const char* map : {"moment-mean-I", "peak-pi"}) {
    const double peak = spip::test::peak_of(
        spip::fits::read_image((out / ("spip-" + std::string(map) + ".fits")).string()).data);
    EXPECT_LE(peak, 100 * dirty_peak) << map;
  }
  const std::string log = spip::test::file_text(out.string() + ".log");
  EXPECT_NE(log.find("CLEAN summary: 0 of 64 channels DIVERGED"), std::string::npos);
}

// A simulated snapshot of the same kind: six antennas on an east-west line at ATCA's
// site, one time, 32 channels of 1 MHz at 2.6 GHz; two sources 60" apart in RA, one
// unpolarised (10 Jy) and one 20 % polarised (4 Jy, Q 0.4, U 0.69), without noise; the XX
// feed's gain 1.2 and YY's 1. Seen through those gains the sky has I' = 1.1 I + 0.1 Q and
// Q' = 0.1 I + 1.1 Q, and U' = U. CLEAN to 10 mJy must not diverge, and the model must
// hold that sky's total flux: along its ridge the PSF cannot place a source, so the
// totals are what it allows to be recovered.
TEST(EastWestSnapshot, UnequalFeedGainsConvergeToTheSkyTheGainsShow) {
  const fs::path folder = spip::test::scratch_path("snapshot");
  fs::create_directories(folder / "telescope" / "station");
  std::ofstream(folder / "telescope" / "layout.txt") << "0 0\n153 0\n306 0\n459 0\n1071 0\n3000 0\n";
  std::ofstream(folder / "telescope" / "position.txt") << "149.5501 -30.3128 237\n";
  std::ofstream(folder / "telescope" / "station" / "layout.txt") << "0 0\n";
  const double ra = 294.85, dec = -63.7127, offset_deg = 60.0 / 3600 / std::cos(dec * M_PI / 180);
  std::ofstream(folder / "sky.txt")
      << "Format = Name, RaD, DecD, I, Q, U, V, ReferenceFrequency, SpectralIndex, RotationMeasure, "
         "PolarizedFraction, PolarizationAngle, MajorAxis, MinorAxis, Orientation\n"
      << "\"A\", " << ra << ", " << dec << ", 10.0, , , 0.0, 2.6e9, 0.0, , , , , , \n"
      << "\"B\", " << ra + offset_deg << ", " << dec << ", 4.0, , , 0.0, 2.6e9, 0.0, 0.0, 0.2, 30.0, , , \n";
  const std::string ms_path = (folder / "snapshot.ms").string();
  const std::string simulate = std::string(SPIP_SIMULATE_BIN) + " --sky " + (folder / "sky.txt").string() +
                               " --telescope " + (folder / "telescope").string() + " --out " + ms_path +
                               " --ra " + std::to_string(ra) + " --dec " + std::to_string(dec) +
                               " --freq-start 2.613e9 --freq-inc 1e6 --channels 32 --times 1";
  ASSERT_EQ(run(simulate, folder / "simulate.log"), 0) << "see " << folder << "/simulate.log";
  spip::test::scale_correlation(ms_path, 0, 1.2f);  // XX

  const fs::path out = folder / "out";
  const std::string command = std::string(SPIP_BIN) + " --input.ms " + ms_path + " --output.dir " + out.string() +
                              " --image.size 256 --image.scale 1.5 --image.channels_out 1 --image.weighting natural"
                              " --clean.niter 5000 --clean.threshold 0.01 --faraday.cubes none --parallel.threads 2";
  ASSERT_EQ(run(command, folder / "spip.log"), 0) << "see " << folder << "/spip.log";
  const nlohmann::json qa = spip::test::channel_qa(out);
  EXPECT_EQ(qa.at("clean_stop"), "threshold");
  EXPECT_GE(qa.at("psf_sidelobe").get<double>(), 0.999) << "one line of baselines: a degenerate PSF";
  const double q_b = 0.8 * std::cos(M_PI / 3), u_b = 0.8 * std::sin(M_PI / 3);
  const double expected[] = {1.1 * 14 + 0.1 * q_b, 0.1 * 14 + 1.1 * q_b, u_b};
  for (int s = 0; s < 3; ++s) {
    const std::vector<float> model = spip::test::product_plane(out, "model", stokes_names[s]);
    const double flux = std::accumulate(model.begin(), model.end(), 0.0);
    std::printf("[ measured ] east-west snapshot, Stokes %s: model %.4f Jy of %.4f, %d iterations\n",
                stokes_names[s], flux, expected[s], qa.at("iterations").get<int>());
    EXPECT_NEAR(flux, expected[s], 0.02 * expected[0]) << stokes_names[s];
  }
}

// OVRO-LWA's 20 antennas at 28 MHz (data/real) on 128 pixels of 60": the PSF's lobe is
// wider than the image, so it still holds its full height a quarter of the image from
// its centre. Point CLEAN takes the PSF of twice the side there and does not diverge; multiscale
// CLEAN subtracts the image's, diverges, and the guard's line says why and what to do.
TEST(WideLobe, MultiscaleDivergesWherePointCleanDoesNotAndTheLogSaysWhy) {
  for (const bool multiscale : {false, true}) {
    SCOPED_TRACE(multiscale ? "multiscale" : "point CLEAN");
    const fs::path out = spip::test::scratch_path(multiscale ? "multiscale" : "point");
    ASSERT_EQ(run_case(out, spip::test::wide_lobe_case(multiscale)), 0) << "see " << out << ".log";
    spip::test::expect_wide_lobe_outcome(out, spip::test::file_text(out.string() + ".log"), multiscale);
    // The set's frequencies are LSRK (MEAS_FREQ_REF 1), and its cubes say so.
    EXPECT_EQ(spip::fits::read_image((out / "spip-image-I.fits").string()).text("SPECSYS"), "LSRK");
  }
}
