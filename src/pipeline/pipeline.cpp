#include "spip/pipeline/pipeline.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <future>
#include <limits>
#include <numbers>
#include <optional>
#include <sstream>

#include "channel_gather.hpp"
#include "channel_imaging.hpp"
#include "faraday_stage.hpp"
#include "planning.hpp"
#include "products.hpp"
#include "progress.hpp"
#include "qa.hpp"
#include "stop_request.hpp"
#include "spip/common/constants.hpp"
#include "spip/deconv/clean.hpp"
#include "spip/error.hpp"
#include "spip/imaging/weighting.hpp"
#include "spip/ms/ionosphere.hpp"
#include "spip/ms/ms_reader.hpp"
#include "spip/parallel/decomposition.hpp"
#include "spip/parallel/mpi_context.hpp"
#include "spip/pipeline/log.hpp"

namespace spip::pipeline {
namespace {

namespace fs = std::filesystem;

// ---- channel data ------------------------------------------------------------

// The rank's channels, read in blocks of channels that fit the memory budget. While a
// block is imaged, the next one is read on a reader thread (double buffering: at most
// two blocks in memory). Only one thread at a time uses the readers.
class ChannelSource {
 public:
  ChannelSource(const Plan& plan, parallel::ChannelBlock mine)
      : plan_(plan), mine_(mine), block_channels_(plan.memory.block_channels) {}
  ~ChannelSource() {
    if (next_.valid()) next_.wait();
  }

  // Visibilities of one channel (index into the imaged range) from every MS.
  const std::vector<ms::VisBlock>& blocks_for(int channel, double& wait_s) {
    const int absolute = plan_.chan_begin + channel;
    if (blocks_.empty() || absolute < blocks_.front().chan_begin || absolute >= blocks_.front().chan_end) {
      const Stopwatch watch;
      if (next_.valid() && next_begin_ == absolute) {
        blocks_ = next_.get();
      } else {
        if (next_.valid()) next_.wait();
        blocks_ = read_block(absolute);
      }
      wait_s += watch.seconds();
      const int following = blocks_.front().chan_end;
      if (following < plan_.chan_begin + mine_.end) {
        next_begin_ = following;
        next_ = std::async(std::launch::async, [this, following] { return read_block(following); });
      }
    }
    return blocks_;
  }

 private:
  std::vector<ms::VisBlock> read_block(int absolute) const {
    const int end = std::min(plan_.chan_begin + mine_.end, absolute + block_channels_);
    std::vector<ms::VisBlock> blocks;
    for (const ms::MsReader& reader : plan_.readers) {
      blocks.push_back(reader.read(absolute, end));
      if (plan_.ionosphere) ms::derotate(blocks.back(), *plan_.ionosphere);
    }
    return blocks;
  }

  const Plan& plan_;
  parallel::ChannelBlock mine_;
  int block_channels_ = 1;
  std::vector<ms::VisBlock> blocks_;
  std::future<std::vector<ms::VisBlock>> next_;
  int next_begin_ = -1;
};

// Feeds the rank's channels to the imager one ahead: while channel c is imaged, the
// next one is gathered from its block and staged by a helper thread (on the CPU with
// its imaging weights; on the GPU uploaded on the upload stream with its natural
// weights, from which the device makes the imaging weights). Only that thread uses the ChannelSource.
class ChannelFeed {
 public:
  ChannelFeed(ChannelSource& source, ChannelImaging& imaging, const Plan& plan, const RowCoordinates& coordinates,
              std::vector<int> channels)
      : source_(source), imaging_(imaging), plan_(plan), coordinates_(coordinates), channels_(std::move(channels)),
        // The CPU backend's cores image the current channel meanwhile; a GPU rank's are
        // free. Asked here: the helper thread does not see the run's OpenMP setting.
        copy_threads_(plan.gpu_device >= 0 ? omp_get_max_threads() : 1) {
    if (!channels_.empty()) pending_ = std::async(std::launch::async, [this] { return prepare(channels_[0]); });
  }
  ~ChannelFeed() {
    if (pending_.valid()) pending_.wait();
  }

  // Makes channel c, the next of `channels`, current in the imager.
  ChannelStats advance(int c) {
    if (next_ >= channels_.size() || channels_[next_] != c)
      SPIP_THROW(Error, "channel feed out of order: channel " + std::to_string(c) + " asked for, " +
                            (next_ < channels_.size() ? std::to_string(channels_[next_]) : std::string("none")) +
                            " staged");
    const Stopwatch wait;
    ChannelStats stats = pending_.get();
    imaging_.next();
    stats.wait_s = wait.seconds();
    if (++next_ < channels_.size())
      pending_ = std::async(std::launch::async, [this, following = channels_[next_]] { return prepare(following); });
    return stats;
  }

 private:
  ChannelStats prepare(int c) {
    double read_wait = 0;
    const std::vector<ms::VisBlock>& blocks = source_.blocks_for(c, read_wait);
    const ChannelStats stats = gather_channel(blocks, plan_.chan_begin + c, coordinates_, plan_.geometry,
                                              imaging_.host_weighting(), imaging_.stage_area(), copy_threads_);
    imaging_.stage(stats.freq_hz);
    return stats;
  }

  ChannelSource& source_;
  ChannelImaging& imaging_;
  const Plan& plan_;
  const RowCoordinates& coordinates_;
  std::vector<int> channels_;
  int copy_threads_;
  std::size_t next_ = 0;
  std::future<ChannelStats> pending_;
};

// Finishes channels on a helper thread one channel behind: while channel k+1 is imaged,
// channel k's planes and then its progress marker are written. Tasks
// run one at a time in submission order, so a marker always follows its planes; only
// this thread writes the cubes meanwhile.
class ChannelWriter {
 public:
  ChannelWriter() = default;
  ChannelWriter(const ChannelWriter&) = delete;
  ChannelWriter& operator=(const ChannelWriter&) = delete;
  // Reached with a task pending only while another error unwinds the stack; that
  // error is the one reported, so the task's own is dropped.
  ~ChannelWriter() {
    if (pending_.valid()) pending_.wait();
  }

  template <class Task>
  void submit(Task task) {
    if (pending_.valid()) {
      const Stopwatch wait;
      pending_.get();
      waited_s_ += wait.seconds();
    }
    pending_ = std::async(std::launch::async, [this, task = std::move(task)]() mutable {
      const Stopwatch watch;
      task();
      busy_s_ += watch.seconds();
    });
  }
  // Waits for the last task and rethrows its error; the imaging has no more channels,
  // so this wait is not counted as time the imaging waited.
  void finish() {
    if (pending_.valid()) pending_.get();
  }
  // Time spent writing, and the part of it the imaging waited for.
  double busy_s() const { return busy_s_; }
  double waited_s() const { return waited_s_; }

 private:
  std::future<void> pending_;
  double busy_s_ = 0, waited_s_ = 0;
};

// What the progress markers must match besides the settings: every input as it is now.
std::string fingerprint_of(const Plan& plan) {
  std::vector<std::string> paths;
  std::vector<std::int64_t> rows;
  for (const ms::MsReader& reader : plan.readers) {
    paths.push_back(reader.info().path);
    rows.push_back(reader.info().num_rows);
  }
  return input_fingerprint(paths, rows);
}

// Each imaged channel's restoring beam, from the QA records of every rank (a zero beam
// where a channel was blanked), for cubes restored with image.common_beam = false.
std::vector<fits::Beam> channel_beams(const std::vector<ChannelQa>& records, const Plan& plan) {
  std::vector<fits::Beam> beams(static_cast<std::size_t>(plan.chan_end - plan.chan_begin));
  for (const ChannelQa& qa : records)
    beams.at(static_cast<std::size_t>(qa.channel - plan.chan_begin)) =
        fits::Beam{qa.beam.major_rad, qa.beam.minor_rad, qa.beam.pa_rad};
  return beams;
}

// Every rank's records on rank 0, in rank order (other ranks get {}).
template <typename Record>
std::vector<Record> gather_records(const std::vector<Record>& mine, const parallel::MpiContext& mpi) {
  std::vector<Record> all;
  for (const std::string& text : mpi.gather_text_to_root(nlohmann::ordered_json(mine).dump())) {
    const std::vector<Record> theirs = nlohmann::ordered_json::parse(text).get<std::vector<Record>>();
    all.insert(all.end(), theirs.begin(), theirs.end());
  }
  return all;
}

// The beam every channel is restored to (RM synthesis needs one resolution): image.beam
// where given; else the largest, by area, of the beams fitted to the channels of all
// ranks. A theoretical beam that stood in for a fit that was not a beam counts only
// where no channel has a fitted one.
fits::Beam common_beam(const std::vector<imaging::RestoringBeam>& mine, const parallel::MpiContext& mpi) {
  std::vector<double> flat;
  for (const imaging::RestoringBeam& b : mine)
    flat.insert(flat.end(), {b.beam.major_rad, b.beam.minor_rad, b.beam.pa_rad,
                             b.origin == imaging::BeamOrigin::theoretical ? 0.0 : 1.0});
  const std::vector<double> all = mpi.gather_to_all(flat);
  fits::Beam largest;
  const auto area = [](const fits::Beam& b) { return b.major_rad * b.minor_rad; };
  bool measured = false;
  for (std::size_t k = 0; k + 3 < all.size(); k += 4) {
    const fits::Beam beam{all[k], all[k + 1], all[k + 2]};
    const bool fitted = all[k + 3] > 0;
    if ((fitted && !measured) || (fitted == measured && area(beam) > area(largest))) largest = beam;
    measured = measured || fitted;
  }
  return largest;
}

// image.beam, if the user chose one.
std::optional<imaging::Beam> chosen_beam(const ImageConfig& image) {
  if (!(image.beam_major_arcsec > 0)) return std::nullopt;
  return imaging::Beam{image.beam_major_arcsec / rad_to_arcsec, image.beam_minor_arcsec / rad_to_arcsec,
                       image.beam_pa_deg / rad_to_deg};
}

// Why a channel is restored with the theoretical beam, for its log line.
std::string theoretical_beam_reason(int channel, const std::optional<imaging::Beam>& fit, const imaging::Beam& theoretical) {
  const std::string restored = "; restored with the theoretical beam of the longest baseline, " +
                               fixed(theoretical.major_rad * rad_to_arcsec, 2) +
                               "\", which counts for the common beam only where no channel has a fitted one";
  if (!fit) return "channel " + std::to_string(channel) + ": no ellipse fits the PSF main lobe (a line?)" + restored;
  return "channel " + std::to_string(channel) + ": the beam fitted to the PSF, " + fixed(fit->major_rad * rad_to_arcsec, 2) +
         "\" x " + fixed(fit->minor_rad * rad_to_arcsec, 2) + "\", is not a beam (over " +
         fixed(imaging::max_beam_elongation, 0) + " times the theoretical beam, or wider than the image)" + restored;
}

// One line per rank: NaN or Inf in the data (correlator dropouts; some flaggers and
// calibrators write them) changes what is imaged, however few there are.
void warn_nonfinite(const std::vector<ChannelQa>& qa, const Log& log) {
  double samples = 0;
  int channels = 0;
  for (const ChannelQa& channel_qa : qa)
    if (channel_qa.nonfinite_samples > 0) {
      samples += channel_qa.nonfinite_samples;
      ++channels;
    }
  if (samples > 0)
    log.info("warning: " + fixed(samples, 0) + " correlation sample(s) in " + std::to_string(channels) +
             " channel(s) are NaN or Inf in their value or weight, and were treated as flagged "
             "(nonfinite_samples per channel in qa.json)");
}

double dynamic_range(double peak, double sigma) { return sigma > 0 ? peak / sigma : 0.0; }

// With CLEAN and a common beam: each of the rank's channels restored with the job's
// beam from the model and residual planes the imaging wrote, instead of imaging it
// again. A channel a killed run already restored keeps its planes and its peak. One
// thread reads and writes, so that CFITSIO need not be built thread-safe.
void restore_with_common_beam(const CubeSet& cubes, const Plan& plan, parallel::ChannelBlock mine,
                              const fits::Beam& beam, const std::vector<double>& noise, const ChannelProgress& progress,
                              std::vector<ChannelQa>& qa, StopRequest& stop, const Log& log) {
  const imaging::Beam restoring{beam.major_rad, beam.minor_rad, beam.pa_rad};
  const std::size_t pixels = plan.geometry.pixels();
  const Stopwatch watch;
  int restored_here = 0, done = 0;
  for (int c = mine.begin; c < mine.end; ++c, ++done) {
    const int absolute = plan.chan_begin + c;
    ChannelQa& channel_qa = qa[c - mine.begin];
    if (noise[c - mine.begin] < 0) continue;  // blanked: NaN planes
    double peak = 0;
    if (progress.restored(absolute)) {
      peak = progress.restored_peak(absolute);
    } else {
      if (stop.requested()) break;
      const std::vector<float> model = read_stokes_planes(cubes, "model", c);
      const std::vector<float> residual = read_stokes_planes(cubes, "residual", c);
      const std::vector<float> restored = deconv::restore_channel(model.data(), residual.data(), plan.geometry, restoring);
      peak = *std::max_element(restored.begin(), restored.begin() + pixels);
      write_restored(cubes, c, restored);
      progress.mark_restored(absolute, peak);
      ++restored_here;
    }
    channel_qa.restored_peak_i_jy = peak;
    channel_qa.dynamic_range = dynamic_range(peak, channel_qa.residual_sigma_jy);
  }
  stop.leave_if_requested(std::to_string(done) + " of this rank's " + std::to_string(mine.size()) +
                          " channels are restored with the common beam, each with its marker");
  log.info("restored " + std::to_string(restored_here) + " channels with the common beam from their model and residual "
           "planes in " + fixed(watch.seconds(), 2) + " s");
}

Products run_planned(const Config& config, Plan& plan, const parallel::MpiContext& mpi, const Log& log,
                     StopRequest& stop) {
  const Stopwatch total;
  const parallel::ChannelBlock mine = plan.blocks[static_cast<std::size_t>(mpi.rank())];
  if (mine.size() == 0)
    log.info("more ranks than channels: this rank has no channels and idles");
  else
    log.info("channels [" + std::to_string(plan.chan_begin + mine.begin) + ", " +
             std::to_string(plan.chan_begin + mine.end) + ") on " + plan.backend + " with " +
             std::to_string(omp_get_max_threads()) + " OpenMP thread(s)");

  // FFTW_MEASURE picks plans by timing them, and different plans round differently.
  // Rank 0 plans first and stores the wisdom the other ranks then load, so that every
  // rank, and a resumed run, transforms with the same plans (bit-identical products).
  const Stopwatch setup_watch;
  if (!mpi.is_root()) mpi.barrier();
  std::optional<ChannelImaging> imaging(std::in_place, plan.geometry, config.image, weighting_scheme(config),
                                        plan.gpu_device, plan.max_visibilities);
  if (config.clean.niter > 0) imaging::plan_restoring(plan.geometry);
  ChannelImaging& imager = *imaging;
  if (mpi.is_root()) mpi.barrier();
  const RowCoordinates coordinates(inputs_uvw_m(plan));
  imager.set_uvw(coordinates.uvw_m());
  RunQa times;
  times.setup_s = setup_watch.seconds();
  log.info("FFT plans and grid corrections for " + std::to_string(plan.geometry.grid_size) + "^2 grids in " +
           fixed(times.setup_s, 2) + " s");
  ChannelSource source(plan, mine);
  double read_s = 0;  // time the imaging waited for channel data

  // Channels a killed run completed, with what later stages need of them. Rank 0
  // decides for all, before it changes any file: ranks that each looked might see a
  // shared file system's attributes differently.
  const ChannelProgress progress(config.output.dir, config.output.prefix, to_ini(config),
                                 mpi.is_root() ? fingerprint_of(plan) : std::string());
  // Created before the job's restoring beam is known (every channel's PSF must be
  // fitted first): rank 0 writes it into the headers at the end.
  const CubeSet cubes = make_cube_set(config, plan);
  std::vector<std::string> partials;
  for (const std::string& path : cubes.paths()) partials.push_back(fits::CubeFile::partial_path(path));
  const ResumeDecision decision = mpi.is_root() ? progress.decide(partials) : ResumeDecision{};
  const bool resume = mpi.max(decision.resume ? 1.0 : 0.0) > 0;
  auto completed = [&](int c) { return resume && progress.done(plan.chan_begin + c); };
  if (resume)
    log.root("resuming from the progress markers of " + std::to_string(decision.channels_done) + " channel(s): " +
             decision.reason);
  else if (decision.channels_done > 0)
    log.root("not resuming from the progress markers of " + std::to_string(decision.channels_done) +
             " channel(s), because " + decision.reason + ": all " + std::to_string(plan.chan_end - plan.chan_begin) +
             " channels are imaged again");
  if (resume) {
    int done = 0;
    for (int c = mine.begin; c < mine.end; ++c) done += completed(c);
    log.info("resuming: " + std::to_string(done) + " of this rank's " + std::to_string(mine.size()) +
             " channels are complete");
  } else if (mpi.is_root()) {
    const Stopwatch create_watch;
    progress.start_fresh();
    create_cubes(cubes);
    times.create_s = create_watch.seconds();
    log.info("created " + std::to_string(cubes.paths().size()) + " cubes in " + fixed(times.create_s, 2) + " s");
  }
  mpi.barrier();

  // Each channel is read, staged and imaged once: PSF, dirty images, CLEAN. With CLEAN
  // and a common beam, the restoring waits for every channel's fitted beam (below);
  // otherwise each channel is restored here with its own.
  const bool restore_later = cubes.cleaned && config.image.common_beam;
  std::vector<ChannelQa> qa(static_cast<std::size_t>(mine.size()));
  std::vector<double> noise(static_cast<std::size_t>(mine.size()));  // polarised; < 0: blanked
  std::vector<imaging::RestoringBeam> beams;
  const std::optional<imaging::Beam> chosen = chosen_beam(config.image);
  const double taper_rad = weighting_scheme(config).taper_fwhm_rad;
  std::vector<int> todo;
  for (int c = mine.begin; c < mine.end; ++c) {
    if (!completed(c)) {
      todo.push_back(c);
      continue;
    }
    // Its planes are in the partial cubes; its numbers are in its marker.
    const auto marker = nlohmann::ordered_json::parse(progress.record(plan.chan_begin + c)).get<ChannelMarker>();
    qa[c - mine.begin] = marker.qa;
    noise[c - mine.begin] = marker.polarised_noise;
    if (marker.polarised_noise >= 0)
      beams.push_back({marker.qa.beam, marker.qa.beam_theoretical ? imaging::BeamOrigin::theoretical
                                       : chosen                   ? imaging::BeamOrigin::chosen
                                                                  : imaging::BeamOrigin::fitted});
  }
  const Stopwatch imaging_watch;
  std::string grid_summary = "no channel imaged here in this run";
  std::optional<ChannelFeed> feed(std::in_place, source, imager, plan, coordinates, todo);  // reads ahead
  ChannelWriter writer;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::size_t pixels = plan.geometry.pixels();
  int imaged = 0, blanked = 0;
  for (int c : todo) {
    if (stop.requested()) break;
    const ChannelStats data = feed->advance(c);
    read_s += data.wait_s;
    const Stopwatch channel_watch;
    ChannelQa& channel_qa = qa[c - mine.begin];
    if (!(imager.weight_sum(0) > 0)) {
      // Nothing to image (fully flagged, or no baseline on the grid): its planes stay
      // NaN in every cube and the Faraday stage gives it zero weight.
      log.info("channel " + std::to_string(plan.chan_begin + c) + " has no unflagged data on the grid; blanked");
      channel_qa = ChannelQa{};
      channel_qa.channel = plan.chan_begin + c;
      channel_qa.freq_hz = data.freq_hz;
      channel_qa.rank = mpi.rank();
      channel_qa.flagged_fraction = 1.0;
      channel_qa.nonfinite_samples = data.nonfinite_samples;
      channel_qa.search_noise_jy = channel_qa.clean_threshold_jy = nan;
      noise[c - mine.begin] = -1.0;
      const std::string record = nlohmann::ordered_json(ChannelMarker{channel_qa, -1.0}).dump();
      writer.submit([&, c, record] { progress.mark_done(plan.chan_begin + c, record); });
      ++blanked;
      continue;
    }
    deconv::ChannelImages images = imager.image(config.clean);
    grid_summary = imager.describe();
    // The longest baseline the weighting keeps: image.uv_max drops the longer ones.
    const double kept_uv = config.image.uv_max > 0 ? std::min(data.max_uv, config.image.uv_max) : data.max_uv;
    const imaging::RestoringBeam own =
        imaging::restoring_beam(images.fitted_beam, kept_uv, taper_rad, plan.geometry, chosen);
    const bool theoretical = own.origin == imaging::BeamOrigin::theoretical;
    if (theoretical) log.info(theoretical_beam_reason(plan.chan_begin + c, images.fitted_beam, own.beam));
    beams.push_back(own);
    std::vector<float> restored;
    if (!restore_later)
      restored = deconv::restore_channel(images.model.data(), images.residual.data(), plan.geometry, own.beam);
    const double peak_i = restored.empty() ? nan : *std::max_element(restored.begin(), restored.begin() + pixels);
    // Without CLEAN, or without a threshold to reach, there is nothing to report.
    const bool has_threshold = config.clean.niter > 0 && images.clean_threshold > 0;
    channel_qa = ChannelQa{plan.chan_begin + c,
                           data.freq_hz,
                           mpi.rank(),
                           data.visibilities,
                           data.samples > 0 ? 1.0 - data.visibilities / data.samples : 1.0,
                           data.nonfinite_samples,
                           data.weight_sum,
                           data.max_uv,
                           own.beam,
                           theoretical,
                           images.iterations,
                           images.major_cycles,
                           config.clean.auto_threshold > 0 ? images.search_noise : nan,
                           has_threshold ? images.clean_threshold : nan,
                           has_threshold ? std::optional<bool>(images.threshold_reached) : std::nullopt,
                           images.residual_sigma,
                           images.residual_peak,
                           peak_i,
                           dynamic_range(peak_i, images.residual_sigma),
                           data.wait_s,
                           channel_watch.seconds()};
    if (has_threshold && !images.threshold_reached)
      log.info("channel " + std::to_string(plan.chan_begin + c) + ": CLEAN stopped at " +
               (images.iterations >= config.clean.niter ? "clean.niter = " + std::to_string(config.clean.niter)
                                                        : "clean.max_major = " + std::to_string(config.clean.max_major)) +
               " before reaching its threshold of " + fixed(images.clean_threshold * 1e3, 3) + " mJy");
    ++imaged;
    if (mpi.is_root()) {
      const int handled = imaged + blanked;
      const double rate = handled / imaging_watch.seconds();
      log.info("channel " + std::to_string(plan.chan_begin + c) + ": " + std::to_string(images.iterations) +
               " iterations, " + std::to_string(images.major_cycles) + " major cycles, residual sigma " +
               fixed(images.residual_sigma * 1e3, 3) + " mJy; rank 0 " + std::to_string(handled) + "/" +
               std::to_string(todo.size()) + " (job: " + std::to_string(plan.chan_end - plan.chan_begin) +
               " channels), " + fixed(rate, 2) + " ch/s, ETA " + fixed((todo.size() - handled) / rate, 1) + " s");
    }
    writer.submit([&, c, channel_qa, images = std::move(images), restored = std::move(restored)] {
      write_channel(cubes, c, images.dirty, images.psf, images.model, images.residual);
      if (!restored.empty()) write_restored(cubes, c, restored);
      const double pol_noise = 0.5 * (deconv::mad_sigma(images.residual.data() + pixels, pixels) +
                                      deconv::mad_sigma(images.residual.data() + 2 * pixels, pixels));
      noise[c - mine.begin] = pol_noise;
      progress.mark_done(plan.chan_begin + c, nlohmann::ordered_json(ChannelMarker{channel_qa, pol_noise}).dump());
    });
  }
  feed.reset();
  writer.finish();
  stop.leave_if_requested(std::to_string(mine.size() - todo.size() + imaged + blanked) + " of this rank's " +
                          std::to_string(mine.size()) + " channels are imaged, each with its progress marker");
  const double image_s = imaging_watch.seconds() - read_s;
  log.info("waited " + fixed(read_s, 2) + " s for reads, imaging " + fixed(image_s, 2) + " s; " +
           std::to_string(imager.staged_channels()) + " channel(s) staged; writer thread " + fixed(writer.busy_s(), 2) +
           " s, of which the imaging waited " + fixed(writer.waited_s(), 2) + " s");
  if (const std::string transfers = imager.transfer_summary(); !transfers.empty()) log.info(transfers);
  warn_nonfinite(qa, log);
  // The GPU imager's buffers are freed before the Faraday stage sizes its own against
  // the device's free memory.
  imaging.reset();

  const fits::Beam beam = common_beam(beams, mpi);
  log.root("common restoring beam " + fixed(beam.major_rad * rad_to_arcsec, 2) + "\" x " +
           fixed(beam.minor_rad * rad_to_arcsec, 2) + "\", PA " + fixed(beam.pa_rad * 180 / std::numbers::pi, 1) +
           " deg; grid " + std::to_string(plan.geometry.grid_size) + "^2, " + grid_summary +
           " (last channel of rank 0)");
  const Stopwatch restore_watch;
  if (restore_later) restore_with_common_beam(cubes, plan, mine, beam, noise, progress, qa, stop, log);
  const double restore_s = restore_watch.seconds();

  const ms::MsInfo& info = plan.readers.front().info();
  fits::ImageHeader faraday_base = cubes.base;
  faraday_base.beam = beam;
  // Without Q and U (an MS with only parallel hands) there is nothing to synthesise.
  std::optional<FaradayStage> faraday;
  if (plan.polarised())
    faraday.emplace(config, faraday_base,
                    std::vector<double>(info.freq_hz.begin() + plan.chan_begin, info.freq_hz.begin() + plan.chan_end),
                    FaradayStage::ChannelCubes{
                        {cubes.path("image", "I"), cubes.path("image", "Q"), cubes.path("image", "U"),
                         cubes.path("image", "V")},
                        cubes.cleaned ? std::array{cubes.path("residual", "Q"), cubes.path("residual", "U")}
                                      : std::array<std::string, 2>{}},
                    plan.memory.faraday_group, plan.gpu_device, plan.gpu_share_bytes);

  const std::vector<ChannelQa> all_records = gather_records(qa, mpi);
  const std::vector<RankQa> rank_times = gather_records(
      std::vector<RankQa>{{mpi.rank(), plan.chan_begin + mine.begin, plan.chan_begin + mine.end, read_s, image_s,
                           restore_s, static_cast<int>(todo.size())}},
      mpi);
  mpi.barrier();
  Products products;
  std::vector<std::string> faraday_products;
  if (faraday) {
    const Stopwatch faraday_watch;
    faraday_products = faraday->finish(noise, mpi, log, stop);
    times.faraday_s = faraday_watch.seconds();
    times.faraday_depths = faraday->depths();
    log.root("Faraday moments, RM synthesis and RM-CLEAN in " + fixed(times.faraday_s, 2) + " s");
  }
  // The channel cubes stay partial until the Faraday stage is done, so that a run
  // killed there resumes from its channels instead of imaging them again.
  if (mpi.is_root()) {
    write_restoring_beam(cubes, beam);
    if (!config.image.common_beam) write_channel_beams(cubes, channel_beams(all_records, plan));
    commit_cubes(cubes);
    progress.remove();
    products.paths = cubes.paths();
    products.paths.insert(products.paths.end(), faraday_products.begin(), faraday_products.end());
    const std::string qa_path = (fs::path(config.output.dir) / (config.output.prefix + "-qa.json")).string();
    times.ranks = static_cast<int>(plan.blocks.size());
    times.channels = plan.chan_end - plan.chan_begin;
    times.image_pixels = static_cast<long long>(plan.geometry.pixels());
    times.grid_size = plan.geometry.grid_size;
    times.total_s = total.seconds();
    write_text_atomically(qa_path, qa_json_text(times, {beam.major_rad, beam.minor_rad, beam.pa_rad}, all_records,
                                                rank_times));
    products.paths.push_back(qa_path);
  }
  log.root("done in " + fixed(total.seconds(), 3) + " s");
  return products;
}

}  // namespace

Products run(const Config& config, const parallel::MpiContext& mpi, const Log& log, bool break_claim) {
  if (config.parallel.threads > 0) omp_set_num_threads(config.parallel.threads);
  // From the start: a signal while planning stops the run at its first channel.
  StopRequest stop(mpi, log);
  Plan plan = make_plan(config, mpi, log, break_claim);
  try {
    return run_planned(config, plan, mpi, log, stop);
  } catch (const Interrupted&) {
    throw;  // every rank throws it together
  } catch (const Error& e) {
    throw RankFailure(e);
  } catch (const std::exception& e) {
    throw RankFailure(Error(e.what(), __FILE__, __LINE__));
  }
}

}  // namespace spip::pipeline
