#include "spip/pipeline/pipeline.hpp"

#include "cube_run.hpp"
#include "gather_records.hpp"

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <limits>
#include <optional>
#include <sstream>

#include "spip/common/constants.hpp"
#include "spip/common/freed_memory.hpp"
#include "spip/common/number_text.hpp"
#include "spip/deconv/clean.hpp"
#include "spip/error.hpp"
#include "spip/imaging/fft.hpp"
#include "spip/imaging/weighting.hpp"
#include "spip/job/log.hpp"
#include "spip/job/progress.hpp"
#include "spip/job/qa.hpp"
#include "spip/job/stop_request.hpp"
#include "spip/job/text_file.hpp"
#include "spip/ms/ms_reader.hpp"
#include "spip/parallel/decomposition.hpp"
#include "spip/parallel/mpi_context.hpp"
#include "spip/parallel/rank_group.hpp"
#include "spip/planning/planning.hpp"
#include "spip/stages/channel_cubes.hpp"
#include "spip/stages/channel_stream.hpp"
#include "spip/stages/faraday_stage.hpp"
#include "spip/stages/plane_store.hpp"
#include "spip/stages/pointing_mosaic.hpp"
#include "spip/stages/row_share.hpp"

namespace spip::pipeline {
namespace {

// What the progress markers must match besides the settings: every input as it is now,
// with the files besides them that shape each channel's planes.
std::string fingerprint_of(const Config& config, const Plan& plan) {
  std::vector<std::string> paths;
  std::vector<std::int64_t> rows;
  for (const ms::MsReader& reader : plan.readers) {
    paths.push_back(reader.info().path);
    rows.push_back(reader.info().num_rows);
  }
  std::vector<std::string> files;
  for (const std::string& file : {config.faraday.ionosphere, config.beam.fits})
    if (!file.empty()) files.push_back(file);
  return input_fingerprint(paths, rows, files);
}

// The settings the markers must match: the configuration, with unbinned channels as
// selected rather than as spelled (input.channel_end = 40 of 40 channels, or a freq_min
// below the band, select what the defaults do: the same count between the same first
// and last frequencies of the same inputs), and what planning chose that changes a
// channel's bits (a group of ranks sums its images; a GPU rounds otherwise; a spip that
// pads to another grid size). Bins keep the selection as spelled: another one may give
// the same bins with other channels in the last.
std::string progress_settings(const Config& config, const Plan& plan) {
  Config selected = config;
  if (config.image.channels_out == 0 && config.image.channel_width_hz == 0) {
    selected.input.channel_begin = plan.chan_begin;
    selected.input.channel_end = plan.chan_end;
    selected.input.freq_min_hz = selected.input.freq_max_hz = 0;
  }
  std::ostringstream band;
  band.precision(17);
  band << plan.freq_hz.size() << " channels from " << plan.freq_hz.front() << " to " << plan.freq_hz.back() << " Hz";
  return to_ini(selected) + "\n[plan]\nchannels = " + band.str() +
         "\nranks_per_channel = " + std::to_string(plan.ranks_per_channel) +
         "\nbackend = " + (plan.backend.starts_with("gpu") ? "gpu" : "cpu") +
         "\ngrid_size = " + std::to_string(plan.geometry.grid_size) + "\n";
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

// The beam every channel is restored to (RM synthesis needs one resolution): image.beam
// where given; else the one that holds every beam fitted to the channels of all ranks
// (imaging::common_restoring_beam). A theoretical beam that stood in for a fit that was
// not a beam counts only where no channel has a fitted one.
fits::Beam common_beam(const std::vector<imaging::RestoringBeam>& mine, const parallel::MpiContext& mpi) {
  std::vector<double> flat;
  for (const imaging::RestoringBeam& b : mine)
    flat.insert(flat.end(), {b.beam.major_rad, b.beam.minor_rad, b.beam.pa_rad,
                             b.origin == imaging::BeamOrigin::theoretical ? 0.0 : 1.0});
  const std::vector<double> all = mpi.gather_to_all(flat);
  std::vector<imaging::RestoringBeam> beams;
  for (std::size_t k = 0; k + 3 < all.size(); k += 4)
    beams.push_back({{all[k], all[k + 1], all[k + 2]},
                     all[k + 3] > 0 ? imaging::BeamOrigin::fitted : imaging::BeamOrigin::theoretical});
  const imaging::Beam common = imaging::common_restoring_beam(beams).beam;
  return fits::Beam{common.major_rad, common.minor_rad, common.pa_rad};
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

// A channel's figures over its pointings (one but in a mosaic): what was read and waited
// for, and its longest baseline.
void add_pointing(ChannelStats& channel, const ChannelStats& pointing) {
  channel.freq_hz = pointing.freq_hz;
  channel.visibilities += pointing.visibilities;
  channel.samples += pointing.samples;
  channel.weight_sum += pointing.weight_sum;
  channel.nonfinite_samples += pointing.nonfinite_samples;
  channel.max_uv = std::max(channel.max_uv, pointing.max_uv);
  channel.wait_s += pointing.wait_s;
}

double dynamic_range(double peak, double sigma) { return sigma > 0 ? peak / sigma : 0.0; }

// " (scale 0.0: 812, scale 8.0: 344, ...)" for multiscale CLEAN: where the iterations went.
std::string per_scale(const ChannelQa& qa) {
  std::string text;
  for (std::size_t k = 0; k < qa.scales_px.size(); ++k)
    text += (k == 0 ? " (scale " : ", scale ") + fixed(qa.scales_px[k], 1) + ": " + std::to_string(qa.scale_iterations[k]);
  return text.empty() ? text : text + ")";
}

// One rank's run as its data flow: each step a member, the members what a step hands
// to the next. Steps that meet other ranks are collective, in this order on every rank.
class RankRun {
 public:
  RankRun(const Config& config, const Plan& plan, const parallel::MpiContext& mpi, const Log& log, StopRequest& stop)
      : config_(config), plan_(plan), mpi_(mpi), log_(log), stop_(stop),
        imaged_(plan.imaged[static_cast<std::size_t>(mpi.rank())]),
        mine_(plan.blocks[static_cast<std::size_t>(mpi.rank())]),
        group_(plan.ranks_per_channel > 1 ? std::make_unique<parallel::RankGroup>(mpi, plan.ranks_per_channel) : nullptr),
        imaging_group_(group_ ? std::make_unique<MpiRowGroup>(group_->imaging()) : nullptr),
        staging_group_(group_ ? std::make_unique<MpiRowGroup>(group_->staging()) : nullptr),
        // Rank 0 decides whether to resume for all (start_or_resume): only it needs the inputs' fingerprint.
        progress_(plan.products.progress_dir(), progress_settings(config, plan),
                  mpi.is_root() ? fingerprint_of(config, plan) : "", mpi.rank()),
        cubes_(make_cube_set(config, plan)),
        checkpoint_([this] { cubes_.writer->sync(); }, config.output.checkpoint_interval),
        chosen_(chosen_beam(config.image)),
        qa_(static_cast<std::size_t>(mine_.size())), noise_(static_cast<std::size_t>(mine_.size())) {}

  CommittedProducts run() {
    announce();
    set_up_imaging();
    const bool resume = start_or_resume();
    const Recall recall = recall_finished_channels(resume);
    image_channels(recall.todo);
    const fits::Beam beam = agree_on_common_beam();
    restore_with_common_beam(beam, recall.recalled);
    const std::vector<std::string> faraday_products = run_faraday_stage(beam);
    return commit(beam, faraday_products);
  }

 private:
  void announce() const;
  void set_up_imaging();
  // The channels this run images, and those of the rank an earlier run finished whose
  // planes were read back.
  struct Recall {
    std::vector<int> todo;
    std::vector<bool> recalled;  // per channel of the rank
  };
  bool start_or_resume();
  Recall recall_finished_channels(bool resume);
  void image_channels(const std::vector<int>& todo);
  void blank_channel(int c, const ChannelStats& data, ChannelWriter& writer);
  void keep_planes(int c, const std::vector<float>& image, const std::vector<float>* residual);
  bool recall_planes(int c);
  deconv::ChannelImages image_pointing(const ChannelStats& data);
  beam::ImageGrid image_grid() const;
  std::optional<MosaicSum> mosaic_sum(int c) const;
  void image_channel(int c, const ChannelStats& data, std::vector<std::optional<deconv::ChannelImages>> pointings,
                     const std::vector<double>& max_uv, std::optional<MosaicSum> sum, double imaging_s,
                     ChannelWriter& writer);
  std::optional<beam::ChannelMosaic> channel_mosaic(int c, const std::vector<double>& weights) const;
  void keep_mosaic_planes(int c, const std::vector<std::vector<float>>& models, const std::vector<float>& residual);
  std::vector<float> restore_kept_mosaic(int c, const imaging::Beam& beam, const beam::ChannelMosaic& mosaic) const;
  beam::Pointings faraday_pointings() const;
  fits::Beam agree_on_common_beam();
  void restore_with_common_beam(const fits::Beam& beam, const std::vector<bool>& recalled);
  void log_clean_marks(int channel, const deconv::ChannelImages& images) const;
  std::vector<double> faraday_noise();
  std::vector<std::string> run_faraday_stage(const fits::Beam& beam);
  void log_clean_summary(const std::vector<ChannelQa>& channels) const;
  void log_beam_sampling(const std::vector<ChannelQa>& channels) const;
  CommittedProducts commit(const fits::Beam& beam, const std::vector<std::string>& faraday_products);
  ChannelQa& qa_of(int c) { return qa_[static_cast<std::size_t>(c - mine_.begin)]; }
  double& noise_of(int c) { return noise_[static_cast<std::size_t>(c - mine_.begin)]; }
  bool restore_later() const { return restores_later(config_); }
  // This rank keeps and writes the channels it images: it has no group, or leads it.
  bool leads() const { return !group_ || group_->leads(); }
  // A stop asked of any member stops the whole group at the same channel.
  bool stop_now() const { return group_ ? group_->imaging().any(stop_.requested()) : stop_.requested(); }

  const Config& config_;
  const Plan& plan_;
  const parallel::MpiContext& mpi_;
  const Log& log_;
  StopRequest& stop_;
  const parallel::ChannelBlock imaged_;  // the channels this rank (with its group) images
  const parallel::ChannelBlock mine_;    // those it keeps and writes: imaged_, or none past a group's first rank
  // parallel.ranks_per_channel > 1: the ranks sharing imaged_'s rows, and their
  // collectives for the imaging thread and for the thread that stages the next channel.
  const std::unique_ptr<parallel::RankGroup> group_;
  const std::unique_ptr<MpiRowGroup> imaging_group_, staging_group_;
  std::optional<ChannelSource> source_;
  const ChannelProgress progress_;
  // Created before the job's restoring beam is known (every channel's PSF must be
  // fitted first): rank 0 writes it into the headers at the end.
  const CubeSet cubes_;
  Checkpoint checkpoint_;  // the channels' markers, each after its planes are synced
  const std::optional<imaging::Beam> chosen_;  // image.beam
  std::unique_ptr<ImagingStage> imaging_;
  // The planes the later steps take instead of reading the products back: each
  // channel's model and residual until restoring, then its restored image.
  std::unique_ptr<PlaneStore> kept_;
  std::optional<RowCoordinates> coordinates_;
  std::vector<ChannelQa> qa_;                 // per channel of the rank
  std::vector<double> noise_;                 // polarised noise per channel; < 0: blanked
  std::vector<imaging::RestoringBeam> beams_; // of the channels not blanked
  std::string grid_summary_ = "no channel imaged here in this run";
  RunQa times_;
  RankQa rank_qa_;  // this rank's times and bytes, filled by the steps that spend them
};

// As spip_main.cpp set it, or the user.
std::string spin_count() {
  const char* count = std::getenv("GOMP_SPINCOUNT");
  return count ? count : "unset";
}

void RankRun::announce() const {
  if (imaged_.size() == 0)
    log_.info("more ranks than channels: this rank has no channels and idles");
  else
    log_.info("channels [" + std::to_string(plan_.chan_begin + imaged_.begin) + ", " +
              std::to_string(plan_.chan_begin + imaged_.end) + ") on " + plan_.backend + " with " +
              std::to_string(omp_get_max_threads()) + " OpenMP thread(s) (GOMP_SPINCOUNT " + spin_count() + ")" +
              (group_ ? std::string(leads() ? ", leading a group of " : " in a group of ") +
                            std::to_string(group_->size()) + " ranks"
                      : std::string()));
}

// FFTW_MEASURE picks plans by timing them, and different plans round differently.
// Rank 0 plans first and stores the wisdom the other ranks then load, so that every
// rank, and a resumed run, transforms with the same plans (bit-identical products).
void RankRun::set_up_imaging() {
  const Stopwatch watch;
  keep_freed_memory(plan_.memory.kept_heap);
  if (!mpi_.is_root()) mpi_.barrier();
  imaging_ = ImagingStage::make(plan_.geometry, config_.image, weighting_scheme(config_), plan_.gpu_device,
                                  plan_.rank_visibilities(), imaging_group_.get());
  if (config_.clean.niter > 0) imaging::plan_restoring(plan_.geometry);
  if (mpi_.is_root()) mpi_.barrier();
  const std::string scratch = plan_.memory.kept_spilled ? scratch_folder(config_.parallel) : "";
  kept_ = std::make_unique<PlaneStore>(mine_.size(), kept_slots(plan_), plan_.geometry.pixels(), scratch);
  if (kept_->spilled())
    log_.info("the planes this rank keeps for restoring and the Faraday stage (" + fixed(plan_.memory.kept / 1e9, 2) +
              " GB) exceed parallel.memory_gb: they go to a file in " + scratch);
  RankRows rows = rank_rows(plan_, config_.image, group_ ? group_->size() : 1, group_ ? group_->member() : 0);
  if (!rows.summary.empty()) log_.info(rows.summary);
  source_.emplace(plan_, imaged_, std::move(rows.shares));
  coordinates_.emplace(std::move(rows.uvw_m), std::move(rows.input_rows));
  times_.setup_s = watch.seconds();
  log_.info("FFT plans (" + std::string(imaging::Fft2d::planner()) + ") and grid corrections for " +
            std::to_string(plan_.geometry.grid_size) + "^2 grids in " + fixed(times_.setup_s, 2) + " s");
}

// Rank 0 decides for all, before it changes any file: ranks that each looked might see
// a shared file system's attributes differently. A fresh run's cubes are made here.
bool RankRun::start_or_resume() {
  std::vector<std::string> partials;
  for (const ChannelCube& cube : cubes_.cubes) partials.push_back(fits::CubeFile::partial_path(cube.path));
  const ResumeDecision decision = mpi_.is_root() ? progress_.decide(partials) : ResumeDecision{};
  const bool resume = mpi_.max(decision.resume ? 1.0 : 0.0) > 0;
  if (resume)
    log_.root("resuming from the progress markers of " + std::to_string(decision.channels_done) + " channel(s): " +
              decision.reason);
  else if (decision.channels_done > 0)
    log_.root("not resuming from the progress markers of " + std::to_string(decision.channels_done) +
              " channel(s), because " + decision.reason + ": all " + std::to_string(plan_.chan_end - plan_.chan_begin) +
              " channels are imaged again");
  if (!resume && mpi_.is_root()) {
    const Stopwatch watch;
    progress_.start_fresh();
    create_cubes(cubes_);
    times_.create_s = watch.seconds();
    log_.info("created " + std::to_string(cubes_.cubes.size()) + " cubes in " + fixed(times_.create_s, 2) + " s");
  }
  mpi_.barrier();
  // Rank 0 read the journals to decide; the others take what it read (65,536 channels'
  // records are some 50 MB) rather than every rank reading every journal.
  progress_.adopt(resume ? mpi_.broadcast_text(mpi_.is_root() ? progress_.journals() : std::string()) : std::string());
  return resume;
}

// Channels a killed run completed keep their planes in the partial cubes and their
// numbers in their markers; the others are to be imaged.
RankRun::Recall RankRun::recall_finished_channels(bool resume) {
  Recall recall{{}, std::vector<bool>(static_cast<std::size_t>(mine_.size()), false)};
  int imaged_again = 0;  // finished by an earlier run, but its planes were not written
  for (int c = mine_.begin; c < mine_.end; ++c) {
    if (!resume || !progress_.done(plan_.chan_begin + c)) {
      recall.todo.push_back(c);
      continue;
    }
    const auto marker = nlohmann::ordered_json::parse(progress_.record(plan_.chan_begin + c)).get<ChannelMarker>();
    if (marker.polarised_noise >= 0 && !recall_planes(c)) {
      recall.todo.push_back(c);
      ++imaged_again;
      continue;
    }
    recall.recalled[static_cast<std::size_t>(c - mine_.begin)] = true;
    qa_of(c) = marker.qa;
    noise_of(c) = marker.polarised_noise;
    if (marker.polarised_noise >= 0)
      beams_.push_back({marker.qa.beam, marker.qa.beam_theoretical ? imaging::BeamOrigin::theoretical
                                        : chosen_                  ? imaging::BeamOrigin::chosen
                                                                   : imaging::BeamOrigin::fitted});
  }
  // The other members image what their leader does not hold yet.
  if (group_) recall.todo = group_->imaging().from_leader(recall.todo);
  rank_qa_.channels_imaged = static_cast<int>(recall.todo.size());
  if (!resume || !leads()) return recall;
  log_.info("resuming: " + std::to_string(mine_.size() - static_cast<int>(recall.todo.size())) + " of this rank's " +
            std::to_string(mine_.size()) + " channels are complete; their kept planes (" +
            fixed(rank_qa_.resume_bytes_read / 1e6, 1) + " MB) read from the partial cubes");
  if (imaged_again > 0)
    log_.info("resuming: " + std::to_string(imaged_again) + " channel(s) an earlier run finished are imaged again, " +
              (plan_.mosaic() && restore_later()
                   ? "because a mosaic keeps its pointings' models only until restoring"
                   : "because output.channel_cubes did not write the planes the later steps need"));
  return recall;
}

// The planes the later steps take from channel c: its model and residual until
// restoring; then its restored image and, with CLEAN, its residual (the Faraday stage's
// per-pixel noise).
void RankRun::keep_planes(int c, const std::vector<float>& image, const std::vector<float>* residual) {
  const std::size_t pixels = plan_.geometry.pixels();
  for (int s = 0; s < ms::num_stokes; ++s) {
    kept_->put(c - mine_.begin, kept_image + s, image.data() + s * pixels);
    if (residual) kept_->put(c - mine_.begin, kept_residual + s, residual->data() + s * pixels);
  }
}

// A mosaic's channel until restoring: each pointing's model (none where it has no data
// in the channel), and the mosaic's residual.
void RankRun::keep_mosaic_planes(int c, const std::vector<std::vector<float>>& models,
                                 const std::vector<float>& residual) {
  const std::size_t pixels = plan_.geometry.pixels();
  for (int s = 0; s < ms::num_stokes; ++s) {
    kept_->put(c - mine_.begin, kept_residual + s, residual.data() + s * pixels);
    for (std::size_t p = 0; p < models.size(); ++p)
      if (!models[p].empty()) kept_->put(c - mine_.begin, kept_model(static_cast<int>(p)) + s, models[p].data() + s * pixels);
  }
}

// A mosaic's channel restored with `beam` from what keep_mosaic_planes() kept, a
// pointing's model at a time.
std::vector<float> RankRun::restore_kept_mosaic(int c, const imaging::Beam& beam, const beam::ChannelMosaic& mosaic) const {
  const std::size_t pixels = plan_.geometry.pixels();
  const std::vector<double>& weights = qa_[static_cast<std::size_t>(c - mine_.begin)].mosaic_weights;
  std::vector<float> restored(ms::num_stokes * pixels);
  for (int s = 0; s < ms::num_stokes; ++s)
    kept_->read(c - mine_.begin, kept_residual + s, 0, pixels, restored.data() + s * pixels);
  std::vector<float> model(ms::num_stokes * pixels);
  for (std::size_t p = 0; p < weights.size(); ++p) {
    if (!(weights[p] > 0)) continue;
    for (int s = 0; s < ms::num_stokes; ++s)
      kept_->read(c - mine_.begin, kept_model(static_cast<int>(p)) + s, 0, pixels, model.data() + s * pixels);
    add_restored_model(p, model.data(), plan_.geometry, beam, mosaic, restored.data());
  }
  return restored;
}

// A channel an earlier run finished: its kept planes from the partial cubes it wrote;
// false where output.channel_cubes left out a cube they would come from.
bool RankRun::recall_planes(int c) {
  const std::vector<ChannelCubeKind> kinds =
      cubes_to_recall(plan_, !restore_later() || progress_.restored(plan_.chan_begin + c));
  if (kinds.empty()) return true;
  if (!std::all_of(kinds.begin(), kinds.end(), [&](ChannelCubeKind kind) { return plan_.products.on_disk(kind); }))
    return false;
  const double before = fits::CubeFile::bytes_read();
  const std::vector<float> image = read_stokes_planes(cubes_, kinds.front(), c);
  if (kinds.size() > 1) {
    const std::vector<float> residual = read_stokes_planes(cubes_, kinds.back(), c);
    keep_planes(c, image, &residual);
  } else {
    keep_planes(c, image, nullptr);
  }
  rank_qa_.resume_bytes_read += fits::CubeFile::bytes_read() - before;
  return true;
}

// Each channel is read, staged and imaged once: PSF, dirty images, CLEAN; restored here
// with its own beam unless restore_later(). The feed reads ahead; the writer writes
// the planes one channel behind, and their markers at the next checkpoint.
void RankRun::image_channels(const std::vector<int>& todo) {
  const Stopwatch watch;
  source_->want(todo);
  std::optional<ChannelFeed> feed(std::in_place, *source_, *imaging_, plan_, *coordinates_, todo,
                                  staging_group_.get());
  ChannelWriter writer;
  int handled = 0;
  for (int c : todo) {
    if (stop_now()) break;
    // Each pointing in turn (one but in a mosaic): blank where none has data on the grid.
    // A mosaic's pointings go into its sum as they are imaged, each keeping only its
    // fitted beam and, where restoring waits for the channel's beam, its model.
    const Stopwatch imaging;
    ChannelStats data;
    std::vector<std::optional<deconv::ChannelImages>> pointings;
    std::vector<double> max_uv;  // per pointing
    std::optional<MosaicSum> sum = mosaic_sum(c);
    for (int p = 0; p < static_cast<int>(plan_.pointings.size()); ++p) {
      const ChannelStats seen = feed->advance(c, p);
      add_pointing(data, seen);
      max_uv.push_back(seen.max_uv);
      if (!(imaging_->weight_sum(0) > 0)) {
        pointings.emplace_back();
        continue;
      }
      deconv::ChannelImages images = image_pointing(seen);
      if (sum) {
        sum->add(static_cast<std::size_t>(p), images);
        deconv::ChannelImages kept;
        kept.fitted_beam = images.fitted_beam;
        if (!chosen_) kept.model = std::move(images.model);
        images = std::move(kept);
      }
      pointings.emplace_back(std::move(images));
    }
    rank_qa_.read_s += data.wait_s;
    const bool blank = std::none_of(pointings.begin(), pointings.end(), [](const auto& p) { return p.has_value(); });
    if (blank)
      blank_channel(c, data, writer);
    else
      image_channel(c, data, std::move(pointings), max_uv, std::move(sum), imaging.seconds() - data.wait_s, writer);
    ++handled;
    if (leads() && !blank) {  // each rank's progress, once a group
      const double rate = handled / watch.seconds();
      const ChannelQa& qa = qa_of(c);
      log_.info("channel " + std::to_string(plan_.chan_begin + c) + ": " + std::to_string(qa.iterations) +
                " iterations" + per_scale(qa) + ", " + std::to_string(qa.major_cycles) +
                (qa.major_cycles == 1 ? " major cycle" : " major cycles") + ", residual sigma " +
                jansky_text(qa.residual_sigma_jy) + "; rank " + std::to_string(mpi_.rank()) + " " +
                std::to_string(handled) + "/" +
                std::to_string(todo.size()) + " (job: " + std::to_string(plan_.chan_end - plan_.chan_begin) +
                " channels), " + fixed(rate, 2) + " ch/s, ETA " + fixed((todo.size() - handled) / rate, 1) + " s");
    }
  }
  feed.reset();
  source_.reset();  // its blocks, which the Faraday stage's memory plan counts as freed
  writer.finish();
  checkpoint_.flush();
  // Before the stop point: it waits for the slowest rank, which is not this rank's time.
  rank_qa_.image_s = watch.seconds() - rank_qa_.read_s;
  stop_.leave_if_requested(leads() ? std::to_string(mine_.size() - static_cast<int>(todo.size()) + handled) +
                                         " of this rank's " + std::to_string(mine_.size()) +
                                         " channels are imaged, each with its progress marker"
                                   : "this rank shares its group's channels, which the group's first rank keeps");
  log_.info("waited " + fixed(rank_qa_.read_s, 2) + " s for reads, imaging " + fixed(rank_qa_.image_s, 2) + " s; " +
            std::to_string(imaging_->staged_channels()) + " channel(s) staged; writer thread " +
            fixed(writer.busy_s(), 2) + " s, of which the imaging waited " + fixed(writer.waited_s(), 2) + " s");
  if (const std::string transfers = imaging_->transfer_summary(); !transfers.empty()) log_.info(transfers);
  warn_nonfinite(qa_, log_);
  // The GPU imager's buffers are freed before the Faraday stage sizes its own against
  // the device's free memory.
  imaging_.reset();
}

// Nothing to image (fully flagged, or no baseline on the grid): its planes are NaN in
// every cube and the Faraday stage gives it zero weight.
void RankRun::blank_channel(int c, const ChannelStats& data, ChannelWriter& writer) {
  if (!leads()) return;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  ChannelQa& qa = qa_of(c);
  qa = ChannelQa{};
  qa.channel = plan_.chan_begin + c;
  qa.freq_hz = data.freq_hz;
  qa.data_freq_hz = plan_.data_freq_hz.at(static_cast<std::size_t>(c));
  qa.rank = mpi_.rank();
  qa.blank = plan_.band.channels.at(static_cast<std::size_t>(c)).parts.empty()
                 ? "gap: no input has this frequency"
             : data.samples == 0    ? "no rows in the selected field"
             : data.visibilities == 0 ? "every visibility flagged"
                                      : "no unflagged visibility on the grid (image.uv_min, uv_max, size)";
  log_.info("channel " + std::to_string(plan_.chan_begin + c) + " is blank: " + qa.blank);
  qa.flagged_fraction = 1.0;
  qa.nonfinite_samples = data.nonfinite_samples;
  qa.search_noise_jy = qa.clean_threshold_jy = qa.psf_sidelobe = nan;
  // Equal weights keep the mosaic's effective response finite where the Faraday stage
  // looks at it; the channel's planes are NaN and weigh nothing there.
  if (plan_.mosaic()) qa.mosaic_weights.assign(plan_.pointings.size(), 1.0);
  noise_of(c) = -1.0;
  const std::string record = nlohmann::ordered_json(ChannelMarker{qa, -1.0}).dump();
  writer.submit([this, c, record] {
    write_blank_channel(cubes_, c);
    checkpoint_.mark_after_sync([this, c, record] { progress_.mark_done(plan_.chan_begin + c, record); });
  });
}

deconv::ChannelImages RankRun::image_pointing(const ChannelStats& data) {
  const double kept_uv = kept_max_uv(config_, data.max_uv);
  const double taper = weighting_scheme(config_).taper_fwhm_rad;
  deconv::ChannelImages images = imaging_->image(config_.clean, imaging::deconvolution_beam(kept_uv, taper));
  grid_summary_ = imaging_->describe();
  return images;
}

// The image's grid about its centre, for the beam room.
beam::ImageGrid RankRun::image_grid() const {
  return {plan_.geometry.size, plan_.geometry.cell_rad, plan_.image_centre, plan_.pointings.front()};
}

// The mosaic of channel c with its pointings' `weights`; none with one pointing.
std::optional<beam::ChannelMosaic> RankRun::channel_mosaic(int c, const std::vector<double>& weights) const {
  if (!plan_.mosaic()) return std::nullopt;
  return beam::ChannelMosaic(*plan_.primary_beam, image_grid(), plan_.pointings, weights,
                             plan_.freq_hz.at(static_cast<std::size_t>(c)));
}

// A mosaic's channel c, to add its pointings to as they are imaged; none with one pointing.
std::optional<MosaicSum> RankRun::mosaic_sum(int c) const {
  if (!plan_.mosaic()) return std::nullopt;
  return std::optional<MosaicSum>(std::in_place, *plan_.primary_beam, image_grid(), plan_.pointings,
                                  plan_.freq_hz.at(static_cast<std::size_t>(c)), plan_.geometry, chosen_);
}

// Restored with the channel's own beam: in a mosaic the one that holds its pointings'
// (so that a resumed run, which recalls only that beam, agrees on the common beam), from each pointing's fit and longest baseline (`max_uv`). A mosaic's
// images come from its `sum`; its `pointings` hold their fitted beams and models.
void RankRun::image_channel(int c, const ChannelStats& data, std::vector<std::optional<deconv::ChannelImages>> pointings,
                            const std::vector<double>& max_uv, std::optional<MosaicSum> sum, double imaging_s,
                            ChannelWriter& writer) {
  const Stopwatch watch;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::size_t pixels = plan_.geometry.pixels();
  if (!leads()) return;  // the leader holds the same images, and writes them
  const double taper = weighting_scheme(config_).taper_fwhm_rad;
  std::vector<imaging::RestoringBeam> pointing_beams;
  for (std::size_t p = 0; p < pointings.size(); ++p) {
    if (!pointings[p]) continue;
    const std::optional<imaging::Beam>& fit = pointings[p]->fitted_beam;
    pointing_beams.push_back(
        imaging::restoring_beam(fit, kept_max_uv(config_, max_uv[p]), taper, plan_.geometry, chosen_));
    if (pointing_beams.back().origin == imaging::BeamOrigin::theoretical)
      log_.info(theoretical_beam_reason(plan_.chan_begin + c, fit, pointing_beams.back().beam));
  }
  // A mosaic's pointings, seen at other hour angles, have beams at other angles: the
  // channel's holds them all.
  const imaging::RestoringBeam own = imaging::common_restoring_beam(pointing_beams);
  beams_.push_back(own);
  const bool theoretical = own.origin == imaging::BeamOrigin::theoretical;
  deconv::ChannelImages images;
  std::vector<float> restored;  // with a mosaic's image.beam, from its sum
  std::vector<double> weights;  // a mosaic's
  if (sum) {
    MosaicSum::Channel channel = sum->finish();
    images = std::move(channel.images);
    restored = std::move(channel.restored);
    weights = std::move(channel.weights);
  } else {
    images = std::move(*pointings.front());
  }
  if (!restore_later() && restored.empty()) {
    if (const std::optional<beam::ChannelMosaic> mosaic = channel_mosaic(c, weights)) {
      restored = images.residual;  // each channel its own beam (image.common_beam = false), known only now
      for (std::size_t p = 0; p < pointings.size(); ++p)
        if (pointings[p])
          add_restored_model(p, pointings[p]->model.data(), plan_.geometry, own.beam, *mosaic, restored.data());
    } else {
      restored = deconv::restore_channel(images.model.data(), images.residual.data(), plan_.geometry, own.beam);
    }
  }
  const double peak_i = restored.empty() ? nan : *std::max_element(restored.begin(), restored.begin() + pixels);
  // Without CLEAN, or without a threshold to reach, there is nothing to report.
  const bool has_threshold = config_.clean.niter > 0 && images.clean_threshold > 0;
  ChannelQa& qa = qa_of(c);
  qa = ChannelQa{plan_.chan_begin + c,
                 data.freq_hz,
                 plan_.data_freq_hz.at(static_cast<std::size_t>(c)),
                 mpi_.rank(),
                 {},
                 data.visibilities,
                 data.samples > 0 ? 1.0 - data.visibilities / data.samples : 1.0,
                 data.nonfinite_samples,
                 data.weight_sum,
                 data.max_uv,
                 own.beam,
                 theoretical,
                 images.iterations,
                 images.major_cycles,
                 images.scales,
                 images.scale_iterations,
                 config_.clean.auto_threshold > 0 ? images.search_noise : nan,
                 has_threshold ? images.clean_threshold : nan,
                 has_threshold ? std::optional<bool>(images.threshold_reached) : std::nullopt,
                 images.clean_stop == deconv::CleanStop::none ? "" : deconv::clean_stop_name(images.clean_stop),
                 images.degenerate_psf ? images.degenerate_psf->value : nan,
                 images.residual_sigma,
                 images.residual_peak,
                 peak_i,
                 dynamic_range(peak_i, images.residual_sigma),
                 data.wait_s,
                 imaging_s + watch.seconds(),
                 std::move(weights)};
  log_clean_marks(plan_.chan_begin + c, images);
  const bool ran_out = images.clean_stop == deconv::CleanStop::niter || images.clean_stop == deconv::CleanStop::max_major;
  if (has_threshold && ran_out)
    log_.info("channel " + std::to_string(plan_.chan_begin + c) + ": CLEAN stopped at " +
              (images.iterations >= config_.clean.niter ? "clean.niter = " + std::to_string(config_.clean.niter)
                                                        : "clean.max_major = " + std::to_string(config_.clean.max_major)) +
              " before reaching its threshold of " + jansky_text(images.clean_threshold));
  if (images.clean_stop == deconv::CleanStop::no_components && images.iterations == 0 && config_.clean.auto_mask > 0)
    log_.info("channel " + std::to_string(plan_.chan_begin + c) + ": CLEAN took no component: nothing lies above " +
              "clean.auto_mask = " + number_text(config_.clean.auto_mask) + " sigma, so its mask would be empty");
  // Until restoring, a mosaic's channel keeps each pointing's model; nothing else of its
  // pointings goes to the writer thread.
  std::vector<std::vector<float>> models;
  if (sum && restore_later())
    for (auto& one : pointings) models.push_back(one ? std::move(one->model) : std::vector<float>{});
  pointings.clear();
  writer.submit([this, c, pixels, qa, images = std::move(images), restored = std::move(restored),
                 models = std::move(models)] {
    write_channel(cubes_, c, images.dirty, images.psf, images.model, images.residual);
    if (!restored.empty()) write_restored(cubes_, c, restored, qa.mosaic_weights);
    const bool cleaned = plan_.products.made(ChannelCubeKind::residual);
    if (restore_later() && plan_.mosaic())
      keep_mosaic_planes(c, models, images.residual);
    else if (restore_later())
      keep_planes(c, images.model, &images.residual);
    else if (plan_.polarised())
      keep_planes(c, restored, cleaned ? &images.residual : nullptr);
    const double pol_noise = 0.5 * (deconv::mad_sigma(images.residual.data() + pixels, pixels) +
                                    deconv::mad_sigma(images.residual.data() + 2 * pixels, pixels));
    noise_of(c) = pol_noise;
    checkpoint_.mark_after_sync([this, c, record = nlohmann::ordered_json(ChannelMarker{qa, pol_noise}).dump()] {
      progress_.mark_done(plan_.chan_begin + c, record);
    });
  });
}

fits::Beam RankRun::agree_on_common_beam() {
  const fits::Beam beam = common_beam(beams_, mpi_);
  log_.root("common restoring beam " + fixed(beam.major_rad * rad_to_arcsec, 2) + "\" x " +
            fixed(beam.minor_rad * rad_to_arcsec, 2) + "\", PA " + fixed(beam.pa_rad * rad_to_deg, 1) + " deg");
  log_.root("grid " + std::to_string(plan_.geometry.grid_size) + "^2, " + grid_summary_ + " (last channel of rank 0)");
  return beam;
}

// A degenerate PSF, and CLEAN's divergence, in one line each.
void RankRun::log_clean_marks(int channel, const deconv::ChannelImages& images) const {
  const std::string name = "channel " + std::to_string(channel) + ": ";
  const auto clean_note = [&]() -> std::string {
    if (images.clean_stop == deconv::CleanStop::none) return "";
    return images.clean_stop == deconv::CleanStop::degenerate_psf
               ? "; CLEAN not started, the channel keeps its dirty image"
               : "; CLEAN ran with the PSF of twice the image's side, under which it cannot diverge";
  };
  if (images.degenerate_psf)
    log_.info(name + "degenerate PSF: a sidelobe at " + fixed(images.degenerate_psf->value, 4) + " of its peak, " +
              fixed(images.degenerate_psf->distance_px, 1) + " pixels from it (one line of baselines?)" +
              clean_note());
  // Where point CLEAN would have taken the PSF of twice the side, say why multiscale may not follow.
  const bool far = config_.clean.multiscale && images.far_sidelobe >= deconv::whole_psf_sidelobe;
  if (images.clean_stop == deconv::CleanStop::diverged)
    log_.info(name + "CLEAN DIVERGED: its peak rose to " + jansky_text(images.diverged_peak) +
              "/beam, past clean.divergence_limit = " + fixed(config_.clean.divergence_limit, 2) +
              " times the lowest peak a cycle started from; stopped with the model from before that cycle, and the " +
              "Faraday stage gives the channel weight 0" +
              (far ? "; the PSF reaches " + fixed(images.far_sidelobe, 2) +
                         " of its peak a quarter of the image or more from it, which multiscale CLEAN's image-sized "
                         "PSF cannot subtract across the image: point CLEAN (clean.multiscale false) subtracts the "
                         "PSF of twice the side there, or image a wider field"
                   : ""));
}

// The run's last word on CLEAN (rank 0): how many channels diverged or had a degenerate
// PSF. Exit status 0 stays, so that a job does not requeue forever; this line, in
// capitals where any did, is what says so.
void RankRun::log_clean_summary(const std::vector<ChannelQa>& channels) const {
  if (config_.clean.niter <= 0) return;
  const std::string diverged = deconv::clean_stop_name(deconv::CleanStop::diverged);
  const auto count = [&](auto marked) { return std::count_if(channels.begin(), channels.end(), marked); };
  const auto diverging = count([&](const ChannelQa& qa) { return qa.clean_stop == diverged; });
  const auto degenerate = count([](const ChannelQa& qa) { return std::isfinite(qa.psf_sidelobe); });
  log_.root(std::string(diverging + degenerate > 0 ? "WARNING: " : "") + "CLEAN summary: " +
            std::to_string(diverging) + " of " + std::to_string(channels.size()) +
            " channels DIVERGED (weight 0 in the Faraday stage), " + std::to_string(degenerate) +
            " had a degenerate PSF (qa.json: clean_stop, psf_sidelobe)");
}

// Fewer than 3 pixels across a channel's beam (the highest frequencies of a wide band at
// an image.scale chosen for the lowest) leave CLEAN's components and the restored fluxes
// of extended emission off by tens of per cent: a trial's 2.8 pixels flattened spectral
// indices by 0.07 to 0.14. The beams are the fitted ones: image.beam's, where given,
// says nothing of the PSF's sampling.
void RankRun::log_beam_sampling(const std::vector<ChannelQa>& channels) const {
  if (chosen_) return;
  const ChannelQa* narrowest = nullptr;
  for (const ChannelQa& qa : channels)
    if (qa.blank.empty() && qa.beam.minor_rad > 0 && (!narrowest || qa.beam.minor_rad < narrowest->beam.minor_rad))
      narrowest = &qa;
  if (!narrowest) return;
  const double pixels = narrowest->beam.minor_rad / plan_.geometry.cell_rad;
  if (pixels < 3)
    log_.root("warning: channel " + std::to_string(narrowest->channel) + "'s beam is " +
              fixed(narrowest->beam.minor_rad * rad_to_arcsec, 1) + "\" across its minor axis, " + fixed(pixels, 1) +
              " pixels: fewer than 3 under-sample it (CLEAN's components and extended sources' restored fluxes "
              "suffer); a smaller image.scale samples it");
}

// Channels whose CLEAN diverged keep planes made from the model before it did, but the
// Faraday stage trusts none of their flux: they weigh 0, as blank ones do.
std::vector<double> RankRun::faraday_noise() {
  std::vector<double> noise = noise_;
  std::int64_t diverged = 0;
  for (int c = mine_.begin; c < mine_.end; ++c)
    if (qa_of(c).clean_stop == deconv::clean_stop_name(deconv::CleanStop::diverged)) {
      noise[static_cast<std::size_t>(c - mine_.begin)] = -1.0;
      ++diverged;
    }
  diverged = mpi_.sum(diverged);
  if (diverged > 0)
    log_.root("the Faraday stage gives weight 0 to the " + std::to_string(diverged) +
              " channel(s) whose CLEAN diverged");
  return noise;
}

// With CLEAN and a common beam: each of the rank's channels restored with the job's
// beam from the model and residual planes it kept, instead of imaging it again. A
// channel a killed run already restored keeps its planes and its peak. One thread
// reads and writes, so that CFITSIO need not be built thread-safe.
void RankRun::restore_with_common_beam(const fits::Beam& beam, const std::vector<bool>& recalled) {
  if (!restore_later()) return;
  const Stopwatch watch;
  const imaging::Beam restoring{beam.major_rad, beam.minor_rad, beam.pa_rad};
  const std::size_t pixels = plan_.geometry.pixels();
  int restored_here = 0, done = 0;
  for (int c = mine_.begin; c < mine_.end; ++c, ++done) {
    const int absolute = plan_.chan_begin + c;
    if (noise_of(c) < 0) continue;  // blanked: NaN planes
    double peak = 0;
    if (recalled[static_cast<std::size_t>(c - mine_.begin)] && progress_.restored(absolute)) {
      peak = progress_.restored_peak(absolute);
    } else {
      if (stop_.requested()) break;
      const std::vector<double>& weights = qa_of(c).mosaic_weights;
      std::vector<float> restored;
      if (const std::optional<beam::ChannelMosaic> mosaic = channel_mosaic(c, weights)) {
        restored = restore_kept_mosaic(c, restoring, *mosaic);
        for (int p = 0; p < static_cast<int>(weights.size()); ++p)
          for (int s = 0; s < ms::num_stokes; ++s) kept_->release(c - mine_.begin, kept_model(p) + s);
      } else {
        std::vector<float> model(ms::num_stokes * pixels), residual(ms::num_stokes * pixels);
        for (int s = 0; s < ms::num_stokes; ++s) {
          kept_->read(c - mine_.begin, kept_image + s, 0, pixels, model.data() + s * pixels);
          kept_->read(c - mine_.begin, kept_residual + s, 0, pixels, residual.data() + s * pixels);
        }
        restored = deconv::restore_channel(model.data(), residual.data(), plan_.geometry, restoring);
      }
      peak = *std::max_element(restored.begin(), restored.begin() + pixels);
      write_restored(cubes_, c, restored, weights);
      keep_planes(c, restored, nullptr);
      checkpoint_.mark_after_sync([this, absolute, peak] { progress_.mark_restored(absolute, peak); });
      ++restored_here;
    }
    qa_of(c).restored_peak_i_jy = peak;
    qa_of(c).dynamic_range = dynamic_range(peak, qa_of(c).residual_sigma_jy);
  }
  checkpoint_.flush();
  rank_qa_.restore_s = watch.seconds();  // before the stop point, which waits for the slowest rank
  stop_.leave_if_requested(std::to_string(done) + " of this rank's " + std::to_string(mine_.size()) +
                           " channels are restored with the common beam, each with its marker");
  log_.info("restored " + std::to_string(restored_here) + " channels with the common beam from their kept model and " +
            "residual planes in " + fixed(rank_qa_.restore_s, 2) + " s");
}

// The pointings, and in a mosaic every channel's weights from every rank (collective).
beam::Pointings RankRun::faraday_pointings() const {
  beam::Pointings pointings{plan_.pointings, {}};
  if (!plan_.mosaic()) return pointings;
  const std::size_t count = plan_.pointings.size();
  std::vector<double> flat;
  for (int c = mine_.begin; c < mine_.end; ++c) {
    const std::vector<double>& weights = qa_[static_cast<std::size_t>(c - mine_.begin)].mosaic_weights;
    if (weights.size() != count)
      SPIP_THROW(Error, "channel " + std::to_string(plan_.chan_begin + c) + " has " + std::to_string(weights.size()) +
                            " mosaic weights for " + std::to_string(count) + " pointings");
    flat.push_back(c);
    flat.insert(flat.end(), weights.begin(), weights.end());
  }
  const std::vector<double> all = mpi_.gather_to_all(flat);
  pointings.weights.assign(plan_.freq_hz.size(), std::vector<double>(count, 1.0));
  for (std::size_t k = 0; k + count < all.size(); k += count + 1)
    pointings.weights.at(static_cast<std::size_t>(all[k])).assign(all.begin() + k + 1, all.begin() + k + 1 + count);
  return pointings;
}

// Without Q and U (an MS with only parallel hands) there is nothing to synthesise. It
// exchanges every rank's kept restored planes: all must be restored first.
std::vector<std::string> RankRun::run_faraday_stage(const fits::Beam& beam) {
  cubes_.writer->close();
  mpi_.barrier();
  if (!plan_.polarised()) return {};
  fits::ImageHeader base = cubes_.base;
  base.beam = beam;
  FaradayStage faraday(config_, plan_.products, base, plan_.freq_hz, plan_.data_freq_hz, plan_.memory.faraday_group,
                       plan_.gpu_device,
                       plan_.gpu_share_bytes,
                       kept_rows(*kept_, plan_.blocks, plan_.products.made(ChannelCubeKind::residual), base.nx,
                                 base.ny, static_cast<int>(plan_.freq_hz.size())),
                       plan_.primary_beam, faraday_pointings(), plan_.pointing_times);
  const Stopwatch watch;
  const std::vector<std::string> written = faraday.finish(faraday_noise(), mpi_, log_, stop_);
  rank_qa_.faraday_mpi_bytes = faraday.mpi_bytes();
  rank_qa_.faraday_product_bytes_read = faraday.product_bytes_read();
  rank_qa_.faraday_exchange_s = faraday.exchange_seconds();
  times_.faraday_s = watch.seconds();
  times_.faraday_depths = faraday.depths();
  log_.root(faraday.done_text(times_.faraday_s));
  return written;
}

// Rank 0, once every rank is done: the beams into the cube headers, the cubes renamed
// (they stay partial until here, so that a run killed in the Faraday stage resumes
// from its channels), the markers removed, qa.json written.
CommittedProducts RankRun::commit(const fits::Beam& beam, const std::vector<std::string>& faraday_products) {
  const std::vector<ChannelQa> channels = gather_records(qa_, mpi_);
  rank_qa_.rank = mpi_.rank();
  rank_qa_.channel_begin = plan_.chan_begin + mine_.begin;
  rank_qa_.channel_end = plan_.chan_begin + mine_.end;
  rank_qa_.scratch_bytes_read = kept_->scratch_bytes_read();
  const std::vector<RankQa> ranks = gather_records(std::vector<RankQa>{rank_qa_}, mpi_);
  CommittedProducts products;
  if (mpi_.is_root()) {
    write_restoring_beam(cubes_, beam);
    if (!config_.image.common_beam) write_channel_beams(cubes_, channel_beams(channels, plan_));
    commit_cubes(cubes_);
    progress_.remove();
    for (const ChannelCube& cube : cubes_.cubes) products.paths.push_back(cube.path);
    products.paths.insert(products.paths.end(), faraday_products.begin(), faraday_products.end());
    const std::string qa_path = plan_.products.qa();
    times_.ranks = static_cast<int>(plan_.blocks.size());
    times_.channels = plan_.chan_end - plan_.chan_begin;
    times_.image_pixels = static_cast<long long>(plan_.geometry.pixels());
    times_.grid_size = plan_.geometry.grid_size;
    times_.total_s = log_.elapsed_s();  // planning included, as in "done in"
    write_text_atomically(qa_path, qa_json_text(times_, {beam.major_rad, beam.minor_rad, beam.pa_rad}, plan_.pointings, channels,
                                                ranks));
    products.paths.push_back(qa_path);
  }
  if (mpi_.is_root()) {
    log_clean_summary(channels);
    log_beam_sampling(channels);
  }
  log_.root("done in " + fixed(log_.elapsed_s(), 3) + " s");  // planning included
  return products;
}

}  // namespace

namespace {

// Errors once the ranks work together may be one rank's alone: RankFailure aborts the job.
// Signals are acknowledged from here on (StopRequest::acknowledge_signals()).
template <class Steps>
CommittedProducts after_planning(StopRequest& stop, Steps steps) {
  stop.acknowledge_signals();
  try {
    return steps();
  } catch (const Interrupted&) {
    throw;  // every rank throws it together
  } catch (const JobFailure&) {
    throw;  // so does every rank this
  } catch (const Error& e) {
    throw RankFailure(e);
  } catch (const std::exception& e) {
    throw RankFailure(Error(e.what(), __FILE__, __LINE__));
  }
}

}  // namespace

CommittedProducts run(const Config& config, const parallel::MpiContext& mpi, const Log& log, bool break_claim) {
  if (config.parallel.threads > 0) omp_set_num_threads(config.parallel.threads);
  // From the start: a signal while planning stops the run at its first channel.
  StopRequest stop(mpi, log);
  if (config.input.cubes()) {
    const CubePlan plan = make_cube_plan(config, mpi, log, break_claim);
    CommittedProducts made = after_planning(stop, [&] { return run_on_cubes(config, plan, mpi, log, stop); });
    remove_earlier_products(config, plan.products, made.paths, mpi, log);
    return made;
  }
  Plan plan = make_plan(config, mpi, log, break_claim);
  CommittedProducts made = after_planning(stop, [&] { return RankRun(config, plan, mpi, log, stop).run(); });
  remove_earlier_products(config, plan.products, made.paths, mpi, log);
  return made;
}

}  // namespace spip::pipeline
