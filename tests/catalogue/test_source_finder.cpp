// The source finder on maps with a known answer: the projection against the simulator's
// direction cosines, the local noise against boxes of known rms, islands and components
// of Gaussian PI blobs at known sub-pixel positions.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <limits>
#include <random>
#include <tuple>

#include "spip/catalogue/catalogue_table.hpp"
#include "spip/catalogue/source_finder.hpp"
#include "spip/sim/sky_model.hpp"

using namespace spip::catalogue;

namespace {

constexpr double deg = std::numbers::pi / 180;

Map filled(int n, float value) { return {n, n, std::vector<float>(static_cast<std::size_t>(n) * n, value)}; }

// PI blobs of the beam's FWHM on noise-free maps with a flat pixel noise `sigma`.
struct Blob {
  double x, y, pi, phi, m2 = 0, stokes_i = 1;
};
PixelMaps maps_with(int n, const std::vector<Blob>& blobs, float sigma, double fwhm_pix) {
  PixelMaps maps{filled(n, 0), filled(n, 0), filled(n, 0), filled(n, 0), filled(n, sigma),
                 filled(n, 0), filled(n, 0), filled(n, 0)};
  const double k = 4 * std::log(2.0) / (fwhm_pix * fwhm_pix);
  for (int y = 0; y < n; ++y)
    for (int x = 0; x < n; ++x) {
      const std::size_t at = static_cast<std::size_t>(y) * n + x;
      double best = 0;
      for (const Blob& b : blobs) {
        const double value = b.pi * std::exp(-k * ((x - b.x) * (x - b.x) + (y - b.y) * (y - b.y)));
        maps.pi.values[at] += static_cast<float>(value);
        maps.stokes_i.values[at] += static_cast<float>(value / b.pi * b.stokes_i);
        if (value > best) {
          best = value;
          maps.phi.values[at] = static_cast<float>(b.phi);
          maps.m2.values[at] = static_cast<float>(b.m2);
        }
      }
    }
  return maps;
}

const SinProjection projection{32, 32, 0.0, 60 * deg, 20.0 / 3600 * deg};

}  // namespace

TEST(SinProjection, InvertsTheSimulatorsDirectionCosines) {
  const SinProjection p{256, 256, 359.5 * deg, 60 * deg, 20.0 / 3600 * deg};
  for (const auto& [ra, dec] : {std::pair{0.49 * deg, 59.33 * deg}, {358.2 * deg, 61.1 * deg}, {359.5 * deg, 60 * deg}}) {
    const auto lmn = spip::sim::direction_cosines(ra, dec, p.ra_rad, p.dec_rad);
    double ra_back = 0, dec_back = 0;
    p.world(256 - lmn.l / p.cell_rad, 256 + lmn.m / p.cell_rad, ra_back, dec_back);
    EXPECT_NEAR(std::remainder(ra_back - ra, 2 * std::numbers::pi), 0.0, 1e-12);
    EXPECT_NEAR(dec_back, dec, 1e-12);
  }
}

TEST(LocalNoise, FollowsNoiseThatVariesOverTheField) {
  Map noise = filled(128, 1.0f);
  for (int y = 0; y < 128; ++y)
    for (int x = 64; x < 128; ++x) noise.values[static_cast<std::size_t>(y) * 128 + x] = 3.0f;
  noise.values[5] = std::numeric_limits<float>::quiet_NaN();  // a blanked pixel is skipped
  const Map local = local_noise(noise, 16);
  EXPECT_FLOAT_EQ(local.at(10, 10), 1.0f);
  EXPECT_FLOAT_EQ(local.at(120, 100), 3.0f);
  // Across the step it rises monotonically over about a box.
  for (int x = 48; x < 80; ++x) EXPECT_LE(local.at(x, 64), local.at(x + 1, 64));
  EXPECT_FLOAT_EQ(local.at(40, 64), 1.0f);
  EXPECT_FLOAT_EQ(local.at(90, 64), 3.0f);
}

TEST(LocalNoise, IsTheRmsOfTheBoxes) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> value(0, 2);
  Map noise = filled(32, 0);
  double sum = 0;
  for (float& v : noise.values) {
    v = value(rng);
    sum += v * v;
  }
  // One box covers the whole map: the rms of every pixel everywhere.
  const Map local = local_noise(noise, 64);
  EXPECT_NEAR(local.at(16, 16), std::sqrt(sum / noise.values.size()), 1e-5);
  EXPECT_NEAR(local.at(0, 31), std::sqrt(sum / noise.values.size()), 1e-5);
}

TEST(FindSources, ComponentsOfIslandsAtTheirSubPixelPeaks) {
  const double fwhm = 6;
  // Two blobs 2.5 beams apart share an island; a third stands alone; a fourth is below
  // 8 sigma; a fifth has PI above its Stokes I.
  const std::vector<Blob> blobs{{20.3, 30.0, 1.0, 20.0, 0.1, 5.0},
                                {35.8, 30.4, 0.5, -10.0, 12.0, 5.0},
                                {50.0, 12.2, 0.2, 3.0, 0.1, 0.8},
                                {10.0, 55.0, 0.0007, 1.0},
                                {50.0, 50.0, 0.3, 5.0, 0.0, -0.2}};
  FinderSettings settings;
  settings.box = 16;
  settings.beam_fwhm_pix = settings.beam_major_pix = settings.beam_minor_pix = fwhm;
  settings.rmsf_fwhm = 1.3;
  const std::vector<Source> sources = find_sources(maps_with(64, blobs, 1e-4f, fwhm), projection, settings);
  ASSERT_EQ(sources.size(), 3u);
  const Source& a = sources[0];
  const Source& b = sources[1];
  const Source& c = sources[2];
  EXPECT_EQ(a.island, b.island);
  EXPECT_NE(a.island, c.island);
  EXPECT_EQ(a.component, 1);
  EXPECT_EQ(b.component, 2);
  EXPECT_NEAR(a.x, 20.3, 0.1);
  EXPECT_NEAR(a.y, 30.0, 0.1);
  EXPECT_NEAR(b.x, 35.8, 0.1);
  EXPECT_NEAR(c.y, 12.2, 0.1);
  EXPECT_NEAR(a.pi, 1.0, 3e-3);  // a parabola's vertex on a Gaussian
  EXPECT_EQ(a.phi, 20.0);
  EXPECT_NEAR(a.snr, a.pi / 1e-4, 1e-6 * a.snr);
  EXPECT_NEAR(a.frac_pol, 0.2, 2e-3);
  EXPECT_FALSE(a.faraday_complex);
  EXPECT_TRUE(b.faraday_complex);
  // Error along each coordinate: FWHM sigma / (2 PI).
  EXPECT_NEAR(a.position_err_deg, fwhm * 20.0 / 3600 * 1e-4 / (2 * a.pi), 1e-12);
  EXPECT_NEAR(a.ra_err_deg, a.position_err_deg, 1e-15);
  EXPECT_NEAR(a.dec_err_deg, a.position_err_deg, 1e-15);
  double ra = 0, dec = 0;
  projection.world(a.x, a.y, ra, dec);
  EXPECT_DOUBLE_EQ(a.ra_deg, ra / deg);
  EXPECT_EQ(a.name, source_name(a.ra_deg, a.dec_deg));
}

// A source half a pixel off in both axes, in a beam of 3 pixels: Stokes I is taken where
// PI peaks, on parabolas through its own neighbours, not at the nearest pixel, where it
// is 14 % lower and would make the fractional polarisation as much too high.
TEST(FindSources, StokesIIsTakenWherePiPeaks) {
  const double fwhm = 3;
  FinderSettings settings;
  settings.box = 16;
  settings.beam_fwhm_pix = settings.beam_major_pix = settings.beam_minor_pix = fwhm;
  settings.rmsf_fwhm = 1.3;
  const std::vector<Source> sources =
      find_sources(maps_with(64, {{20.5, 30.5, 1.0, 20.0, 0.0, 5.0}}, 1e-4f, fwhm), projection, settings);
  ASSERT_EQ(sources.size(), 1u);
  const Source& s = sources[0];
  EXPECT_NEAR(s.x, 20.5, 0.05);
  EXPECT_NEAR(s.frac_pol, 0.2, 1e-5);
  EXPECT_NEAR(s.stokes_i, 5 * s.pi, 1e-5);
}

// Of a 3:1 beam, north-south: errors along each axis (Condon 1997), the larger as the
// one position error, and two components 1.5 minor axes apart east-west are two, though
// closer than the beam's mean width (sqrt(3) minor axes).
TEST(FindSources, AnEllipticalBeamGivesErrorsAndSeparationsAlongItsAxes) {
  const double minor = 4, major = 12;
  FinderSettings settings;
  settings.box = 16;
  settings.beam_fwhm_pix = std::sqrt(major * minor);
  settings.beam_major_pix = major;
  settings.beam_minor_pix = minor;
  settings.rmsf_fwhm = 1.3;
  const std::vector<Source> sources =
      find_sources(maps_with(64, {{30.0, 32.0, 1.0, 5.0, 0, 5.0}, {36.0, 32.0, 0.8, 5.0, 0, 5.0}}, 1e-4f, minor),
                   projection, settings);
  ASSERT_EQ(sources.size(), 2u);
  const Source& a = sources[0];
  const double per_fwhm = 20.0 / 3600 * 1e-4 / (2 * a.pi);
  EXPECT_NEAR(a.dec_err_deg, major * per_fwhm, 1e-12);
  EXPECT_NEAR(a.ra_err_deg, minor * per_fwhm, 1e-12);
  EXPECT_NEAR(a.position_err_deg, major * per_fwhm, 1e-12);
  // At PA 45 deg (major axis north-east), two sources 6 pixels apart along the minor axis
  // (north-west) are two, and along the major axis (north-east: x falls as RA grows) one.
  settings.beam_pa_rad = 45 * deg;
  const double step = 6 / std::sqrt(2.0);
  EXPECT_EQ(find_sources(maps_with(64, {{30.0, 30.0, 1.0, 5.0, 0, 5.0}, {30.0 + step, 30.0 + step, 0.8, 5.0, 0, 5.0}},
                                   1e-4f, minor),
                         projection, settings)
                .size(),
            2u);
  EXPECT_EQ(find_sources(maps_with(64, {{30.0, 30.0, 1.0, 5.0, 0, 5.0}, {30.0 - step, 30.0 + step, 0.8, 5.0, 0, 5.0}},
                                   1e-4f, minor),
                         projection, settings)
                .size(),
            1u);
}

// Two components are a beam's FWHM apart where they are listed, between pixels: peaks of
// blobs at x = 20.4 and 24.6 fall on pixels 20 and 25, a 5-pixel beam apart, but their
// positions lie 4.2 pixels apart, and a survey trial's extended source came out as two
// components so placed. Moved to 5.6 pixels from the first, the second blob stays a
// component. The blobs are drawn 3 pixels wide, narrower than the finder's beam, so that
// each keeps a maximum of its own.
TEST(FindSources, ComponentsAreABeamApartWhereTheyAreListed) {
  FinderSettings settings;
  settings.box = 16;
  settings.beam_fwhm_pix = settings.beam_major_pix = settings.beam_minor_pix = 5;
  settings.rmsf_fwhm = 1.3;
  const std::vector<Source> close =
      find_sources(maps_with(64, {{20.4, 32.0, 1.0, 5.0, 0, 5.0}, {24.6, 32.0, 0.8, 5.0, 0, 5.0}}, 1e-4f, 3),
                   projection, settings);
  ASSERT_EQ(close.size(), 1u);
  EXPECT_NEAR(close[0].x, 20.4, 0.1);
  const std::vector<Source> apart =
      find_sources(maps_with(64, {{20.4, 32.0, 1.0, 5.0, 0, 5.0}, {26.0, 32.0, 0.8, 5.0, 0, 5.0}}, 1e-4f, 3),
                   projection, settings);
  ASSERT_EQ(apart.size(), 2u);
  EXPECT_GE(std::abs(apart[1].x - apart[0].x), 5.0);
}

// A peak at the image's edge or beside a blank region is not listed: the source may lie
// beyond it. Here one beyond the left edge and one beyond a blank band, both counted; a
// source with one bad (blank) pixel beside its peak is still listed.
TEST(FindSources, PeaksAtTheEdgeOrBesideBlanksAreCountedNotListed) {
  const double fwhm = 4;
  FinderSettings settings;
  settings.box = 16;
  settings.beam_fwhm_pix = settings.beam_major_pix = settings.beam_minor_pix = fwhm;
  PixelMaps maps = maps_with(64, {{-1.5, 20.0, 1.0, 5.0, 0, 5.0}, {44.0, 40.0, 1.0, 5.0, 0, 5.0},
                                  {20.0, 50.0, 0.5, 5.0, 0, 5.0}}, 1e-4f, fwhm);
  for (int y = 0; y < 64; ++y)
    for (int x = 44; x < 64; ++x) maps.pi.values[static_cast<std::size_t>(y) * 64 + x] = std::nanf("");
  maps.pi.values[static_cast<std::size_t>(50) * 64 + 21] = std::nanf("");
  int truncated = -1;
  const std::vector<Source> sources = find_sources(maps, projection, settings, &truncated);
  ASSERT_EQ(sources.size(), 1u);
  EXPECT_NEAR(sources[0].x, 20.0, 0.01) << "on its pixel, not refined towards the bad one";
  EXPECT_NEAR(sources[0].y, 50.0, 0.1);
  EXPECT_EQ(truncated, 2);
}

// As RM-Tools' measure_FDF_parms: the bias is taken off at a signal-to-noise of 5 or
// more only; and errors scale with the pixel's own noise where it is above the box's.
TEST(SourcesAt, CorrectTheBiasFromFiveSigmaAndTakeTheHigherNoise) {
  const double fwhm = 4, sigma = 1e-4;
  FinderSettings settings;
  settings.box = 64;
  settings.beam_fwhm_pix = settings.beam_major_pix = settings.beam_minor_pix = fwhm;
  // The PI map as the Faraday stage writes it: bias-corrected with the pixel's noise.
  const double faint = std::sqrt(16 - 2.3) * sigma, bright = std::sqrt(100 - 2.3) * sigma;
  PixelMaps maps = maps_with(64, {{16, 16, faint, 5.0, 0, 5.0}, {48, 48, bright, 5.0, 0, 5.0}}, static_cast<float>(sigma), fwhm);
  maps.pi_err.values[static_cast<std::size_t>(48) * 64 + 48] = static_cast<float>(2 * sigma);  // a noisier pixel
  double ra = 0, dec = 0;
  std::vector<SourcePosition> positions;
  for (const auto& [x, y] : {std::pair{16, 16}, std::pair{48, 48}}) {
    projection.world(x, y, ra, dec);
    positions.push_back({"", ra / deg, dec / deg});
  }
  const std::vector<Source> sources = sources_at(maps, projection, settings, positions);
  ASSERT_EQ(sources.size(), 2u);
  EXPECT_NEAR(sources[0].pi, 4 * sigma, 1e-9) << "4 sigma as measured, not bias-corrected";
  EXPECT_NEAR(sources[1].sigma, 2 * sigma, 1e-9) << "the pixel's noise, above the box's";
  const double measured_sq = bright * bright + 2.3 * 4 * sigma * sigma;
  EXPECT_NEAR(sources[1].pi, std::sqrt(measured_sq - 2.3 * 4 * sigma * sigma), 1e-9);
}

// Positions off the image and on blank pixels are left out, and named by kind.
TEST(SourcesAt, NameThePositionsTheyLeaveOutByKind) {
  FinderSettings settings;
  settings.box = 16;
  settings.beam_fwhm_pix = settings.beam_major_pix = settings.beam_minor_pix = 4;
  PixelMaps maps = maps_with(64, {{16, 16, 1e-3, 5.0, 0, 5.0}}, 1e-4f, 4);
  maps.pi.values[static_cast<std::size_t>(40) * 64 + 40] = std::numeric_limits<float>::quiet_NaN();
  double ra = 0, dec = 0;
  std::vector<SourcePosition> positions;
  for (const auto& [x, y, id] : {std::tuple{16, 16, "seen"}, {40, 40, "blank"}, {200, 16, "beyond"}, {-90, 5, ""}}) {
    projection.world(x, y, ra, dec);
    positions.push_back({id, ra / deg, dec / deg});
  }
  LeftOut left_out;
  const std::vector<Source> sources = sources_at(maps, projection, settings, positions, &left_out);
  ASSERT_EQ(sources.size(), 1u);
  EXPECT_EQ(sources[0].name, "seen");
  EXPECT_EQ(left_out.blank, std::vector<std::string>{"blank"});
  ASSERT_EQ(left_out.off_image.size(), 2u);
  EXPECT_EQ(left_out.off_image[0], "beyond");
  EXPECT_NE(left_out.off_image[1].find(", "), std::string::npos) << "unnamed: its RA, Dec";
}

TEST(FindSources, AFlatFieldHasNone) {
  FinderSettings settings;
  settings.box = 16;
  EXPECT_TRUE(find_sources(maps_with(32, {}, 1e-3f, 3), projection, settings).empty());
}

TEST(SourceName, TruncatesAsIauNamesDo) {
  EXPECT_EQ(source_name(0.4901475462, 59.3323921490), "SPIP J000157.6+591956");
  EXPECT_EQ(source_name(359.99999, 59.99999), "SPIP J235959.9+595959");
  EXPECT_EQ(source_name(180.0, -45.5), "SPIP J120000.0-453000");
}

TEST(CatalogueTable, CsvHasTheColumnsOfTheFitsTableInOrder) {
  FinderSettings settings;
  Source s;
  s.name = "SPIP J000000.0+600000";
  s.pi = 0.25;
  const spip::fits::Table table = catalogue_table({s, s}, settings);
  const std::string csv = to_csv(table);
  std::string header;
  for (const auto& c : table.columns) header += (header.empty() ? "" : ",") + c.name;
  EXPECT_EQ(header,
            "name,island,component,x_pix,y_pix,ra,ra_err,dec,dec_err,phi,phi_err,pi,pi_err,chi0,chi0_err,stokes_i,stokes_v,"
            "frac_pol,sigma_qu,snr,fdf_noise_mad,m2,faraday_complex,sigma_add,sigma_add_err_minus,sigma_add_err_plus,"
            "complex_sigma_add,beamdist,beam_response");
  // The header row first, then the two rows: no '#' lines, which CSV readers take for rows.
  EXPECT_TRUE(csv.starts_with(header + "\n")) << csv.substr(0, 200);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 3);
}

// Every number of the CSV reads back to the FITS table's value: a position just short of
// RA 360 stays short of it.
TEST(CatalogueTable, CsvNumbersReadBackExactly) {
  FinderSettings settings;
  Source s;
  s.name = "SPIP J235959.9+595959";
  s.ra_deg = 359.9999999925;
  s.dec_deg = 59.99999999999;
  s.pi = 0.1 + 0.2;
  s.frac_pol = std::numeric_limits<double>::quiet_NaN();
  const spip::fits::Table table = catalogue_table({s}, settings);
  const std::string csv = to_csv(table);
  std::istringstream lines(csv);
  std::string header, row;
  std::getline(lines, header);
  std::getline(lines, row);
  std::vector<std::string> fields;
  for (std::istringstream cells(row); std::getline(cells, row, ',');) fields.push_back(row);
  ASSERT_EQ(fields.size(), table.columns.size());
  int numbers = 0;
  for (std::size_t c = 0; c < fields.size(); ++c)
    if (const auto* values = std::get_if<std::vector<double>>(&table.columns[c].values)) {
      const double expected = values->front();
      if (std::isnan(expected)) {
        EXPECT_EQ(fields[c], "nan") << table.columns[c].name;
      } else {
        EXPECT_EQ(std::stod(fields[c]), expected) << table.columns[c].name << ": " << fields[c];
        ++numbers;
      }
    }
  EXPECT_GE(numbers, 10);
  EXPECT_NE(csv.find(",359.9999999925,"), std::string::npos) << csv;
}
