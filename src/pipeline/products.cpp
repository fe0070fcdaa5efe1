#include "products.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <numbers>

#include "spip/error.hpp"

namespace spip::pipeline {
namespace {

constexpr const char* stokes_names[] = {"I", "Q", "U", "V"};
constexpr const char* per_stokes_products[] = {"dirty", "model", "residual", "image"};

// Without CLEAN the model is zero and the residual is the dirty image: not written.
bool written(const CubeSet& cubes, const std::string& product) {
  return cubes.cleaned || (product != "model" && product != "residual");
}

// The Stokes parameters the set's cubes hold: those the correlations determine.
std::vector<int> stokes_written(const CubeSet& cubes) {
  std::vector<int> held;
  for (int s = 0; s < ms::num_stokes; ++s)
    if (cubes.stokes[s]) held.push_back(s);
  return held;
}

fits::ImageHeader header_for(const CubeSet& cubes, const std::string& product, int stokes) {
  fits::ImageHeader header = cubes.base;
  if (stokes >= 0) header.stokes = static_cast<fits::Stokes>(stokes + 1);
  if (product == "model") {
    header.bunit = "Jy/pixel";
    header.beam.reset();
  }
  if (product == "psf") header.bunit = "";
  header.beam_per_plane = cubes.beam_per_channel && product == "image";
  return header;
}

}  // namespace

std::string CubeSet::path(const std::string& product, const char* stokes) const {
  const std::string name = prefix + "-" + product + (stokes ? std::string("-") + stokes : std::string()) + ".fits";
  return (std::filesystem::path(dir) / name).string();
}

std::vector<std::string> CubeSet::paths() const {
  std::vector<std::string> all;
  for (const char* product : per_stokes_products)
    if (written(*this, product))
      for (int s : stokes_written(*this)) all.push_back(path(product, stokes_names[s]));
  all.push_back(path("psf", nullptr));
  return all;
}

CubeSet make_cube_set(const Config& config, const Plan& plan) {
  const ms::MsInfo& info = plan.readers.front().info();
  const int chan_begin = plan.chan_begin, chan_end = plan.chan_end;
  CubeSet cubes;
  cubes.dir = config.output.dir;
  cubes.prefix = config.output.prefix;
  cubes.cleaned = config.clean.niter > 0;
  cubes.beam_per_channel = !config.image.common_beam;
  cubes.stokes = plan.stokes;
  fits::ImageHeader& h = cubes.base;
  h.nx = h.ny = config.image.size;
  h.ra_rad = info.ra_rad;
  h.dec_rad = info.dec_rad;
  h.cell_rad = config.pixel_scale_rad();
  const double cdelt = chan_end - chan_begin > 1 ? info.freq_hz[chan_begin + 1] - info.freq_hz[chan_begin]
                                                : info.chan_width_hz[chan_begin];
  h.spectral.emplace(fits::LinearAxis{"FREQ", "Hz", info.freq_hz[chan_begin], cdelt, 1.0, chan_end - chan_begin});
  h.bunit = "Jy/beam";
  h.beam = fits::Beam{};  // placeholder values until write_restoring_beam
  h.date_obs = info.date_obs();
  h.telescope = info.telescope;
  h.object = info.field_name;
  h.history.push_back("spip: " + std::to_string(config.input.ms.size()) + " MS, " + config.input.column +
                      ", weighting " + to_string(config.image.weighting));
  if (!config.image.common_beam)
    h.history.push_back("each channel restored with its own fitted beam (the image cubes' BEAMS table); BMAJ/BMIN/BPA: the largest");
  return cubes;
}

void create_cubes(const CubeSet& cubes) {
  std::filesystem::create_directories(cubes.dir);
  for (int s : stokes_written(cubes))
    for (const char* product : per_stokes_products)
      if (written(cubes, product))
        fits::CubeFile::create(cubes.path(product, stokes_names[s]), header_for(cubes, product, s));
  fits::CubeFile::create(cubes.path("psf", nullptr), header_for(cubes, "psf", -1));
}

void write_channel(const CubeSet& cubes, int plane, const std::vector<float>& dirty, const std::vector<float>& psf,
                   const std::vector<float>& model, const std::vector<float>& residual) {
  const std::size_t pixels = psf.size();
  const std::vector<float>* images[] = {&dirty, &model, &residual};
  for (int k = 0; k < 3; ++k)
    if (written(cubes, per_stokes_products[k]))
      for (int s : stokes_written(cubes))
        fits::CubeFile::write_planes(cubes.path(per_stokes_products[k], stokes_names[s]), plane,
                                     std::span<const float>(images[k]->data() + s * pixels, pixels));
  fits::CubeFile::write_planes(cubes.path("psf", nullptr), plane, psf);
}

void write_restored(const CubeSet& cubes, int plane, const std::vector<float>& restored) {
  const std::size_t pixels = restored.size() / 4;
  for (int s : stokes_written(cubes))
    fits::CubeFile::write_planes(cubes.path("image", stokes_names[s]), plane,
                                 std::span<const float>(restored.data() + s * pixels, pixels));
}

std::vector<float> read_stokes_planes(const CubeSet& cubes, const std::string& product, int plane) {
  const std::size_t pixels = static_cast<std::size_t>(cubes.base.nx) * cubes.base.ny;
  std::vector<float> planes(4 * pixels, 0.0f);  // a Stokes parameter not determined is zero, as imaged
  for (int s : stokes_written(cubes)) {
    const std::vector<float> one = fits::CubeFile::read_planes(cubes.path(product, stokes_names[s]), plane, 1);
    std::copy(one.begin(), one.end(), planes.begin() + s * pixels);
  }
  return planes;
}

void write_restoring_beam(const CubeSet& cubes, const fits::Beam& beam) {
  for (const char* product : per_stokes_products)
    if (written(cubes, product) && header_for(cubes, product, 0).beam)
      for (int s : stokes_written(cubes)) fits::CubeFile::write_beam(cubes.path(product, stokes_names[s]), beam);
  fits::CubeFile::write_beam(cubes.path("psf", nullptr), beam);
}

void write_channel_beams(const CubeSet& cubes, const std::vector<fits::Beam>& per_channel) {
  for (int s : stokes_written(cubes)) fits::CubeFile::write_beams(cubes.path("image", stokes_names[s]), per_channel);
}

void commit_cubes(const CubeSet& cubes) {
  for (const std::string& path : cubes.paths()) fits::CubeFile::commit(path);
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_text_atomically(const std::string& path, const std::string& text) {
  const std::string partial = path + ".partial";
  std::FILE* out = std::fopen(partial.c_str(), "w");
  if (!out) SPIP_THROW(InputError, partial + ": cannot write: " + std::strerror(errno));
  bool written = std::fwrite(text.data(), 1, text.size(), out) == text.size();
  int reason = errno;
  if (std::fclose(out) != 0 && written) {
    written = false;
    reason = errno;
  }
  if (!written) {
    std::remove(partial.c_str());
    SPIP_THROW(InputError, partial + ": cannot write: " + std::strerror(reason));
  }
  if (std::rename(partial.c_str(), path.c_str()) != 0)
    SPIP_THROW(InputError, path + ": cannot rename from .partial: " + std::strerror(errno));
}

}  // namespace spip::pipeline
