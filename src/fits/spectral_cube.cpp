// Spectral cubes of other imagers, read through CFITSIO a slab of rows at a time.
#include "spip/fits/spectral_cube.hpp"

#include <fitsio.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "fits_file.hpp"
#include "spip/common/constants.hpp"
#include "spip/common/number_text.hpp"
#include "spip/error.hpp"
#include "spip/fits/fits_table.hpp"

namespace spip::fits {
namespace {

using namespace detail;

std::atomic<double> data_bytes_read{0};

[[noreturn]] void refuse(const std::string& path, const std::string& why) {
  SPIP_THROW(InputError, "cube '" + path + "': " + why);
}

bool has(const FitsImage& header, const std::string& key) { return header.keywords.count(key) > 0; }

double number_or(const FitsImage& header, const std::string& key, double fallback) {
  return has(header, key) ? header.number(key) : fallback;
}

// CDELTn, or the diagonal of a CD matrix; a rotation or skew is refused.
double axis_step(const FitsImage& header, int x, int y) {
  const std::string i = std::to_string(x + 1), j = std::to_string(y + 1);
  if (has(header, "CD" + i + "_" + i)) {
    if (number_or(header, "CD" + i + "_" + j, 0) != 0 || number_or(header, "CD" + j + "_" + i, 0) != 0)
      refuse(header.path, "its celestial axes are rotated (CD matrix); spip takes cubes with north up");
    return header.number("CD" + i + "_" + i);
  }
  if (number_or(header, "PC" + i + "_" + j, 0) != 0 || number_or(header, "PC" + j + "_" + i, 0) != 0 ||
      number_or(header, "CROTA" + std::to_string(y + 1), 0) != 0)
    refuse(header.path, "its celestial axes are rotated (PC matrix or CROTA); spip takes cubes with north up");
  return number_or(header, "CDELT" + i, 1) * number_or(header, "PC" + i + "_" + i, 1);
}

double hz_per(const std::string& unit, const std::string& path) {
  if (unit.empty() || unit == "Hz") return 1;
  if (unit == "kHz") return 1e3;
  if (unit == "MHz") return 1e6;
  if (unit == "GHz") return 1e9;
  refuse(path, "its FREQ axis is in '" + unit + "', not Hz, kHz, MHz or GHz");
}

// The largest of the channels' beams by area: what the products' BMAJ, BMIN and BPA say.
Beam largest(const std::vector<Beam>& beams) {
  Beam best;
  for (const Beam& b : beams)
    if (b.major_rad * b.minor_rad > best.major_rad * best.minor_rad) best = b;
  return best;
}

// Radians per unit of a BEAMS column, as casacore writes it (TUNIT) or, without one,
// arcsec for the axes and deg for the angle, as CASA's tables hold them.
double radians_per(const Table& table, const std::string& column, const std::string& fallback, const std::string& path) {
  std::string unit = table.unit(column);
  if (unit.empty()) unit = fallback;
  if (unit == "arcsec") return 1 / rad_to_arcsec;
  if (unit == "arcmin") return 60 / rad_to_arcsec;
  if (unit == "deg" || unit == "degree" || unit == "degrees") return 1 / rad_to_deg;
  if (unit == "rad") return 1;
  refuse(path, "its BEAMS table gives " + column + " in '" + unit + "', not arcsec, arcmin, deg or rad");
}

std::vector<Beam> channel_beams(const std::string& path, int channels, int stokes_planes) {
  const Table table = [&] {
    try {
      return read_table(path, {}, "BEAMS");
    } catch (const Error& e) {
      refuse(path, std::string("CASAMBM = T (a beam per channel), but no BEAMS table is read: ") + e.what());
    }
  }();
  std::vector<double> major = table.values<double>("BMAJ"), minor = table.values<double>("BMIN"),
                      pa = table.values<double>("BPA");
  const double axis_unit = radians_per(table, "BMAJ", "arcsec", path), minor_unit = radians_per(table, "BMIN", "arcsec", path),
               angle_unit = radians_per(table, "BPA", "deg", path);
  const std::vector<std::int32_t>& chan = table.values<std::int32_t>("CHAN");
  std::vector<Beam> beams(static_cast<std::size_t>(channels));
  std::vector<bool> found(beams.size(), false);
  for (std::size_t k = 0; k < major.size(); ++k) {
    if (chan[k] < 0 || chan[k] >= channels)
      refuse(path, "its BEAMS table names channel " + std::to_string(chan[k]) + " of " + std::to_string(channels));
    const auto c = static_cast<std::size_t>(chan[k]);
    beams[c] = {major[k] * axis_unit, minor[k] * minor_unit, pa[k] * angle_unit};
    found[c] = true;
  }
  if (std::count(found.begin(), found.end(), false) > 0 || stokes_planes > 1)
    refuse(path, "its BEAMS table does not give one beam per channel");
  return beams;
}

// A compressed file (gzip, Unix compress, zip, bzip2: their magic bytes) CFITSIO reads
// only by unpacking all of it into memory, at every opening: each plane and each slab
// every rank reads would hold the whole cube and unpack it again. Refused before CFITSIO
// opens it even once.
void refuse_compressed(const std::string& path) {
  char start[4] = {};
  std::ifstream(path, std::ios::binary).read(start, sizeof start);
  const std::string magic(start, sizeof start);
  if (magic.starts_with("\x1f\x8b") || magic.starts_with("\x1f\x9d") || magic.starts_with("PK\x03\x04") ||
      magic.starts_with("BZh"))
    refuse(path, "it is compressed, and CFITSIO unpacks a compressed file whole into memory at every read of a "
                 "slab; decompress it first");
}

// A cube cut short (a copy or a transfer that stopped) would fail with CFITSIO's "tried
// to move past end of file" or "error reading" only when its last rows are read, in the
// Faraday stage: its last pixel is read now. CFITSIO reads whole 2880-byte records, so
// the last one's padding counts.
void refuse_truncated(const std::string& path) {
  FitsFile file = FitsFile::open(path, READONLY);
  int status = 0, bitpix = 0, axes = 0;
  LONGLONG lengths[9] = {};
  fits_get_img_paramll(file.get(), 9, &bitpix, &axes, lengths, &status);
  check(status, "read the shape of", path);
  if (axes == 0) return;
  float last = 0;
  int any_null = 0;
  fits_read_pixll(file.get(), TFLOAT, lengths, 1, nullptr, &last, &any_null, &status);
  if (status == END_OF_FILE || status == READ_ERROR) {
    fits_clear_errmsg();
    refuse(path, "it is truncated: its last pixel is past the end of the file (or of its last FITS record); copy "
                 "it again");
  }
  check(status, "read the last pixel of", path);
}

}  // namespace

SpectralCube open_spectral_cube(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) refuse(path, "no such file");
  refuse_compressed(path);
  const FitsImage header = [&] {
    try {
      return read_header(path);
    } catch (const Error& e) {  // there, but no FITS image CFITSIO reads: unusable input too
      refuse(path, e.what());
    }
  }();
  refuse_truncated(path);
  SpectralCube cube;
  cube.path = path;
  for (long n : header.shape) cube.naxis.push_back(n);
  int x = -1, y = -1, f = -1, s = -1;
  for (int k = 0; k < static_cast<int>(header.shape.size()); ++k) {
    const std::string key = "CTYPE" + std::to_string(k + 1);
    const std::string type = has(header, key) ? header.text(key) : "";
    if (type.starts_with("RA--")) {
      x = k;
      if (type != "RA---SIN") refuse(path, "its projection is " + type + "; spip takes SIN cubes (RA---SIN, DEC--SIN)");
    } else if (type.starts_with("DEC-")) {
      y = k;
      if (type != "DEC--SIN") refuse(path, "its projection is " + type + "; spip takes SIN cubes (RA---SIN, DEC--SIN)");
    } else if (type == "FREQ") {
      f = k;
    } else if (type == "STOKES") {
      s = k;
    } else if (header.shape[static_cast<std::size_t>(k)] > 1) {
      refuse(path, "axis " + std::to_string(k + 1) + " (" + (type.empty() ? "no CTYPE" : type) +
                       ") is neither celestial, FREQ nor a degenerate one");
    }
  }
  if (x < 0 || y < 0) refuse(path, "it has no RA and Dec axes");
  if (f < 0) refuse(path, "it has no FREQ axis");
  if (s >= 0 && header.shape[static_cast<std::size_t>(s)] > 1)
    refuse(path, "its STOKES axis holds " + std::to_string(header.shape[static_cast<std::size_t>(s)]) +
                     " parameters; give one cube per Stokes parameter");
  cube.x_axis = x;
  cube.y_axis = y;
  cube.freq_axis = f;
  if (s >= 0) {
    const int code = static_cast<int>(std::lround(number_or(header, "CRVAL" + std::to_string(s + 1), 1)));
    if (code < 1 || code > 4) {
      constexpr const char* correlations[] = {"RR", "LL", "RL", "LR", "XX", "YY", "XY", "YX"};
      refuse(path, "its STOKES axis holds " +
                       (code <= -1 && code >= -8 ? std::string(correlations[-code - 1]) + " (" + std::to_string(code) + ")"
                                                 : "code " + std::to_string(code)) +
                       ", not Stokes I, Q, U or V");
    }
    cube.stokes = static_cast<Stokes>(code);
  }

  // Positions in FK5 J2000 or ICRS, in a plain SIN projection; anything else would move
  // every source. Without RADESYS the frame is FK4 before an equinox of 1984, FK5 from
  // it, and ICRS without one (WCS Paper II; AIPS's EPOCH where EQUINOX is missing), and
  // the products are labelled as the cube is.
  const char* equinox_key = has(header, "EQUINOX") ? "EQUINOX" : has(header, "EPOCH") ? "EPOCH" : nullptr;
  const std::string frame = has(header, "RADESYS") ? header.text("RADESYS")
                            : !equinox_key          ? std::string("ICRS")
                            : header.number(equinox_key) < 1984 ? std::string("FK4")
                                                                : std::string("FK5");
  if (frame != "FK5" && frame != "ICRS")
    refuse(path, "its frame is " + frame + " (RADESYS, or its " + (equinox_key ? equinox_key : "EQUINOX") +
                     "); spip takes FK5 (J2000) or ICRS positions");
  if (frame == "FK5" && equinox_key && std::abs(header.number(equinox_key) - 2000) > 1e-6)
    refuse(path, "its " + std::string(equinox_key) + " is " + std::to_string(header.number(equinox_key)) +
                     "; spip takes J2000 (FK5) or ICRS positions");
  for (const std::string& term : {"PV" + std::to_string(y + 1) + "_1", "PV" + std::to_string(y + 1) + "_2"})
    if (number_or(header, term, 0) != 0)
      refuse(path, "its SIN projection has " + term + " = " + std::to_string(header.number(term)) +
                       " (NCP or slant); spip takes the plain SIN projection");
  if (has(header, "BUNIT")) {
    // Jy/beam as imagers spell it: JY/BEAM (CASA), Jy/beam, or astropy's "Jy beam-1".
    std::string unit;
    for (unsigned char c : header.text("BUNIT"))
      if (c != ' ' && c != '.' && c != '*' && c != '^') unit += static_cast<char>(std::tolower(c));
    if (unit != "jy/beam" && unit != "jybeam-1")
      refuse(path, "its BUNIT is '" + header.text("BUNIT") +
                       "'; spip takes cubes in Jy/beam, the unit of its products, catalogue and RMTable");
  }

  const double dx = axis_step(header, x, y), dy = axis_step(header, y, x);
  if (!(dx < 0 && dy > 0 && std::abs(-dx - dy) <= 1e-6 * dy))
    refuse(path, "its pixels are not square with RA increasing to the left (CDELT " + number_text(dx) + ", " +
                     number_text(dy) + " deg)");
  ImageHeader& grid = cube.grid;
  grid.nx = static_cast<int>(header.shape[static_cast<std::size_t>(x)]);
  grid.ny = static_cast<int>(header.shape[static_cast<std::size_t>(y)]);
  grid.cell_rad = dy / rad_to_deg;
  grid.ra_rad = number_or(header, "CRVAL" + std::to_string(x + 1), 0) / rad_to_deg;
  grid.dec_rad = number_or(header, "CRVAL" + std::to_string(y + 1), 0) / rad_to_deg;
  grid.radesys = frame;
  grid.reference_pixel = std::array<double, 2>{number_or(header, "CRPIX" + std::to_string(x + 1), 1) - 1,
                                               number_or(header, "CRPIX" + std::to_string(y + 1), 1) - 1};
  if (has(header, "BUNIT")) grid.bunit = header.text("BUNIT");
  if (has(header, "TELESCOP")) grid.telescope = header.text("TELESCOP");
  if (has(header, "DATE-OBS")) grid.date_obs = header.text("DATE-OBS");
  if (has(header, "SPECSYS")) grid.specsys = header.text("SPECSYS");
  if (has(header, "OBJECT")) grid.object = header.text("OBJECT");

  const std::string n = std::to_string(f + 1);
  const double scale = hz_per(has(header, "CUNIT" + n) ? header.text("CUNIT" + n) : "", path);
  // CDn_n, or CDELTn times PCn_n (Paper I).
  const double crval = number_or(header, "CRVAL" + n, 0), crpix = number_or(header, "CRPIX" + n, 1),
               cdelt = has(header, "CD" + n + "_" + n) ? header.number("CD" + n + "_" + n)
                                                        : number_or(header, "CDELT" + n, 0) * number_or(header, "PC" + n + "_" + n, 1);
  const long long channels = header.shape[static_cast<std::size_t>(f)];
  if (channels > 1 && cdelt == 0) refuse(path, "its FREQ axis has no CDELT or CD");
  for (long long c = 0; c < channels; ++c) {
    const double hz = (crval + (static_cast<double>(c) + 1 - crpix) * cdelt) * scale;
    if (!(hz > 0)) refuse(path, "channel " + std::to_string(c) + " has a frequency of " + std::to_string(hz) + " Hz");
    cube.freq_hz.push_back(hz);
  }

  const bool per_plane = has(header, "CASAMBM") && header.text("CASAMBM") == "T";
  if (per_plane) {
    cube.channel_beams = channel_beams(path, cube.channels(), s >= 0 ? static_cast<int>(header.shape[static_cast<std::size_t>(s)]) : 1);
    grid.beam = largest(cube.channel_beams);
  } else if (has(header, "BMAJ") && has(header, "BMIN")) {
    grid.beam = Beam{header.number("BMAJ") / rad_to_deg, header.number("BMIN") / rad_to_deg,
                     number_or(header, "BPA", 0) / rad_to_deg};
  }
  return cube;
}

namespace {

// Rows [first_row, first_row + rows) of channels [first_channel, first_channel + channels),
// as [channel][row][x].
std::vector<float> read_box(const SpectralCube& cube, int first_row, int rows, int first_channel, int channels) {
  const std::size_t nx = static_cast<std::size_t>(cube.grid.nx);
  std::vector<float> out(static_cast<std::size_t>(channels) * static_cast<std::size_t>(rows) * nx);
  if (out.empty()) return out;
  const std::size_t axes = cube.naxis.size();
  std::vector<long> first(axes, 1), last(axes, 1), step(axes, 1);
  for (std::size_t k = 0; k < axes; ++k) last[k] = static_cast<long>(cube.naxis[k]);
  const auto y = static_cast<std::size_t>(cube.y_axis), f = static_cast<std::size_t>(cube.freq_axis);
  first[y] = first_row + 1;
  last[y] = first_row + rows;
  first[f] = first_channel + 1;
  last[f] = first_channel + channels;
  // The box comes back in FITS order, the first axis fastest; the other axes being of
  // length 1, where x, y and FREQ come in that order it is already [channel][row][x].
  const bool in_order = cube.x_axis < cube.y_axis && cube.y_axis < cube.freq_axis;
  std::vector<float> box(in_order ? 0 : out.size());
  float* target = in_order ? out.data() : box.data();
  FitsFile file = FitsFile::open(cube.path, READONLY);
  int status = 0, any_null = 0;
  float blank = std::numeric_limits<float>::quiet_NaN();  // integer cubes' BLANK pixels
  fits_read_subset(file.get(), TFLOAT, first.data(), last.data(), step.data(), &blank, target, &any_null, &status);
  check(status, "read rows of", cube.path);
  file.close();
  data_bytes_read = data_bytes_read + 4.0 * static_cast<double>(out.size());
  if (in_order) return out;
  std::vector<std::size_t> stride(axes, 1);  // the box's, along each axis
  for (std::size_t k = 1; k < axes; ++k)
    stride[k] = stride[k - 1] * static_cast<std::size_t>(last[k - 1] - first[k - 1] + 1);
  const std::size_t sx = stride[static_cast<std::size_t>(cube.x_axis)], sy = stride[y], sf = stride[f];
  float* to = out.data();
  for (std::size_t c = 0; c < static_cast<std::size_t>(channels); ++c)
    for (std::size_t r = 0; r < static_cast<std::size_t>(rows); ++r)
      for (std::size_t i = 0; i < nx; ++i) *to++ = box[c * sf + r * sy + i * sx];
  return out;
}

}  // namespace

std::optional<Beam> SpectralCube::beam_of(int channel) const {
  if (channel_beams.empty()) return grid.beam;
  const Beam& beam = channel_beams[static_cast<std::size_t>(channel)];
  if (beam.major_rad > 0 && beam.minor_rad > 0) return beam;
  return std::nullopt;
}

std::vector<float> read_cube_rows(const SpectralCube& cube, int first_row, int rows) {
  return read_box(cube, first_row, rows, 0, cube.channels());
}

std::vector<float> read_cube_plane(const SpectralCube& cube, int channel) {
  return read_box(cube, 0, cube.grid.ny, channel, 1);
}

double spectral_cube_bytes_read() { return data_bytes_read; }

}  // namespace spip::fits
