#include "spip/job/product_registry.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <iterator>

#include "spip/faraday/spectrum_math.hpp"
#include "spip/fits/fits_image.hpp"
#include "spip/job/memory_budget.hpp"

namespace spip::pipeline {
namespace {

constexpr const char* stokes_names[] = {"I", "Q", "U", "V"};
constexpr const char* channel_names[] = {"dirty", "model", "residual", "image", "psf", "image-pb", "pb"};
constexpr const char* quantity_names[] = {"I", "Q", "U", "V", "P"};
constexpr const char* order_names[] = {"mean", "std", "skew", "kurt"};
constexpr const char* map_names[] = {"peak-phi",  "peak-pi",       "peak-chi0",     "peak-phi-err", "peak-pi-err",
                                     "peak-chi0-err", "fdf-m2", "fdf-noise-mad", "rmclean-iterations"};
static_assert(std::size(map_names) == faraday::pixel_map_count);
static_assert(std::size(quantity_names) == moment_quantities && std::size(order_names) == moment_orders);

// RM-Tools' readers find an FDF cube's partners by swapping _real, _im and _tot in its
// name, and its RMSF_FWHM map by swapping FDF_tot_dirty or FDF_clean_tot, so spip's
// cubes open in rmtools_peakfitcube under these names as they are.
std::string rmtools_fdf_name(const std::string& cube) {
  const std::string part = cube.substr(0, cube.find('-'));
  const std::string rmtools_part = part == "real" ? "real" : part == "imag" ? "im" : "tot";
  return cube.ends_with("-clean") ? "FDF_clean_" + rmtools_part : "FDF_" + rmtools_part + "_dirty";
}

// A catalogue row and a qa.json channel entry are a few hundred bytes; these bound them.
constexpr double catalogue_bytes = 64e3, record_bytes_per_channel = 2e3;

}  // namespace

const char* to_string(ChannelCubeKind kind) { return channel_names[static_cast<int>(kind)]; }

const char* to_string(ProductKind kind) {
  constexpr const char* names[] = {"channel cube", "moment image",   "FDF cube", "pixel map",
                                   "RMSF file",    "catalogue file", "record"};
  return names[static_cast<int>(kind)];
}

ProductRegistry::ProductRegistry(const Config& config, const ProductShape& shape)
    : dir_(config.output.dir),
      prefix_(config.output.prefix),
      shape_(shape),
      cleaned_(config.clean.niter > 0),
      beam_(config.beam.model != BeamModel::none),
      fractional_(config.faraday.fractional),
      catalogue_((config.catalogue.threshold > 0 || !config.catalogue.sources.empty()) && shape.stokes[ms::stokes_i]),
      fdf_cubes_(config.faraday.cubes),
      selected_(config.output.channel_cubes) {}

std::string ProductRegistry::path(const std::string& name) const {
  return (std::filesystem::path(dir_) / (prefix_ + "-" + name)).string();
}

std::string ProductRegistry::channel_cube(ChannelCubeKind product, int stokes) const {
  const std::string name = channel_names[static_cast<int>(product)];
  return path(stokes < 0 ? name + ".fits" : name + "-" + stokes_names[stokes] + ".fits");
}

std::string ProductRegistry::moment(int quantity, int order) const {
  return path(std::string("moment-") + order_names[order] + "-" + quantity_names[quantity] + ".fits");
}

std::string ProductRegistry::fdf_cube(const std::string& cube) const { return path(rmtools_fdf_name(cube) + ".fits"); }
std::string ProductRegistry::pixel_map(int map) const { return path(std::string(map_names[map]) + ".fits"); }
std::string ProductRegistry::fracpol_map() const { return path("peak-fracpol.fits"); }
std::string ProductRegistry::alpha_map() const { return path("stokes-i-alpha.fits"); }
std::string ProductRegistry::sigma_add_map(int k) const {
  constexpr const char* names[] = {"sigma-add", "sigma-add-minus", "sigma-add-plus"};
  return path(std::string(names[k]) + ".fits");
}
std::string ProductRegistry::rmsf_fwhm_map() const { return path("RMSF_FWHM.fits"); }
std::string ProductRegistry::rmsf_cube() const { return path("rmsf.fits"); }
std::string ProductRegistry::rmsf_text() const { return path("rmsf.txt"); }
std::string ProductRegistry::catalogue_table() const { return path("catalogue.fits"); }
std::string ProductRegistry::catalogue_csv() const { return path("catalogue.csv"); }
std::string ProductRegistry::rmtable_table() const { return path("rmtable.fits"); }
std::string ProductRegistry::rmtable_csv() const { return path("rmtable.csv"); }
std::string ProductRegistry::qa() const { return path("qa.json"); }
std::string ProductRegistry::effective_config() const { return path("config.ini"); }
std::string ProductRegistry::quicklook() const { return path("quicklook.png"); }
std::string ProductRegistry::claim() const { return (std::filesystem::path(dir_) / ("." + prefix_ + ".claim")).string(); }
std::string ProductRegistry::progress_dir() const {
  return (std::filesystem::path(dir_) / ("." + prefix_ + ".progress")).string();
}

bool ProductRegistry::made(ChannelCubeKind product) const {
  if (product == ChannelCubeKind::image_pb || product == ChannelCubeKind::pb) return beam_;
  if (shape_.pointings > 1 && (product == ChannelCubeKind::psf || product == ChannelCubeKind::model)) return false;
  return cleaned_ || (product != ChannelCubeKind::model && product != ChannelCubeKind::residual);
}

bool ProductRegistry::written(ChannelCubeKind product, int stokes) const {
  if (!shape_.imaged || !made(product) || (stokes >= 0 && !shape_.stokes[stokes])) return false;
  const std::string name =
      stokes < 0 ? channel_names[static_cast<int>(product)]
                 : std::string(channel_names[static_cast<int>(product)]) + "-" + stokes_names[stokes];
  return std::ranges::find(selected_, name) != selected_.end();
}

bool ProductRegistry::on_disk(ChannelCubeKind product) const {
  if (!made(product)) return false;
  for (int s = 0; s < ms::num_stokes; ++s)
    if (shape_.stokes[s] && !written(product, s)) return false;
  return true;
}

bool ProductRegistry::polarised() const { return shape_.stokes[ms::stokes_q] && shape_.stokes[ms::stokes_u]; }

bool ProductRegistry::has_moments(int quantity) const {
  return quantity >= ms::num_stokes || shape_.stokes[static_cast<std::size_t>(quantity)];
}

std::vector<ChannelCube> ProductRegistry::channel_cubes() const {
  std::vector<ChannelCube> cubes;
  for (ChannelCubeKind product : {ChannelCubeKind::dirty, ChannelCubeKind::model, ChannelCubeKind::residual,
                                 ChannelCubeKind::image, ChannelCubeKind::image_pb})
    for (int s = 0; s < ms::num_stokes; ++s)
      if (written(product, s)) cubes.push_back({product, s, channel_cube(product, s)});
  for (ChannelCubeKind product : {ChannelCubeKind::psf, ChannelCubeKind::pb})
    if (written(product)) cubes.push_back({product, -1, channel_cube(product)});
  return cubes;
}

std::vector<Product> ProductRegistry::all() const {
  const double pixels = static_cast<double>(shape_.image_size) * (shape_.rows > 0 ? shape_.rows : shape_.image_size);
  const double image = fits_bytes(pixels);
  std::vector<Product> products;
  for (const ChannelCube& cube : channel_cubes())
    products.push_back({cube.path, ProductKind::channel_cube, fits_bytes(pixels * shape_.channels)});
  products.push_back({qa(), ProductKind::record, record_bytes_per_channel * shape_.channels});
  products.push_back({effective_config(), ProductKind::record, record_bytes_per_channel});
  // The Faraday stage needs Q and U; RM synthesis two channels or more.
  if (!polarised()) return products;
  for (int quantity = 0; quantity < moment_quantities; ++quantity)
    for (int order = 0; order < moment_orders; ++order)
      if (has_moments(quantity)) products.push_back({moment(quantity, order), ProductKind::moment_image, image});
  if (shape_.depths == 0) return products;
  for (const std::string& cube : fdf_cubes_)
    products.push_back({fdf_cube(cube), ProductKind::fdf_cube, fits_bytes(pixels * shape_.depths)});
  for (int map = 0; map < faraday::pixel_map_count; ++map)
    products.push_back({pixel_map(map), ProductKind::pixel_map, image});
  if (fractional_) {
    products.push_back({fracpol_map(), ProductKind::pixel_map, image});
    products.push_back({alpha_map(), ProductKind::pixel_map, image});
  }
  for (int k = 0; k < 3; ++k) products.push_back({sigma_add_map(k), ProductKind::pixel_map, image});
  products.push_back({rmsf_fwhm_map(), ProductKind::rmsf, image});
  products.push_back({rmsf_cube(), ProductKind::rmsf, fits_bytes(shape_.depths)});
  products.push_back({rmsf_text(), ProductKind::rmsf, 100.0 * shape_.depths});  // four numbers a line
  if (catalogue_) {
    products.push_back({catalogue_table(), ProductKind::catalogue, catalogue_bytes});
    products.push_back({catalogue_csv(), ProductKind::catalogue, catalogue_bytes});
    products.push_back({rmtable_table(), ProductKind::catalogue, catalogue_bytes});
    products.push_back({rmtable_csv(), ProductKind::catalogue, catalogue_bytes});
  }
  return products;
}

namespace {

// Bytes the file holds on disk. A partial cube is created at its full length but sparse
// (ftruncate), so its length says nothing of the planes written into it.
double allocated_bytes(const std::string& path) {
  struct stat status;
  if (stat(path.c_str(), &status) != 0) return 0;
  return 512.0 * static_cast<double>(status.st_blocks);
}

}  // namespace

std::vector<std::string> ProductRegistry::earlier_runs_files() const {
  // This registry with every option on names every product a run of the prefix can make.
  ProductRegistry every = *this;
  every.shape_.stokes.fill(true);
  every.shape_.imaged = true;
  every.shape_.pointings = 1;
  every.shape_.depths = std::max(shape_.depths, 2);
  every.cleaned_ = every.beam_ = every.fractional_ = every.catalogue_ = true;
  every.fdf_cubes_ = faraday_cube_names();
  every.selected_ = channel_cube_names();
  std::vector<std::string> files{quicklook()};
  for (const Product& product : every.all()) {
    if (product.path == effective_config()) continue;
    files.push_back(product.path);
    // A killed Faraday stage's partial products are never resumed from; partial channel cubes are.
    if (product.kind == ProductKind::moment_image || product.kind == ProductKind::fdf_cube ||
        product.kind == ProductKind::pixel_map)
      files.push_back(fits::CubeFile::partial_path(product.path));
  }
  return files;
}

double ProductRegistry::bytes_to_write() const {
  double bytes = 0;
  for (const Product& product : all()) {
    const double present =
        product.kind == ProductKind::channel_cube ? allocated_bytes(fits::CubeFile::partial_path(product.path)) : 0;
    bytes += std::max(0.0, product.bytes - present);
  }
  return bytes;
}

}  // namespace spip::pipeline
