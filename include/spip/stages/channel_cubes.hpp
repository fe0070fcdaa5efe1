#pragma once
// The channel cubes of a run: headers, creation by rank 0, planes by every rank. Their
// names and which of them are written come from the ProductRegistry.
#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "spip/beam/mosaic.hpp"
#include "spip/config/config.hpp"
#include "spip/fits/fits_image.hpp"
#include "spip/job/plan.hpp"
#include "spip/job/product_registry.hpp"
#include "spip/parallel/file_io.hpp"

namespace spip::pipeline {

// Planes [first_plane, ...) of cubes created with fits::CubeFile::create, or rows
// [first_row, ...) of each of their planes (data [plane][row][x]): the fits room lays the
// bytes out and the parallel room writes them with MPI-IO, so that ranks writing
// neighbouring planes or slabs at once need no lock. Each cube's layout is read from its
// header once, at its first write, and its file stays open until close(), which comes
// before the barrier after which rank 0 re-headers or commits the cubes; sync() before a
// progress marker says that planes are written. Any thread may write.
class CubeWriter {
 public:
  void planes(const std::string& path, int first_plane, std::span<const float> data);
  void rows(const std::string& path, int first_row, std::span<const float> data);
  void sync();   // once no other thread writes
  void close();  // once no thread writes

 private:
  const fits::CubeLayout& layout(const std::string& path);
  std::mutex mutex_;  // guards layouts_
  std::map<std::string, fits::CubeLayout> layouts_;
  parallel::FileWriter files_;
};

struct CubeSet {
  const ProductRegistry& products;
  std::vector<ChannelCube> cubes;  // products.channel_cubes(), listed once: each plane written looks them up
  bool beam_per_channel = false;   // image.common_beam = false: the restored cubes carry a BEAMS table
  fits::ImageHeader base;          // shared WCS, FREQ axis over the imaged channels
  std::optional<beam::PrimaryBeam> primary_beam;  // the restored images are divided by it
  double beam_limit = 0;           // beam.limit: blank below this response
  std::vector<Direction> pointings;  // the inputs' phase centres, where the beams point
  std::unique_ptr<CubeWriter> writer = std::make_unique<CubeWriter>();  // this rank's writes, from any thread
};

// The cubes of a run (plan.products), their headers from the first input and the imaged channels.
CubeSet make_cube_set(const Config& config, const Plan& plan);

// Rank 0, before any rank writes.
void create_cubes(const CubeSet& cubes);
// Channel `plane` (0-based within the imaged range) of every product of the set but
// the restored image, which may wait for the job's restoring beam.
void write_channel(const CubeSet& cubes, int plane, const std::vector<float>& dirty, const std::vector<float>& psf,
                   const std::vector<float>& model, const std::vector<float>& residual);
// Channel `plane` of every cube as NaN: a blanked channel. The cubes are created
// without pixels, so a blank plane is written like any other.
void write_blank_channel(const CubeSet& cubes, int plane);
// Channel `plane` of the restored ("image") cubes, from its Stokes planes [4][N*N], and
// with a primary beam its response and corrected planes; `weights`: the channel's
// mosaic weights per pointing (beam::Pointings), unused with one pointing.
void write_restored(const CubeSet& cubes, int plane, const std::vector<float>& restored,
                    const std::vector<double>& weights);
// Channel `plane` of a per-Stokes product (model, residual, ...) as written, [4][N*N].
std::vector<float> read_stokes_planes(const CubeSet& cubes, ChannelCubeKind product, int plane);
// Rank 0, before commit_cubes: the job's restoring beam in every product that carries
// one (the cubes are created before it is known).
void write_restoring_beam(const CubeSet& cubes, const fits::Beam& beam);
// Rank 0, with image.common_beam = false, before commit_cubes: each channel's own beam
// in the restored cubes (CASA's BEAMS table).
void write_channel_beams(const CubeSet& cubes, const std::vector<fits::Beam>& per_channel);
// Rank 0, after every rank has written.
void commit_cubes(const CubeSet& cubes);

}  // namespace spip::pipeline
