// Other imagers' spectral cubes, read by the fits room: written here card by card and
// byte by byte (an independent writer), in the axis orders and pixel types WSClean,
// CASA and linmos write, and by spip's own writer with CASA's per-channel beams.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numbers>
#include <string>
#include <type_traits>
#include <vector>

#include "scratch.hpp"
#include "spip/error.hpp"
#include "spip/fits/fits_image.hpp"
#include "spip/fits/fits_table.hpp"
#include "spip/fits/spectral_cube.hpp"

namespace {

namespace fs = std::filesystem;
using spip::fits::SpectralCube;

constexpr double deg = std::numbers::pi / 180.0;

class SpectralCubeTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = spip::test::scratch_dir(); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

std::string card(const std::string& key, const std::string& value) {
  std::string text = key;
  text.resize(8, ' ');
  text += "= " + value;
  text.resize(80, ' ');
  return text;
}
std::string text_value(const std::string& value) { return "'" + value + "'"; }

// A FITS file of `cards` (after SIMPLE, BITPIX, NAXISn) and big-endian pixels.
template <class T>
void write_fits(const std::string& file, const std::vector<long>& naxis, const std::vector<std::string>& cards,
                const std::vector<T>& pixels) {
  std::string header = card("SIMPLE", "T") + card("BITPIX", std::to_string(std::is_same_v<T, float> ? -32 : 16)) +
                       card("NAXIS", std::to_string(naxis.size()));
  for (std::size_t k = 0; k < naxis.size(); ++k) header += card("NAXIS" + std::to_string(k + 1), std::to_string(naxis[k]));
  for (const std::string& c : cards) header += c;
  header += std::string("END").append(77, ' ');
  header.resize((header.size() + 2879) / 2880 * 2880, ' ');
  std::string data;
  for (T value : pixels) {
    char bytes[sizeof(T)];
    std::memcpy(bytes, &value, sizeof(T));
    for (std::size_t b = sizeof(T); b-- > 0;) data += bytes[b];  // little-endian host to big-endian
  }
  data.resize((data.size() + 2879) / 2880 * 2880, '\0');
  std::ofstream(file, std::ios::binary) << header << data;
}

// Celestial and spectral cards for the axes in `order` ("RA", "DEC", "FREQ", "STOKES").
std::vector<std::string> axis_cards(const std::vector<std::string>& order, const std::string& projection = "SIN") {
  std::vector<std::string> cards;
  for (std::size_t k = 0; k < order.size(); ++k) {
    const std::string n = std::to_string(k + 1);
    if (order[k] == "RA")
      cards.insert(cards.end(), {card("CTYPE" + n, text_value("RA---" + projection)), card("CRPIX" + n, "3.5"),
                                 card("CRVAL" + n, "201.25"), card("CDELT" + n, "-0.001"), card("CUNIT" + n, "'deg'")});
    else if (order[k] == "DEC")
      cards.insert(cards.end(), {card("CTYPE" + n, text_value("DEC--" + projection)), card("CRPIX" + n, "2.0"),
                                 card("CRVAL" + n, "-43.0"), card("CDELT" + n, "0.001"), card("CUNIT" + n, "'deg'")});
    else if (order[k] == "FREQ")
      cards.insert(cards.end(), {card("CTYPE" + n, "'FREQ'"), card("CRPIX" + n, "2.0"), card("CRVAL" + n, "1.4"),
                                 card("CDELT" + n, "0.01"), card("CUNIT" + n, "'GHz'")});
    else
      cards.insert(cards.end(), {card("CTYPE" + n, "'STOKES'"), card("CRPIX" + n, "1.0"), card("CRVAL" + n, "2.0"),
                                 card("CDELT" + n, "1.0")});
  }
  return cards;
}

// The value of pixel (x, y) of channel c: distinct everywhere.
float value_at(int x, int y, int c) { return static_cast<float>(1000 * c + 10 * y + x); }

}  // namespace

// FREQ first, as some linmos cubes: a slab of rows comes back as [channel][row][x].
TEST_F(SpectralCubeTest, RowsOfACubeWithTheFrequencyAxisFirstComeBackByChannel) {
  const int nx = 6, ny = 4, nc = 3;
  std::vector<float> pixels;  // FITS order: FREQ fastest, then RA, then DEC
  for (int y = 0; y < ny; ++y)
    for (int x = 0; x < nx; ++x)
      for (int c = 0; c < nc; ++c) pixels.push_back(value_at(x, y, c));
  const std::string file = path("freq-first.fits");
  std::vector<std::string> cards = axis_cards({"FREQ", "RA", "DEC", "STOKES"});
  cards.push_back(card("BMAJ", "0.005"));
  cards.push_back(card("BMIN", "0.004"));
  cards.push_back(card("BPA", "20.0"));
  write_fits(file, {nc, nx, ny, 1}, cards, pixels);

  const SpectralCube cube = spip::fits::open_spectral_cube(file);
  EXPECT_EQ(cube.grid.nx, nx);
  EXPECT_EQ(cube.grid.ny, ny);
  EXPECT_DOUBLE_EQ(cube.grid.ra_rad, 201.25 * deg);
  EXPECT_DOUBLE_EQ(cube.grid.dec_rad, -43.0 * deg);
  EXPECT_DOUBLE_EQ(cube.grid.cell_rad, 0.001 * deg);
  EXPECT_DOUBLE_EQ(cube.grid.reference_x(), 2.5);
  EXPECT_DOUBLE_EQ(cube.grid.reference_y(), 1.0);
  ASSERT_EQ(cube.channels(), nc);
  for (int c = 0; c < nc; ++c) EXPECT_NEAR(cube.freq_hz[c], 1.39e9 + 1e7 * c, 1e-3);
  ASSERT_TRUE(cube.stokes.has_value());
  EXPECT_EQ(*cube.stokes, spip::fits::Stokes::Q);
  ASSERT_TRUE(cube.grid.beam.has_value());
  EXPECT_DOUBLE_EQ(cube.grid.beam->major_rad, 0.005 * deg);
  EXPECT_TRUE(cube.channel_beams.empty());

  const std::vector<float> rows = spip::fits::read_cube_rows(cube, 1, 2);
  ASSERT_EQ(rows.size(), static_cast<std::size_t>(nc * 2 * nx));
  for (int c = 0; c < nc; ++c)
    for (int r = 0; r < 2; ++r)
      for (int x = 0; x < nx; ++x) EXPECT_EQ(rows[(c * 2 + r) * nx + x], value_at(x, 1 + r, c));
  const std::vector<float> plane = spip::fits::read_cube_plane(cube, 2);
  for (int y = 0; y < ny; ++y)
    for (int x = 0; x < nx; ++x) EXPECT_EQ(plane[y * nx + x], value_at(x, y, 2));
}

// Scaled 16-bit pixels with BLANK, STOKES before FREQ (CASA's exportfits order).
TEST_F(SpectralCubeTest, ScaledIntegersAreReadAsValuesAndBlanksAsNaN) {
  const int nx = 3, ny = 2, nc = 2;
  std::vector<std::int16_t> pixels;
  for (int c = 0; c < nc; ++c)
    for (int y = 0; y < ny; ++y)
      for (int x = 0; x < nx; ++x) pixels.push_back(static_cast<std::int16_t>(x == 1 && y == 1 ? -32768 : 10 * c + x));
  const std::string file = path("scaled.fits");
  std::vector<std::string> cards = axis_cards({"RA", "DEC", "STOKES", "FREQ"});
  cards.insert(cards.end(), {card("BSCALE", "0.5"), card("BZERO", "1.0"), card("BLANK", "-32768")});
  write_fits(file, {nx, ny, 1, nc}, cards, pixels);

  const SpectralCube cube = spip::fits::open_spectral_cube(file);
  const std::vector<float> rows = spip::fits::read_cube_rows(cube, 0, ny);
  for (int c = 0; c < nc; ++c)
    for (int y = 0; y < ny; ++y)
      for (int x = 0; x < nx; ++x) {
        const float value = rows[(c * ny + y) * nx + x];
        if (x == 1 && y == 1)
          EXPECT_TRUE(std::isnan(value));
        else
          EXPECT_EQ(value, 0.5f * static_cast<float>(10 * c + x) + 1.0f);
      }
}

// CASA's per-channel beams: the products take the largest.
TEST_F(SpectralCubeTest, ABeamsTableGivesEachChannelItsBeam) {
  spip::fits::ImageHeader h;
  h.nx = 4;
  h.ny = 4;
  h.ra_rad = 10 * deg;
  h.dec_rad = -30 * deg;
  h.cell_rad = 2.0 / 3600 * deg;
  h.spectral = spip::fits::LinearAxis{"FREQ", "Hz", 9e8, 1e6, 1, 3};
  h.stokes = spip::fits::Stokes::U;
  h.beam = spip::fits::Beam{};
  h.beam_per_plane = true;
  const std::string file = path("beams.fits");
  spip::fits::CubeFile::create(file, h);
  const std::vector<spip::fits::Beam> beams{{8.0 / 3600 * deg, 6.0 / 3600 * deg, 10 * deg},
                                            {9.0 / 3600 * deg, 7.0 / 3600 * deg, -20 * deg},
                                            {7.0 / 3600 * deg, 5.0 / 3600 * deg, 0}};
  spip::fits::CubeFile::write_beams(file, beams);
  spip::fits::CubeFile::commit(file);

  const SpectralCube cube = spip::fits::open_spectral_cube(file);
  ASSERT_EQ(cube.channel_beams.size(), 3u);
  for (std::size_t c = 0; c < 3; ++c) EXPECT_NEAR(cube.channel_beams[c].major_rad, beams[c].major_rad, 1e-6 * beams[c].major_rad);
  ASSERT_TRUE(cube.grid.beam.has_value());
  EXPECT_NEAR(cube.grid.beam->major_rad, beams[1].major_rad, 1e-6 * beams[1].major_rad);
  EXPECT_NEAR(cube.grid.beam->pa_rad, -20 * deg, 1e-6);
  EXPECT_EQ(*cube.stokes, spip::fits::Stokes::U);
}

// A BEAMS table is found by its name wherever it is among the extensions, and its beams
// are read in the units its TUNITs give, as casacore reads them back.
TEST_F(SpectralCubeTest, ABeamsTableIsReadInItsOwnUnitsWhereverItIs) {
  std::vector<std::string> cards = axis_cards({"RA", "DEC", "FREQ"});
  cards.push_back(card("CASAMBM", "T"));
  cards.push_back(card("EXTEND", "T"));
  const std::string file = path("deg-beams.fits");
  write_fits(file, {4, 4, 2}, cards, std::vector<float>(32, 1.0f));
  spip::fits::Table other;
  other.extname = "HISTORY_TABLE";
  other.columns.push_back({"N", "", "", std::vector<std::int32_t>{1, 2}});
  spip::fits::append_table(file, other);
  spip::fits::Table beams;
  beams.extname = "BEAMS";
  beams.columns.push_back({"BMAJ", "deg", "", std::vector<double>{0.004, 0.003}});
  beams.columns.push_back({"BMIN", "arcmin", "", std::vector<double>{0.15, 0.1}});
  beams.columns.push_back({"BPA", "rad", "", std::vector<double>{0.5, -0.25}});
  beams.columns.push_back({"CHAN", "", "", std::vector<std::int32_t>{0, 1}});
  beams.columns.push_back({"POL", "", "", std::vector<std::int32_t>{0, 0}});
  spip::fits::append_table(file, beams);
  const SpectralCube cube = spip::fits::open_spectral_cube(file);
  ASSERT_EQ(cube.channel_beams.size(), 2u);
  EXPECT_NEAR(cube.channel_beams[0].major_rad, 0.004 * deg, 1e-12);
  EXPECT_NEAR(cube.channel_beams[1].minor_rad, 0.1 / 60 * deg, 1e-12);
  EXPECT_NEAR(cube.channel_beams[1].pa_rad, -0.25, 1e-12);
}

// What spip cannot take is refused in one line naming the file and the reason.
TEST_F(SpectralCubeTest, CubesSpipCannotTakeAreRefusedSayingWhy) {
  const auto refusal = [&](const std::string& name, const std::vector<long>& naxis, const std::vector<std::string>& cards) {
    const std::string file = path(name);
    long pixels = 1;
    for (long n : naxis) pixels *= n;
    write_fits(file, naxis, cards, std::vector<float>(static_cast<std::size_t>(pixels), 1.0f));
    try {
      spip::fits::open_spectral_cube(file);
    } catch (const spip::InputError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(file), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
      return what;
    }
    ADD_FAILURE() << name << " was not refused";
    return std::string();
  };
  EXPECT_NE(refusal("tan.fits", {4, 4, 2}, axis_cards({"RA", "DEC", "FREQ"}, "TAN")).find("TAN"), std::string::npos);
  EXPECT_NE(refusal("no-freq.fits", {4, 4, 1}, axis_cards({"RA", "DEC", "STOKES"})).find("FREQ"), std::string::npos);
  EXPECT_NE(refusal("iquv.fits", {4, 4, 2, 4}, axis_cards({"RA", "DEC", "FREQ", "STOKES"})).find("one cube per"),
            std::string::npos);
  std::vector<std::string> rotated = axis_cards({"RA", "DEC", "FREQ"});
  rotated.push_back(card("PC1_2", "0.1"));
  EXPECT_NE(refusal("rotated.fits", {4, 4, 2}, rotated).find("rotated"), std::string::npos);
  EXPECT_NE(refusal("missing.fits", {}, {}).find("no RA and Dec"), std::string::npos);
  EXPECT_THROW(spip::fits::open_spectral_cube(path("absent.fits")), spip::InputError);
  // What would move every source or scale every flux without a word: other sky frames,
  // NCP's SIN, units other than Jy/beam, correlations instead of Stokes parameters.
  const auto with = [&](std::vector<std::string> cards, const std::vector<std::string>& more) {
    cards.insert(cards.end(), more.begin(), more.end());
    return cards;
  };
  const std::vector<std::string> plain = axis_cards({"RA", "DEC", "FREQ"});
  EXPECT_NE(refusal("b1950.fits", {4, 4, 2}, with(plain, {card("EQUINOX", "1950.0")})).find("EQUINOX"), std::string::npos);
  EXPECT_NE(refusal("fk4.fits", {4, 4, 2}, with(plain, {card("RADESYS", "'FK4'")})).find("FK4"), std::string::npos);
  EXPECT_NE(refusal("epoch1950.fits", {4, 4, 2}, with(plain, {card("EPOCH", "1950.0")})).find("FK4 (RADESYS, or its EPOCH)"),
            std::string::npos);
  EXPECT_NE(refusal("ncp.fits", {4, 4, 2}, with(plain, {card("PV2_2", "1.7320508")})).find("PV2_2"), std::string::npos);
  EXPECT_NE(refusal("kelvin.fits", {4, 4, 2}, with(plain, {card("BUNIT", "'K'")})).find("'K'"), std::string::npos);
  EXPECT_NE(refusal("mjy.fits", {4, 4, 2}, with(plain, {card("BUNIT", "'mJy/beam'")})).find("Jy/beam"), std::string::npos);
  std::vector<std::string> xx = axis_cards({"RA", "DEC", "FREQ", "STOKES"});
  for (std::string& c : xx)
    if (c.starts_with("CRVAL4")) c = card("CRVAL4", "-5.0");
  EXPECT_NE(refusal("xx.fits", {4, 4, 2, 1}, xx).find("XX"), std::string::npos);
  EXPECT_NE(refusal("casambm.fits", {4, 4, 2}, with(plain, {card("CASAMBM", "T")})).find("BEAMS"), std::string::npos);
  // A copy cut short, into its data or only its last record's padding (which CFITSIO
  // reads too): refused when it is opened, not when the Faraday stage reaches its last
  // rows; its header and first rows are whole.
  const std::string whole = path("whole.fits"), cut = path("cut.fits");
  write_fits(whole, {64, 64, 4}, plain, std::vector<float>(64 * 64 * 4, 1.0f));
  EXPECT_NO_THROW(spip::fits::open_spectral_cube(whole));
  for (const std::uintmax_t short_by : {100, 5000}) {
    std::filesystem::copy_file(whole, cut, std::filesystem::copy_options::overwrite_existing);
    std::filesystem::resize_file(cut, std::filesystem::file_size(whole) - short_by);
    try {
      spip::fits::open_spectral_cube(cut);
      ADD_FAILURE() << "a cube " << short_by << " bytes short was taken";
    } catch (const spip::InputError& e) {
      EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
    }
  }
  // A whole cube compressed with gzip, which CFITSIO would unpack whole at every read:
  // refused as compressed (not as truncated, though it is smaller on disk).
  ASSERT_EQ(std::system(("gzip -k " + whole).c_str()), 0);
  try {
    spip::fits::open_spectral_cube(whole + ".gz");
    ADD_FAILURE() << "a gzip-compressed cube was taken";
  } catch (const spip::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("compressed"), std::string::npos) << e.what();
  }
}

// The frame a cube's positions are in, which its products keep: RADESYS where given;
// else FK5 with an equinox (EQUINOX, or AIPS's EPOCH) of 2000, and ICRS with none (WCS
// Paper II), so that FK5's 20 mas are not taken as ICRS or the reverse.
TEST_F(SpectralCubeTest, TheFrameIsRadesysOrWhatTheEquinoxSays) {
  const std::vector<std::string> plain = axis_cards({"RA", "DEC", "FREQ"});
  int written = 0;
  for (const auto& [cards, frame] :
       {std::pair{std::vector<std::string>{card("RADESYS", "'ICRS'")}, "ICRS"},
        std::pair{std::vector<std::string>{card("RADESYS", "'FK5'"), card("EQUINOX", "2000.0")}, "FK5"},
        std::pair{std::vector<std::string>{card("EQUINOX", "2000.0")}, "FK5"},
        std::pair{std::vector<std::string>{card("EPOCH", "2000.0")}, "FK5"}, std::pair{std::vector<std::string>{}, "ICRS"}}) {
    std::vector<std::string> all = plain;
    all.insert(all.end(), cards.begin(), cards.end());
    const std::string file = path("frame-" + std::to_string(written++) + ".fits");
    write_fits(file, {4, 4, 2}, all, std::vector<float>(32, 1.0f));
    EXPECT_EQ(spip::fits::open_spectral_cube(file).grid.radesys, frame) << (cards.empty() ? "no key" : cards.front());
  }
}

// What is accepted as it is meant: ICRS and J2000 positions, BUNIT as astropy writes it, PV2
// terms of zero (casacore writes them), and a FREQ step in a CD matrix (Paper I).
TEST_F(SpectralCubeTest, EquivalentSpellingsOfTheSameCubeAreTaken) {
  std::vector<std::string> cards = axis_cards({"RA", "DEC", "FREQ"});
  for (std::string& c : cards)
    if (c.starts_with("CDELT3")) c = card("CD3_3", "0.01");
  cards.insert(cards.end(), {card("RADESYS", "'ICRS'"), card("EQUINOX", "2000.0"), card("PV2_1", "0.0"),
                             card("PV2_2", "0.0")});
  for (const std::string unit : {"'Jy beam-1'", "'JY/BEAM'"}) {
    std::vector<std::string> spelled = cards;
    spelled.push_back(card("BUNIT", unit));
    const std::string file = path("spelled-" + std::to_string(unit.size()) + ".fits");
    write_fits(file, {4, 4, 2}, spelled, std::vector<float>(32, 1.0f));
    const SpectralCube cube = spip::fits::open_spectral_cube(file);
    ASSERT_EQ(cube.freq_hz.size(), 2u) << unit;
    EXPECT_NEAR(cube.freq_hz[1] - cube.freq_hz[0], 1e7, 1e-3) << unit;
  }
}
