#include "cube_run.hpp"

#include "gather_records.hpp"

#include <algorithm>
#include <cmath>

#include "spip/common/stopwatch.hpp"
#include "spip/deconv/clean.hpp"
#include "spip/imaging/beam.hpp"
#include "spip/job/log.hpp"
#include "spip/job/qa.hpp"
#include "spip/job/stop_request.hpp"
#include "spip/job/text_file.hpp"
#include "spip/parallel/mpi_context.hpp"
#include "spip/planning/planning.hpp"
#include "spip/stages/faraday_rows.hpp"
#include "spip/stages/faraday_stage.hpp"
#include "spip/stages/plane_store.hpp"

namespace spip::pipeline {
namespace {

// The MAD sigma of a plane's measured pixels; NaN where none is measured.
double plane_sigma(const float* plane, std::size_t pixels) {
  std::vector<float> measured;
  for (std::size_t i = 0; i < pixels; ++i)
    if (std::isfinite(plane[i])) measured.push_back(plane[i]);
  return measured.empty() ? NAN : deconv::mad_sigma(measured.data(), measured.size());
}

double plane_sigma(const std::vector<float>& plane) { return plane_sigma(plane.data(), plane.size()); }

// Channel c's planes of every given cube, [stokes][y][x] in StokesCubes::given() order, each
// convolved from its own beam to the products' (CubePlan::smoothing_grid). Where the
// Q or U cube gives the channel no beam (a zero one in its BEAMS table) the channel is
// blank: empty, with the reason; where I or V does, that plane alone is blank (NaN).
std::vector<float> convolved_channel(const CubePlan& plan, int c, std::string& blank) {
  const fits::ImageHeader& grid = plan.base;
  const imaging::Beam common{grid.beam->major_rad, grid.beam->minor_rad, grid.beam->pa_rad};
  const std::size_t pixels = static_cast<std::size_t>(grid.nx) * grid.ny;
  std::vector<float> planes;
  std::vector<std::optional<imaging::Beam>> beams;
  planes.reserve(plan.cubes.given().size() * pixels);
  for (const auto& [stokes, cube] : plan.cubes.given()) {
    const std::optional<fits::Beam> beam = cube->beam_of(c);
    if (!beam && (stokes == fits::Stokes::Q || stokes == fits::Stokes::U)) {
      blank = "a zero beam in " + cube->path + "'s BEAMS table";
      return {};
    }
    if (beam) {
      const std::vector<float> plane = fits::read_cube_plane(*cube, c);
      planes.insert(planes.end(), plane.begin(), plane.end());
      beams.emplace_back(imaging::Beam{beam->major_rad, beam->minor_rad, beam->pa_rad});
    } else {
      planes.resize(planes.size() + pixels, NAN);
      beams.emplace_back();
    }
  }
  // Planes of one beam (usually all of a channel's) in one call: one kernel transform,
  // and two planes to each FFT.
  for (std::size_t first = 0; first < beams.size();) {
    std::size_t end = first + 1;
    while (end < beams.size() && beams[first] && beams[end] && imaging::alike(*beams[first], *beams[end])) ++end;
    if (beams[first])
      imaging::convolve_to_beam(planes.data() + first * pixels, static_cast<int>(end - first), grid.nx, grid.ny,
                                grid.cell_rad, *beams[first], common, plan.smoothing_grid);
    first = end;
  }
  return planes;
}

// Each channel of this rank's block: its polarised noise, the mean of its Q and U
// planes' MAD sigmas, or input.cube_noise's; -1 where Q or U is blank (NaN) throughout,
// which gives the channel no weight. Every plane is read once, a channel at a time.
// With `convolved`, every Stokes's plane is first convolved to the products' beam and
// kept there for the Faraday stage's exchange of rows.
std::vector<double> channel_noise(const CubePlan& plan, int rank, PlaneStore* convolved, std::vector<ChannelQa>& records,
                                  const Log& log) {
  const parallel::ChannelBlock block = plan.blocks[static_cast<std::size_t>(rank)];
  const std::size_t pixels = static_cast<std::size_t>(plan.base.nx) * plan.base.ny;
  std::vector<double> noise;
  int blank = 0;
  for (int c = block.begin; c < block.end; ++c) {
    std::string why;
    double q = NAN, u = NAN;
    if (convolved) {
      const std::vector<float> planes = convolved_channel(plan, c, why);
      int k = 0;
      for (const auto& [stokes, cube] : plan.cubes.given()) {
        const float* plane = planes.empty() ? nullptr : planes.data() + k++ * pixels;
        if (!plane) continue;
        convolved->put(c - block.begin, kept_image + static_cast<int>(stokes) - 1, plane);  // I in slot 0
        if (stokes == fits::Stokes::Q) q = plane_sigma(plane, pixels);
        if (stokes == fits::Stokes::U) u = plane_sigma(plane, pixels);
      }
    } else {
      q = plane_sigma(fits::read_cube_plane(*plan.cubes.q, c));
      u = plane_sigma(fits::read_cube_plane(*plan.cubes.u, c));
    }
    const bool measured = std::isfinite(q) && std::isfinite(u);
    if (!measured && why.empty()) why = "Q or U blank (NaN) throughout";
    noise.push_back(!measured ? -1.0 : plan.noise.empty() ? 0.5 * (q + u) : plan.noise[static_cast<std::size_t>(c)]);
    ChannelQa qa;
    qa.channel = c;
    qa.freq_hz = qa.data_freq_hz = plan.freq_hz[static_cast<std::size_t>(c)];
    qa.rank = rank;
    qa.blank = measured ? "" : why;
    qa.residual_sigma_jy = measured ? 0.5 * (q + u) : NAN;
    records.push_back(qa);
    blank += measured ? 0 : 1;
  }
  log.info("channels [" + std::to_string(block.begin) + ", " + std::to_string(block.end) + ") " +
           (convolved ? "convolved to the products' beam and measured" : "measured") +
           (blank > 0 ? ": " + std::to_string(blank) + " blank, weighted 0" : std::string()));
  return noise;
}

}  // namespace

CommittedProducts run_on_cubes(const Config& config, const CubePlan& plan, const parallel::MpiContext& mpi,
                               const Log& log, StopRequest& stop) {
  log.root(plan.memory.describe() + " (rank 0)");
  log.info("RM synthesis and RM-CLEAN on the " + plan.backend + " backend");
  std::vector<ChannelQa> records;
  RankQa rank_qa;
  rank_qa.rank = mpi.rank();
  rank_qa.channel_begin = plan.blocks[static_cast<std::size_t>(mpi.rank())].begin;
  rank_qa.channel_end = plan.blocks[static_cast<std::size_t>(mpi.rank())].end;
  const Stopwatch reading;
  // Convolved planes go to every slab's owner through the exchange the imaged channels
  // take; planes as they are, each rank reads its own rows of.
  std::unique_ptr<PlaneStore> convolved;
  if (plan.smoothing_grid > 0)
    convolved = std::make_unique<PlaneStore>(rank_qa.channel_end - rank_qa.channel_begin, 4,
                                             static_cast<std::size_t>(plan.base.nx) * plan.base.ny,
                                             plan.memory.kept_spilled ? scratch_folder(config.parallel) : "");
  const std::vector<double> noise = channel_noise(plan, mpi.rank(), convolved.get(), records, log);
  rank_qa.read_s = reading.seconds();
  // On cubes the Faraday stage is the whole job: without two channels of data there is
  // nothing to synthesise, and moments alone are not what was asked for. Every rank
  // knows the count, so every rank stops, and rank 0 says why.
  const std::int64_t usable = mpi.sum(std::count_if(noise.begin(), noise.end(), [](double n) { return n >= 0; }));
  if (usable < 2)
    throw JobFailure("input.cube_q and input.cube_u have " + std::to_string(usable) + " channel(s) of data of " +
                         std::to_string(plan.freq_hz.size()) +
                         " (the others blank throughout): RM synthesis needs at least two",
                     __FILE__, __LINE__, ExitCode::bad_input);
  stop.leave_if_requested("nothing is written yet");

  const Stopwatch watch;
  std::unique_ptr<FaradayRows> rows = cube_rows(plan.cubes);
  if (convolved)
    rows = kept_rows(*convolved, plan.blocks, false, plan.base.nx, plan.base.ny, static_cast<int>(plan.freq_hz.size()),
                     {plan.cubes.i.has_value(), true, true, plan.cubes.v.has_value()});
  FaradayStage faraday(config, plan.products, plan.base, plan.freq_hz, plan.freq_hz, plan.memory.faraday_group,
                       plan.gpu_device,
                       plan.gpu_share_bytes, std::move(rows), std::nullopt, beam::Pointings{}, {});
  CommittedProducts products;
  products.paths = faraday.finish(noise, mpi, log, stop);
  RunQa run;
  run.ranks = mpi.size();
  run.channels = static_cast<int>(plan.freq_hz.size());
  run.faraday_depths = faraday.depths();
  run.image_pixels = static_cast<long long>(plan.base.nx) * plan.base.ny;
  run.faraday_s = watch.seconds();
  log.root(faraday.done_text(run.faraday_s) + "; " +
           fixed(fits::spectral_cube_bytes_read() / 1e6, 1) + " MB of the cubes read by rank 0");
  const std::vector<ChannelQa> channels = gather_records(records, mpi);
  const std::vector<RankQa> ranks = gather_records(std::vector<RankQa>{rank_qa}, mpi);
  if (mpi.is_root()) {
    run.total_s = log.elapsed_s();  // planning included, as in "done in"
    const fits::Beam beam = plan.base.beam.value_or(fits::Beam{});
    write_text_atomically(plan.products.qa(),
                          qa_json_text(run, {beam.major_rad, beam.minor_rad, beam.pa_rad}, {}, channels, ranks));
    products.paths.push_back(plan.products.qa());
  }
  log.root("done in " + fixed(log.elapsed_s(), 3) + " s");  // planning included
  return products;
}

}  // namespace spip::pipeline
