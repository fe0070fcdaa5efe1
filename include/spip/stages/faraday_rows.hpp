#pragma once
// Where the Faraday stage's rows come from: the ranks' kept planes of the channels they
// imaged, exchanged with one MPI all-to-all per row group, or another imager's cubes on
// disk, of which each rank reads its own rows.
#include <array>
#include <memory>
#include <optional>
#include <vector>

#include "spip/fits/spectral_cube.hpp"
#include "spip/parallel/decomposition.hpp"

namespace spip::parallel {
class MpiContext;
}

namespace spip::pipeline {

class PlaneStore;

// One row group of a rank's slab: each plane [channel][pixel of the group]; the restored
// (or given) Stokes I, Q, U, V (I or V empty where there is none), then, where the
// source has them, the residual Q and U. `outside`: pixels not measured (below the
// primary beam's limit, or blank in a channel that counts), empty where all are.
struct RowBatch {
  int first_row = 0, rows = 0;
  std::vector<std::vector<float>> planes;
  std::vector<bool> outside;
  // With a primary beam: each channel's effective response at each pixel, [channel][pixel].
  std::vector<float> response;

  const std::vector<float>& image(int stokes) const { return planes[static_cast<std::size_t>(stokes)]; }
  // Of Stokes Q (1) or U (2).
  const std::vector<float>& residual(int stokes) const { return planes[static_cast<std::size_t>(3 + stokes)]; }
  bool has_residuals() const { return planes.size() > 4; }
};

class FaradayRows {
 public:
  virtual ~FaradayRows() = default;
  // Round `round` of this rank's slab of an image `ny` rows high, `group_rows` rows a
  // round: rows [first, first + rows) of FaradayStage::slab_rows. Collective where the
  // source exchanges: every rank takes part in every round.
  virtual RowBatch fetch(int round, int group_rows, const parallel::MpiContext& mpi) = 0;
  // Bytes this rank sent to others, and seconds spent gathering, exchanging and unpacking.
  virtual double mpi_bytes() const { return 0; }
  virtual double exchange_seconds() const { return 0; }
};

// The kept restored I, Q, U, V (those of `stokes`; the others empty) and with
// `residuals` the residual Q, U planes of every rank's channel block (`blocks`, in rank
// order) of `channels` channels of nx x ny.
std::unique_ptr<FaradayRows> kept_rows(const PlaneStore& kept, std::vector<parallel::ChannelBlock> blocks,
                                       bool residuals, int nx, int ny, int channels,
                                       std::array<bool, 4> stokes = {true, true, true, true});

// Another imager's cubes, on one grid and one frequency axis (planning checked them).
std::unique_ptr<FaradayRows> cube_rows(const fits::StokesCubes& cubes);

}  // namespace spip::pipeline
