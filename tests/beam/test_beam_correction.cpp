// Primary-beam correction end to end: spip-simulate makes an apparent sky through an
// Airy beam (five polarised sources, one at the pointing centre and four where the beam
// attenuates them by 20 to 45 % over the band, each with its own flux, spectral index,
// polarised fraction, angle and Faraday depth), spip images it with beam.model airy and
// the dish from the MS's ANTENNA table, and the products are checked against the truth:
// PREFIX-pb.fits is the beam's response (computed here from J1), the restored image sees
// each source at that response, PREFIX-image-pb-* give it its true Stokes I, spectrum and
// polarised flux in every channel, blank where the response is below beam.limit, the
// Faraday stage's peak maps its true polarised flux and Faraday depth, and the catalogue
// its distance and response; two ranks give the same bits. The same sky corrected with
// the Airy beam given as a FITS cube on a coarser grid (beam.model fits) gives the same
// truth, and a cube's leakage planes, put into the simulated sky by spip-simulate, are
// taken out of Q, U and V. On real data, beam.model auto gives the VLA set NRAO's
// published beam width and refuses telescopes it has no model of in one line.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <sys/wait.h>

#include <cmath>
#include <complex>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <numbers>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "ms_edit.hpp"
#include "scratch.hpp"
#include "spip/fits/fits_image.hpp"
#include "spip/fits/fits_table.hpp"

namespace fs = std::filesystem;

namespace {

constexpr int size = 256;
constexpr double cell_arcsec = 40, dish = 94, dec0_deg = 60, nu0 = 1.4e8;
constexpr double freq0 = 120e6, dfreq = 6.65e6;
constexpr int channels = 8;
const double cell = cell_arcsec / 206264.806, dec0 = dec0_deg * std::numbers::pi / 180;

// A source on the centre of pixel (size/2 + dx, size/2 + dy): l = -dx cells, m = dy cells.
struct Source {
  int dx, dy;
  double flux, alpha, pol_frac, chi_deg, rm;

  int x() const { return size / 2 + dx; }
  int y() const { return size / 2 + dy; }
  double l() const { return -dx * cell; }
  double m() const { return dy * cell; }
  double theta() const { return std::asin(std::hypot(l(), m())); }
  double stokes_i(double freq_hz) const { return flux * std::pow(freq_hz / nu0, alpha); }
  // The FDF's peak: the channels' polarised fluxes averaged (uniform weights, Faraday thin).
  double mean_pi() const {
    double sum = 0;
    for (int c = 0; c < channels; ++c) sum += pol_frac * stokes_i(freq0 + c * dfreq) / channels;
    return sum;
  }
  double shape() const { return std::pow((freq0 + (channels - 1) * dfreq) / freq0, alpha); }
};

const std::vector<Source> sources{
    {0, 0, 1.0, -0.7, 0.30, 0, 5.0},     {-36, 0, 0.8, -1.2, 0.25, 30, -3.0}, {0, 43, 1.2, 0.0, 0.40, -20, 7.5},
    {36, -36, 0.9, -0.3, 0.20, 60, -6.0}, {-37, -38, 1.0, 0.4, 0.30, 10, 2.0},
};

fs::path scratch(const std::string& name) { return spip::test::scratch_path(name); }

int run(const std::string& command) {
  const std::string full = command + " > " + scratch("log.txt").string() + " 2>&1";
  return std::system(full.c_str());
}

// The Airy power pattern at angle theta, from J1 as a textbook gives it.
double airy(double theta, double freq_hz) {
  if (theta == 0) return 1;
  const double x = std::numbers::pi * dish * std::sin(theta) * freq_hz / 299792458.0;
  return std::pow(2 * std::cyl_bessel_j(1.0, x) / x, 2);
}

double value(const spip::fits::FitsImage& cube, int x, int y, int c) {
  return cube.data[(static_cast<std::size_t>(c) * size + y) * size + x];
}

double pixel(const spip::fits::FitsImage& map, const Source& source) {
  return map.data[static_cast<std::size_t>(source.y()) * size + source.x()];
}

// The direction of the point (l, m) of the tangent plane about (0, dec0), by the SIN
// projection's inverse: RA, Dec in degrees.
std::pair<double, double> sky_direction(double l, double m) {
  const double n = std::sqrt(1 - l * l - m * m);
  const double ra = std::atan2(l, n * std::cos(dec0) - m * std::sin(dec0));
  const double dec = std::asin(m * std::cos(dec0) + n * std::sin(dec0));
  return {ra * 180 / std::numbers::pi, dec * 180 / std::numbers::pi};
}

// The angle between the direction at (l, m) = `from` of the image's tangent plane and that
// of pixel (x, y).
double distance_from(std::pair<double, double> from, double x, double y) {
  const auto unit = [](std::pair<double, double> lm) {
    const auto [ra, dec] = sky_direction(lm.first, lm.second);
    const double a = ra * std::numbers::pi / 180, d = dec * std::numbers::pi / 180;
    return std::array<double, 3>{std::cos(d) * std::cos(a), std::cos(d) * std::sin(a), std::sin(d)};
  };
  const auto p = unit(from), q = unit({-(x - size / 2) * cell, (y - size / 2) * cell});
  const double cross = std::hypot(p[1] * q[2] - p[2] * q[1], p[2] * q[0] - p[0] * q[2], p[0] * q[1] - p[1] * q[0]);
  return std::atan2(cross, p[0] * q[0] + p[1] * q[1] + p[2] * q[2]);
}

// The sources `sky` seen through `beam_args` (spip-simulate's --beam and its keys, and
// any other) from a phase centre at (l, m) = `pointing` of the image's tangent plane.
fs::path apparent_ms(const std::string& name, const std::string& beam_args, const std::vector<Source>& sky = sources,
                     std::pair<double, double> pointing = {0, 0}, int count = channels) {
  const fs::path sky_file = scratch(name + ".sky.txt");
  std::ofstream out(sky_file);
  out << std::setprecision(15)
      << "Format = Name, RaD, DecD, I, Q, U, V, ReferenceFrequency, SpectralIndex, RotationMeasure\n";
  for (const Source& s : sky) {
    const auto [ra, dec] = sky_direction(s.l(), s.m());
    const std::complex<double> p = std::polar(s.pol_frac * s.flux, 2 * s.chi_deg * std::numbers::pi / 180);
    out << "\"s" << s.dx << "_" << s.dy << "\", " << ra << ", " << dec << ", " << s.flux << ", " << p.real() << ", "
        << p.imag() << ", 0.0, " << nu0 << ", " << s.alpha << ", " << s.rm << "\n";
  }
  out.close();
  const fs::path ms = scratch(name);
  const auto [ra, dec] = sky_direction(pointing.first, pointing.second);
  std::ostringstream centre;
  centre << std::setprecision(15) << " --ra " << ra << " --dec " << dec;
  const int code = run(std::string(SPIP_SIMULATE_BIN) + " --sky " + sky_file.string() + " --telescope " + SPIP_TEST_DATA +
                       "/oskar_small.tm" + centre.str() + " --freq-start " +
                       std::to_string(freq0) + " --freq-inc " + std::to_string(dfreq) + " --channels " +
                       std::to_string(count) + " --times 36 --dish-diameter " + std::to_string(dish) + " " +
                       beam_args + " --out " + ms.string());
  EXPECT_EQ(code, 0) << spip::test::file_text(scratch("log.txt"));
  return ms;
}

// spip's products of `ms`, corrected with `beam_args` (its beam keys).
fs::path corrected(const fs::path& ms, const std::string& name, const std::string& beam_args) {
  const fs::path out = scratch(name);
  const int code = run(std::string(SPIP_BIN) + " --input.ms " + ms.string() + " --output.dir " + out.string() +
                       " --image.size " + std::to_string(size) + " --image.scale " + std::to_string(cell_arcsec) +
                       " --clean.niter 4000 --clean.threshold 0.001 --parallel.threads 2 " + beam_args);
  EXPECT_EQ(code, 0) << spip::test::file_text(scratch("log.txt"));
  return out;
}

// Every source's corrected Stokes I within 1 % and polarised flux within 2 % in every
// channel, its spectrum (last channel over first) within 2 %, and its peak PI within 2 %
// and Faraday depth within 0.5 rad/m^2 of the truth.
void expect_true_sky(const fs::path& out, const std::string& label, const std::vector<Source>& sky = sources) {
  const auto pb_i = spip::fits::read_image((out / "spip-image-pb-I.fits").string());
  const auto pb_q = spip::fits::read_image((out / "spip-image-pb-Q.fits").string());
  const auto pb_u = spip::fits::read_image((out / "spip-image-pb-U.fits").string());
  const auto peak_pi = spip::fits::read_image((out / "spip-peak-pi.fits").string());
  const auto peak_phi = spip::fits::read_image((out / "spip-peak-phi.fits").string());
  for (const Source& s : sky) {
    SCOPED_TRACE(label + ", source at (" + std::to_string(s.x()) + ", " + std::to_string(s.y()) + ")");
    double worst_i = 0, worst_p = 0;
    for (int c = 0; c < channels; ++c) {
      const double truth = s.stokes_i(freq0 + c * dfreq);
      const double p = std::hypot(value(pb_q, s.x(), s.y(), c), value(pb_u, s.x(), s.y(), c));
      EXPECT_NEAR(value(pb_i, s.x(), s.y(), c), truth, 0.01 * truth) << "channel " << c;
      EXPECT_NEAR(p, s.pol_frac * truth, 0.02 * s.pol_frac * truth) << "channel " << c;
      worst_i = std::max(worst_i, std::abs(value(pb_i, s.x(), s.y(), c) / truth - 1));
      worst_p = std::max(worst_p, std::abs(p / (s.pol_frac * truth) - 1));
    }
    const double shape = value(pb_i, s.x(), s.y(), channels - 1) / value(pb_i, s.x(), s.y(), 0);
    EXPECT_NEAR(shape, s.shape(), 0.02 * s.shape());
    EXPECT_NEAR(pixel(peak_pi, s), s.mean_pi(), 0.02 * s.mean_pi());
    EXPECT_NEAR(pixel(peak_phi, s), s.rm, 0.5);
    std::printf("[ measured ] %s, source at %.2f deg: I off by %.2f %% at most, PI by %.2f %%; spectrum %.4f (truth "
                "%.4f); peak PI %.4f (truth %.4f); phi %.3f (truth %.1f)\n",
                label.c_str(), s.theta() * 180 / std::numbers::pi, 100 * worst_i, 100 * worst_p, shape, s.shape(),
                pixel(peak_pi, s), s.mean_pi(), pixel(peak_phi, s), s.rm);
  }
}

TEST(BeamCorrection, GivesTheTrueFluxesWhereTheApparentOnesAreAttenuated) {
  const fs::path ms = apparent_ms("apparent.ms", "--beam airy");
  const fs::path out = corrected(ms, "out", "--beam.model airy");
  const auto pb = spip::fits::read_image((out / "spip-pb.fits").string());
  const auto image_i = spip::fits::read_image((out / "spip-image-I.fits").string());
  const auto pb_i = spip::fits::read_image((out / "spip-image-pb-I.fits").string());
  for (const Source& s : sources) {
    SCOPED_TRACE("source at (" + std::to_string(s.x()) + ", " + std::to_string(s.y()) + ")");
    double attenuation = 0;  // 1 - the response, over the band
    for (int c = 0; c < channels; ++c) {
      const double freq = freq0 + c * dfreq, response = airy(s.theta(), freq);
      attenuation += (1 - response) / channels;
      EXPECT_NEAR(value(pb, s.x(), s.y(), c), response, 1e-6) << "channel " << c;
      // The apparent image sees the source at the response.
      EXPECT_NEAR(value(image_i, s.x(), s.y(), c), response * s.stokes_i(freq), 0.01 * s.stokes_i(freq)) << c;
    }
    const double apparent_shape = value(image_i, s.x(), s.y(), channels - 1) / value(image_i, s.x(), s.y(), 0);
    std::printf("[ measured ] source at %.2f deg: uncorrected, %.1f %% low over the band (%.1f %% in the first "
                "channel, %.1f %% in the last); spectrum %.4f (truth %.4f)\n",
                s.theta() * 180 / std::numbers::pi, 100 * attenuation, 100 * (1 - airy(s.theta(), freq0)),
                100 * (1 - airy(s.theta(), freq0 + (channels - 1) * dfreq)), apparent_shape, s.shape());
    if (s.dx == 0 && s.dy == 0) continue;
    // Uncorrected, each off-axis source is 20 % to 45 % low and its spectrum steepened.
    EXPECT_GT(attenuation, 0.2);
    EXPECT_LT(attenuation, 0.45);
    EXPECT_LT(apparent_shape, 0.9 * s.shape());
  }
  expect_true_sky(out, "airy");
  // The corners lie past the first null: blank in the corrected cubes and every Faraday
  // product (a pixel below the limit in any channel is); no source's pixel is.
  const auto peak_pi = spip::fits::read_image((out / "spip-peak-pi.fits").string());
  const auto peak_phi = spip::fits::read_image((out / "spip-peak-phi.fits").string());
  const auto pi_err = spip::fits::read_image((out / "spip-peak-pi-err.fits").string());
  const auto mean_i = spip::fits::read_image((out / "spip-moment-mean-I.fits").string());
  for (int c = 0; c < channels; ++c) EXPECT_TRUE(std::isnan(value(pb_i, 0, 0, c)));
  for (const auto* map : {&peak_pi, &peak_phi, &pi_err, &mean_i}) {
    EXPECT_TRUE(std::isnan(map->data[0])) << map->path;
    for (const Source& s : sources) EXPECT_FALSE(std::isnan(pixel(*map, s))) << map->path;
  }
  // The catalogue lists each source's distance from the pointing and the beam's response
  // there at nu0 = c / sqrt(LAMSQ0): at the position the finder gives (to a fraction of a
  // pixel), asin(sqrt(l^2 + m^2)) in the SIN projection.
  const spip::fits::Table catalogue = spip::fits::read_table((out / "spip-catalogue.fits").string());
  const auto& x = catalogue.values<double>("x_pix");
  const auto& y = catalogue.values<double>("y_pix");
  const auto& beamdist = catalogue.values<double>("beamdist");
  const auto& listed_response = catalogue.values<double>("beam_response");
  const double nu_ref = 299792458.0 / std::sqrt(peak_pi.number("LAMSQ0"));
  for (const Source& s : sources) {
    int listed = 0;
    for (std::size_t row = 0; row < x.size(); ++row) {
      if (std::abs(x[row] - s.x()) > 0.5 || std::abs(y[row] - s.y()) > 0.5) continue;
      ++listed;
      const double distance = std::asin(std::hypot(-(x[row] - size / 2) * cell, (y[row] - size / 2) * cell));
      EXPECT_NEAR(beamdist[row], distance * 180 / std::numbers::pi, 1e-9) << row;
      EXPECT_NEAR(listed_response[row], airy(distance, nu_ref), 1e-6) << row;
    }
    EXPECT_EQ(listed, 1) << "source at (" << s.x() << ", " << s.y() << ")";
  }
  // Two ranks, each correcting its own channels and row groups, give the same bits.
  const fs::path two = scratch("two-ranks");
  ASSERT_EQ(run(std::string(SPIP_MPIEXEC) + " 2 " + SPIP_BIN + " --input.ms " + ms.string() + " --output.dir " +
                two.string() + " --image.size " + std::to_string(size) + " --image.scale " +
                std::to_string(cell_arcsec) +
                " --clean.niter 4000 --clean.threshold 0.001 --beam.model airy --parallel.threads 1"),
            0)
      << spip::test::file_text(scratch("log.txt"));
  for (const char* name : {"spip-pb.fits", "spip-image-pb-I.fits", "spip-image-pb-U.fits", "spip-peak-pi.fits",
                           "spip-peak-phi.fits", "spip-peak-pi-err.fits"}) {
    const auto one = spip::fits::read_image((out / name).string()), other = spip::fits::read_image((two / name).string());
    ASSERT_EQ(one.data.size(), other.data.size()) << name;
    for (std::size_t i = 0; i < one.data.size(); ++i)
      if (!(std::isnan(one.data[i]) && std::isnan(other.data[i]))) {
        ASSERT_EQ(one.data[i], other.data[i]) << name << " " << i;
      }
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

// The issue's second measurement: the true sky through the Airy beam, corrected with
// that beam sampled as a cube 4 times coarser than the image, in position and frequency.
TEST(BeamCorrection, ABeamCubeOnACoarserGridGivesTheTrueSkyAsTheModelDoes) {
  const fs::path ms = apparent_ms("apparent.ms", "--beam airy");
  const fs::path cube = airy_cube("airy.fits", {});
  expect_true_sky(corrected(ms, "out", "--beam.model fits --beam.fits " + cube.string()), "fits cube, 4x coarser");
}

// image.centre on an off-axis source (the one 0.57 deg south-west of the pointing): the
// visibilities are turned to it, the source is imaged on the new centre's pixel with
// its true flux, polarised flux and depth once corrected, and the beam stays on the
// pointing, so that the pb cube there is the beam's response at the source's distance
// from the pointing and the catalogue lists that distance.
TEST(BeamCorrection, ImagedAtAnotherCentreTheBeamStaysOnThePointing) {
  const fs::path ms = apparent_ms("apparent.ms", "--beam airy");
  const Source& target = sources[3];
  const double l = target.l(), m = target.m(), n = std::sqrt(1 - l * l - m * m);
  const double ra = std::atan2(l, n * std::cos(dec0) - m * std::sin(dec0)) * 180 / std::numbers::pi;
  const double dec = std::asin(m * std::cos(dec0) + n * std::sin(dec0)) * 180 / std::numbers::pi;
  std::ostringstream centre;
  centre << std::setprecision(15) << (ra < 0 ? ra + 360 : ra) << "," << dec;
  const fs::path out = corrected(ms, "out", "--beam.model airy --image.centre " + centre.str());
  const std::string log = spip::test::file_text(scratch("log.txt"));
  EXPECT_NE(log.find("primary beam: airy, dish 94 m\n"), std::string::npos) << log;
  EXPECT_NE(log.find("image centre (image.centre): RA "), std::string::npos) << log;
  EXPECT_NE(log.find("; the visibilities are turned to it from the inputs' phase centre, RA 0.000000, Dec 60.000000 deg"),
            std::string::npos)
      << log;
  const auto pb = spip::fits::read_image((out / "spip-pb.fits").string());
  const auto pb_i = spip::fits::read_image((out / "spip-image-pb-I.fits").string());
  const auto pb_q = spip::fits::read_image((out / "spip-image-pb-Q.fits").string());
  const auto pb_u = spip::fits::read_image((out / "spip-image-pb-U.fits").string());
  const auto peak_pi = spip::fits::read_image((out / "spip-peak-pi.fits").string());
  const auto peak_phi = spip::fits::read_image((out / "spip-peak-phi.fits").string());
  EXPECT_NEAR(pb_i.number("CRVAL1"), ra < 0 ? ra + 360 : ra, 1e-9);
  EXPECT_NEAR(pb_i.number("CRVAL2"), dec, 1e-9);
  EXPECT_NEAR(pb_i.number("OBSRA"), 0, 1e-9);  // the pointing
  EXPECT_NEAR(pb_i.number("OBSDEC"), dec0_deg, 1e-9);
  constexpr int c0 = size / 2;
  double worst_i = 0;
  for (int c = 0; c < channels; ++c) {
    const double freq = freq0 + c * dfreq, truth = target.stokes_i(freq);
    EXPECT_NEAR(value(pb, c0, c0, c), airy(target.theta(), freq), 1e-6) << c;
    EXPECT_NEAR(value(pb_i, c0, c0, c), truth, 0.01 * truth) << c;
    EXPECT_NEAR(std::hypot(value(pb_q, c0, c0, c), value(pb_u, c0, c0, c)), target.pol_frac * truth,
                0.02 * target.pol_frac * truth)
        << c;
    worst_i = std::max(worst_i, std::abs(value(pb_i, c0, c0, c) / truth - 1));
  }
  const double pi = peak_pi.data[static_cast<std::size_t>(c0) * size + c0];
  const double phi = peak_phi.data[static_cast<std::size_t>(c0) * size + c0];
  EXPECT_NEAR(pi, target.mean_pi(), 0.02 * target.mean_pi());
  EXPECT_NEAR(phi, target.rm, 0.5);
  // The pointing now lies 0.57 deg north-east of the image's centre: its response there is 1.
  const spip::fits::Table catalogue = spip::fits::read_table((out / "spip-catalogue.fits").string());
  const auto& x = catalogue.values<double>("x_pix");
  const auto& y = catalogue.values<double>("y_pix");
  const auto& beamdist = catalogue.values<double>("beamdist");
  const auto& listed_response = catalogue.values<double>("beam_response");
  bool target_listed = false, pointing_listed = false;
  for (std::size_t row = 0; row < x.size(); ++row) {
    if (std::abs(x[row] - c0) < 0.5 && std::abs(y[row] - c0) < 0.5) {
      target_listed = true;
      EXPECT_NEAR(beamdist[row], target.theta() * 180 / std::numbers::pi, 2e-3);  // to a tenth of a pixel
      const double nu_ref = 299792458.0 / std::sqrt(peak_pi.number("LAMSQ0"));
      EXPECT_NEAR(listed_response[row], airy(target.theta(), nu_ref), 2e-3);
    }
    if (beamdist[row] < 0.01) {
      pointing_listed = true;
      EXPECT_NEAR(listed_response[row], 1.0, 1e-3);
    }
  }
  EXPECT_TRUE(target_listed);
  EXPECT_TRUE(pointing_listed);
  // That pb.fits as beam.fits: centred on its OBSRA and OBSDEC, the pointing, it gives
  // the analytic beam's response again. The cube is read as a grid in (l, m) about the
  // pointing, 0.57 deg from its own centre: the two projections part by up to 1.3
  // pixels at the image's edge (3e-4 rad, second order), where the outermost pixels then
  // fall off the cube; inside them the smooth beam differs by 1e-4.
  const fs::path reused = corrected(ms, "reused", "--beam.model fits --beam.fits " + (out / "spip-pb.fits").string() +
                                                     " --image.centre " + centre.str() + " --faraday.cubes none");
  const auto pb_reused = spip::fits::read_image((reused / "spip-pb.fits").string());
  double worst_pb = 0;
  for (int c = 0; c < channels; ++c)
    for (int y = 3; y < size - 3; y += 7)
      for (int x = 3; x < size - 3; x += 7)
        if (value(pb, x, y, c) > 0.05) worst_pb = std::max(worst_pb, std::abs(value(pb_reused, x, y, c) - value(pb, x, y, c)));
  std::printf("[ measured ] image.centre's pb.fits as beam.fits: largest difference from the Airy beam %.2e\n", worst_pb);
  EXPECT_LT(worst_pb, 2e-3);
  // A centre on the far side of the sky (an RA in hours taken for degrees, say) is refused.
  EXPECT_NE(run(std::string(SPIP_BIN) + " --input.ms " + ms.string() + " --image.centre 180,-50 --output.dir " +
                scratch("far").string() + " --plan"),
            0);
  EXPECT_NE(spip::test::file_text(scratch("log.txt"))
                .find("image.centre = 180.000000,-50.000000 is 170.0 deg from the inputs' phase centre; expected a "
                      "centre less than 90 deg from it (RA in degrees, not hours)\n"),
            std::string::npos)
      << spip::test::file_text(scratch("log.txt"));
  // A centre so far south that the beam is below beam.limit (0.2) on the image's nearest
  // pixel, its top edge on the pointing's meridian (Dec = centre's + asin(m) there), is
  // refused; 0.2 deg nearer, it is planned.
  const double top_edge_deg = std::asin((size - 1 - size / 2) * cell) * 180 / std::numbers::pi;
  for (const double offset_deg : {2.65, 2.45}) {
    const double nearest = (offset_deg - top_edge_deg) * std::numbers::pi / 180;
    const bool beyond = airy(nearest, freq0) < 0.2;
    ASSERT_EQ(beyond, offset_deg > 2.5) << airy(nearest, freq0);  // the geometry this test means
    std::ostringstream south;
    south << "0," << std::setprecision(15) << dec0_deg - offset_deg;
    EXPECT_EQ(run(std::string(SPIP_BIN) + " --input.ms " + ms.string() + " --image.size " + std::to_string(size) +
                  " --image.scale " + std::to_string(cell_arcsec) + " --beam.model airy --image.centre " + south.str() +
                  " --output.dir " + scratch("south").string() + " --plan") != 0,
              beyond)
        << spip::test::file_text(scratch("log.txt"));
    if (beyond) {
      EXPECT_NE(spip::test::file_text(scratch("log.txt"))
                    .find("spip: error: no pixel of the 256^2 image about RA 0.000000, Dec 57.350000 deg has a "
                          "primary-beam response of beam.limit = 0.2 or more ("),
                std::string::npos)
          << spip::test::file_text(scratch("log.txt"));
    }
  }
  std::printf("[ measured ] image.centre on the source at %.2f deg: I off by %.2f %% at most; peak PI %.4f (truth "
              "%.4f); phi %.3f (truth %.1f)\n",
              target.theta() * 180 / std::numbers::pi, 100 * worst_i, pi, target.mean_pi(), phi, target.rm);
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
  for (const Source& s : sources)
    for (int c = 0; c < channels; ++c) {
      const double truth = s.stokes_i(freq0 + c * dfreq);
      EXPECT_NEAR(value(image_v, s.x(), s.y(), c), 0.005 * value(image_i, s.x(), s.y(), c), 0.001 * truth) << c;
      EXPECT_NEAR(value(pb_v, s.x(), s.y(), c), 0, 0.001 * truth) << c;
    }
  const Source& far = sources.back();
  std::printf("[ measured ] leakage I -> V 0.5 %%: the source at %.2f deg has V in channel 0 apparent %.5f, corrected "
              "%.5f (truth 0)\n",
              far.theta() * 180 / std::numbers::pi, value(image_v, far.x(), far.y(), 0), value(pb_v, far.x(), far.y(), 0));
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

// Inputs of two pointings are refused in one line: without a beam it names beam.model,
// which a mosaic needs; with one, that mosaics are not made yet.
// A mosaic weights its pointings by their beams: without beam.model, and with a beam
// cube's leakage planes, which mosaics do not take out yet, two pointings are refused in
// one line that says so.
TEST(BeamCorrection, TwoPointingsWithoutABeamAreRefusedInOneLineThatNamesBeamModel) {
  const fs::path first = apparent_ms("first.ms", "");
  const fs::path second = scratch("second.ms");
  ASSERT_EQ(run(std::string(SPIP_SIMULATE_BIN) + " --sky " + scratch("first.ms.sky.txt").string() + " --telescope " +
                SPIP_TEST_DATA + "/oskar_small.tm --ra 0 --dec 62 --freq-start " + std::to_string(freq0) +
                " --freq-inc " + std::to_string(dfreq) + " --channels 2 --times 2 --out " + second.string()),
            0);
  const std::string inputs = " --input.ms " + first.string() + " " + second.string();
  const fs::path leaking = airy_cube("leaking.fits", {0.01, 0.0, 0.0});
  for (const auto& [beam, says] :
       {std::pair{std::string(), std::string(" have different phase centres, 2 pointings in all: a mosaic of them "
                                             "weights each by its primary beam; set beam.model")},
        std::pair{" --beam.model fits --beam.fits " + leaking.string(),
                  std::string(" make a mosaic of 2 pointings, and beam.fits gives leakage planes, which mosaics do "
                              "not take out yet")}}) {
    EXPECT_NE(run(std::string(SPIP_BIN) + inputs + beam + " --output.dir " + scratch("out").string() + " --plan"), 0);
    const std::string log = spip::test::file_text(scratch("log.txt"));
    EXPECT_NE(log.find("spip: error: " + first.string() + " and " + second.string() + says), std::string::npos) << log;
    EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1) << log;
  }
}

// The ionosphere turns the sky's polarisation before the antennas leak I into Q and U:
// derotating the visibilities would turn the leaked part too, which the leakage planes
// do not. faraday.ionosphere beside a beam cube's leakage planes is refused in one line,
// and so are spip-simulate's --ionosphere and leakage planes together.
TEST(BeamCorrection, TheIonosphereBesideLeakagePlanesIsRefusedInOneLine) {
  const fs::path ms = apparent_ms("ionosphere.ms", "");
  const fs::path leaking = airy_cube("leaking-ionosphere.fits", {0.01, 0.0, 0.0});
  const fs::path table = scratch("rm.txt");
  std::ofstream(table) << "0 1.0\n1e12 1.0\n";
  EXPECT_EQ(run(std::string(SPIP_BIN) + " --input.ms " + ms.string() + " --beam.model fits --beam.fits " +
                leaking.string() + " --faraday.ionosphere " + table.string() + " --output.dir " +
                scratch("refused").string()) >> 8,
            2);
  std::string log = spip::test::file_text(scratch("log.txt"));
  EXPECT_NE(log.find("faraday.ionosphere derotates the visibilities"), std::string::npos) << log;
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1) << log;
  EXPECT_FALSE(fs::exists(scratch("refused")));
  EXPECT_NE(run(std::string(SPIP_SIMULATE_BIN) + " --template " + ms.string() + " --sky " +
                scratch("ionosphere.ms.sky.txt").string() + " --ionosphere " + table.string() +
                " --beam fits --beam-fits " + leaking.string() + " --out " + scratch("both.ms").string()),
            0);
  log = spip::test::file_text(scratch("log.txt"));
  EXPECT_NE(log.find("--ionosphere with --beam-fits leakage planes"), std::string::npos) << log;
  EXPECT_FALSE(fs::exists(scratch("both.ms")));
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
    EXPECT_NE(log.find("which has no beam model here (VLA, ATCA, MeerKAT and ASKAP have); set beam.model to fits "
                       "with beam.fits (a beam cube, as an aperture array's such as the MWA's or LOFAR's must be "
                       "given), or gaussian or airy with beam.dish_diameter\n"),
              std::string::npos)
        << log;
    EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1) << log;
  }
}

}  // namespace

// A linear mosaic of two pointings 1 deg apart, each with its own noise (sigma 0.05 and
// 0.1 Jy per correlation, so that their weights 1/sigma^2 differ 4 times), of four
// sources: between the pointings, on one, near the other and off both. On two ranks,
// every source's corrected I, spectrum, polarised flux, peak PI and Faraday depth are
// the truth's; PREFIX-pb.fits is sqrt(sum_p w_p B_p^2 / max_p w_p) from J1 and the
// weights qa.json lists; the corrected cubes are blank exactly where it is below
// beam.limit; the catalogue measures beamdist from the nearest pointing; one rank gives
// the same bits; restored as imaged (image.beam), the truth again.
TEST(Mosaic, TwoPointingsGiveTheTrueSkyOnTwoRanks) {
  const std::vector<Source> sky{{0, 0, 1.0, -0.7, 0.30, 0, 5.0},
                                {-45, 0, 0.8, -1.2, 0.25, 30, -3.0},
                                {50, 20, 1.2, 0.0, 0.40, -20, 7.5},
                                {-20, -40, 0.9, -0.3, 0.20, 60, -6.0}};
  const double offset = 45 * cell;  // the pointings at l = +-0.5 deg, m = 0
  const std::vector<std::pair<double, double>> pointings{{offset, 0.0}, {-offset, 0.0}};
  const fs::path east = apparent_ms("east.ms", "--beam airy --noise 0.05 --seed 1", sky, pointings[0]);
  // The west pointing observed a day later: each source's RMTable epoch is its nearest pointing's.
  const fs::path west =
      apparent_ms("west.ms", "--beam airy --noise 0.1 --seed 2 --start '2025-03-21 00:00:00'", sky, pointings[1]);
  const std::string args = " --input.ms " + east.string() + " " + west.string() + " --image.size " +
                           std::to_string(size) + " --image.scale " + std::to_string(cell_arcsec) +
                           " --clean.niter 4000 --clean.auto_threshold 3 --beam.model airy --parallel.threads 1";
  const fs::path out = scratch("out");
  ASSERT_EQ(run(std::string(SPIP_MPIEXEC) + " 2 " + SPIP_BIN + args + " --output.dir " + out.string()), 0)
      << spip::test::file_text(scratch("log.txt"));
  const std::string log = spip::test::file_text(scratch("log.txt"));
  EXPECT_NE(log.find("mosaic of 2 pointings, each imaged and cleaned on its own"), std::string::npos) << log;
  expect_true_sky(out, "mosaic", sky);

  const auto pb = spip::fits::read_image((out / "spip-pb.fits").string());
  const auto pb_i = spip::fits::read_image((out / "spip-image-pb-I.fits").string());
  EXPECT_NEAR(pb_i.number("CRVAL1"), 0, 1e-9);  // the pointings' middle
  EXPECT_NEAR(pb_i.number("CRVAL2"), dec0_deg, 1e-9);
  // HISTORY states the planes' rule (CFITSIO splits long lines into cards of 70) and
  // each pointing, with its RA in [0, 360) as qa.json gives it.
  std::string history;
  int pointings_listed = 0;
  for (const std::string& line : pb_i.history) {
    history += line;
    if (!line.starts_with("mosaic pointing RA ")) continue;
    ++pointings_listed;
    const double ra = std::stod(line.substr(19));
    EXPECT_TRUE(ra >= 0 && ra < 360) << line;
  }
  EXPECT_EQ(pointings_listed, 2) << history;
  EXPECT_NE(history.find("w_max the largest; pb: sqrt(sum_p w_p B_p^2 / w_max)"), std::string::npos) << history;
  EXPECT_FALSE(fs::exists(out / "spip-psf.fits"));  // each pointing has its own
  EXPECT_FALSE(fs::exists(out / "spip-model-I.fits"));
  const std::string qa = spip::test::file_text(out / "spip-qa.json");
  double weight_ratio = 0;
  for (int c = 0; c < channels; ++c) {
    const std::size_t at = qa.find("\"mosaic_weights\": [", qa.find("\"channel\": " + std::to_string(c) + ","));
    ASSERT_NE(at, std::string::npos) << qa;
    const std::size_t first = at + std::string("\"mosaic_weights\": [").size();
    const double w0 = std::stod(qa.substr(first)), w1 = std::stod(qa.substr(qa.find(',', first) + 1));
    weight_ratio += w0 / w1 / channels;
    const double freq = freq0 + c * dfreq;
    const auto response = [&](double x, double y) {
      double power = 0;
      for (std::size_t p = 0; p < pointings.size(); ++p)
        power += (p == 0 ? w0 : w1) * std::pow(airy(distance_from(pointings[p], x, y), freq), 2);
      return std::sqrt(power / std::max(w0, w1));
    };
    for (const Source& s : sky) EXPECT_NEAR(value(pb, s.x(), s.y(), c), response(s.x(), s.y()), 1e-5) << c;
    int blank = 0;
    for (int y = 0; y < size; ++y)
      for (int x = 0; x < size; ++x) {
        blank += std::isnan(value(pb_i, x, y, c));
        EXPECT_EQ(std::isnan(value(pb_i, x, y, c)), value(pb, x, y, c) < 0.2) << x << ", " << y << ", " << c;
      }
    EXPECT_GT(blank, size * size / 20) << c;  // the corners lie past the first nulls
    EXPECT_LT(blank, 3 * size * size / 4) << c;
  }
  std::printf("[ measured ] mosaic weights east/west %.2f (noise 1:2 per correlation)\n", weight_ratio);
  EXPECT_NEAR(weight_ratio, 4, 1);

  const spip::fits::Table catalogue = spip::fits::read_table((out / "spip-catalogue.fits").string());
  const auto& x = catalogue.values<double>("x_pix");
  const auto& y = catalogue.values<double>("y_pix");
  const auto& beamdist = catalogue.values<double>("beamdist");
  for (std::size_t row = 0; row < x.size(); ++row) {
    const double nearest = std::min(distance_from(pointings[0], x[row], y[row]), distance_from(pointings[1], x[row], y[row]));
    EXPECT_NEAR(beamdist[row], nearest * 180 / std::numbers::pi, 1e-9) << row;
  }
  // 36 dumps of 400 s from MJD 60754 (east) and 60755 (west): the median 2 h in.
  const spip::fits::Table standard = spip::fits::read_table((out / "spip-rmtable.fits").string());
  const auto& epoch = standard.values<double>("epoch");
  const auto& int_time = standard.values<double>("int_time");
  const auto& standard_x = standard.values<double>("x_pix");
  const auto& standard_y = standard.values<double>("y_pix");
  ASSERT_EQ(epoch.size(), x.size());
  std::set<int> days;
  for (std::size_t row = 0; row < epoch.size(); ++row) {
    const bool west_nearer = distance_from(pointings[1], standard_x[row], standard_y[row]) <
                             distance_from(pointings[0], standard_x[row], standard_y[row]);
    days.insert(west_nearer);
    EXPECT_NEAR(epoch[row], 60754.0 + west_nearer + 2.0 / 24, 1.0 / 256) << row;
    EXPECT_EQ(int_time[row], 14400.0) << row;
  }
  EXPECT_EQ(days.size(), 2u);  // sources nearer each pointing

  const fs::path one = scratch("one-rank");
  ASSERT_EQ(run(std::string(SPIP_BIN) + args + " --output.dir " + one.string()), 0)
      << spip::test::file_text(scratch("log.txt"));
  for (const char* name : {"spip-pb.fits", "spip-image-pb-I.fits", "spip-image-pb-Q.fits", "spip-peak-pi.fits"}) {
    const auto a = spip::fits::read_image((out / name).string()), b = spip::fits::read_image((one / name).string());
    ASSERT_EQ(a.data.size(), b.data.size()) << name;
    for (std::size_t i = 0; i < a.data.size(); ++i)
      if (!(std::isnan(a.data[i]) && std::isnan(b.data[i]))) {
        ASSERT_EQ(a.data[i], b.data[i]) << name << " " << i;
      }
  }
  // A mosaic centred 10 deg south of its pointings, beyond both beams, is refused.
  EXPECT_EQ(WEXITSTATUS(run(std::string(SPIP_BIN) + args + " --image.centre 0,50 --output.dir " +
                            scratch("south").string() + " --plan")),
            2);
  EXPECT_NE(spip::test::file_text(scratch("log.txt"))
                .find("no pixel of the 256^2 image about RA 0.000000, Dec 50.000000 deg has a primary-beam response of "
                      "beam.limit = 0.2 or more ("),
            std::string::npos)
      << spip::test::file_text(scratch("log.txt"));
  EXPECT_NE(spip::test::file_text(scratch("log.txt")).find(" at most, all 2 pointings together): every corrected product"),
            std::string::npos)
      << spip::test::file_text(scratch("log.txt"));
  // The mosaic's pb.fits is not one antenna's beam: as beam.fits it is refused.
  EXPECT_EQ(WEXITSTATUS(run(std::string(SPIP_BIN) + " --input.ms " + east.string() + " --beam.model fits --beam.fits " +
                            (out / "spip-pb.fits").string() + " --output.dir " + scratch("mosaic-beam").string())),
            2);
  EXPECT_NE(spip::test::file_text(scratch("log.txt")).find("a linear mosaic's effective response"), std::string::npos)
      << spip::test::file_text(scratch("log.txt"));
  // With image.beam each channel is restored as soon as its pointings are imaged, from
  // their models in memory rather than kept ones: the same truth.
  const fs::path chosen = scratch("chosen-beam");
  ASSERT_EQ(run(std::string(SPIP_BIN) + args + " --image.beam 240,240,0 --output.dir " + chosen.string()), 0)
      << spip::test::file_text(scratch("log.txt"));
  EXPECT_EQ(spip::test::file_text(scratch("log.txt")).find("restored 8 channels with the common beam"), std::string::npos);
  expect_true_sky(chosen, "mosaic, image.beam", sky);
}

// Two pointings as two fields of one Measurement Set (input.field 0,1) make the mosaic
// that the same pointings as two Measurement Sets make, bit for bit; without a beam they
// are refused in one line that names the fields.
TEST(Mosaic, FieldsOfOneMeasurementSetAreItsPointings) {
  const std::vector<Source> sky{{0, 0, 1.0, -0.7, 0.30, 0, 5.0}, {-45, 0, 0.8, -1.2, 0.25, 30, -3.0}};
  const double offset = 45 * cell;
  const fs::path east = apparent_ms("east.ms", "--beam airy --noise 0.05 --seed 1", sky, {offset, 0.0});
  const fs::path west = apparent_ms("west.ms", "--beam airy --noise 0.1 --seed 2", sky, {-offset, 0.0});
  const fs::path both = scratch("both.ms");
  fs::copy(east, both, fs::copy_options::recursive);
  spip::test::append_as_field(both.string(), west.string());
  const std::string args = " --image.size 128 --image.scale 80 --clean.niter 2000 --clean.auto_threshold 3"
                           " --faraday.cubes none --parallel.threads 2";
  ASSERT_NE(run(std::string(SPIP_BIN) + " --input.ms " + both.string() + " --input.field 0,1" + args +
                " --output.dir " + scratch("fields").string()),
            0);
  const std::string refusal = spip::test::file_text(scratch("log.txt"));
  EXPECT_NE(refusal.find("spip: error: " + both.string() + " (field 0) and " + both.string() +
                         " (field 1) have different phase centres, 2 pointings in all"),
            std::string::npos)
      << refusal;
  for (const auto& [inputs, out] : {std::pair{" --input.ms " + both.string() + " --input.field 0,1", std::string("fields")},
                                    std::pair{" --input.ms " + east.string() + " " + west.string(), std::string("two")}})
    ASSERT_EQ(run(std::string(SPIP_BIN) + inputs + args + " --beam.model airy --output.dir " + scratch(out).string()), 0)
        << spip::test::file_text(scratch("log.txt"));
  for (const char* name : {"spip-pb.fits", "spip-image-pb-I.fits", "spip-image-pb-U.fits", "spip-peak-pi.fits"}) {
    const auto a = spip::fits::read_image((scratch("fields") / name).string());
    const auto b = spip::fits::read_image((scratch("two") / name).string());
    ASSERT_EQ(a.data.size(), b.data.size()) << name;
    for (std::size_t i = 0; i < a.data.size(); ++i)
      if (!(std::isnan(a.data[i]) && std::isnan(b.data[i]))) {
        ASSERT_EQ(a.data[i], b.data[i]) << name << " " << i;
      }
  }
}

// The beam narrows with frequency, and the Faraday products are blank where it falls
// below beam.limit in a channel that counts. Channels of no weight (the top ten flagged
// here) do not narrow the field: they once blanked a ring that every counted channel
// measured.
TEST(BeamCorrection, ChannelsOfNoWeightDoNotNarrowTheField) {
  const std::string template_ms = std::string(SPIP_TEST_DATA) + "/oskar_small.ms";
  const std::string sky = std::string(SPIP_TEST_DATA) + "/oskar_small.sky.txt";
  std::string flags;
  for (int c = 30; c < 40; ++c) {
    flags += ' ';
    flags += std::to_string(c);
  }
  const fs::path full = scratch("full.ms"), top_flagged = scratch("top_flagged.ms");
  ASSERT_EQ(run(std::string(SPIP_SIMULATE_BIN) + " --sky " + sky + " --template " + template_ms + " --out " +
                full.string()), 0);
  ASSERT_EQ(run(std::string(SPIP_SIMULATE_BIN) + " --sky " + sky + " --template " + template_ms + " --flag-channels" +
                flags + " --out " + top_flagged.string()), 0);
  // A 120 m dish: the beam falls to beam.limit inside the image's 1.07 deg half-width,
  // nearer the centre the higher the frequency.
  const auto finite_pixels = [&](const fs::path& ms, const std::string& name) {
    const fs::path out = scratch(name);
    EXPECT_EQ(run(std::string(SPIP_BIN) + " --input.ms " + ms.string() + " --output.dir " + out.string() +
                  " --image.size 64 --image.scale 120 --beam.model gaussian --beam.dish_diameter 120" +
                  " --faraday.cubes none --catalogue.threshold 0 --parallel.threads 2"),
              0)
        << spip::test::file_text(scratch("log.txt"));
    const auto map = spip::fits::read_image((out / "spip-peak-pi.fits").string());
    return std::count_if(map.data.begin(), map.data.end(), [](float v) { return std::isfinite(v); });
  };
  const long all_channels = finite_pixels(full, "full_out"), fewer = finite_pixels(top_flagged, "flagged_out");
  EXPECT_GT(all_channels, 1000) << "the field must not be blank";
  EXPECT_GT(fewer, all_channels + 100) << "the flagged top channels narrowed the field";
}

// Corrected for the beam, the noise rises towards the edge as 1 / response. At a cleaned
// source CLEAN has emptied the residuals, so the FDF noise there is the channels' noise
// carried to the pixel through the beam, not the residuals' nor the field's: the noise
// map (peak-pi-err) at each source is that of the pixels around it at the same distance
// from the pointing, and sigma_add finds the Faraday-thin sources thin.
TEST(BeamCorrection, TheNoiseAtACleanedSourceIsTheCorrectedNoiseAroundIt) {
  const fs::path ms = apparent_ms("noisy.ms", "--beam airy --noise 2");
  const fs::path out = scratch("noisy");
  ASSERT_EQ(run(std::string(SPIP_BIN) + " --input.ms " + ms.string() + " --output.dir " + out.string() +
                " --image.size " + std::to_string(size) + " --image.scale " + std::to_string(cell_arcsec) +
                " --clean.niter 4000 --clean.auto_threshold 3 --beam.model airy --faraday.cubes none"
                " --parallel.threads 2"),
            0)
      << spip::test::file_text(scratch("log.txt"));
  const auto pi_err = spip::fits::read_image((out / "spip-peak-pi-err.fits").string());
  const auto near_a_source = [&](int x, int y) {
    return std::any_of(sources.begin(), sources.end(),
                       [&](const Source& s) { return std::hypot(x - s.x(), y - s.y()) < 8; });
  };
  for (const Source& s : sources) {
    const double radius = std::hypot(s.dx, s.dy);
    std::vector<double> around;  // within a pixel of the source's distance from the pointing, away from every source
    for (int y = 0; y < size; ++y)
      for (int x = 0; x < size; ++x)
        if (std::abs(std::hypot(x - size / 2, y - size / 2) - radius) < 1 && !near_a_source(x, y))
          around.push_back(pi_err.data[static_cast<std::size_t>(y) * size + x]);
    if (around.empty()) continue;  // the centre
    std::nth_element(around.begin(), around.begin() + static_cast<long>(around.size() / 2), around.end());
    const double median = around[around.size() / 2], here = pixel(pi_err, s);
    std::printf("[ measured ] source at %.2f deg: FDF noise %.3g mJy there, %.3g mJy around it\n",
                s.theta() * 180 / std::numbers::pi, 1e3 * here, 1e3 * median);
    EXPECT_GT(here, 0.9 * median) << "source at (" << s.x() << ", " << s.y() << ")";
  }
  const spip::fits::Table catalogue = spip::fits::read_table((out / "spip-catalogue.fits").string());
  const auto& sigma_add = catalogue.values<double>("sigma_add");
  const auto& lower = catalogue.values<double>("sigma_add_err_minus");
  const auto& x = catalogue.values<double>("x_pix");
  const auto& y = catalogue.values<double>("y_pix");
  for (const Source& s : sources)
    for (std::size_t row = 0; row < x.size(); ++row)
      if (std::hypot(x[row] - s.x(), y[row] - s.y()) < 1) {
        std::printf("[ measured ] source at %.2f deg: sigma_add %.3f (-%.3f)\n", s.theta() * 180 / std::numbers::pi,
                    sigma_add[row], lower[row]);
        EXPECT_LT(sigma_add[row], 3 * lower[row]) << "source at (" << s.x() << ", " << s.y() << ") is thin";
      }
}

// A mosaic restored with the common beam keeps its pointings' models only until
// restoring: a resumed run images every channel again, so under parallel.time_limit its
// imaging must fit one start, or the job would be requeued for ever. The limit is set
// from the rates spip times, at the geometric mean of one channel and all 32 of one rank:
// either would have to be timed 5.7 times slower or faster than here to cross it.
TEST(Mosaic, ThatCannotImageInOneStartIsRefusedUnderATimeLimit) {
  const std::vector<Source> sky{{0, 0, 1.0, -0.7, 0.30, 0, 5.0}};
  const double offset = 45 * cell;
  const fs::path east = apparent_ms("east.ms", "--beam airy --noise 0.05 --seed 1", sky, {offset, 0.0}, 32);
  const fs::path west = apparent_ms("west.ms", "--beam airy --noise 0.05 --seed 2", sky, {-offset, 0.0}, 32);
  const std::string job = std::string(SPIP_BIN) + " --input.ms " + east.string() + " " +
                          west.string() + " --image.size " + std::to_string(size) + " --image.scale " +
                          std::to_string(cell_arcsec) +
                          " --clean.niter 4000 --clean.auto_threshold 3 --beam.model airy --parallel.threads 1"
                          " --output.dir " + scratch("out").string();
  // A limit no channel fits: refused with the rates it timed, the second time with FFTW's
  // plans as warm as the run's below will find them.
  std::smatch rates;
  std::string timed;
  for (int warm = 0; warm < 2; ++warm) {
    EXPECT_EQ(WEXITSTATUS(run(job + " --parallel.time_limit 0.001")), 2);
    timed = spip::test::file_text(scratch("log.txt"));
  }
  ASSERT_TRUE(std::regex_search(timed, rates, std::regex(R"(\(set-up ([0-9.]+) s, imaging ([0-9.]+) s per channel\))")))
      << timed;
  const double limit = std::stod(rates[1]) + std::sqrt(32.0) * std::stod(rates[2]);
  std::printf("[ measured ] %s; parallel.time_limit %.2f s\n", rates[0].str().c_str(), limit);
  EXPECT_EQ(WEXITSTATUS(run(job + " --parallel.time_limit " + std::to_string(limit))), 2);
  const std::string log = spip::test::file_text(scratch("log.txt"));
  EXPECT_NE(log.find("a mosaic restored with the common beam images every channel again when resumed"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("; set image.beam"), std::string::npos) << log;
  EXPECT_FALSE(fs::exists(scratch("out"))) << "nothing may be written";
}
