#include "spip/stages/channel_cubes.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "spip/common/constants.hpp"
#include "spip/error.hpp"
#include "spip/job/log.hpp"
#include "spip/parallel/file_io.hpp"

namespace spip::pipeline {
namespace {

fits::ImageHeader header_for(const CubeSet& cubes, const ChannelCube& cube) {
  fits::ImageHeader header = cubes.base;
  if (cube.stokes >= 0) header.stokes = static_cast<fits::Stokes>(cube.stokes + 1);
  if (cube.kind == ChannelCubeKind::model) {
    header.bunit = "Jy/pixel";
    header.beam.reset();
  }
  if (cube.kind == ChannelCubeKind::psf || cube.kind == ChannelCubeKind::pb) {
    header.bunit = "";
    header.btype = "Beam";
  }
  if (cube.kind == ChannelCubeKind::pb) header.beam.reset();  // a response, not an image of the sky
  header.beam_per_plane =
      cubes.beam_per_channel && (cube.kind == ChannelCubeKind::image || cube.kind == ChannelCubeKind::image_pb);
  return header;
}

void write_stokes_planes(const CubeSet& cubes, ChannelCubeKind product, int plane, const std::vector<float>& planes) {
  const std::size_t pixels = planes.size() / ms::num_stokes;
  for (const ChannelCube& cube : cubes.cubes)
    if (cube.kind == product)
      cubes.writer->planes(cube.path, plane, std::span<const float>(planes.data() + cube.stokes * pixels, pixels));
}

}  // namespace

const fits::CubeLayout& CubeWriter::layout(const std::string& path) {
  const std::lock_guard lock(mutex_);
  auto it = layouts_.find(path);
  if (it == layouts_.end()) it = layouts_.emplace(path, fits::CubeFile::layout(path)).first;
  return it->second;  // std::map keeps its elements in place
}

void CubeWriter::planes(const std::string& path, int first_plane, std::span<const float> data) {
  files_.write(fits::CubeFile::plane_write(layout(path), first_plane, data));
}

void CubeWriter::rows(const std::string& path, int first_row, std::span<const float> data) {
  files_.write(fits::CubeFile::row_write(layout(path), first_row, data));
}

void CubeWriter::sync() { files_.sync(); }

void CubeWriter::close() { files_.close(); }

CubeSet make_cube_set(const Config& config, const Plan& plan) {
  const ms::MsInfo& info = plan.readers.front().info();
  CubeSet cubes{plan.products, plan.products.channel_cubes(), !config.image.common_beam, {}, plan.primary_beam,
                config.beam.limit, plan.pointings};
  fits::ImageHeader& h = cubes.base;
  h.nx = h.ny = config.image.size;
  h.ra_rad = plan.image_centre.ra_rad;
  h.dec_rad = plan.image_centre.dec_rad;
  if (plan.rephased() && !plan.mosaic()) {  // the pointing, where the primary beam is centred, as CASA and linmos read it
    h.extra_keys["OBSRA"] = ra_degrees(plan.pointings.front());
    h.extra_keys["OBSDEC"] = plan.pointings.front().dec_rad * rad_to_deg;
  }
  h.cell_rad = config.pixel_scale_rad();
  // The merged axis is regular: gaps between the inputs' channels are blank planes.
  h.spectral.emplace(fits::LinearAxis{"FREQ", "Hz", plan.freq_hz.front(), plan.band.step_hz, 1.0, plan.band.size()});
  h.bunit = "Jy/beam";
  h.beam = fits::Beam{};  // placeholder values until write_restoring_beam
  // The earliest input's start (an input without rows of its field has none); merge_band
  // has made sure the inputs share one frame.
  const auto earliest = std::min_element(plan.readers.begin(), plan.readers.end(), [](const auto& a, const auto& b) {
    const double ta = a.info().start_time_mjd_s(), tb = b.info().start_time_mjd_s();
    return std::isnan(tb) ? !std::isnan(ta) : ta < tb;
  });
  h.date_obs = earliest->info().date_obs();
  h.specsys = info.spectral_frame;
  h.telescope = info.telescope;
  h.object = info.field_name;
  std::set<std::string> read;  // input.column auto may take CORRECTED_DATA of one MS and DATA of another
  for (const ms::MsReader& reader : plan.readers) read.insert(reader.info().column);
  std::string columns;
  for (const std::string& column : read) columns += (columns.empty() ? "" : " and ") + column;
  h.history.push_back("spip: " + std::to_string(config.input.ms.size()) + " MS, " +
                      std::to_string(plan.readers.size()) + " spectral window(s), " + columns +
                      ", weighting " + to_string(config.image.weighting));
  if (!config.image.common_beam)
    h.history.push_back("each channel restored with its own fitted beam (the image cubes' BEAMS table); BMAJ/BMIN/BPA: one "
                        "that holds them all");
  if (const auto& beam = plan.primary_beam) {
    std::ostringstream line;
    line << "primary beam: " << beam->describe()
         << "; image-pb cubes blank below a response of " << config.beam.limit;
    h.history.push_back(line.str());
  }
  if (plan.mosaic()) {
    h.history.push_back("linear mosaic of " + std::to_string(plan.pointings.size()) +
                        " pointings: apparent planes sum_p B_p w_p X_p / sqrt(sum_p B_p^2 w_p w_max), "
                        "w_p = 1/sigma_p^2, w_max the largest; pb: sqrt(sum_p w_p B_p^2 / w_max)");
    for (const Direction& pointing : plan.pointings) {
      const double ra_deg = pointing.ra_rad * rad_to_deg;
      h.history.push_back("mosaic pointing RA " + fixed(ra_deg - 360 * std::floor(ra_deg / 360), 6) + " Dec " +
                          fixed(pointing.dec_rad * rad_to_deg, 6) + " deg");
    }
  }
  return cubes;
}

void create_cubes(const CubeSet& cubes) {
  std::filesystem::create_directories(cubes.products.dir());
  for (const ChannelCube& cube : cubes.cubes)
    fits::CubeFile::create(cube.path, header_for(cubes, cube));
}

void write_channel(const CubeSet& cubes, int plane, const std::vector<float>& dirty, const std::vector<float>& psf,
                   const std::vector<float>& model, const std::vector<float>& residual) {
  write_stokes_planes(cubes, ChannelCubeKind::dirty, plane, dirty);
  write_stokes_planes(cubes, ChannelCubeKind::model, plane, model);
  write_stokes_planes(cubes, ChannelCubeKind::residual, plane, residual);
  if (cubes.products.written(ChannelCubeKind::psf))
    cubes.writer->planes(cubes.products.channel_cube(ChannelCubeKind::psf), plane, psf);
}

void write_blank_channel(const CubeSet& cubes, int plane) {
  const std::vector<float> nan(static_cast<std::size_t>(cubes.base.nx) * cubes.base.ny,
                               std::numeric_limits<float>::quiet_NaN());
  for (const ChannelCube& cube : cubes.cubes) cubes.writer->planes(cube.path, plane, nan);
}

void write_restored(const CubeSet& cubes, int plane, const std::vector<float>& restored,
                    const std::vector<double>& weights) {
  write_stokes_planes(cubes, ChannelCubeKind::image, plane, restored);
  const bool corrected_cubes = std::ranges::any_of(
      cubes.cubes, [](const ChannelCube& cube) { return cube.kind == ChannelCubeKind::image_pb; });
  if (!cubes.primary_beam || (!corrected_cubes && !cubes.products.written(ChannelCubeKind::pb))) return;
  const fits::LinearAxis& freq = *cubes.base.spectral;
  const double freq_hz = freq.crval + (plane + 1 - freq.crpix) * freq.cdelt;
  const beam::PrimaryBeam& primary_beam = *cubes.primary_beam;
  const beam::ImageGrid grid{cubes.base.nx, cubes.base.cell_rad, {cubes.base.ra_rad, cubes.base.dec_rad},
                             cubes.pointings.front()};
  const std::vector<float> response = beam::effective_response_rows(
      primary_beam, grid, beam::Pointings{cubes.pointings, {weights}}, 0, freq_hz, 0, cubes.base.ny);
  if (cubes.products.written(ChannelCubeKind::pb))
    cubes.writer->planes(cubes.products.channel_cube(ChannelCubeKind::pb), plane, response);
  if (!corrected_cubes) return;
  std::vector<float> corrected = restored;
  float* const stokes[4] = {&corrected[0], &corrected[response.size()], &corrected[2 * response.size()],
                            &corrected[3 * response.size()]};
  beam::correct_stokes(stokes, response,
                       beam::leakage_rows(primary_beam, grid, freq_hz, 0, cubes.base.ny),
                       cubes.beam_limit);
  write_stokes_planes(cubes, ChannelCubeKind::image_pb, plane, corrected);
}

std::vector<float> read_stokes_planes(const CubeSet& cubes, ChannelCubeKind product, int plane) {
  const std::size_t pixels = static_cast<std::size_t>(cubes.base.nx) * cubes.base.ny;
  std::vector<float> planes(ms::num_stokes * pixels, 0.0f);  // a Stokes parameter not determined is zero, as imaged
  for (const ChannelCube& cube : cubes.cubes)
    if (cube.kind == product) {
      const std::vector<float> one = fits::CubeFile::read_planes(cube.path, plane, 1);
      std::copy(one.begin(), one.end(), planes.begin() + cube.stokes * pixels);
    }
  return planes;
}

void write_restoring_beam(const CubeSet& cubes, const fits::Beam& beam) {
  for (const ChannelCube& cube : cubes.cubes)
    if (header_for(cubes, cube).beam) fits::CubeFile::write_beam(cube.path, beam);
}

void write_channel_beams(const CubeSet& cubes, const std::vector<fits::Beam>& per_channel) {
  for (const ChannelCube& cube : cubes.cubes)
    if (header_for(cubes, cube).beam_per_plane) fits::CubeFile::write_beams(cube.path, per_channel);
}

void commit_cubes(const CubeSet& cubes) {
  for (const ChannelCube& cube : cubes.cubes) fits::CubeFile::commit(cube.path);
}

}  // namespace spip::pipeline
