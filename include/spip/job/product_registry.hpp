#pragma once
// Every file a run writes into output.dir, named in one place with its kind and its
// size: the stages ask it for the names they write, the disk check and `--plan` for the
// bytes, resume for the partial cubes it looks for, and the final rename for what to
// commit. (WSClean keeps its output names together the same way, in io/imagefilename.)
#include <array>
#include <string>
#include <vector>

#include "spip/config/config.hpp"
#include "spip/ms/ms_reader.hpp"

namespace spip::pipeline {

// The first four kinds are created whole by rank 0 under a partial name, filled by every
// rank, and renamed at the end; the others are written whole, by rank 0, at the end.
enum class ProductKind {
  channel_cube,  // [x, y, channel]: dirty, model, residual, restored per Stokes, and the PSF
  moment_image,  // a moment of I, Q, U, V or P over the channels
  fdf_cube,      // [x, y, phi]: a part of the Faraday dispersion function
  pixel_map,     // per pixel of the Faraday stage: the peak fit, m2, RM-CLEAN iterations, fractional PI
  rmsf,          // the RMSF as a cube and as text, and RM-Tools' map of its width
  catalogue,     // the polarised-source catalogue, FITS table and CSV
  record,        // the effective configuration and qa.json
};
const char* to_string(ProductKind kind);

// The channel cubes of a run: one per Stokes parameter of each kind, the PSF, and with a
// primary beam the restored images divided by it (image_pb) and its response (pb).
enum class ChannelCubeKind { dirty, model, residual, image, psf, image_pb, pb };
// The kind as output.channel_cubes names it: "image", "image-pb", ...
const char* to_string(ChannelCubeKind kind);

// Quantities of the moment images: the Stokes parameters and P = |Q + iU|.
inline constexpr int moment_quantities = 5, moment_orders = 4;  // mean, std, skew, kurt

struct Product {
  std::string path;
  ProductKind kind;
  double bytes = 0;  // when complete; an estimate for the catalogue and the records
};

// What the channels and the image are: all the registry needs besides the settings.
struct ProductShape {
  std::array<bool, ms::num_stokes> stokes{};  // which of I, Q, U, V the correlations determine
  int channels = 0;
  int image_size = 0;  // pixels per side
  int depths = 0;      // Faraday depths planned; 0: no RM synthesis
  int pointings = 1;   // several: a mosaic, with no one PSF or model per channel
  int rows = 0;        // image rows, where they differ from image_size
  bool imaged = true;  // false: the Faraday stage on another imager's cubes, no channel cubes
};

struct ChannelCube {
  ChannelCubeKind kind;
  int stokes;  // -1 for the PSF
  std::string path;
};

class ProductRegistry {
 public:
  ProductRegistry() = default;
  ProductRegistry(const Config& config, const ProductShape& shape);

  const std::string& dir() const { return dir_; }
  // Names, each a path in dir().
  std::string channel_cube(ChannelCubeKind product, int stokes = -1) const;
  std::string moment(int quantity, int order) const;
  std::string fdf_cube(const std::string& cube) const;  // a faraday.cubes name, "real-dirty"
  std::string pixel_map(int map) const;                 // a faraday::PixelMap
  std::string fracpol_map() const;                      // faraday.fractional's peak PI / I0
  std::string alpha_map() const;                        // faraday.fractional's Stokes I spectral index
  std::string sigma_add_map(int k) const;               // sigma_add (0) and its lower (1) and upper (2) errors
  std::string rmsf_fwhm_map() const;                    // RM-Tools' per-pixel RMSF width
  std::string rmsf_cube() const;
  std::string rmsf_text() const;
  std::string catalogue_table() const;
  std::string catalogue_csv() const;
  std::string rmtable_table() const;  // the catalogue in the RMTable standard
  std::string rmtable_csv() const;
  std::string qa() const;
  std::string effective_config() const;
  std::string quicklook() const;  // scripts/quicklook.py's page, beside the products
  // Not products, but a run's: its claim on the folder and prefix, and its resume markers.
  std::string claim() const;
  std::string progress_dir() const;

  // Whether the run makes the product: without CLEAN the model is zero and the residual
  // the dirty image, and neither is made; without beam.model, no corrected images and no
  // beam; a mosaic's pointings each have their own PSF and model, so neither is made.
  bool made(ChannelCubeKind product) const;
  // Whether its cube of Stokes `stokes` (-1 for the PSF and the beam) is written: made, determined by
  // the correlations and chosen by output.channel_cubes.
  bool written(ChannelCubeKind product, int stokes = -1) const;
  // Whether the cubes of every Stokes parameter the correlations determine are written:
  // what a resumed run can read a finished channel's planes back from.
  bool on_disk(ChannelCubeKind product) const;
  bool polarised() const;
  // Whether the moment images of `quantity` (a Stokes parameter, or P) are made: those of
  // Stokes I and V only where there is Stokes I or V.
  bool has_moments(int quantity) const;
  // Whether the catalogue is made: catalogue.threshold > 0 or catalogue.sources, and
  // Stokes I to compare each source's polarised intensity with.
  bool has_catalogue() const { return catalogue_; }
  // The channel cubes this run writes, in the order the stages create them.
  std::vector<ChannelCube> channel_cubes() const;
  // Every product of a complete run, with its kind and size.
  std::vector<Product> all() const;
  // Bytes the products will add: all() less what partial channel cubes already hold.
  double bytes_to_write() const;
  // Every file a run with this prefix may leave, whatever its settings, but the effective
  // configuration and the partial channel cubes a resumed run continues: the files a
  // starting run clears, so that no earlier run's product is taken for one of its own.
  std::vector<std::string> earlier_runs_files() const;

 private:
  std::string path(const std::string& name) const;
  std::string dir_, prefix_;
  ProductShape shape_;
  bool cleaned_ = false;
  bool beam_ = false;
  bool fractional_ = false;
  bool catalogue_ = false;
  std::vector<std::string> fdf_cubes_;
  std::vector<std::string> selected_;  // output.channel_cubes
};

}  // namespace spip::pipeline
