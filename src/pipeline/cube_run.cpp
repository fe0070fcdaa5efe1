#include "cube_run.hpp"

#include "gather_records.hpp"

#include <cmath>

#include "spip/common/stopwatch.hpp"
#include "spip/deconv/clean.hpp"
#include "spip/job/log.hpp"
#include "spip/job/qa.hpp"
#include "spip/job/stop_request.hpp"
#include "spip/job/text_file.hpp"
#include "spip/parallel/mpi_context.hpp"
#include "spip/planning/planning.hpp"
#include "spip/stages/faraday_stage.hpp"

namespace spip::pipeline {
namespace {

// The MAD sigma of a plane's measured pixels; NaN where none is measured.
double plane_sigma(const std::vector<float>& plane) {
  std::vector<float> measured;
  for (float value : plane)
    if (std::isfinite(value)) measured.push_back(value);
  return measured.empty() ? NAN : deconv::mad_sigma(measured.data(), measured.size());
}

// Each channel of this rank's block: its polarised noise, the mean of its Q and U
// planes' MAD sigmas, or input.cube_noise's; -1 where Q or U is blank (NaN) throughout,
// which gives the channel no weight. Every plane is read once, a channel at a time.
std::vector<double> channel_noise(const CubePlan& plan, int rank, std::vector<ChannelQa>& records, const Log& log) {
  const parallel::ChannelBlock block = plan.blocks[static_cast<std::size_t>(rank)];
  std::vector<double> noise;
  int blank = 0;
  for (int c = block.begin; c < block.end; ++c) {
    const double q = plane_sigma(fits::read_cube_plane(*plan.cubes.q, c));
    const double u = plane_sigma(fits::read_cube_plane(*plan.cubes.u, c));
    const bool measured = std::isfinite(q) && std::isfinite(u);
    noise.push_back(!measured ? -1.0 : plan.noise.empty() ? 0.5 * (q + u) : plan.noise[static_cast<std::size_t>(c)]);
    ChannelQa qa;
    qa.channel = c;
    qa.freq_hz = plan.freq_hz[static_cast<std::size_t>(c)];
    qa.rank = rank;
    qa.blank = measured ? "" : "Q or U blank (NaN) throughout";
    qa.residual_sigma_jy = measured ? 0.5 * (q + u) : NAN;
    records.push_back(qa);
    blank += measured ? 0 : 1;
  }
  log.info("channels [" + std::to_string(block.begin) + ", " + std::to_string(block.end) + ") measured" +
           (blank > 0 ? ": " + std::to_string(blank) + " blank in Q or U, weighted 0" : std::string()));
  return noise;
}

}  // namespace

CommittedProducts run_on_cubes(const Config& config, const CubePlan& plan, const parallel::MpiContext& mpi,
                               const Log& log, StopRequest& stop) {
  const Stopwatch total;
  log.root(plan.memory.describe() + " (rank 0)");
  log.info("RM synthesis and RM-CLEAN on the " + plan.backend + " backend");
  std::vector<ChannelQa> records;
  RankQa rank_qa;
  rank_qa.rank = mpi.rank();
  rank_qa.channel_begin = plan.blocks[static_cast<std::size_t>(mpi.rank())].begin;
  rank_qa.channel_end = plan.blocks[static_cast<std::size_t>(mpi.rank())].end;
  const Stopwatch reading;
  const std::vector<double> noise = channel_noise(plan, mpi.rank(), records, log);
  rank_qa.read_s = reading.seconds();
  stop.leave_if_requested("nothing is written yet");

  const Stopwatch watch;
  FaradayStage faraday(config, plan.products, plan.base, plan.freq_hz, plan.memory.faraday_group, plan.gpu_device,
                       plan.gpu_share_bytes, cube_rows(plan.cubes), std::nullopt, beam::Pointings{});
  CommittedProducts products;
  products.paths = faraday.finish(noise, mpi, log, stop);
  RunQa run;
  run.ranks = mpi.size();
  run.channels = static_cast<int>(plan.freq_hz.size());
  run.faraday_depths = faraday.depths();
  run.image_pixels = static_cast<long long>(plan.base.nx) * plan.base.ny;
  run.faraday_s = watch.seconds();
  log.root("Faraday moments, RM synthesis and RM-CLEAN in " + fixed(run.faraday_s, 2) + " s; " +
           fixed(fits::spectral_cube_bytes_read() / 1e6, 1) + " MB of the cubes read by rank 0");
  const std::vector<ChannelQa> channels = gather_records(records, mpi);
  const std::vector<RankQa> ranks = gather_records(std::vector<RankQa>{rank_qa}, mpi);
  if (mpi.is_root()) {
    run.total_s = total.seconds();
    const fits::Beam beam = plan.base.beam.value_or(fits::Beam{});
    write_text_atomically(plan.products.qa(),
                          qa_json_text(run, {beam.major_rad, beam.minor_rad, beam.pa_rad}, {}, channels, ranks));
    products.paths.push_back(plan.products.qa());
  }
  log.root("done in " + fixed(total.seconds(), 3) + " s");
  return products;
}

}  // namespace spip::pipeline
