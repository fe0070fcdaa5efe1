// Primary-beam correction end to end: spip-simulate makes an apparent sky through an
// Airy beam (a polarised source at the pointing centre and an equal one where the beam
// is near half power, both of spectral index -0.7 and a Faraday depth of 5 rad/m^2),
// spip images it with beam.model airy and the dish from the MS's ANTENNA table, and the
// products are checked against the truth: PREFIX-pb.fits is the beam's response
// (computed here from J1), the restored image sees the offset source at that response,
// PREFIX-image-pb-* give it its true Stokes I, spectrum and polarised flux in every
// channel, blank where the response is below beam.limit, and the Faraday stage's peak
// maps its true polarised flux and Faraday depth; two ranks give the same bits. The
// same sky corrected with the Airy beam given as a FITS cube on a coarser grid
// (beam.model fits) gives the same truth, and a cube's leakage planes, put into the
// simulated sky by spip-simulate, are taken out of Q, U and V. On real data, beam.model
// auto gives the VLA set NRAO's published beam width and refuses telescopes it has no
// model of in one line.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <numbers>
#include <string>
#include <vector>

#include "scratch.hpp"
#include "spip/fits/fits_image.hpp"
#include "spip/fits/fits_table.hpp"

namespace fs = std::filesystem;

namespace {

constexpr int size = 256, offset_px = 60;
constexpr double cell_arcsec = 40, dish = 94, dec0_deg = 60, pol_frac = 0.3, rm = 5, alpha = -0.7, nu0 = 1.4e8;
constexpr double freq0 = 120e6, dfreq = 6.65e6;
constexpr int channels = 8;

fs::path scratch(const std::string& name) { return spip::test::scratch_path(name); }

int run(const std::string& command) {
  const std::string full = command + " > " + scratch("log.txt").string() + " 2>&1";
  return std::system(full.c_str());
}

// The Airy power pattern at angle theta, from J1 as a textbook gives it.
double airy(double theta, double freq_hz) {
  const double x = std::numbers::pi * dish * std::sin(theta) * freq_hz / 299792458.0;
  return std::pow(2 * std::cyl_bessel_j(1.0, x) / x, 2);
}

double value(const spip::fits::FitsImage& cube, int x, int y, int c) {
  return cube.data[(static_cast<std::size_t>(c) * size + y) * size + x];
}

// The offset source sits on the centre of pixel (size/2 - offset, size/2): l = offset
// cells east, m = 0, by the SIN projection's inverse.
const double cell = cell_arcsec / 206264.806, dec0 = dec0_deg * std::numbers::pi / 180;
const double theta = std::asin(offset_px * cell);
constexpr int xs = size / 2 - offset_px, ys = size / 2, xc = size / 2;

// The two sources seen through `beam_args` (spip-simulate's --beam and its keys).
fs::path apparent_ms(const std::string& name, const std::string& beam_args) {
  const double l = offset_px * cell, n = std::sqrt(1 - l * l);
  const double ra = std::atan2(l, n * std::cos(dec0)), dec = std::asin(n * std::sin(dec0));
  const fs::path sky = scratch("two.sky.txt");
  std::ofstream(sky) << std::setprecision(15)
                     << "Format = Name, RaD, DecD, I, Q, U, V, ReferenceFrequency, SpectralIndex, "
                        "RotationMeasure\n"
                     << "\"centre\", 0.0, " << dec0_deg << ", 1.0, " << pol_frac << ", 0.0, 0.0, " << nu0 << ", "
                     << alpha << ", " << rm << "\n"
                     << "\"offset\", " << ra * 180 / std::numbers::pi << ", " << dec * 180 / std::numbers::pi
                     << ", 1.0, " << pol_frac << ", 0.0, 0.0, " << nu0 << ", " << alpha << ", " << rm << "\n";
  const fs::path ms = scratch(name);
  const int code = run(std::string(SPIP_SIMULATE_BIN) + " --sky " + sky.string() + " --telescope " + SPIP_TEST_DATA +
                       "/oskar_small.tm --ra 0 --dec " + std::to_string(dec0_deg) + " --freq-start " +
                       std::to_string(freq0) + " --freq-inc " + std::to_string(dfreq) + " --channels " +
                       std::to_string(channels) + " --times 36 --dish-diameter " + std::to_string(dish) + " " +
                       beam_args + " --out " + ms.string());
  EXPECT_EQ(code, 0) << spip::test::file_text(scratch("log.txt"));
  return ms;
}

// spip's products of `ms`, corrected with `beam_args` (its beam keys).
fs::path corrected(const fs::path& ms, const std::string& name, const std::string& beam_args) {
  const fs::path out = scratch(name);
  const int code = run(std::string(SPIP_BIN) + " --input.ms " + ms.string() + " --output.dir " + out.string() +
                       " --image.size " + std::to_string(size) + " --image.scale " + std::to_string(cell_arcsec) +
                       " --clean.niter 2000 --clean.threshold 0.002 --parallel.threads 2 " + beam_args);
  EXPECT_EQ(code, 0) << spip::test::file_text(scratch("log.txt"));
  return out;
}

TEST(BeamCorrection, GivesTheTrueFluxesWhereTheApparentOnesAreAttenuated) {
  const fs::path ms = apparent_ms("apparent.ms", "--beam airy");
  const fs::path out = corrected(ms, "out", "--beam.model airy");
  const auto pb = spip::fits::read_image((out / "spip-pb.fits").string());
  const auto image_i = spip::fits::read_image((out / "spip-image-I.fits").string());
  const auto pb_i = spip::fits::read_image((out / "spip-image-pb-I.fits").string());
  const auto pb_q = spip::fits::read_image((out / "spip-image-pb-Q.fits").string());
  const auto pb_u = spip::fits::read_image((out / "spip-image-pb-U.fits").string());
  double lowest = 1;
  for (int c = 0; c < channels; ++c) {
    SCOPED_TRACE("channel " + std::to_string(c));
    const double freq = freq0 + c * dfreq, response = airy(theta, freq), truth = std::pow(freq / nu0, alpha);
    lowest = std::min(lowest, response);
    EXPECT_NEAR(value(pb, xs, ys, c), response, 1e-6);
    EXPECT_NEAR(value(pb, xc, ys, c), 1.0, 1e-12);
    // The apparent image sees the offset source at the response; the corrected one at its flux.
    EXPECT_NEAR(value(image_i, xs, ys, c), response * truth, 0.01 * truth);
    EXPECT_NEAR(value(pb_i, xs, ys, c), truth, 0.01 * truth);
    EXPECT_NEAR(value(pb_i, xc, ys, c), truth, 0.01 * truth);
    EXPECT_NEAR(std::hypot(value(pb_q, xs, ys, c), value(pb_u, xs, ys, c)), pol_frac * truth, 0.02 * pol_frac * truth);
    // The corners lie past the first null: blank.
    EXPECT_TRUE(std::isnan(value(pb_i, 0, 0, c)));
    std::printf("[ measured ] channel %d: response %.4f; apparent %.4f, corrected %.4f Jy (truth %.4f); corrected PI "
                "%.4f (truth %.4f)\n",
                c, response, value(image_i, xs, ys, c), value(pb_i, xs, ys, c), truth,
                std::hypot(value(pb_q, xs, ys, c), value(pb_u, xs, ys, c)), pol_frac * truth);
  }
  EXPECT_LT(lowest, 0.6);  // uncorrected, the source is more than 40 % low
  // The spectrum: last channel over first, as the power law says once corrected; the
  // apparent one is steepened by the beam's slope.
  const double shape = std::pow((freq0 + (channels - 1) * dfreq) / freq0, alpha);
  const double corrected_shape = value(pb_i, xs, ys, channels - 1) / value(pb_i, xs, ys, 0);
  const double apparent_shape = value(image_i, xs, ys, channels - 1) / value(image_i, xs, ys, 0);
  EXPECT_NEAR(corrected_shape, shape, 0.02 * shape);
  EXPECT_LT(apparent_shape, 0.8 * shape);
  // The Faraday stage works from the corrected planes: the peak maps give the offset
  // source's true polarised flux (at the band's reference frequency) and its depth.
  const auto peak_pi = spip::fits::read_image((out / "spip-peak-pi.fits").string());
  const auto peak_phi = spip::fits::read_image((out / "spip-peak-phi.fits").string());
  const double pi_source = peak_pi.data[static_cast<std::size_t>(ys) * size + xs];
  const double pi_centre = peak_pi.data[static_cast<std::size_t>(ys) * size + xc];
  double mean_pi = 0;  // the FDF's peak: the channels' polarised fluxes, averaged
  for (int c = 0; c < channels; ++c) mean_pi += pol_frac * std::pow((freq0 + c * dfreq) / nu0, alpha) / channels;
  EXPECT_NEAR(pi_source, mean_pi, 0.02 * mean_pi);
  EXPECT_NEAR(pi_centre, mean_pi, 0.02 * mean_pi);
  EXPECT_NEAR(peak_phi.data[static_cast<std::size_t>(ys) * size + xs], rm, 0.5);
  // Past the limit in any channel, every Faraday product is blank; inside, none is.
  const auto pi_err = spip::fits::read_image((out / "spip-peak-pi-err.fits").string());
  const auto mean_i = spip::fits::read_image((out / "spip-moment-mean-I.fits").string());
  for (const auto* map : {&peak_pi, &peak_phi, &pi_err, &mean_i}) {
    EXPECT_TRUE(std::isnan(map->data[0])) << map->path;                                        // a corner
    EXPECT_FALSE(std::isnan(map->data[static_cast<std::size_t>(ys) * size + xs])) << map->path;  // the source
  }
  // The catalogue lists each source's distance from the pointing and the beam's response
  // there at nu0 = c / sqrt(LAMSQ0), where its peak PI is.
  const spip::fits::Table catalogue = spip::fits::read_table((out / "spip-catalogue.fits").string());
  // At the position the finder gives (to a fraction of a pixel), its distance is
  // asin(sqrt(l^2 + m^2)) in the SIN projection.
  const auto& x = catalogue.values<double>("x_pix");
  const auto& y = catalogue.values<double>("y_pix");
  const auto& beamdist = catalogue.values<double>("beamdist");
  const auto& listed_response = catalogue.values<double>("beam_response");
  const double nu_ref = 299792458.0 / std::sqrt(peak_pi.number("LAMSQ0"));
  int listed = 0;
  for (std::size_t row = 0; row < x.size(); ++row) {
    if (std::abs(y[row] - ys) > 0.5 || (std::abs(x[row] - xs) > 0.5 && std::abs(x[row] - xc) > 0.5)) continue;
    ++listed;
    const double l = -(x[row] - size / 2) * cell, m = (y[row] - size / 2) * cell;
    const double distance = std::asin(std::hypot(l, m));
    EXPECT_NEAR(beamdist[row], distance * 180 / std::numbers::pi, 1e-9) << row;
    EXPECT_NEAR(listed_response[row], distance > 0 ? airy(distance, nu_ref) : 1.0, 1e-6) << row;
  }
  EXPECT_EQ(listed, 2);
  // Two ranks, each correcting its own channels and row groups, give the same bits.
  const fs::path two = scratch("two-ranks");
  ASSERT_EQ(run(std::string(SPIP_MPIEXEC) + " 2 " + SPIP_BIN + " --input.ms " + ms.string() + " --output.dir " +
                two.string() + " --image.size " + std::to_string(size) + " --image.scale " +
                std::to_string(cell_arcsec) +
                " --clean.niter 2000 --clean.threshold 0.002 --beam.model airy --parallel.threads 1"),
            0)
      << std::ifstream(scratch("log.txt")).rdbuf();
  for (const char* name : {"spip-pb.fits", "spip-image-pb-I.fits", "spip-image-pb-U.fits", "spip-peak-pi.fits",
                           "spip-peak-phi.fits", "spip-peak-pi-err.fits"}) {
    const auto one = spip::fits::read_image((out / name).string()), other = spip::fits::read_image((two / name).string());
    ASSERT_EQ(one.data.size(), other.data.size()) << name;
    for (std::size_t i = 0; i < one.data.size(); ++i)
      if (!(std::isnan(one.data[i]) && std::isnan(other.data[i]))) {
        ASSERT_EQ(one.data[i], other.data[i]) << name << " " << i;
      }
  }
  std::printf("[ measured ] spectrum last / first: corrected %.4f, apparent %.4f (truth %.4f); peak PI offset %.4f, "
              "centre %.4f (truth %.4f); peak phi %.3f rad/m^2 (truth %.0f)\n",
              corrected_shape, apparent_shape, shape, pi_source, pi_centre, mean_pi,
              peak_phi.data[static_cast<std::size_t>(ys) * size + xs], rm);
}

// Both sources' corrected Stokes I within 1 % and polarised flux within 2 % in every
// channel, their spectra within 2 %, and their peak PI within 2 % and Faraday depth
// within 0.5 rad/m^2 of the truth.
void expect_true_sky(const fs::path& out, const char* label) {
  const auto pb_i = spip::fits::read_image((out / "spip-image-pb-I.fits").string());
  const auto pb_q = spip::fits::read_image((out / "spip-image-pb-Q.fits").string());
  const auto pb_u = spip::fits::read_image((out / "spip-image-pb-U.fits").string());
  const auto peak_pi = spip::fits::read_image((out / "spip-peak-pi.fits").string());
  const auto peak_phi = spip::fits::read_image((out / "spip-peak-phi.fits").string());
  double mean_pi = 0;
  for (int c = 0; c < channels; ++c) mean_pi += pol_frac * std::pow((freq0 + c * dfreq) / nu0, alpha) / channels;
  const double shape = std::pow((freq0 + (channels - 1) * dfreq) / freq0, alpha);
  for (int x : {xs, xc}) {
    SCOPED_TRACE(std::string(label) + ", pixel x " + std::to_string(x));
    double worst_i = 0, worst_p = 0;
    for (int c = 0; c < channels; ++c) {
      const double truth = std::pow((freq0 + c * dfreq) / nu0, alpha);
      const double p = std::hypot(value(pb_q, x, ys, c), value(pb_u, x, ys, c));
      EXPECT_NEAR(value(pb_i, x, ys, c), truth, 0.01 * truth) << "channel " << c;
      EXPECT_NEAR(p, pol_frac * truth, 0.02 * pol_frac * truth) << "channel " << c;
      worst_i = std::max(worst_i, std::abs(value(pb_i, x, ys, c) / truth - 1));
      worst_p = std::max(worst_p, std::abs(p / (pol_frac * truth) - 1));
    }
    const double corrected_shape = value(pb_i, x, ys, channels - 1) / value(pb_i, x, ys, 0);
    const double pi = peak_pi.data[static_cast<std::size_t>(ys) * size + x];
    const double phi = peak_phi.data[static_cast<std::size_t>(ys) * size + x];
    EXPECT_NEAR(corrected_shape, shape, 0.02 * shape);
    EXPECT_NEAR(pi, mean_pi, 0.02 * mean_pi);
    EXPECT_NEAR(phi, rm, 0.5);
    std::printf("[ measured ] %s, source at x %d: I off by %.2f %% at most, PI by %.2f %%; spectrum %.4f (truth "
                "%.4f); peak PI %.4f (truth %.4f); phi %.3f (truth %.0f)\n",
                label, x, 100 * worst_i, 100 * worst_p, corrected_shape, shape, pi, mean_pi, phi, rm);
  }
}

// The Airy beam as a FITS cube on a grid 4 times coarser than the image, its FREQ
// planes every 7/3 channels, with the constant leakages `leaked` (I -> Q, U, V) where
// given.
fs::path airy_cube(const std::string& name, const std::vector<double>& leaked) {
  constexpr int coarse = size / 4, planes = 4;
  const double step_hz = (channels - 1) * dfreq / (planes - 1);
  spip::fits::ImageHeader h;
  h.nx = h.ny = coarse;
  h.dec_rad = dec0;
  h.cell_rad = 4 * cell;
  h.spectral = spip::fits::LinearAxis{"FREQ", "Hz", freq0, step_hz, 1.0, planes};
  h.stokes = spip::fits::Stokes::I;
  h.stokes_planes = leaked.empty() ? 1 : 4;
  h.bunit = "";
  std::vector<float> data;
  for (int f = 0; f < planes; ++f)
    for (int y = 0; y < coarse; ++y)
      for (int x = 0; x < coarse; ++x) {
        const double l = -(x - coarse / 2) * h.cell_rad, m = (y - coarse / 2) * h.cell_rad, r = std::hypot(l, m);
        data.push_back(static_cast<float>(r > 0 ? airy(std::asin(r), freq0 + f * step_hz) : 1.0));
      }
  for (double fraction : leaked) data.insert(data.end(), static_cast<std::size_t>(planes) * coarse * coarse, static_cast<float>(fraction));
  const fs::path path = scratch(name);
  spip::fits::write_image(path.string(), h, data);
  return path;
}

// The second measurement: the true sky through the Airy beam, corrected with
// that beam sampled as a cube 4 times coarser than the image, in position and frequency.
TEST(BeamCorrection, ABeamCubeOnACoarserGridGivesTheTrueSkyAsTheModelDoes) {
  const fs::path ms = apparent_ms("apparent.ms", "--beam airy");
  const fs::path cube = airy_cube("airy.fits", {});
  expect_true_sky(corrected(ms, "out", "--beam.model fits --beam.fits " + cube.string()), "fits cube, 4x coarser");
}

// A cube's leakages: spip-simulate adds 2 %, -1 % and 0.5 % of each source's apparent I
// to its Q, U and V; the corrected cubes take them out again, the apparent ones keep them.
TEST(BeamCorrection, TakesACubesLeakageOutOfQUAndV) {
  const std::vector<double> leaked{0.02, -0.01, 0.005};
  const fs::path cube = airy_cube("leaky.fits", leaked);
  const fs::path ms = apparent_ms("leaky.ms", "--beam fits --beam-fits " + cube.string());
  const fs::path out = corrected(ms, "out", "--beam.model fits --beam.fits " + cube.string());
  expect_true_sky(out, "fits cube with leakage");
  const auto image_i = spip::fits::read_image((out / "spip-image-I.fits").string());
  const auto image_v = spip::fits::read_image((out / "spip-image-V.fits").string());
  const auto pb_v = spip::fits::read_image((out / "spip-image-pb-V.fits").string());
  for (int c = 0; c < channels; ++c) {
    const double truth = std::pow((freq0 + c * dfreq) / nu0, alpha);
    EXPECT_NEAR(value(image_v, xs, ys, c), 0.005 * value(image_i, xs, ys, c), 0.001 * truth) << c;
    EXPECT_NEAR(value(pb_v, xs, ys, c), 0, 0.001 * truth) << c;
  }
  std::printf("[ measured ] leakage I -> V 0.5 %%: the offset source's V in channel 0 apparent %.5f, corrected %.5f "
              "(truth 0)\n",
              value(image_v, xs, ys, 0), value(pb_v, xs, ys, 0));
}

}  // namespace

namespace {

// A beam needs one dish: the ATCA snapshot's ANTENNA table has none, and is refused in
// one line naming beam.dish_diameter until it is given, or until beam.model auto takes
// ATCA's own.
TEST(BeamCorrection, AnMsWithoutOneDishIsRefusedInOneLineUntilTheDishIsGiven) {
  const std::string plan = std::string(SPIP_BIN) + " --input.ms " + SPIP_TEST_DATA +
                           "/real/atca_1934_snapshot.ms --beam.model gaussian --output.dir " +
                           scratch("out").string() + " --plan";
  EXPECT_NE(run(plan), 0);
  std::ifstream log(scratch("log.txt"));
  const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("spip: error: beam.model = gaussian needs one dish diameter, but "), std::string::npos) << text;
  EXPECT_NE(text.find("has no positive DISH_DIAMETER; set beam.dish_diameter\n"), std::string::npos) << text;
  EXPECT_EQ(run(plan + " --beam.dish_diameter 22"), 0);
  // beam.model auto knows ATCA's dishes: the telescope's name is enough.
  EXPECT_EQ(run(std::string(SPIP_BIN) + " --input.ms " + SPIP_TEST_DATA +
                "/real/atca_1934_snapshot.ms --beam.model auto --output.dir " + scratch("out").string() + " --plan"),
            0)
      << spip::test::file_text(scratch("log.txt"));
}

}  // namespace

namespace {

// The VLA set (36.3 GHz, TELESCOPE_NAME EVLA) with beam.model auto: its pb cube's
// half-power width, read along the row through the pointing, is NRAO's published
// 42 / nu_GHz arcmin within 2 % in its first and last channels.
TEST(BeamCorrection, AutoGivesTheVlaSetNraosPublishedBeamWidth) {
  const fs::path out = scratch("out");
  ASSERT_EQ(run(std::string(SPIP_BIN) + " --input.ms " + SPIP_TEST_DATA + "/real/vla_j1008_36ghz.ms --output.dir " +
                out.string() + " --image.size 128 --image.scale 1 --clean.niter 0 --beam.model auto "
                "--output.channel_cubes pb --parallel.threads 2"),
            0)
      << spip::test::file_text(scratch("log.txt"));
  const auto pb = spip::fits::read_image((out / "spip-pb.fits").string());
  const int n = static_cast<int>(pb.shape[0]), planes = static_cast<int>(pb.shape[2]);
  const double cell_arcmin = std::abs(pb.number("CDELT1")) * 60;
  for (int c : {0, planes - 1}) {
    const float* row = pb.data.data() + (static_cast<std::size_t>(c) * n + n / 2) * n;
    // From the pointing outwards (to the east, x falling) to the first pixel below half power.
    int x = n / 2;
    while (x > 0 && row[x - 1] > 0.5f) --x;
    ASSERT_GT(x, 0);
    const double radius = (n / 2 - x + (row[x] - 0.5) / (row[x] - row[x - 1])) * cell_arcmin;
    const double ghz = (pb.number("CRVAL3") + (c + 1 - pb.number("CRPIX3")) * pb.number("CDELT3")) / 1e9;
    std::printf("[ measured ] VLA set, channel %d (%.4f GHz): pb half-power width %.4f arcmin; NRAO 42 / nu_GHz: "
                "%.4f\n",
                c, ghz, 2 * radius, 42 / ghz);
    EXPECT_NEAR(2 * radius, 42 / ghz, 0.02 * 42 / ghz);
  }
  EXPECT_NE(spip::test::file_text(out / "spip-config.ini").find("model = auto"), std::string::npos);
}

// Sets from telescopes without a model here are refused in one line that names the keys.
TEST(BeamCorrection, AutoRefusesTelescopesWithoutAModelInOneLine) {
  for (const char* set : {"mwa_1102865728_small.ms", "hera_drift_zen2458432.ms", "ovrolwa_zenith_28mhz.ms"}) {
    EXPECT_NE(run(std::string(SPIP_BIN) + " --input.ms " + SPIP_TEST_DATA + "/real/" + set +
                  " --beam.model auto --output.dir " + scratch("out").string() + " --plan"),
              0)
        << set;
    const std::string log = spip::test::file_text(scratch("log.txt"));
    EXPECT_NE(log.find("spip: error: beam.model = auto: "), std::string::npos) << log;
    EXPECT_NE(log.find("which has no beam model here (VLA, ATCA, MeerKAT and ASKAP have); set beam.model to gaussian "
                       "or airy with beam.dish_diameter, or fits with beam.fits\n"),
              std::string::npos)
        << log;
    EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1) << log;
  }
}

}  // namespace
