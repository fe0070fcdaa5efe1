// FITS images and cubes through CFITSIO (the only file that calls it).
//
// Files are opened with the *_diskfile entry points so that names are taken
// literally: CFITSIO's extended file-name syntax would otherwise read '[', '('
// or a leading '!' in a product name as filters, sections or overwrite flags.
#include "spip/fits/fits_image.hpp"

#include "fits_file.hpp"
#include "spip/fits/fits_table.hpp"

#include <fcntl.h>
#include <fitsio.h>
#include <unistd.h>

#include <atomic>
#include <bit>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <numbers>
#include <system_error>
#include <utility>

#include "spip/common/constants.hpp"
#include "spip/error.hpp"
#include "spip/version.hpp"

namespace spip::fits {
namespace {

namespace fs = std::filesystem;
using namespace detail;

// FITS files are made of records of this many bytes.
constexpr long long fits_record_bytes = 2880;

// ---------------------------------------------------------------- header

struct AxisSpec {
  std::string ctype;
  std::string cunit;  // empty: no CUNIT card (STOKES is dimensionless)
  double crval;
  double cdelt;
  double crpix;
  long long size;
};

bool is_fits_keyword(const std::string& key) {
  if (key.empty() || key.size() > 8) return false;
  for (char c : key)
    if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_')) return false;
  return true;
}

void validate(const ImageHeader& h, const std::string& path) {
  if (h.nx <= 0 || h.ny <= 0)
    invalid(path, "image size " + std::to_string(h.nx) + " x " + std::to_string(h.ny) + " is not positive");
  if (!std::isfinite(h.cell_rad) || h.cell_rad <= 0) invalid(path, "cell size must be positive");
  if (!std::isfinite(h.ra_rad) || !std::isfinite(h.dec_rad) ||
      std::abs(h.dec_rad) > std::numbers::pi / 2)
    invalid(path, "phase centre is not a valid (RA, Dec)");
  if (h.spectral) {
    const LinearAxis& s = *h.spectral;
    if (s.size < 1) invalid(path, "third axis length " + std::to_string(s.size) + " is not positive");
    if (!is_fits_keyword(s.ctype)) invalid(path, "third axis type '" + s.ctype + "' is not a FITS CTYPE");
    if (!std::isfinite(s.crval) || !std::isfinite(s.crpix) || !std::isfinite(s.cdelt) || s.cdelt == 0)
      invalid(path, "third axis needs finite CRVAL/CRPIX and a non-zero CDELT");
  }
  if (h.stokes && (static_cast<int>(*h.stokes) < 1 || static_cast<int>(*h.stokes) > 4))
    invalid(path, "Stokes code " + std::to_string(static_cast<int>(*h.stokes)) + " is not I, Q, U or V");
  if (h.stokes && (h.stokes_planes < 1 || static_cast<int>(*h.stokes) + h.stokes_planes - 1 > 4))
    invalid(path, std::to_string(h.stokes_planes) + " Stokes planes from code " +
                      std::to_string(static_cast<int>(*h.stokes)) + " run past V");
  if (h.beam && !(std::isfinite(h.beam->major_rad) && std::isfinite(h.beam->minor_rad) &&
                  std::isfinite(h.beam->pa_rad)))
    invalid(path, "beam is not finite");
  for (const auto& [key, value] : h.extra_keys) {
    if (!is_fits_keyword(key)) invalid(path, "extra keyword '" + key + "' is not a FITS keyword (A-Z, 0-9, -, _; at most 8)");
    if (!std::isfinite(value)) invalid(path, "extra keyword '" + key + "' is not finite");
  }
}

double ra_degrees(double ra_rad) {
  double deg = std::fmod(ra_rad * rad_to_deg, 360.0);
  if (deg < 0) deg += 360.0;
  return deg >= 360.0 ? 0.0 : deg;  // -1e-17 + 360 rounds up to 360
}

std::vector<AxisSpec> axes_of(const ImageHeader& h) {
  const double cell_deg = h.cell_rad * rad_to_deg;
  std::vector<AxisSpec> axes{
      {"RA---SIN", "deg", ra_degrees(h.ra_rad), -cell_deg, h.reference_x() + 1.0, h.nx},
      {"DEC--SIN", "deg", h.dec_rad * rad_to_deg, cell_deg, h.reference_y() + 1.0, h.ny},
  };
  if (h.spectral) {
    const LinearAxis& s = *h.spectral;
    axes.push_back({s.ctype, s.cunit, s.crval, s.cdelt, s.crpix, s.size});
  }
  if (h.stokes) axes.push_back({"STOKES", "", static_cast<double>(*h.stokes), 1.0, 1.0, h.stokes_planes});
  return axes;
}

// The shortest decimal text that reads back as the same double, spelled as a
// FITS real (upper-case exponent, always a decimal point).
std::string fits_real(double value) {
  char buffer[64];
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
  const std::string text(buffer, ec == std::errc{} ? end : buffer);
  const std::size_t e = text.find('e');
  std::string mantissa = text.substr(0, e);
  if (mantissa.find('.') == std::string::npos) mantissa += ".0";
  return e == std::string::npos ? mantissa : mantissa + "E" + text.substr(e + 1);
}

// Accumulates CFITSIO's status across cards: every CFITSIO call is a no-op
// once the status is set, so one check after a batch reports the first failure.
class CardWriter {
 public:
  explicit CardWriter(fitsfile* fptr) : fptr_(fptr) {}

  void real(const std::string& key, double value, const char* comment) {
    std::string text = fits_real(value);
    char card[FLEN_CARD] = {};
    fits_make_key(key.c_str(), text.data(), comment, card, &status_);
    fits_write_record(fptr_, card, &status_);
  }
  void text(const std::string& key, const std::string& value, const char* comment) {
    if (value.empty()) return;  // an empty DATE-OBS or OBJECT says less than none
    fits_write_key_longstr(fptr_, key.c_str(), value.c_str(), comment, &status_);
  }
  void history(const std::string& line) { fits_write_history(fptr_, line.c_str(), &status_); }
  void logical(const std::string& key, bool value, const char* comment) {
    int flag = value ? 1 : 0;
    fits_write_key(fptr_, TLOGICAL, key.c_str(), &flag, comment, &status_);
  }
  int status() const { return status_; }

 private:
  fitsfile* fptr_;
  int status_ = 0;
};

void write_extra_key(fitsfile* fptr, const std::string& key, double value, const std::string& path) {
  int status = 0;
  char card[FLEN_CARD] = {};
  fits_read_card(fptr, key.c_str(), card, &status);
  if (status == 0) invalid(path, "extra keyword '" + key + "' would duplicate a standard keyword");
  fits_clear_errmsg();
  CardWriter cards(fptr);
  cards.real(key, value, "");
  check(cards.status(), "write keyword " + key + " to", path);
}

// DATE-OBS as a Modified Julian Date. Readers through wcslib (astropy, CARTA) otherwise
// derive it themselves and say so in a warning on every image ('datfix' made the change
// 'Set MJD-OBS ...'). NaN where there is no date: none, or a time alone, which CFITSIO
// reads as day 0 of month 0.
double mjd_of(const std::string& date_obs) {
  constexpr double none = std::numeric_limits<double>::quiet_NaN();
  if (date_obs.empty()) return none;
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, status = 0;
  double second = 0;
  std::string text = date_obs;
  fits_str2time(text.data(), &year, &month, &day, &hour, &minute, &second, &status);
  if (status != 0) {
    fits_clear_errmsg();
    return none;
  }
  const std::chrono::year_month_day date{std::chrono::year{year}, std::chrono::month(static_cast<unsigned>(month)),
                                         std::chrono::day(static_cast<unsigned>(day))};
  if (!date.ok()) return none;
  constexpr int mjd_of_unix_epoch = 40587;  // 1970-01-01
  const auto days = std::chrono::sys_days{date}.time_since_epoch().count();
  return static_cast<double>(days + mjd_of_unix_epoch) + (hour * 3600.0 + minute * 60.0 + second) / 86400.0;
}

// Every card after the image's NAXISn, in the HDU just created.
void write_cards(fitsfile* fptr, const ImageHeader& h, const std::string& path) {
  const std::vector<AxisSpec> axes = axes_of(h);
  CardWriter cards(fptr);
  cards.text("BUNIT", h.bunit, "brightness unit");
  cards.text("BTYPE", h.btype, "");
  if (h.beam) {
    cards.real("BMAJ", h.beam->major_rad * rad_to_deg, "[deg] restoring beam major axis (FWHM)");
    cards.real("BMIN", h.beam->minor_rad * rad_to_deg, "[deg] restoring beam minor axis (FWHM)");
    cards.real("BPA", h.beam->pa_rad * rad_to_deg, "[deg] restoring beam position angle");
  }
  if (h.beam_per_plane) cards.logical("CASAMBM", true, "one beam per plane, in the BEAMS table");
  for (std::size_t i = 0; i < axes.size(); ++i) {
    const std::string n = std::to_string(i + 1);
    cards.text("CTYPE" + n, axes[i].ctype, "");
    cards.real("CRPIX" + n, axes[i].crpix, "");
    cards.real("CRVAL" + n, axes[i].crval, "");
    cards.real("CDELT" + n, axes[i].cdelt, "");
    cards.text("CUNIT" + n, axes[i].cunit, "");
  }
  cards.text("RADESYS", h.radesys, "");
  if (h.radesys == "FK5") cards.real("EQUINOX", 2000.0, "");
  // For SIN the native pole is fixed; stating both stops readers from guessing.
  cards.real("LONPOLE", 180.0, "");
  cards.real("LATPOLE", h.dec_rad * rad_to_deg, "");
  if (h.spectral && h.spectral->ctype == "FREQ") cards.text("SPECSYS", h.specsys, "");
  cards.text("DATE-OBS", h.date_obs, "");
  if (const double mjd = mjd_of(h.date_obs); std::isfinite(mjd))
    cards.real("MJD-OBS", mjd, "[d] DATE-OBS as MJD");
  cards.text("TELESCOP", h.telescope, "");
  cards.text("OBJECT", h.object, "");
  cards.text("ORIGIN", std::string("spip ") + spip::version, "");
  check(cards.status(), "write header of", path);

  for (const auto& [key, value] : h.extra_keys) write_extra_key(fptr, key, value, path);

  CardWriter history(fptr);
  for (const std::string& line : h.history) history.history(line);
  check(history.status(), "write HISTORY to", path);
}

std::vector<LONGLONG> axis_lengths(const ImageHeader& h) {
  std::vector<LONGLONG> lengths;
  for (const AxisSpec& axis : axes_of(h)) lengths.push_back(axis.size);
  return lengths;
}

void write_header(const FitsFile& file, const ImageHeader& h) {
  std::vector<LONGLONG> naxes = axis_lengths(h);
  int status = 0;
  fits_create_imgll(file.get(), FLOAT_IMG, static_cast<int>(naxes.size()), naxes.data(), &status);
  check(status, "create image in", file.path());
  write_cards(file.get(), h, file.path());
}

long long padded_to_records(long long bytes) {
  return (bytes + fits_record_bytes - 1) / fits_record_bytes * fits_record_bytes;
}

// The header records CFITSIO writes for this image, as bytes. Made in memory with
// every axis of length 1 and then given the real lengths, because CFITSIO writes the
// whole data area (zeros) when it closes an image it created: a cube's pixels would
// go to disk twice, and a large cube would be built in memory.
std::string header_records(const ImageHeader& h, const std::string& path) {
  const std::vector<LONGLONG> lengths = axis_lengths(h);
  std::vector<LONGLONG> ones(lengths.size(), 1);
  void* memory = nullptr;
  std::size_t memory_size = 0;
  fitsfile* fptr = nullptr;
  int status = 0;
  fits_create_memfile(&fptr, &memory, &memory_size, fits_record_bytes, std::realloc, &status);
  check(status, "lay out the header of", path);
  std::string records;
  try {
    fits_create_imgll(fptr, FLOAT_IMG, static_cast<int>(ones.size()), ones.data(), &status);
    check(status, "lay out the header of", path);
    write_cards(fptr, h, path);
    const auto set_lengths = [&](const std::vector<LONGLONG>& values) {
      for (std::size_t i = 0; i < values.size(); ++i)
        fits_modify_key_lng(fptr, ("NAXIS" + std::to_string(i + 1)).c_str(), values[i], "&", &status);
    };
    set_lengths(lengths);
    char* text = nullptr;
    int keys = 0;
    fits_hdr2str(fptr, 0, nullptr, 0, &text, &keys, &status);  // every card, END last
    if (status == 0) records = text;
    if (text != nullptr) fits_free_memory(text, &status);
    set_lengths(ones);
    check(status, "lay out the header of", path);
  } catch (...) {
    int ignored = 0;
    fits_close_file(fptr, &ignored);
    fits_clear_errmsg();
    std::free(memory);
    throw;
  }
  fits_close_file(fptr, &status);
  std::free(memory);
  check(status, "lay out the header of", path);
  records.resize(static_cast<std::size_t>(padded_to_records(static_cast<long long>(records.size()))), ' ');
  return records;
}

[[noreturn]] void system_fail(const std::string& what, const std::string& path, int error) {
  std::string message = "FITS: cannot " + what + " '" + path + "': " + std::strerror(error);
  const fs::path parent = fs::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty() && !fs::is_directory(parent, ec)) message += "; directory '" + parent.string() + "' does not exist";
  SPIP_THROW(spip::Error, message);
}

// A new file holding `head` and then `size - head.size()` bytes never written: the
// file system keeps them as a hole, read as zeros, until the writers fill them.
void create_sized(const std::string& path, const std::string& head, long long size) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) system_fail("create", path, errno);
  std::size_t done = 0;
  while (done < head.size()) {
    const ssize_t n = ::write(fd, head.data() + done, head.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = n < 0 ? errno : EIO;
      ::close(fd);
      system_fail("write the header of", path, error);
    }
    done += static_cast<std::size_t>(n);
  }
  if (::ftruncate(fd, static_cast<off_t>(size)) != 0) {
    const int error = errno;
    ::close(fd);
    system_fail("size", path, error);
  }
  if (::close(fd) != 0) system_fail("write", path, errno);
}

// ---------------------------------------------------------------- pixels

void write_pixels(const FitsFile& file, long long first_pixel, std::span<const float> pixels) {
  int status = 0;
  // CFITSIO takes a non-const pointer but converts to big-endian in its own
  // buffer (or writes the bytes as they are on big-endian machines): the
  // caller's data are never modified.
  fits_write_img(file.get(), TFLOAT, first_pixel + 1, static_cast<LONGLONG>(pixels.size()),
                 const_cast<float*>(pixels.data()), &status);
  check(status, "write pixels to", file.path());
}

FitsFile create_with_header(const std::string& path, const ImageHeader& h) {
  remove_stale(path);
  FitsFile file = FitsFile::create(path);
  write_header(file, h);
  return file;
}

CubeLayout read_layout(const std::string& path) {
  FitsFile file = FitsFile::open(path, READONLY);
  int status = 0, bitpix = 0, naxis = 0;
  fits_get_img_type(file.get(), &bitpix, &status);
  fits_get_img_dim(file.get(), &naxis, &status);
  check(status, "read the image shape of", path);
  if (bitpix != FLOAT_IMG || naxis < 2)
    SPIP_THROW(spip::Error, "FITS: '" + path + "' is not a float32 image of at least two axes");
  std::vector<LONGLONG> naxes(static_cast<std::size_t>(naxis));
  fits_get_img_sizell(file.get(), naxis, naxes.data(), &status);
  LONGLONG head_start = 0, data_start = 0, data_end = 0;
  fits_get_hduaddrll(file.get(), &head_start, &data_start, &data_end, &status);
  check(status, "read the image shape of", path);
  CubeLayout layout{path, naxes[0] * naxes[1], 1, data_start, naxes[0]};
  for (int i = 2; i < naxis; ++i) layout.planes *= naxes[static_cast<std::size_t>(i)];
  file.close();
  return layout;
}

// ---------------------------------------------------------------- reading

std::string trim_right(std::string s) {
  s.erase(s.find_last_not_of(' ') + 1);
  return s;
}

std::string trim(const std::string& s) {
  const std::size_t first = s.find_first_not_of(' ');
  return first == std::string::npos ? std::string() : trim_right(s.substr(first));
}

void read_keywords(const FitsFile& file, FitsImage& image) {
  int status = 0, count = 0, more = 0;
  fits_get_hdrspace(file.get(), &count, &more, &status);
  for (int i = 1; i <= count && status == 0; ++i) {
    char name[FLEN_KEYWORD] = {}, value[FLEN_VALUE] = {}, comment[FLEN_COMMENT] = {};
    fits_read_keyn(file.get(), i, name, value, comment, &status);
    const std::string key = name;
    if (key == "HISTORY")
      image.history.push_back(trim_right(comment));
    else if (!key.empty() && key != "COMMENT" && key != "CONTINUE")
      image.keywords[key] = value;
  }
  check(status, "read the header of", file.path());
}

const std::string& raw_value(const FitsImage& image, const std::string& key) {
  const auto it = image.keywords.find(key);
  if (it == image.keywords.end())
    SPIP_THROW(spip::Error, "FITS: keyword " + key + " is missing from '" + image.path + "'");
  return it->second;
}

}  // namespace

// ---------------------------------------------------------------- public

void write_image(const std::string& path, const ImageHeader& header, std::span<const float> data) {
  validate(header, path);
  const long long expected = static_cast<long long>(header.nx) * header.ny * header.planes();
  if (static_cast<long long>(data.size()) != expected)
    invalid(path, std::to_string(data.size()) + " pixels given for a shape of " + std::to_string(expected));
  const std::string partial = CubeFile::partial_path(path);
  PartialFileGuard guard(partial);
  FitsFile file = create_with_header(partial, header);
  write_pixels(file, 0, data);
  file.close();
  rename_into_place(partial, path);
  guard.release();
}

std::string CubeFile::partial_path(const std::string& path) { return path + ".partial"; }

void CubeFile::create(const std::string& path, const ImageHeader& header) {
  validate(header, path);
  const std::string partial = partial_path(path);
  const std::string head = header_records(header, partial);
  const long long data_bytes = static_cast<long long>(header.nx) * header.ny * header.planes() *
                               static_cast<long long>(sizeof(float));
  remove_stale(partial);
  PartialFileGuard guard(partial);
  create_sized(partial, head, static_cast<long long>(head.size()) + padded_to_records(data_bytes));
  guard.release();
}

namespace {

// FITS keeps IEEE float32 big-endian. A word at a time, which the compiler turns into
// vector byte shuffles; the writer thread converts every plane a run writes.
std::vector<std::byte> disk_bytes(std::span<const float> pixels) {
  std::vector<std::byte> bytes(pixels.size() * sizeof(float));
  std::byte* out = bytes.data();
  for (std::size_t i = 0; i < pixels.size(); ++i) {
    std::uint32_t word = std::bit_cast<std::uint32_t>(pixels[i]);
    if constexpr (std::endian::native == std::endian::little)
      word = (word >> 24) | ((word >> 8) & 0xff00u) | ((word << 8) & 0xff0000u) | (word << 24);
    std::memcpy(out + 4 * i, &word, sizeof word);
  }
  return bytes;
}

}  // namespace

// The header is written once by create() and touched again only by write_beam(),
// which like commit() runs with no writer active, without changing its size. The
// writes these describe touch only their own pixels' bytes (no CFITSIO record is read
// and written back), so processes may write disjoint planes or row slabs at once on
// any file system; writing the same pixels twice at once is not safe.
CubeLayout CubeFile::layout(const std::string& path) { return read_layout(partial_path(path)); }

FileWrite CubeFile::plane_write(const CubeLayout& layout, int first_plane, std::span<const float> data) {
  const std::string& partial = layout.partial;
  if (data.size() % static_cast<std::size_t>(layout.plane_pixels) != 0)
    SPIP_THROW(spip::Error, "FITS: cannot write planes to '" + partial + "': " + std::to_string(data.size()) +
                                " pixels is not a whole number of " + std::to_string(layout.plane_pixels) +
                                "-pixel planes");
  const long long count = static_cast<long long>(data.size()) / layout.plane_pixels;
  if (first_plane < 0 || first_plane + count > layout.planes)
    SPIP_THROW(spip::Error, "FITS: cannot write planes [" + std::to_string(first_plane) + ", " +
                                std::to_string(first_plane + count) + ") to '" + partial + "': it has " +
                                std::to_string(layout.planes) + " planes");
  FileWrite write{partial, {}};
  if (count > 0)
    write.extents.push_back({layout.data_start + first_plane * layout.plane_pixels * static_cast<long long>(sizeof(float)),
                             disk_bytes(data)});
  return write;
}

FileWrite CubeFile::row_write(const CubeLayout& layout, int first_row, std::span<const float> data) {
  const std::string& partial = layout.partial;
  const long long slab_pixels = static_cast<long long>(data.size()) / layout.planes;
  const long long rows = slab_pixels / layout.row_pixels;
  const long long ny = layout.plane_pixels / layout.row_pixels;
  if (slab_pixels * layout.planes != static_cast<long long>(data.size()) || rows * layout.row_pixels != slab_pixels ||
      first_row < 0 || first_row + rows > ny)
    SPIP_THROW(spip::Error, "FITS: cannot write " + std::to_string(data.size()) + " pixels as rows from " +
                                std::to_string(first_row) + " of every plane of '" + partial + "'");
  FileWrite write{partial, {}};
  if (rows == 0) return write;
  const auto bytes = static_cast<long long>(sizeof(float));
  for (long long plane = 0; plane < layout.planes; ++plane)
    write.extents.push_back(
        {layout.data_start + (plane * layout.plane_pixels + first_row * layout.row_pixels) * bytes,
         disk_bytes(data.subspan(static_cast<std::size_t>(plane * slab_pixels), static_cast<std::size_t>(slab_pixels)))});
  return write;
}

namespace {
std::atomic<double> data_bytes_read{0.0};
}  // namespace

std::vector<float> CubeFile::read_rows(const std::string& path, int first_row, int rows) {
  const std::string partial = partial_path(path);
  const CubeLayout layout = read_layout(partial);
  const long long ny = layout.plane_pixels / layout.row_pixels;
  if (first_row < 0 || rows < 0 || first_row + rows > ny)
    SPIP_THROW(spip::Error, "FITS: cannot read rows [" + std::to_string(first_row) + ", " +
                                std::to_string(first_row + rows) + ") of '" + partial + "'");
  const long long slab_pixels = static_cast<long long>(rows) * layout.row_pixels;
  std::vector<float> data(static_cast<std::size_t>(slab_pixels * layout.planes));
  FitsFile file = FitsFile::open(partial, READONLY);
  int status = 0, any_null = 0;
  // No null value: with one, CFITSIO would also flush denormals to zero.
  for (long long plane = 0; plane < layout.planes && slab_pixels > 0; ++plane)
    fits_read_img(file.get(), TFLOAT, plane * layout.plane_pixels + first_row * layout.row_pixels + 1, slab_pixels,
                  nullptr, data.data() + plane * slab_pixels, &any_null, &status);
  check(status, "read rows of", partial);
  file.close();
  data_bytes_read += 4.0 * static_cast<double>(data.size());
  return data;
}

std::vector<float> CubeFile::read_planes(const std::string& path, int first_plane, int planes) {
  const std::string partial = partial_path(path);
  const CubeLayout layout = read_layout(partial);
  if (first_plane < 0 || planes < 0 || first_plane + planes > layout.planes)
    SPIP_THROW(spip::Error, "FITS: cannot read planes [" + std::to_string(first_plane) + ", " +
                                std::to_string(first_plane + planes) + ") of '" + partial + "': it has " +
                                std::to_string(layout.planes) + " planes");
  std::vector<float> data(static_cast<std::size_t>(planes * layout.plane_pixels));
  if (data.empty()) return data;
  FitsFile file = FitsFile::open(partial, READONLY);
  int status = 0, any_null = 0;
  // No null value: with one, CFITSIO would also flush denormals to zero.
  fits_read_img(file.get(), TFLOAT, first_plane * layout.plane_pixels + 1, static_cast<LONGLONG>(data.size()),
                nullptr, data.data(), &any_null, &status);
  check(status, "read planes of", partial);
  file.close();
  data_bytes_read += 4.0 * static_cast<double>(data.size());
  return data;
}

double CubeFile::bytes_read() { return data_bytes_read; }

void CubeFile::write_beam(const std::string& path, const Beam& beam) {
  const std::string partial = partial_path(path);
  FitsFile file = FitsFile::open(partial, READWRITE);
  int status = 0;
  for (const auto& [key, value] : {std::pair{"BMAJ", beam.major_rad}, {"BMIN", beam.minor_rad}, {"BPA", beam.pa_rad}}) {
    // Replaced in place, so that the header keeps its size and the pixels their offset.
    char old_value[FLEN_VALUE] = {}, comment[FLEN_COMMENT] = {}, card[FLEN_CARD] = {};
    fits_read_keyword(file.get(), key, old_value, comment, &status);
    check(status, std::string("find the beam keyword ") + key + " in", partial);
    std::string text = fits_real(value * rad_to_deg);
    fits_make_key(key, text.data(), comment, card, &status);
    fits_update_card(file.get(), key, card, &status);
    check(status, std::string("update ") + key + " in", partial);
  }
  file.close();
}

void CubeFile::write_beams(const std::string& path, std::span<const Beam> per_plane) {
  const std::string partial = partial_path(path);
  const CubeLayout layout = read_layout(partial);
  if (static_cast<long long>(per_plane.size()) != layout.planes)
    SPIP_THROW(spip::Error, "FITS: cannot write " + std::to_string(per_plane.size()) + " beams to '" + partial +
                                "': it has " + std::to_string(layout.planes) + " planes");
  std::vector<float> major, minor, pa;
  std::vector<std::int32_t> channel, polarisation;
  for (std::size_t k = 0; k < per_plane.size(); ++k) {
    major.push_back(static_cast<float>(per_plane[k].major_rad * rad_to_arcsec));
    minor.push_back(static_cast<float>(per_plane[k].minor_rad * rad_to_arcsec));
    pa.push_back(static_cast<float>(per_plane[k].pa_rad * rad_to_deg));
    channel.push_back(static_cast<std::int32_t>(k));
    polarisation.push_back(0);  // each spip cube holds one Stokes parameter
  }
  Table beams;
  beams.extname = "BEAMS";
  beams.columns = {{"BMAJ", "arcsec", "restoring beam major axis (FWHM)", std::move(major)},
                   {"BMIN", "arcsec", "restoring beam minor axis (FWHM)", std::move(minor)},
                   {"BPA", "deg", "restoring beam position angle, east of north", std::move(pa)},
                   {"CHAN", "", "plane along the spectral axis, from 0", std::move(channel)},
                   {"POL", "", "plane along the STOKES axis, from 0", std::move(polarisation)}};
  beams.keys = {{"EXTVER", 1, "", true},
                {"NCHAN", static_cast<double>(per_plane.size()), "number of spectral planes", true},
                {"NPOL", 1, "number of Stokes planes", true}};
  append_table(partial, beams);
}

void CubeFile::commit(const std::string& path) { rename_into_place(partial_path(path), path); }

namespace {

// The shape and keywords of the open file's primary HDU.
FitsImage header_of(const FitsFile& file) {
  FitsImage image;
  image.path = file.path();
  int status = 0, naxis = 0;
  fits_get_img_dim(file.get(), &naxis, &status);
  std::vector<LONGLONG> naxes(static_cast<std::size_t>(std::max(0, naxis)));
  if (naxis > 0) fits_get_img_sizell(file.get(), naxis, naxes.data(), &status);
  check(status, "read the image shape of", file.path());
  for (LONGLONG n : naxes) image.shape.push_back(static_cast<long>(n));
  read_keywords(file, image);
  return image;
}

}  // namespace

FitsImage read_header(const std::string& path) {
  FitsFile file = FitsFile::open(path, READONLY);
  FitsImage image = header_of(file);
  file.close();
  return image;
}

FitsImage read_image(const std::string& path) {
  FitsFile file = FitsFile::open(path, READONLY);
  FitsImage image = header_of(file);
  int status = 0;
  long long pixels = image.shape.empty() ? 0 : 1;
  for (long n : image.shape) pixels *= n;

  image.data.resize(static_cast<std::size_t>(pixels));
  if (pixels > 0) {
    int any_null = 0;
    // No null value: NaNs (blank float pixels) come back as they are.
    fits_read_img(file.get(), TFLOAT, 1, pixels, nullptr, image.data.data(), &any_null, &status);
    check(status, "read the pixels of", path);
  }
  file.close();
  return image;
}

double FitsImage::number(const std::string& key) const {
  std::string text = trim(raw_value(*this, key));
  for (char& c : text)
    if (c == 'D' || c == 'd') c = 'E';  // Fortran-style exponent, allowed by FITS
  const char* begin = text.data() + (text.starts_with('+') ? 1 : 0);
  const char* end = text.data() + text.size();
  double value = 0;
  const auto [stop, ec] = std::from_chars(begin, end, value);
  if (ec != std::errc{} || stop != end || begin == end)
    SPIP_THROW(spip::Error, "FITS: keyword " + key + " in '" + path + "' is not a number: " + text);
  return value;
}

std::string FitsImage::text(const std::string& key) const {
  const std::string raw = trim(raw_value(*this, key));
  if (raw.size() < 2 || raw.front() != '\'' || raw.back() != '\'') return raw;
  std::string value;
  for (std::size_t i = 1; i + 1 < raw.size(); ++i) {
    value += raw[i];
    if (raw[i] == '\'' && raw[i + 1] == '\'') ++i;  // '' is an escaped quote
  }
  return trim_right(value);
}

}  // namespace spip::fits
