// The cube model: a beam given on a grid, read from FITS. Bilinear and linear
// interpolation reproduce a field linear in l, m and nu exactly, so a cube of one is
// checked against the field itself; the reader against the pixels a FITS file was
// written with (FREQ running down, the leakage planes on a STOKES axis); the correction
// against the apparent Stokes parameters made from known true ones; and an Airy beam on
// a grid four times coarser than an image against the Airy model.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "scratch.hpp"
#include "spip/beam/primary_beam.hpp"
#include "spip/error.hpp"
#include "spip/fits/fits_image.hpp"

namespace spip::beam {
namespace {

// The field the cube holds: linear in l, m and nu; `k` 0 is the response, 1-3 the leakages.
double field(int k, double l, double m, double freq_hz) {
  const double a[4] = {0.5, 0.01, -0.02, 0.003}, b[4] = {10, 1, 0, 0.5}, c[4] = {-20, 0, 1, 0.2};
  return a[k] + b[k] * l + c[k] * m + 1e-10 * (k + 1) * (freq_hz - 1e9);
}

PrimaryBeam linear_cube() {
  BeamCube cube;
  cube.nx = 5;
  cube.ny = 4;
  cube.ref_x = 2;
  cube.ref_y = 1.5;
  cube.dl = -1e-3;
  cube.dm = 2e-3;
  cube.freq_hz = {1.0e9, 1.2e9, 1.5e9};
  cube.lowest_hz = 0.9e9;
  cube.highest_hz = 1.65e9;
  for (int k = 0; k < 4; ++k)
    for (double f : cube.freq_hz)
      for (int y = 0; y < cube.ny; ++y)
        for (int x = 0; x < cube.nx; ++x)
          (k == 0 ? cube.response : cube.leakage)
              .push_back(static_cast<float>(field(k, (x - cube.ref_x) * cube.dl, (y - cube.ref_y) * cube.dm, f)));
  PrimaryBeam beam;
  beam.model = Model::cube;
  beam.cube = std::make_shared<const BeamCube>(cube);
  return beam;
}

TEST(BeamCube, InterpolatesAFieldLinearInPositionAndFrequencyExactly) {
  const PrimaryBeam beam = linear_cube();
  ASSERT_TRUE(beam.has_leakage());
  for (double l : {-1.9e-3, -0.3e-3, 0.0, 1.2e-3, 2.0e-3})
    for (double m : {-3.0e-3, -0.1e-3, 2.9e-3})
      for (double f : {1.0e9, 1.07e9, 1.2e9, 1.33e9, 1.5e9}) {
        EXPECT_NEAR(beam.response(l, m, f), field(0, l, m, f), 1e-6) << l << " " << m << " " << f;
        for (int stokes = 1; stokes <= 3; ++stokes)
          EXPECT_NEAR(beam.leakage(stokes, l, m, f), field(stokes, l, m, f), 1e-6) << stokes;
      }
  // Off the grid there is no response; beyond the outer planes, the nearest plane's.
  EXPECT_EQ(beam.response(2.5e-3, 0, 1.2e9), 0);
  EXPECT_EQ(beam.response(0, -3.5e-3, 1.2e9), 0);
  EXPECT_NEAR(beam.response(1e-3, 1e-3, 0.95e9), field(0, 1e-3, 1e-3, 1.0e9), 1e-6);
  EXPECT_NEAR(beam.response(1e-3, 1e-3, 1.6e9), field(0, 1e-3, 1e-3, 1.5e9), 1e-6);
}

TEST(BeamCube, HoldsOnlyOverTheBandItsPlanesCover) {
  PrimaryBeam beam = linear_cube();
  beam.name = "the test cube";
  beam.lowest_hz = beam.cube->lowest_hz;
  beam.highest_hz = beam.cube->highest_hz;
  EXPECT_NO_THROW(beam.check_band(0.95e9, 1.6e9));
  try {
    beam.check_band(1.0e9, 1.7e9);
    ADD_FAILURE() << "a band past the cube's last plane was accepted";
  } catch (const ConfigError& error) {
    EXPECT_NE(std::string(error.what()).find("the test cube holds from 900 to 1650 MHz, but the imaged channels span "
                                             "1000 to 1700 MHz"),
              std::string::npos)
        << error.what();
  }
}

// A FITS cube of 6 x 4 pixels, three FREQ planes written high to low and, with four
// Stokes planes, the response then the leakages; pixel value 1000 s + 100 f + 10 y + x.
fits::ImageHeader cube_header(int stokes_planes) {
  fits::ImageHeader h;
  h.nx = 6;
  h.ny = 4;
  h.ra_rad = 1.0;
  h.dec_rad = -0.5;
  h.cell_rad = 1e-3;
  h.spectral = fits::LinearAxis{"FREQ", "Hz", 1.5e9, -0.25e9, 1.0, 3};
  h.stokes = fits::Stokes::I;
  h.stokes_planes = stokes_planes;
  h.bunit = "";
  return h;
}

// Each pixel's place, 1000 s + 100 f + 10 y + x, in units of 2^-12 (exact in a float):
// below 1, as a beam's response is, which the reader checks.
float coded(int place) { return static_cast<float>(place) / 4096.0f; }

std::vector<float> cube_pixels(int stokes_planes) {
  std::vector<float> data;
  for (int s = 0; s < stokes_planes; ++s)
    for (int f = 0; f < 3; ++f)
      for (int y = 0; y < 4; ++y)
        for (int x = 0; x < 6; ++x) data.push_back(coded(1000 * s + 100 * f + 10 * y + x));
  return data;
}

TEST(BeamCube, ReadsTheResponseAndLeakagePlanesOfAFitsCube) {
  const std::string path = spip::test::scratch_path("beam.fits").string();
  fits::write_image(path, cube_header(4), cube_pixels(4));
  const BeamCube cube = read_beam_cube(path);
  EXPECT_EQ(cube.nx, 6);
  EXPECT_EQ(cube.ny, 4);
  EXPECT_DOUBLE_EQ(cube.ref_x, 3);  // CRPIX = n/2 + 1, one-based
  EXPECT_DOUBLE_EQ(cube.ref_y, 2);
  EXPECT_NEAR(cube.dl, -1e-3, 1e-15);  // RA runs to the left
  EXPECT_NEAR(cube.dm, 1e-3, 1e-15);
  ASSERT_EQ(cube.freq_hz, (std::vector<double>{1.0e9, 1.25e9, 1.5e9}));  // ascending
  EXPECT_DOUBLE_EQ(cube.lowest_hz, 0.875e9);
  EXPECT_DOUBLE_EQ(cube.highest_hz, 1.625e9);
  ASSERT_EQ(cube.response.size(), 3u * 24);
  ASSERT_EQ(cube.leakage.size(), 3u * 3 * 24);
  // Plane 0 of the read cube is the file's last FREQ plane (f = 2).
  EXPECT_EQ(cube.response[0 * 24 + 2 * 6 + 5], coded(200 + 25));
  EXPECT_EQ(cube.response[2 * 24 + 1 * 6 + 3], coded(13));
  EXPECT_EQ(cube.leakage[(0 * 3 + 0) * 24 + 3 * 6 + 1], coded(1000 + 200 + 31));  // I -> Q
  EXPECT_EQ(cube.leakage[(2 * 3 + 1) * 24 + 0], coded(3000 + 100));             // I -> V
  // The response alone, with or without a STOKES axis.
  fits::ImageHeader plain = cube_header(1);
  plain.stokes.reset();
  fits::write_image(path, plain, cube_pixels(1));
  EXPECT_TRUE(read_beam_cube(path).leakage.empty());
  EXPECT_EQ(read_beam_cube(path).response[24 + 7], coded(100 + 11));
  // A wholly blank plane (a flagged channel of spip's own pb cube) is left out: the
  // planes either side of it are interpolated across it.
  std::vector<float> flagged = cube_pixels(1);
  std::fill(flagged.begin() + 24, flagged.begin() + 48, std::numeric_limits<float>::quiet_NaN());
  fits::write_image(path, plain, flagged);
  const BeamCube gapped = read_beam_cube(path);
  EXPECT_EQ(gapped.freq_hz, (std::vector<double>{1.0e9, 1.5e9}));
  EXPECT_EQ(gapped.response[7], coded(200 + 11));
  EXPECT_EQ(gapped.response[24 + 7], coded(11));
  // A response above 1 is no beam's at its pointing (a mosaic's effective response?).
  std::vector<float> above = cube_pixels(1);
  above[30] = 1.5f;
  fits::write_image(path, plain, above);
  EXPECT_THROW(read_beam_cube(path), spip::ConfigError);
}

// Through the reader and the image grid, a cube linear in l and m keeps its gradient's
// signs (east is +l, where RA grows and FITS pixels x fall), out to its last pixels.
TEST(BeamCube, KeepsEastAndNorthWhereTheImageHasThem) {
  const int n = 16;
  const double cell = 1e-3;
  const auto sky = [](double l, double m) { return 0.5 + 20 * l + 10 * m; };
  fits::ImageHeader h = cube_header(1);
  h.nx = h.ny = n;
  h.cell_rad = cell;
  h.spectral->size = 1;
  h.stokes.reset();
  std::vector<float> data;
  for (int y = 0; y < n; ++y)
    for (int x = 0; x < n; ++x) data.push_back(static_cast<float>(sky(-(x - n / 2) * cell, (y - n / 2) * cell)));
  const std::string path = spip::test::scratch_path("tilted.fits").string();
  fits::write_image(path, h, data);
  const PrimaryBeam beam = cube_beam(path);
  // The image's grid is the cube's: every pixel, the edges (x, y = 0 and n - 1) included.
  const std::vector<float> plane = response_plane(beam, {n, cell}, 1.5e9);
  for (int y = 0; y < n; ++y)
    for (int x = 0; x < n; ++x)
      EXPECT_NEAR(plane[static_cast<std::size_t>(y) * n + x], sky(-(x - n / 2) * cell, (y - n / 2) * cell), 1e-6)
          << x << " " << y;
  EXPECT_GT(beam.response(2e-3, 0, 1.5e9), beam.response(-2e-3, 0, 1.5e9));  // brighter to the east
  EXPECT_GT(beam.response(0, 2e-3, 1.5e9), beam.response(0, -2e-3, 1.5e9));  // and to the north
}

TEST(BeamCube, RefusesCubesItCannotUseInOneLine) {
  const std::string path = spip::test::scratch_path("bad.fits").string();
  const auto says = [&](const std::string& text) {
    try {
      read_beam_cube(path);
      return std::string("accepted");
    } catch (const ConfigError& error) {
      const std::string what = error.what();
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
      return what.find(text) != std::string::npos ? text : what;
    }
  };
  EXPECT_EQ(says("no such file"), "no such file");
  fits::write_image(path, cube_header(2), cube_pixels(2));  // I and Q: no V, no U
  EXPECT_EQ(says("its STOKES axis must be I alone"), "its STOKES axis must be I alone");
  fits::ImageHeader depth = cube_header(1);
  depth.spectral->ctype = "FDEP";
  depth.spectral->cunit = "rad/m^2";
  fits::write_image(path, depth, cube_pixels(1));
  EXPECT_EQ(says("expected a FREQ axis"), "expected a FREQ axis");
  fits::ImageHeader flat = cube_header(1);
  flat.spectral.reset();
  flat.stokes.reset();
  fits::write_image(path, flat, std::vector<float>(24, 1.0f));
  EXPECT_EQ(says("expected axes RA---SIN, DEC--SIN, FREQ"), "expected axes RA---SIN, DEC--SIN, FREQ");
  std::ofstream(path) << "{\"not\": \"FITS\"}\n";
  EXPECT_EQ(says("FITS: cannot open"), "FITS: cannot open");
}

// Apparent Stokes parameters of a known source seen through a response and leakages:
// the correction gives back the source, and blanks a pixel below the limit.
TEST(BeamCorrection, RemovesTheLeakedStokesIBeforeDividingByTheResponse) {
  const double truth[4] = {2.0, 0.3, -0.1, 0.05}, leaked[3] = {0.02, -0.01, 0.005};
  const std::vector<float> response{0.5f, 0.1f};
  std::vector<float> leakage;
  for (double fraction : leaked) leakage.insert(leakage.end(), 2, static_cast<float>(fraction));
  std::vector<float> planes[4];
  for (int k = 0; k < 4; ++k)
    for (float b : response) {
      const double apparent_i = b * truth[0];
      planes[k].push_back(static_cast<float>(k == 0 ? apparent_i : b * truth[k] + leaked[k - 1] * apparent_i));
    }
  float* const stokes[4] = {planes[0].data(), planes[1].data(), planes[2].data(), planes[3].data()};
  correct_stokes(stokes, response, leakage, 0.2);
  for (int k = 0; k < 4; ++k) {
    EXPECT_NEAR(planes[k][0], truth[k], 1e-6) << k;
    EXPECT_TRUE(std::isnan(planes[k][1])) << k;
  }
}

// An Airy beam written on a grid 4 times coarser than the image, every 8 % in frequency:
// the cube model's response over the image is the Airy model's to 0.5 % of the peak.
TEST(BeamCube, AnAiryBeamOnACoarseGridIsTheAiryModel) {
  PrimaryBeam airy;
  airy.model = Model::airy;
  airy.dish_diameter_m = 25;
  const int size = 256, coarse = 64;
  const double cell = 20.0 / 206264.806;
  fits::ImageHeader h;
  h.nx = h.ny = coarse;
  h.ra_rad = 0.3;
  h.dec_rad = 0.6;
  h.cell_rad = 4 * cell;
  h.spectral = fits::LinearAxis{"FREQ", "Hz", 1.2e9, 0.1e9, 1.0, 5};
  h.bunit = "";
  std::vector<float> data;
  for (int f = 0; f < 5; ++f) {
    const std::vector<float> plane = response_plane(airy, {coarse, h.cell_rad}, 1.2e9 + 0.1e9 * f);
    data.insert(data.end(), plane.begin(), plane.end());
  }
  const std::string path = spip::test::scratch_path("airy.fits").string();
  fits::write_image(path, h, data);
  const PrimaryBeam cube = cube_beam(path);
  double worst = 0;
  for (double freq : {1.2e9, 1.27e9, 1.45e9, 1.6e9}) {
    const std::vector<float> model = response_plane(airy, {size, cell}, freq);
    const std::vector<float> gridded = response_plane(cube, {size, cell}, freq);
    for (std::size_t i = 0; i < model.size(); ++i)
      if (model[i] > 0.2) worst = std::max(worst, static_cast<double>(std::abs(gridded[i] - model[i])));
  }
  std::printf("[ measured ] an Airy beam on a 4x coarser grid, planes 100 MHz apart: largest difference %.2e\n", worst);
  EXPECT_LT(worst, 5e-3);
}

}  // namespace
}  // namespace spip::beam
