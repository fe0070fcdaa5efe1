// Checks the fits room against references that share none of its code: wcslib
// parses the header bytes read straight from the file, and an independent
// double-precision SIN projection gives the expected sky positions.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <wcslib/wcs.h>
#include <wcslib/wcshdr.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "spip/error.hpp"
#include "spip/fits/fits_image.hpp"
#include "spip/fits/fits_table.hpp"
#include "spip/version.hpp"
#include "scratch.hpp"

namespace {

namespace fs = std::filesystem;
using spip::fits::CubeFile;
using spip::fits::FitsImage;
using spip::fits::ImageHeader;
using spip::fits::LinearAxis;
using spip::fits::Stokes;

constexpr double pi = std::numbers::pi;
constexpr double deg = pi / 180.0;

// The test process's own scratch folder.
class FitsTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = spip::test::scratch_dir(); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

ImageHeader basic_header(int nx, int ny) {
  ImageHeader h;
  h.nx = nx;
  h.ny = ny;
  h.ra_rad = -0.1 * deg;  // normalises to CRVAL1 = 359.9, so corners straddle 0h
  h.dec_rad = -62.5 * deg;
  h.cell_rad = 0.05 * deg;  // wide enough that SIN differs visibly from linear
  h.date_obs = "2024-03-01T12:34:56.5";
  h.telescope = "SKA-LOW";
  h.object = "test field";
  return h;
}

std::vector<float> ramp(std::size_t n, float offset = 0) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = offset + 0.25f * static_cast<float>(i);
  return v;
}

// Random bit patterns: every float class (NaN payloads, infinities, -0,
// subnormals) must survive the round trip unchanged.
std::vector<float> random_bits(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = std::bit_cast<float>(static_cast<std::uint32_t>(rng()));
  v.at(0) = std::numeric_limits<float>::quiet_NaN();
  v.at(1) = -0.0f;
  v.at(2) = std::numeric_limits<float>::infinity();
  v.at(3) = std::numeric_limits<float>::denorm_min();
  return v;
}

// The bytes a FileWrite describes, put with plain pwrite: the layout the fits room
// gives must be right on its own, whoever writes it (the pipeline uses MPI-IO).
void put(const spip::FileWrite& write) {
  const int fd = ::open(write.path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("cannot open " + write.path);
  for (const spip::FileExtent& extent : write.extents)
    if (::pwrite(fd, extent.bytes.data(), extent.bytes.size(), extent.offset) != static_cast<ssize_t>(extent.bytes.size()))
      throw std::runtime_error("cannot write " + write.path);
  ::close(fd);
}

void expect_same_bits(const std::vector<float>& expected, const std::vector<float>& actual) {
  ASSERT_EQ(expected.size(), actual.size());
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < expected.size(); ++i)
    if (std::bit_cast<std::uint32_t>(expected[i]) != std::bit_cast<std::uint32_t>(actual[i])) {
      if (++mismatches <= 5) ADD_FAILURE() << "pixel " << i << ": " << expected[i] << " != " << actual[i];
    }
  EXPECT_EQ(mismatches, 0u);
}

// The primary header's 80-byte cards up to END, read without CFITSIO.
std::string raw_header(const std::string& path, int& ncards) {
  std::ifstream in(path, std::ios::binary);
  std::string header;
  char card[80];
  while (in.read(card, 80)) {
    const std::string text(card, 80);
    if (text.starts_with("END     ")) break;
    header += text;
  }
  ncards = static_cast<int>(header.size() / 80);
  return header;
}

// wcslib's view of a file's header. Strict parsing: no extensions allowed, and
// any rejected WCS card fails the test.
class Wcs {
 public:
  explicit Wcs(const std::string& path) {
    int ncards = 0;
    header_ = raw_header(path, ncards);
    int nreject = 0;
    const int status = wcspih(header_.data(), ncards, WCSHDR_none, 0, &nreject, &nwcs_, &wcs_);
    EXPECT_EQ(status, 0);
    EXPECT_EQ(nreject, 0) << "wcslib rejected cards in " << path;
    if (nwcs_ < 1) throw std::runtime_error("no WCS in " + path);
    EXPECT_EQ(wcsset(wcs_), 0);
  }
  Wcs(const Wcs&) = delete;
  Wcs& operator=(const Wcs&) = delete;
  ~Wcs() { wcsvfree(&nwcs_, &wcs_); }

  int naxis() const { return wcs_->naxis; }
  const wcsprm& params() const { return *wcs_; }

  // World coordinates of a zero-based pixel (one entry per axis).
  std::vector<double> world(const std::vector<double>& pixel0) {
    const auto n = static_cast<std::size_t>(wcs_->naxis);
    std::vector<double> pix(n), img(n), world(n);
    for (std::size_t i = 0; i < n; ++i) pix[i] = (i < pixel0.size() ? pixel0[i] : 0.0) + 1.0;
    double phi = 0, theta = 0;
    int stat = 0;
    EXPECT_EQ(wcsp2s(wcs_, 1, wcs_->naxis, pix.data(), img.data(), &phi, &theta, world.data(), &stat), 0);
    return world;
  }

 private:
  std::string header_;
  int nwcs_ = 0;
  wcsprm* wcs_ = nullptr;
};

// Independent SIN projection: direction cosines (l, m) of a zero-based pixel,
// RA increasing to the left, rotated to the sky about the phase centre.
std::pair<double, double> sin_world_deg(const ImageHeader& h, double x, double y) {
  const double l = (x - h.nx / 2) * (-h.cell_rad);
  const double m = (y - h.ny / 2) * h.cell_rad;
  const double n = std::sqrt(1.0 - l * l - m * m);
  const double dec = std::asin(m * std::cos(h.dec_rad) + n * std::sin(h.dec_rad));
  const double ra = h.ra_rad + std::atan2(l, n * std::cos(h.dec_rad) - m * std::sin(h.dec_rad));
  return {ra / deg, dec / deg};
}

double angle_diff_deg(double a, double b) { return std::remainder(a - b, 360.0); }

void expect_celestial_matches(const ImageHeader& h, Wcs& wcs) {
  const std::vector<std::pair<double, double>> pixels = {
      {0, 0}, {h.nx - 1.0, 0}, {0, h.ny - 1.0}, {h.nx - 1.0, h.ny - 1.0},
      {h.nx / 2 + 3.0, h.ny / 2 - 5.0}, {h.nx / 2 - 7.0, h.ny / 2 + 2.0}};
  for (const auto& [x, y] : pixels) {
    const std::vector<double> w = wcs.world({x, y});
    const auto [ra, dec] = sin_world_deg(h, x, y);
    EXPECT_NEAR(angle_diff_deg(w[0], ra), 0.0, 1e-9) << "RA at pixel (" << x << ", " << y << ")";
    EXPECT_NEAR(w[1], dec, 1e-9) << "Dec at pixel (" << x << ", " << y << ")";
    EXPECT_GE(w[0], 0.0);
    EXPECT_LT(w[0], 360.0);
  }
  // The phase centre pixel is the reference point itself.
  const std::vector<double> centre = wcs.world({static_cast<double>(h.nx / 2), static_cast<double>(h.ny / 2)});
  double ra0 = std::fmod(h.ra_rad / deg + 360.0, 360.0);
  EXPECT_NEAR(angle_diff_deg(centre[0], ra0), 0.0, 1e-12);
  EXPECT_NEAR(centre[1], h.dec_rad / deg, 1e-12);
}

// ---------------------------------------------------------------- WCS

TEST_F(FitsTest, ImageWcsMatchesIndependentSinProjection) {
  const ImageHeader h = basic_header(64, 48);
  spip::fits::write_image(path("image.fits"), h, ramp(64 * 48));

  const FitsImage img = spip::fits::read_image(path("image.fits"));
  EXPECT_EQ(img.shape, (std::vector<long>{64, 48}));
  EXPECT_EQ(img.number("BITPIX"), -32);
  EXPECT_EQ(img.text("CTYPE1"), "RA---SIN");
  EXPECT_EQ(img.text("CTYPE2"), "DEC--SIN");
  EXPECT_EQ(img.text("CUNIT1"), "deg");
  EXPECT_EQ(img.text("CUNIT2"), "deg");
  EXPECT_EQ(img.number("CRPIX1"), 33.0);
  EXPECT_EQ(img.number("CRPIX2"), 25.0);
  EXPECT_NEAR(img.number("CRVAL1"), 359.9, 1e-12);
  EXPECT_NEAR(img.number("CRVAL2"), -62.5, 1e-12);
  EXPECT_EQ(img.number("CDELT1"), -h.cell_rad * 180.0 / pi);
  EXPECT_EQ(img.number("CDELT2"), h.cell_rad * 180.0 / pi);
  EXPECT_EQ(img.text("RADESYS"), "FK5");
  EXPECT_EQ(img.number("EQUINOX"), 2000.0);
  EXPECT_EQ(img.number("LONPOLE"), 180.0);
  EXPECT_NEAR(img.number("LATPOLE"), -62.5, 1e-12);
  EXPECT_EQ(img.keywords.count("SPECSYS"), 0u);
  EXPECT_EQ(img.keywords.count("CTYPE3"), 0u);

  Wcs wcs(path("image.fits"));
  ASSERT_EQ(wcs.naxis(), 2);
  EXPECT_EQ(wcs.params().lonpole, 180.0);
  EXPECT_NEAR(wcs.params().latpole, -62.5, 1e-12);
  EXPECT_EQ(std::string(wcs.params().radesys), "FK5");
  expect_celestial_matches(h, wcs);
}

TEST_F(FitsTest, OddSizedImageHasPhaseCentreAtHalfN) {
  ImageHeader h = basic_header(63, 65);
  h.ra_rad = 2 * pi + 10 * deg;  // beyond a turn: CRVAL1 = 10
  h.dec_rad = 30 * deg;
  spip::fits::write_image(path("odd.fits"), h, ramp(63 * 65));
  const FitsImage img = spip::fits::read_image(path("odd.fits"));
  EXPECT_EQ(img.number("CRPIX1"), 32.0);
  EXPECT_EQ(img.number("CRPIX2"), 33.0);
  EXPECT_NEAR(img.number("CRVAL1"), 10.0, 1e-12);
  Wcs wcs(path("odd.fits"));
  expect_celestial_matches(h, wcs);
}

TEST_F(FitsTest, FrequencyAndStokesAxes) {
  ImageHeader h = basic_header(32, 32);
  h.spectral = LinearAxis{"FREQ", "Hz", 1.4e9, 2.5e6, 1, 5};
  h.stokes = Stokes::Q;
  spip::fits::write_image(path("cube.fits"), h, ramp(32 * 32 * 5));

  const FitsImage img = spip::fits::read_image(path("cube.fits"));
  EXPECT_EQ(img.shape, (std::vector<long>{32, 32, 5, 1}));
  EXPECT_EQ(img.text("CTYPE3"), "FREQ");
  EXPECT_EQ(img.text("CUNIT3"), "Hz");
  EXPECT_EQ(img.text("CTYPE4"), "STOKES");
  EXPECT_EQ(img.number("CRVAL4"), 2.0);
  EXPECT_EQ(img.number("CDELT4"), 1.0);
  EXPECT_EQ(img.number("CRPIX4"), 1.0);
  EXPECT_EQ(img.text("SPECSYS"), "TOPOCENT");

  Wcs wcs(path("cube.fits"));
  ASSERT_EQ(wcs.naxis(), 4);
  for (int k = 0; k < 5; ++k) {
    const std::vector<double> w = wcs.world({3, 29, static_cast<double>(k), 0});
    EXPECT_NEAR(w[2], 1.4e9 + k * 2.5e6, 1e-3) << "plane " << k;
    EXPECT_EQ(w[3], 2.0);
    const auto [ra, dec] = sin_world_deg(h, 3, 29);
    EXPECT_NEAR(angle_diff_deg(w[0], ra), 0.0, 1e-9);
    EXPECT_NEAR(w[1], dec, 1e-9);
  }
  expect_celestial_matches(h, wcs);
}

TEST_F(FitsTest, FaradayDepthAxisWithOffsetReferencePixel) {
  ImageHeader h = basic_header(16, 16);
  h.spectral = LinearAxis{"FDEP", "rad/m^2", -50.0, 2.5, 5.0, 41};
  h.stokes = Stokes::U;
  spip::fits::write_image(path("fdf.fits"), h, ramp(16 * 16 * 41));

  const FitsImage img = spip::fits::read_image(path("fdf.fits"));
  EXPECT_EQ(img.text("CTYPE3"), "FDEP");
  EXPECT_EQ(img.text("CUNIT3"), "rad/m^2");
  EXPECT_EQ(img.keywords.count("SPECSYS"), 0u);
  Wcs wcs(path("fdf.fits"));
  for (int k : {0, 4, 17, 40}) {
    const std::vector<double> w = wcs.world({8, 8, static_cast<double>(k), 0});
    EXPECT_NEAR(w[2], -50.0 + (k + 1 - 5.0) * 2.5, 1e-12) << "plane " << k;
    EXPECT_EQ(w[3], 3.0);
  }
}

TEST_F(FitsTest, StokesWithoutSpectralAxisIsAxisThree) {
  ImageHeader h = basic_header(16, 8);
  h.stokes = Stokes::V;
  spip::fits::write_image(path("v.fits"), h, ramp(16 * 8));
  const FitsImage img = spip::fits::read_image(path("v.fits"));
  EXPECT_EQ(img.shape, (std::vector<long>{16, 8, 1}));
  EXPECT_EQ(img.text("CTYPE3"), "STOKES");
  EXPECT_EQ(img.keywords.count("CTYPE4"), 0u);
  Wcs wcs(path("v.fits"));
  ASSERT_EQ(wcs.naxis(), 3);
  EXPECT_EQ(wcs.world({0, 0, 0})[2], 4.0);
  expect_celestial_matches(h, wcs);
}

// ---------------------------------------------------------------- metadata

TEST_F(FitsTest, MetadataRoundTrips) {
  ImageHeader h = basic_header(8, 8);
  h.bunit = "Jy/pixel";
  h.beam = spip::fits::Beam{12.5 / 3600 * deg, 7.25 / 3600 * deg, -35.0 * deg};
  h.extra_keys = {{"LAMSQ0", 0.0451234567890123}, {"NITER", 5000}};
  h.history = {"spip image --config run.toml", "second line"};
  spip::fits::write_image(path("meta.fits"), h, ramp(64));

  const FitsImage img = spip::fits::read_image(path("meta.fits"));
  EXPECT_EQ(img.text("BUNIT"), "Jy/pixel");
  EXPECT_EQ(img.text("BTYPE"), "Intensity");
  EXPECT_NEAR(img.number("BMAJ"), 12.5 / 3600, 1e-15);
  EXPECT_NEAR(img.number("BMIN"), 7.25 / 3600, 1e-15);
  EXPECT_NEAR(img.number("BPA"), -35.0, 1e-12);
  EXPECT_EQ(img.text("DATE-OBS"), "2024-03-01T12:34:56.5");
  // 2024-01-01 is MJD 60310; then 31 + 29 days and 45296.5 s (astropy's Time: 60370.5242650463).
  EXPECT_NEAR(img.number("MJD-OBS"), 60370 + 45296.5 / 86400, 1e-9);
  EXPECT_EQ(img.text("TELESCOP"), "SKA-LOW");
  EXPECT_EQ(img.text("OBJECT"), "test field");
  EXPECT_EQ(img.text("ORIGIN"), std::string("spip ") + spip::version);
  EXPECT_EQ(img.number("LAMSQ0"), 0.0451234567890123);
  EXPECT_EQ(img.number("NITER"), 5000.0);
  EXPECT_EQ(img.history, (std::vector<std::string>{"spip image --config run.toml", "second line"}));

  // A DATE-OBS of a time alone (as another imager's cube may give it) names no day: no MJD-OBS.
  h.date_obs = "12:34:56";
  spip::fits::write_image(path("time-only.fits"), h, ramp(64));
  const FitsImage time_only = spip::fits::read_image(path("time-only.fits"));
  EXPECT_EQ(time_only.text("DATE-OBS"), "12:34:56");
  EXPECT_EQ(time_only.keywords.count("MJD-OBS"), 0u);
}

TEST_F(FitsTest, NoBeamKeywordsWithoutBeam) {
  spip::fits::write_image(path("nobeam.fits"), basic_header(8, 8), ramp(64));
  const FitsImage img = spip::fits::read_image(path("nobeam.fits"));
  EXPECT_EQ(img.keywords.count("BMAJ"), 0u);
  EXPECT_EQ(img.text("BUNIT"), "Jy/beam");
  EXPECT_THROW((void)img.number("BMAJ"), spip::Error);
}

TEST_F(FitsTest, BadExtraKeywordThrowsAndLeavesNothing) {
  ImageHeader h = basic_header(8, 8);
  h.extra_keys = {{"CRVAL1", 1.0}};  // would shadow the WCS
  EXPECT_THROW(spip::fits::write_image(path("dup.fits"), h, ramp(64)), spip::Error);
  h.extra_keys = {{"lower", 1.0}};
  EXPECT_THROW(spip::fits::write_image(path("dup.fits"), h, ramp(64)), spip::Error);
  EXPECT_TRUE(fs::is_empty(dir_));
}

TEST_F(FitsTest, TableRoundTripsValuesUnitsAndDescriptions) {
  spip::fits::Table table;
  table.extname = "CATALOGUE";
  const double nan = std::numeric_limits<double>::quiet_NaN();
  table.columns.push_back({"name", "", "source name", std::vector<std::string>{"SPIP J000000.0+600000", "b", ""}});
  table.columns.push_back({"phi", "rad/m^2", "Faraday depth", std::vector<double>{20.25, -45.0, nan}});
  table.columns.push_back({"island", "", "island number", std::vector<std::int32_t>{1, 2, -7}});
  table.keys.push_back({"THRESH", 8.0, "detection threshold"});
  table.comments.push_back("made by a test");
  spip::fits::write_table(path("table.fits"), table);
  EXPECT_FALSE(fs::exists(path("table.fits.partial")));

  const spip::fits::Table back = spip::fits::read_table(path("table.fits"), {"THRESH"});
  EXPECT_EQ(back.extname, "CATALOGUE");
  ASSERT_EQ(back.columns.size(), 3u);
  for (std::size_t c = 0; c < 3; ++c) {
    EXPECT_EQ(back.columns[c].name, table.columns[c].name);
    EXPECT_EQ(back.columns[c].unit, table.columns[c].unit);
    EXPECT_EQ(back.columns[c].description, table.columns[c].description);
  }
  EXPECT_EQ(std::get<std::vector<std::string>>(back.columns[0].values),
            std::get<std::vector<std::string>>(table.columns[0].values));
  const auto& phi = std::get<std::vector<double>>(back.columns[1].values);
  EXPECT_EQ(phi[0], 20.25);
  EXPECT_EQ(phi[1], -45.0);
  EXPECT_TRUE(std::isnan(phi[2]));
  EXPECT_EQ(std::get<std::vector<std::int32_t>>(back.columns[2].values), (std::vector<std::int32_t>{1, 2, -7}));
  ASSERT_EQ(back.keys.size(), 1u);
  EXPECT_EQ(back.keys[0].value, 8.0);
}

TEST_F(FitsTest, EmptyTableKeepsItsColumnsAndUnevenColumnsAreRefused) {
  spip::fits::Table table;
  table.extname = "CATALOGUE";
  table.columns.push_back({"pi", "Jy/beam", "polarised intensity", std::vector<double>{}});
  spip::fits::write_table(path("empty.fits"), table);
  const spip::fits::Table back = spip::fits::read_table(path("empty.fits"));
  ASSERT_EQ(back.columns.size(), 1u);
  EXPECT_EQ(back.columns[0].rows(), 0u);
  EXPECT_EQ(back.columns[0].unit, "Jy/beam");

  table.columns.push_back({"phi", "rad/m^2", "", std::vector<double>{1.0}});
  EXPECT_THROW(spip::fits::write_table(path("uneven.fits"), table), spip::Error);
  EXPECT_FALSE(fs::exists(path("uneven.fits")));
}

TEST(FitsImageKeywords, TextAndNumberParsing) {
  FitsImage img;
  img.path = "x.fits";
  img.keywords = {{"S", "'O''Brien  '"}, {"E", "''"}, {"D", "1.5D+03"}, {"P", "+2."},
                  {"I", "42"}, {"T", "T"}, {"Q", "'12'"}};
  EXPECT_EQ(img.text("S"), "O'Brien");
  EXPECT_EQ(img.text("E"), "");
  EXPECT_EQ(img.number("D"), 1500.0);
  EXPECT_EQ(img.number("P"), 2.0);
  EXPECT_EQ(img.number("I"), 42.0);
  EXPECT_THROW((void)img.number("T"), spip::Error);
  EXPECT_THROW((void)img.number("Q"), spip::Error);
  try {
    (void)img.number("MISSING");
    FAIL() << "no exception";
  } catch (const spip::Error& e) {
    EXPECT_NE(std::string(e.what()).find("MISSING"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("x.fits"), std::string::npos);
  }
}

// ---------------------------------------------------------------- data

TEST_F(FitsTest, ImageDataRoundTripBitExactly) {
  ImageHeader h = basic_header(37, 23);
  h.spectral = LinearAxis{"FREQ", "Hz", 1e8, 1e6, 1, 3};
  const std::vector<float> data = random_bits(37 * 23 * 3, 1);
  spip::fits::write_image(path("bits.fits"), h, data);
  const FitsImage img = spip::fits::read_image(path("bits.fits"));
  EXPECT_EQ(img.shape, (std::vector<long>{37, 23, 3}));
  expect_same_bits(data, img.data);
  EXPECT_FALSE(fs::exists(CubeFile::partial_path(path("bits.fits"))));
}

TEST_F(FitsTest, WriteImageReplacesExistingFile) {
  const ImageHeader h = basic_header(8, 4);
  spip::fits::write_image(path("again.fits"), h, ramp(32, 1.0f));
  spip::fits::write_image(path("again.fits"), h, ramp(32, 100.0f));
  expect_same_bits(ramp(32, 100.0f), spip::fits::read_image(path("again.fits")).data);
}

TEST_F(FitsTest, WrongPixelCountThrowsAndLeavesNothing) {
  EXPECT_THROW(spip::fits::write_image(path("short.fits"), basic_header(8, 8), ramp(63)), spip::Error);
  EXPECT_TRUE(fs::is_empty(dir_));
}

TEST_F(FitsTest, MissingDirectoryThrowsWithPathAndLeavesNothing) {
  const std::string target = path("no/such/dir/image.fits");
  try {
    spip::fits::write_image(target, basic_header(8, 8), ramp(64));
    FAIL() << "no exception";
  } catch (const spip::Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(target), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    EXPECT_NE(message.find("create"), std::string::npos) << message;
  }
  EXPECT_TRUE(fs::is_empty(dir_));
}

TEST_F(FitsTest, ReadingMissingFileThrowsWithPath) {
  try {
    (void)spip::fits::read_image(path("absent.fits"));
    FAIL() << "no exception";
  } catch (const spip::Error& e) {
    EXPECT_NE(std::string(e.what()).find(path("absent.fits")), std::string::npos) << e.what();
  }
}

// ---------------------------------------------------------------- cubes

TEST_F(FitsTest, CubeWrittenInShuffledOrderRoundTrips) {
  ImageHeader h = basic_header(19, 11);  // 836-byte planes straddle FITS records
  h.spectral = LinearAxis{"FREQ", "Hz", 1e9, -1e6, 1, 12};
  h.stokes = Stokes::I;
  const std::size_t plane = 19 * 11;
  const std::vector<float> cube = random_bits(plane * 12, 7);
  const std::string final_path = path("cube.fits");

  CubeFile::create(final_path, h);
  EXPECT_FALSE(fs::exists(final_path));
  EXPECT_TRUE(fs::exists(CubeFile::partial_path(final_path)));
  int ncards = 0;
  const std::string header_before = raw_header(CubeFile::partial_path(final_path), ncards);

  // (first plane, plane count) chunks covering the cube, written in shuffled order.
  std::vector<std::pair<int, int>> chunks{{0, 2}, {2, 1}, {3, 1}, {4, 3}, {7, 1}, {8, 1}, {9, 2}, {11, 1}};
  std::shuffle(chunks.begin(), chunks.end(), std::mt19937(3));
  for (const auto& [first, count] : chunks) {
    put(CubeFile::plane_write(CubeFile::layout(final_path), first, std::span(cube).subspan(first * plane, count * plane)));
    EXPECT_FALSE(fs::exists(final_path));
  }
  // Writers never touch the header (other writers may be reading it).
  EXPECT_EQ(raw_header(CubeFile::partial_path(final_path), ncards), header_before);

  CubeFile::commit(final_path);
  EXPECT_TRUE(fs::exists(final_path));
  EXPECT_FALSE(fs::exists(CubeFile::partial_path(final_path)));

  const FitsImage img = spip::fits::read_image(final_path);
  EXPECT_EQ(img.shape, (std::vector<long>{19, 11, 12, 1}));
  expect_same_bits(cube, img.data);
  EXPECT_EQ(img.text("CTYPE3"), "FREQ");
  EXPECT_EQ(img.number("CDELT3"), -1e6);
}

// CASA's per-plane beams: CASAMBM in the primary header, then a BEAMS table of one row
// per plane in arcsec and deg, which a second call replaces rather than duplicates.
TEST_F(FitsTest, PerPlaneBeamsAreCasasBeamsTable) {
  ImageHeader h = basic_header(8, 8);
  h.spectral = LinearAxis{"FREQ", "Hz", 1e8, 1e6, 1, 3};
  h.stokes = Stokes::U;
  h.beam = spip::fits::Beam{40.0 / 3600 * deg, 30.0 / 3600 * deg, 10 * deg};
  h.beam_per_plane = true;
  const std::string cube = path("beams.fits");
  CubeFile::create(cube, h);
  const std::vector<float> pixels = ramp(3 * 64);
  put(CubeFile::plane_write(CubeFile::layout(cube), 0, pixels));
  std::vector<spip::fits::Beam> beams{{40.0 / 3600 * deg, 30.0 / 3600 * deg, 10 * deg},
                                      {0, 0, 0},  // a blanked channel
                                      {30.0 / 3600 * deg, 20.0 / 3600 * deg, -80 * deg}};
  CubeFile::write_beams(cube, std::vector<spip::fits::Beam>(3, beams[1]));  // replaced below
  CubeFile::write_beams(cube, beams);
  EXPECT_THROW(CubeFile::write_beams(cube, std::vector<spip::fits::Beam>(2)), spip::Error);
  CubeFile::commit(cube);

  const FitsImage img = spip::fits::read_image(cube);
  EXPECT_EQ(img.text("CASAMBM"), "T");
  expect_same_bits(pixels, img.data);  // the table goes after the pixels, which stay
  const spip::fits::Table table = spip::fits::read_table(cube, {"NCHAN", "NPOL"});
  EXPECT_EQ(table.extname, "BEAMS");
  EXPECT_EQ(table.keys.at(0).value, 3.0);
  EXPECT_EQ(table.keys.at(1).value, 1.0);
  const std::vector<double>& major = table.values<double>("BMAJ");
  const std::vector<double>& minor = table.values<double>("BMIN");
  const std::vector<double>& pa = table.values<double>("BPA");
  ASSERT_EQ(major.size(), 3u);
  EXPECT_FLOAT_EQ(major[0], 40.0f);
  EXPECT_FLOAT_EQ(minor[0], 30.0f);
  EXPECT_FLOAT_EQ(pa[0], 10.0f);
  EXPECT_EQ(major[1], 0.0);
  EXPECT_FLOAT_EQ(major[2], 30.0f);
  EXPECT_FLOAT_EQ(minor[2], 20.0f);
  EXPECT_FLOAT_EQ(pa[2], -80.0f);
  EXPECT_EQ(table.values<std::int32_t>("CHAN"), (std::vector<std::int32_t>{0, 1, 2}));
  EXPECT_EQ(table.values<std::int32_t>("POL"), (std::vector<std::int32_t>{0, 0, 0}));
  for (const auto& column : table.columns)
    EXPECT_EQ(column.unit, column.name.starts_with("BM") ? "arcsec" : column.name == "BPA" ? "deg" : "") << column.name;
  int ncards = 0;
  const std::string header = raw_header(cube, ncards);
  EXPECT_NE(header.find("CASAMBM =                    T"), std::string::npos);
}

// Without beam_per_plane there is no CASAMBM, so readers use BMAJ/BMIN/BPA.
TEST_F(FitsTest, CommonBeamCubeHasNoCasambm) {
  ImageHeader h = basic_header(8, 8);
  h.spectral = LinearAxis{"FREQ", "Hz", 1e8, 1e6, 1, 2};
  h.beam = spip::fits::Beam{40.0 / 3600 * deg, 30.0 / 3600 * deg, 10 * deg};
  CubeFile::create(path("common.fits"), h);
  CubeFile::commit(path("common.fits"));
  EXPECT_EQ(spip::fits::read_image(path("common.fits")).keywords.count("CASAMBM"), 0u);
}

// The job's restoring beam, known only after every channel was imaged, replaces the
// placeholder of a cube created earlier: the header keeps its size, so the planes
// already written stay where they are, and they read back as written.
TEST_F(FitsTest, RestoringBeamReplacesThePlaceholderAndPlanesReadBack) {
  ImageHeader h = basic_header(19, 11);  // planes straddle FITS records
  h.spectral = LinearAxis{"FREQ", "Hz", 1e8, 1e6, 1, 5};
  h.stokes = Stokes::Q;
  h.beam = spip::fits::Beam{};
  const std::string cube = path("late_beam.fits");
  CubeFile::create(cube, h);
  const std::size_t plane = 19 * 11;
  const std::vector<float> pixels = random_bits(5 * plane, 11);
  put(CubeFile::plane_write(CubeFile::layout(cube), 0, pixels));
  int cards_before = 0, cards_after = 0;
  const std::string before = raw_header(CubeFile::partial_path(cube), cards_before);

  expect_same_bits(std::vector<float>(pixels.begin() + plane, pixels.begin() + 3 * plane),
                   CubeFile::read_planes(cube, 1, 2));
  EXPECT_THROW((void)CubeFile::read_planes(cube, 4, 2), spip::Error);
  const spip::fits::Beam beam{183.63 / 3600 * deg, 132.64 / 3600 * deg, -88.4 * deg};
  CubeFile::write_beam(cube, beam);
  const std::string after = raw_header(CubeFile::partial_path(cube), cards_after);
  EXPECT_EQ(cards_after, cards_before);
  EXPECT_EQ(after.size(), before.size());
  EXPECT_NE(after, before);
  CubeFile::commit(cube);

  const FitsImage img = spip::fits::read_image(cube);
  EXPECT_DOUBLE_EQ(img.number("BMAJ"), 183.63 / 3600);
  EXPECT_DOUBLE_EQ(img.number("BMIN"), 132.64 / 3600);
  EXPECT_DOUBLE_EQ(img.number("BPA"), -88.4);
  expect_same_bits(pixels, img.data);

  // A cube created without a beam (a model) has no keywords to replace.
  ImageHeader model = basic_header(8, 8);
  model.spectral = LinearAxis{"FREQ", "Hz", 1e8, 1e6, 1, 1};
  CubeFile::create(path("model.fits"), model);
  EXPECT_THROW(CubeFile::write_beam(path("model.fits"), beam), spip::Error);
}

// A cube is created with its header alone: the data area has its full FITS length but
// is not written (no byte goes to disk twice), and the header is byte for byte the
// one CFITSIO writes for the same image.
TEST_F(FitsTest, CreatedCubeHoldsOnlyItsHeader) {
  ImageHeader h = basic_header(256, 256);
  h.spectral = LinearAxis{"FDEP", "rad/m^2", -10, 1, 1, 64};
  h.stokes = Stokes::Q;
  h.beam = spip::fits::Beam{40.0 / 3600 * deg, 30.0 / 3600 * deg, 10 * deg};
  h.extra_keys["LAMSQ0"] = 0.0625;
  h.history = {"first line", "second line"};
  const std::string final_path = path("sized.fits");
  CubeFile::create(final_path, h);
  const std::string partial = CubeFile::partial_path(final_path);

  const std::vector<float> pixels(256u * 256 * 64, 0.5f);
  spip::fits::write_image(path("whole.fits"), h, pixels);
  int cards_created = 0, cards_whole = 0;
  EXPECT_EQ(raw_header(partial, cards_created), raw_header(path("whole.fits"), cards_whole));
  EXPECT_GT(cards_created, 30);
  EXPECT_EQ(fs::file_size(partial), fs::file_size(path("whole.fits")));
  EXPECT_EQ(fs::file_size(partial) % 2880, 0u);

  struct stat info {};
  ASSERT_EQ(::stat(partial.c_str(), &info), 0);
  const double allocated = 512.0 * static_cast<double>(info.st_blocks);
  EXPECT_LT(allocated, 0.01 * static_cast<double>(fs::file_size(partial)))
      << "the 16 MiB data area was written at creation";
  std::cout << "[ measured ] created cube: " << fs::file_size(partial) << " bytes long, " << allocated
            << " bytes allocated\n";
}

TEST_F(FitsTest, RowSlabsFromSeveralWritersAssembleTheCube) {
  // Three "ranks" each own a slab of rows of every plane (odd sizes, so slabs share
  // FITS records), as the Faraday depth cubes are written.
  ImageHeader h = basic_header(10, 9);
  h.spectral = LinearAxis{"FDEP", "rad/m^2", -2, 0.5, 1, 5};
  const std::string final_path = path("slabs.fits");
  CubeFile::create(final_path, h);
  const std::vector<float> cube = random_bits(5 * 90, 5);  // NaN, infinities and denormals too
  const int bounds[] = {0, 4, 6, 9};
  for (int r : {2, 0, 1}) {
    std::vector<float> slab;
    for (int plane = 0; plane < 5; ++plane)
      slab.insert(slab.end(), cube.begin() + plane * 90 + bounds[r] * 10, cube.begin() + plane * 90 + bounds[r + 1] * 10);
    put(CubeFile::row_write(CubeFile::layout(final_path), bounds[r], slab));
  }
  // Each slab reads back as written, in the [plane][row][x] layout it was given.
  for (int r : {0, 1, 2}) {
    std::vector<float> slab;
    for (int plane = 0; plane < 5; ++plane)
      slab.insert(slab.end(), cube.begin() + plane * 90 + bounds[r] * 10, cube.begin() + plane * 90 + bounds[r + 1] * 10);
    expect_same_bits(slab, CubeFile::read_rows(final_path, bounds[r], bounds[r + 1] - bounds[r]));
  }
  EXPECT_THROW(CubeFile::read_rows(final_path, 7, 3), spip::Error);
  CubeFile::commit(final_path);
  expect_same_bits(cube, spip::fits::read_image(final_path).data);
  EXPECT_THROW((void)CubeFile::row_write(CubeFile::layout(final_path), 0, ramp(50)), spip::Error);  // committed: no partial file
}

TEST_F(FitsTest, WritePlanesRejectsBadRequests) {
  ImageHeader h = basic_header(8, 8);
  h.spectral = LinearAxis{"FREQ", "Hz", 1e9, 1e6, 1, 3};
  const std::string final_path = path("bad.fits");
  EXPECT_THROW((void)CubeFile::plane_write(CubeFile::layout(final_path), 0, ramp(64)), spip::Error);  // not created
  CubeFile::create(final_path, h);
  EXPECT_THROW((void)CubeFile::plane_write(CubeFile::layout(final_path), 0, ramp(65)), spip::Error);
  EXPECT_THROW((void)CubeFile::plane_write(CubeFile::layout(final_path), -1, ramp(64)), spip::Error);
  EXPECT_THROW((void)CubeFile::plane_write(CubeFile::layout(final_path), 3, ramp(64)), spip::Error);
  EXPECT_THROW((void)CubeFile::plane_write(CubeFile::layout(final_path), 2, ramp(128)), spip::Error);
  try {
    put(CubeFile::plane_write(CubeFile::layout(final_path), 0, ramp(10)));
    FAIL() << "no exception";
  } catch (const spip::Error& e) {
    EXPECT_NE(std::string(e.what()).find(final_path), std::string::npos) << e.what();
  }
  put(CubeFile::plane_write(CubeFile::layout(final_path), 2, ramp(64)));  // the last plane is in range
  CubeFile::commit(final_path);
  EXPECT_THROW(CubeFile::commit(final_path), spip::Error);  // nothing left to commit
}

TEST_F(FitsTest, CubeCreateIntoMissingDirectoryThrows) {
  ImageHeader h = basic_header(8, 8);
  const std::string target = path("missing/cube.fits");
  try {
    CubeFile::create(target, h);
    FAIL() << "no exception";
  } catch (const spip::Error& e) {
    EXPECT_NE(std::string(e.what()).find(target), std::string::npos) << e.what();
  }
  EXPECT_TRUE(fs::is_empty(dir_));
}

// Processes writing interleaved planes at the same time, with no lock. Planes of 900
// bytes share FITS records with their neighbours; writing the bytes of a FileWrite
// touches only its own pixels, so none is lost.
TEST_F(FitsTest, ConcurrentWritersOfDisjointPlanes) {
  constexpr int writers = 6, planes = 384, nx = 15, ny = 15;
  ImageHeader h = basic_header(nx, ny);
  h.spectral = LinearAxis{"FREQ", "Hz", 1e9, 1e6, 1, planes};
  const std::string final_path = path("shared.fits");
  const std::vector<float> cube = random_bits(std::size_t{nx} * ny * planes, 11);
  const std::size_t plane = std::size_t{nx} * ny;
  CubeFile::create(final_path, h);

  std::vector<pid_t> children;
  for (int w = 0; w < writers; ++w) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int rc = 0;
      try {
        for (int k = w; k < planes; k += writers)
          put(CubeFile::plane_write(CubeFile::layout(final_path), k, std::span(cube).subspan(k * plane, plane)));
      } catch (...) {
        rc = 1;
      }
      ::_exit(rc);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  CubeFile::commit(final_path);
  expect_same_bits(cube, spip::fits::read_image(final_path).data);
}

}  // namespace
