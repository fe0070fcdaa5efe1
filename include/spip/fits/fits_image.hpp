#pragma once
// FITS images and cubes with a complete celestial WCS (the only room that calls CFITSIO).
//
// Axis order (FITS, fastest first): RA---SIN, DEC--SIN, then an optional third
// linear axis (FREQ in Hz, or FDEP in rad/m^2), then an optional STOKES axis of
// length 1. Pixel data are float32, x fastest: data[(plane * ny + y) * nx + x].
// The phase centre sits at zero-based pixel (nx/2, ny/2), i.e. CRPIX = n/2 + 1, unless
// the header names another reference pixel (cubes of other imagers, mosaics).
#include <array>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "spip/common/file_extent.hpp"

namespace spip::fits {

enum class Stokes : int { I = 1, Q = 2, U = 3, V = 4 };

struct Beam {
  double major_rad = 0;
  double minor_rad = 0;
  double pa_rad = 0;  // east of north
};

// A linear axis: CRVAL + (pixel - CRPIX) * CDELT, pixel one-based.
struct LinearAxis {
  std::string ctype;  // "FREQ" or "FDEP"
  std::string cunit;  // "Hz" or "rad/m^2"
  double crval = 0;
  double cdelt = 1;
  double crpix = 1;
  int size = 1;
};

struct ImageHeader {
  int nx = 0, ny = 0;
  double ra_rad = 0, dec_rad = 0;  // phase centre, in `radesys`
  // The celestial frame (FITS RADESYS): FK5 (J2000, EQUINOX 2000), as a Measurement
  // Set's J2000 directions, or ICRS, as another imager's cube may be.
  std::string radesys = "FK5";
  double cell_rad = 0;             // pixel size; CDELT1 = -cell, CDELT2 = +cell (in degrees)
  // Zero-based pixel (x, y) of (ra_rad, dec_rad); none: (nx/2, ny/2), where spip images it.
  std::optional<std::array<double, 2>> reference_pixel;
  std::optional<LinearAxis> spectral;
  std::optional<Stokes> stokes;
  int stokes_planes = 1;           // the STOKES axis's length: stokes, then the parameters after it
  std::string bunit = "Jy/beam";   // "Jy/pixel" for models
  // What a pixel is, in casacore's image types, which CASA and CARTA show ("Rotation
  // Measure", "Spectral Index", "Beam"); empty for a quantity they have no type for.
  std::string btype = "Intensity";
  std::optional<Beam> beam;        // BMAJ/BMIN/BPA on restored products
  bool beam_per_plane = false;     // CASAMBM = T: CubeFile::write_beams adds the planes' own beams
  std::string date_obs;            // ISO 8601 UTC
  std::string specsys = "TOPOCENT";  // the frequency axis's frame (FITS SPECSYS)
  std::string telescope;
  std::string object;
  std::map<std::string, double> extra_keys;  // e.g. LAMSQ0
  std::vector<std::string> history;

  int planes() const { return (spectral ? spectral->size : 1) * (stokes ? stokes_planes : 1); }
  double reference_x() const { return reference_pixel ? (*reference_pixel)[0] : nx / 2; }
  double reference_y() const { return reference_pixel ? (*reference_pixel)[1] : ny / 2; }
};

// Writes a complete image or cube under a temporary name and renames it.
void write_image(const std::string& path, const ImageHeader& header, std::span<const float> data);

// A cube created once with its full shape and filled plane by plane, possibly by
// several processes, each writing its own planes. The file lives under
// partial_path(path) until commit() renames it, so a crash never leaves a
// product that looks complete.
//
// Where a cube's pixels lie in its partial file, from its header: read once by each
// writer (CubeFile::layout), not once per write.
struct CubeLayout {
  std::string partial;       // the partial file
  long long plane_pixels = 0;
  long long planes = 0;
  long long data_start = 0;  // byte offset of the first pixel
  long long row_pixels = 0;  // NAXIS1
};

// The pixels are not written through CFITSIO: plane_write() and row_write() say which
// bytes go where (FITS keeps float32 big-endian and contiguous after the header), and
// the caller puts them there (the parallel room, with MPI-IO). A writer then touches
// only its own bytes, so writers of neighbouring planes need no lock, even where two
// planes share a 2880-byte FITS record.
class CubeFile {
 public:
  static std::string partial_path(const std::string& path);

  // Creates the partial file: the header through CFITSIO and the data area sized but
  // not written, so that each pixel goes to disk once, by the writer of its plane.
  // Every plane must be written before commit(); an unwritten one reads as zeros.
  static void create(const std::string& path, const ImageHeader& header);
  // The layout of the partial file of `path`, once it is created.
  static CubeLayout layout(const std::string& path);
  // Planes [first_plane, first_plane + data.size() / (nx*ny)) of the partial file.
  static FileWrite plane_write(const CubeLayout& layout, int first_plane, std::span<const float> data);
  // Rows [first_row, first_row + rows) of every plane, from data as [plane][row][x]:
  // for products held as pixel slabs (Faraday depth cubes). One extent per plane.
  static FileWrite row_write(const CubeLayout& layout, int first_row, std::span<const float> data);
  // Reads rows [first_row, first_row + rows) of every plane of the partial file, as
  // [plane][row][x]: a pixel slab's spectra, written plane by plane by other processes.
  static std::vector<float> read_rows(const std::string& path, int first_row, int rows);
  // Reads planes [first_plane, first_plane + planes) of the partial file.
  static std::vector<float> read_planes(const std::string& path, int first_plane, int planes);
  // Data bytes this process has read back from partial files with read_rows and
  // read_planes: how a stage shows what it reads of the products.
  static double bytes_read();
  // Sets BMAJ, BMIN and BPA of a partial file created with a beam (placeholder values
  // until the job's restoring beam is known). Like commit(), only while no process writes.
  static void write_beam(const std::string& path, const Beam& beam);
  // Appends CASA's per-plane beam table to the partial file (created with
  // beam_per_plane): extension BEAMS, one row per plane, BMAJ and BMIN in arcsec,
  // BPA in deg, CHAN and POL 0-based, NCHAN and NPOL keys, as CASA, CARTA and
  // radio-beam read it. A plane without a beam (blanked) has a zero beam.
  static void write_beams(const std::string& path, std::span<const Beam> per_plane);
  // Renames the partial file to its final name (after every writer has finished).
  static void commit(const std::string& path);
};

struct FitsImage {
  std::string path;                                 // where it was read from, for messages
  std::vector<long> shape;                          // NAXISn, fastest first
  std::vector<float> data;
  std::map<std::string, std::string> keywords;      // raw header values as written
  std::vector<std::string> history;                 // HISTORY cards in order (not in keywords)
  double number(const std::string& key) const;      // throws if absent or not numeric
  std::string text(const std::string& key) const;   // string value without quotes
};

FitsImage read_image(const std::string& path);
// The primary header and shape only, without the pixels.
FitsImage read_header(const std::string& path);

}  // namespace spip::fits
