#include "spip/stages/faraday_rows.hpp"

#include <algorithm>
#include <array>
#include <numeric>
#include <tuple>
#include <utility>

#include "spip/common/stopwatch.hpp"
#include "spip/parallel/mpi_context.hpp"
#include "spip/stages/faraday_stage.hpp"
#include "spip/stages/plane_store.hpp"

namespace spip::pipeline {
namespace {

// Rows [first, first + rows) of round `round` in `rank`'s slab.
std::pair<int, int> group_of(int rank, int ranks, int ny, int round, int group_rows) {
  const auto [y0, y1] = FaradayStage::slab_rows(rank, ranks, ny);
  const int first = std::min(y1, y0 + round * group_rows);
  return {first, std::min(y1, first + group_rows) - first};
}

class KeptRows final : public FaradayRows {
 public:
  KeptRows(const PlaneStore& kept, std::vector<parallel::ChannelBlock> blocks, bool residuals, int nx, int ny,
           int channels, std::array<bool, 4> stokes)
      : kept_(kept), blocks_(std::move(blocks)), nx_(nx), ny_(ny), channels_(channels), batch_planes_(residuals ? 6 : 4) {
    for (int s = 0; s < 4; ++s)
      if (stokes[static_cast<std::size_t>(s)]) carried_.push_back({kept_image + s, static_cast<std::size_t>(s)});
    if (residuals)
      for (int s : {1, 2}) carried_.push_back({kept_residual + s, static_cast<std::size_t>(3 + s)});
  }

  // Every rank sends each other slab owner that owner's rows of its kept planes, for each
  // of its channels, and receives its own group's rows of every other rank's channels. A
  // rank past its slab's end receives nothing but still sends.
  RowBatch fetch(int round, int group_rows, const parallel::MpiContext& mpi) override {
    const Stopwatch watch;
    const int ranks = mpi.size(), me = mpi.rank();
    const std::size_t quantities = carried_.size(), nx = static_cast<std::size_t>(nx_);
    const parallel::ChannelBlock& mine = blocks_[static_cast<std::size_t>(me)];
    // Rows for the other ranks go through MPI; this rank's own rows go straight from its
    // kept planes into the group.
    std::vector<std::size_t> send_rows(static_cast<std::size_t>(ranks)), receive_rows(static_cast<std::size_t>(ranks));
    for (int d = 0; d < ranks; ++d)
      if (d != me)
        send_rows[static_cast<std::size_t>(d)] = static_cast<std::size_t>(mine.size()) * quantities *
                                                 static_cast<std::size_t>(group_of(d, ranks, ny_, round, group_rows).second);
    std::vector<float> send(std::accumulate(send_rows.begin(), send_rows.end(), std::size_t{0}) * nx);
    float* to_send = send.data();
    for (int d = 0; d < ranks; ++d) {
      if (d == me) continue;
      const auto [first, rows] = group_of(d, ranks, ny_, round, group_rows);
      const std::size_t count = static_cast<std::size_t>(rows) * nx;
      for (int c = 0; c < mine.size(); ++c)
        for (const Carried& carried : carried_) {
          kept_.read(c, carried.slot, static_cast<std::size_t>(first) * nx, count, to_send);
          to_send += count;
        }
    }
    RowBatch group;
    std::tie(group.first_row, group.rows) = group_of(me, ranks, ny_, round, group_rows);
    for (int s = 0; s < ranks; ++s)
      if (s != me)
        receive_rows[static_cast<std::size_t>(s)] =
            static_cast<std::size_t>(blocks_[static_cast<std::size_t>(s)].size()) * quantities * group.rows;
    const std::vector<float> received = mpi.all_to_all(send, send_rows, receive_rows, nx);
    mpi_bytes_ += 4.0 * static_cast<double>(send.size());
    const std::size_t pixels = static_cast<std::size_t>(group.rows) * nx;
    group.planes.assign(batch_planes_, std::vector<float>());
    for (const Carried& carried : carried_)
      group.planes[carried.plane].resize(static_cast<std::size_t>(channels_) * pixels);
    const float* from = received.data();
    for (int s = 0; s < ranks; ++s) {
      const parallel::ChannelBlock& block = blocks_[static_cast<std::size_t>(s)];
      for (int c = block.begin; c < block.end; ++c)
        for (const Carried& carried : carried_) {
          float* to = group.planes[carried.plane].data() + static_cast<std::size_t>(c) * pixels;
          if (s == me) {
            kept_.read(c - block.begin, carried.slot, static_cast<std::size_t>(group.first_row) * nx, pixels, to);
          } else {
            std::copy_n(from, pixels, to);
            from += pixels;
          }
        }
    }
    exchange_s_ += watch.seconds();
    return group;
  }

  double mpi_bytes() const override { return mpi_bytes_; }
  double exchange_seconds() const override { return exchange_s_; }

 private:
  const PlaneStore& kept_;
  std::vector<parallel::ChannelBlock> blocks_;
  int nx_, ny_, channels_;
  // The kept planes exchanged, each with its place in RowBatch::planes (of
  // batch_planes_; the Stokes not carried stay empty there).
  struct Carried {
    int slot;
    std::size_t plane;
  };
  std::vector<Carried> carried_;
  std::size_t batch_planes_;
  double mpi_bytes_ = 0, exchange_s_ = 0;
};

// Each rank reads its own rows of the cubes: nothing crosses the network.
class CubeRows final : public FaradayRows {
 public:
  explicit CubeRows(const fits::StokesCubes& cubes) : cubes_(cubes) {}

  RowBatch fetch(int round, int group_rows, const parallel::MpiContext& mpi) override {
    RowBatch group;
    std::tie(group.first_row, group.rows) = group_of(mpi.rank(), mpi.size(), cubes_.q->grid.ny, round, group_rows);
    if (group.rows == 0) return group;
    for (const std::optional<fits::SpectralCube>* cube : {&cubes_.i, &cubes_.q, &cubes_.u, &cubes_.v})
      group.planes.push_back(*cube ? fits::read_cube_rows(**cube, group.first_row, group.rows) : std::vector<float>());
    return group;
  }

 private:
  const fits::StokesCubes& cubes_;
};

}  // namespace

std::unique_ptr<FaradayRows> kept_rows(const PlaneStore& kept, std::vector<parallel::ChannelBlock> blocks,
                                       bool residuals, int nx, int ny, int channels, std::array<bool, 4> stokes) {
  return std::make_unique<KeptRows>(kept, std::move(blocks), residuals, nx, ny, channels, stokes);
}

std::unique_ptr<FaradayRows> cube_rows(const fits::StokesCubes& cubes) { return std::make_unique<CubeRows>(cubes); }

}  // namespace spip::pipeline
