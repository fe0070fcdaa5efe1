#include "spip/cuda/device_imager.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "detail/clean_kernels.hpp"
#include "detail/cuda_check.hpp"
#include "spip/cuda/scale_convolver.hpp"
#include "detail/density_weighting.hpp"
#include "detail/gridding_kernels.hpp"
#include "detail/point_preparation.hpp"
#include "detail/staged_copy.hpp"
#include "spip/common/constants.hpp"
#include "spip/common/stopwatch.hpp"
#include "spip/imaging/channel_imager.hpp"
#include "spip/imaging/gridding_math.hpp"
#include "spip/imaging/w_layout.hpp"

namespace spip::cuda {
namespace {

using detail::DeviceArray;
using detail::PinnedBuffer;
using detail::dcomplex;
constexpr int num_stokes = 4;

// Bytes per visibility of one buffer set: its coordinates, Stokes visibilities and
// weights as the host has them (each channel brings its own rows: a sub-band's, or
// several parts of a bin); everything else is derived on the device from them.
constexpr std::size_t raw_bytes_per_visibility = 3 * sizeof(double) + num_stokes * (sizeof(float2) + sizeof(float));

// Where the staging buffer of a channel of up to `max_rows` rows holds its weights and
// visibilities, after its coordinates.
std::size_t weights_offset(std::size_t max_rows) { return 3 * max_rows * sizeof(double); }
std::size_t vis_offset(std::size_t max_rows) { return weights_offset(max_rows) + num_stokes * max_rows * sizeof(float); }

// One buffer set: a channel as uploaded, and what the host knows of it.
struct Slot {
  double freq_hz = 0;
  std::size_t rows = 0;
  DeviceArray<double> uvw_m;  // metres at the channel's frequency
  DeviceArray<float2> vis;
  DeviceArray<float> weights;
  // Coordinates, weights, then visibilities, at fixed offsets. The current slot's stay
  // as staged until next(): the wide PSF (make_wide_psf) reads its coordinates there.
  PinnedBuffer staging;
  cudaEvent_t upload_start = nullptr, upload_end = nullptr;
};

float event_ms(cudaEvent_t from, cudaEvent_t to) {
  float ms = 0;
  SPIP_CUDA_CHECK(cudaEventElapsedTime(&ms, from, to));
  return ms;
}

// The w-planes gridded at once: as many as fit 1 GiB of three-lane grids (a realistic
// 1536^2 grid's 16 planes in one batch), at least one and at most 32.
constexpr int max_lanes = detail::max_lanes;
int plane_batch_for(const imaging::ImageGeometry& geometry) {
  const double plane_bytes = max_lanes * static_cast<double>(geometry.grid_size) * geometry.grid_size * sizeof(cufftComplex);
  return static_cast<int>(std::clamp(std::floor(static_cast<double>(1u << 30) / plane_bytes), 1.0, 32.0));
}

}  // namespace

struct DeviceImager::Impl {
  int device;
  imaging::ImageGeometry geometry;
  double accuracy;
  imaging::WStacking stacking;
  std::size_t max_visibilities;
  cudaStream_t compute = nullptr, upload = nullptr;
  cudaEvent_t epoch = nullptr, compute_start = nullptr, compute_end = nullptr;
  cudaEvent_t weighting_start = nullptr, preparation_start = nullptr, preparation_end = nullptr;
  bool computed = false;
  int plane_batch;
  std::map<int, cufftHandle> plans;  // by the number of grids they transform at once
  DeviceArray<char> fft_work;        // shared by the plans, which run on one stream
  DeviceArray<double> x_shifted, correction;
  DeviceArray<cufftComplex> grids;   // [plane of the batch][lane][cell]
  DeviceArray<float2> values;        // [sorted point][lane]
  DeviceArray<dcomplex> acc, plain, mirrored;
  DeviceArray<float> dirty, residual, model, psf;
  DeviceArray<float> kept_model;  // the divergence guard's
  DeviceArray<float> wide_psf;    // twice the image's side (deconv::MinorPsf), for the channels that ask for it
  DeviceArray<std::uint8_t> mask;  // clean.auto_mask's
  DeviceArray<float2> residual_vis;
  std::unique_ptr<detail::MinorCycle> minor;
  std::unique_ptr<detail::ResidualStatistics> statistics;
  std::unique_ptr<detail::DensityWeighting> weighting;
  std::unique_ptr<detail::PointPreparation> preparation;  // of the current channel
  detail::ChannelSummary summary{};
  const imaging::RowGroup* group = nullptr;  // ranks sharing the channels' rows; null: none
  std::size_t rows = 0;  // of the current channel
  std::array<Slot, 2> slots;
  int current = -1, staged = -1, filling = -1;  // buffer sets
  TransferStats stats;

  Impl(int device, const imaging::ImageGeometry& geometry, double accuracy, bool wstacking, std::size_t max_vis,
       const imaging::WeightingScheme& scheme, int plane_batch);
  ~Impl();

  long long pixels() const { return static_cast<long long>(geometry.pixels()); }
  long long cells() const { return static_cast<long long>(geometry.grid_size) * geometry.grid_size; }
  Slot& active() {
    if (current < 0) SPIP_THROW(Error, "GPU imager: no channel is current (staging_area(), upload() and next() first)");
    return slots[current];
  }
  detail::GridShape shape() const {
    return detail::GridShape{stacking.kernel, stacking.w_kernel, stacking.enabled, geometry.uv_cell(), stacking.x0,
                             stacking.dw, summary.w_first, geometry.size, geometry.grid_size};
  }
  cufftHandle plan_for(int batch);
  void fft(int batch, int direction);
  void grid_images(const detail::LaneSource& source, const detail::ImageTargets& targets, KernelTimes* times = nullptr);
  void predict_residual(KernelTimes* times = nullptr);
  // Made once the device is chosen. One host thread for its side: the helper thread
  // stages the next channel beside it.
  std::optional<detail::StagedCopy> downloads;
  // Returns when done.
  void download(float* host, const float* device_images, long long count) {
    downloads->to_host(host, device_images, count * sizeof(float), compute);
  }
};

DeviceImager::Impl::Impl(int device_index, const imaging::ImageGeometry& g, double accuracy, bool wstacking,
                          std::size_t max_vis, const imaging::WeightingScheme& scheme, int batch)
    : device(device_index), geometry(g), accuracy(accuracy), stacking(imaging::make_w_stacking(g, accuracy, wstacking)),
      max_visibilities(max_vis), plane_batch(batch > 0 ? std::min(batch, plane_batch_for(g)) : plane_batch_for(g)) {
  SPIP_CUDA_CHECK(cudaSetDevice(device));
  std::size_t free_bytes = 0, total_bytes = 0;
  SPIP_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  const std::size_t needed = DeviceImager::device_bytes(geometry, max_visibilities, scheme);
  if (needed > free_bytes)
    SPIP_THROW(Error, "imaging " + std::to_string(geometry.size) + "^2 pixels (grid " +
                          std::to_string(geometry.grid_size) + "^2) with channels of up to " +
                          std::to_string(max_visibilities) + " visibilities needs " + std::to_string(needed >> 20) +
                          " MiB on GPU " + std::to_string(device) + " but " + std::to_string(free_bytes >> 20) +
                          " MiB are free; use a smaller image.size or image.padding, or fewer ranks per GPU");
  downloads.emplace(4u << 20, 1);
  SPIP_CUDA_CHECK(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
  SPIP_CUDA_CHECK(cudaStreamCreateWithFlags(&upload, cudaStreamNonBlocking));
  for (cudaEvent_t* event :
       {&epoch, &compute_start, &compute_end, &weighting_start, &preparation_start, &preparation_end})
    SPIP_CUDA_CHECK(cudaEventCreate(event));
  SPIP_CUDA_CHECK(cudaEventRecord(epoch, compute));
  plan_for(max_lanes * plane_batch);  // the largest work area, taken once

  const imaging::GridCorrection corr = imaging::make_grid_correction(geometry, stacking);
  x_shifted = DeviceArray<double>(corr.x_shifted.size());
  correction = DeviceArray<double>(corr.correction.size());
  // On the compute stream (which does not wait for the default one), finished here.
  SPIP_CUDA_CHECK(cudaMemcpyAsync(x_shifted.get(), corr.x_shifted.data(), x_shifted.bytes(), cudaMemcpyHostToDevice,
                                  compute));
  SPIP_CUDA_CHECK(cudaMemcpyAsync(correction.get(), corr.correction.data(), correction.bytes(),
                                  cudaMemcpyHostToDevice, compute));
  SPIP_CUDA_CHECK(cudaStreamSynchronize(compute));
  grids = DeviceArray<cufftComplex>(static_cast<std::size_t>(max_lanes) * plane_batch * cells());
  values = DeviceArray<float2>(2 * max_lanes * max_visibilities);
  acc = DeviceArray<dcomplex>(max_lanes * pixels());
  for (DeviceArray<float>* images : {&dirty, &residual, &model}) *images = DeviceArray<float>(num_stokes * pixels());
  psf = DeviceArray<float>(pixels());
  kept_model = DeviceArray<float>(num_stokes * pixels());
  wide_psf = DeviceArray<float>(static_cast<std::size_t>(deconv::minor_psf_side(geometry.size)) *
                                deconv::minor_psf_side(geometry.size));
  mask = DeviceArray<std::uint8_t>(pixels());
  residual_vis = DeviceArray<float2>(num_stokes * max_visibilities);
  plain = DeviceArray<dcomplex>(2 * max_visibilities);
  mirrored = DeviceArray<dcomplex>(2 * max_visibilities);
  minor = std::make_unique<detail::MinorCycle>(pixels());
  statistics = std::make_unique<detail::ResidualStatistics>(pixels());
  weighting = std::make_unique<detail::DensityWeighting>(scheme, geometry);
  preparation = std::make_unique<detail::PointPreparation>(max_visibilities, shape(), plane_batch);
  for (Slot& slot : slots) {
    slot.uvw_m = DeviceArray<double>(3 * max_visibilities);
    slot.vis = DeviceArray<float2>(num_stokes * max_visibilities);
    slot.weights = DeviceArray<float>(num_stokes * max_visibilities);
    slot.staging = PinnedBuffer(raw_bytes_per_visibility * max_visibilities);
    SPIP_CUDA_CHECK(cudaEventCreate(&slot.upload_start));
    SPIP_CUDA_CHECK(cudaEventCreate(&slot.upload_end));
  }
}

DeviceImager::Impl::~Impl() {
  cudaSetDevice(device);
  cudaStreamSynchronize(upload);
  cudaStreamSynchronize(compute);
  for (Slot& slot : slots) {
    cudaEventDestroy(slot.upload_start);
    cudaEventDestroy(slot.upload_end);
  }
  for (auto& [batch, plan] : plans) cufftDestroy(plan);
  for (cudaEvent_t event : {epoch, compute_start, compute_end, weighting_start, preparation_start, preparation_end})
    cudaEventDestroy(event);
  cudaStreamDestroy(upload);
  cudaStreamDestroy(compute);
}

// A plan per number of grids transformed at once (lanes times the planes of a batch),
// made on first need and kept; all share one work area, grown where a plan needs more.
cufftHandle DeviceImager::Impl::plan_for(int batch) {
  if (auto found = plans.find(batch); found != plans.end()) return found->second;
  int n[2] = {geometry.grid_size, geometry.grid_size};
  const int dist = static_cast<int>(cells());
  std::size_t work_bytes = 0;
  cufftHandle plan = 0;
  SPIP_CUDA_CHECK(cufftCreate(&plan));
  cufftResult made = cufftSetAutoAllocation(plan, 0);
  if (made == CUFFT_SUCCESS)
    made = cufftMakePlanMany(plan, 2, n, nullptr, 1, dist, nullptr, 1, dist, CUFFT_C2C, batch, &work_bytes);
  if (made == CUFFT_SUCCESS) made = cufftSetStream(plan, compute);
  if (made != CUFFT_SUCCESS) cufftDestroy(plan);  // no half-made plan is kept
  SPIP_CUDA_CHECK(made);
  plans[batch] = plan;
  if (work_bytes > fft_work.bytes()) {
    SPIP_CUDA_CHECK(cudaStreamSynchronize(compute));  // no plan runs in the old area
    fft_work = DeviceArray<char>(work_bytes);
    for (auto& [count, each] : plans) SPIP_CUDA_CHECK(cufftSetWorkArea(each, fft_work.get()));
  } else {
    SPIP_CUDA_CHECK(cufftSetWorkArea(plan, fft_work.get()));
  }
  return plan;
}

void DeviceImager::Impl::fft(int batch, int direction) {
  SPIP_CUDA_CHECK(cufftExecC2C(plan_for(batch), grids.get(), grids.get(), direction));
}

namespace {

// Runs `step` on the compute stream; with `total`, waits and adds its device time.
template <class Step>
void timed(double* total, cudaStream_t stream, Step step) {
  if (!total) return step();
  cudaEvent_t start = nullptr, stop = nullptr;
  SPIP_CUDA_CHECK(cudaEventCreate(&start));
  SPIP_CUDA_CHECK(cudaEventCreate(&stop));
  SPIP_CUDA_CHECK(cudaEventRecord(start, stream));
  step();
  SPIP_CUDA_CHECK(cudaEventRecord(stop, stream));
  SPIP_CUDA_CHECK(cudaEventSynchronize(stop));
  *total += event_ms(start, stop);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
}

}  // namespace

// As Gridder::grid, a batch of w-planes at a time: the batch's points spread onto its
// planes, one batched FFT, and one pass adding the planes times their w-screens; the
// last batch's pass corrects, normalises and writes the images.
void DeviceImager::Impl::grid_images(const detail::LaneSource& source, const detail::ImageTargets& targets,
                                      KernelTimes* times) {
  const detail::GridShape grid_shape = shape();
  const int lanes = source.lanes();
  if (summary.entries == 0) {
    SPIP_CUDA_CHECK(cudaMemsetAsync(targets.images, 0, num_stokes * pixels() * sizeof(float), compute));
    if (targets.psf) SPIP_CUDA_CHECK(cudaMemsetAsync(targets.psf, 0, pixels() * sizeof(float), compute));
    return;
  }
  const detail::PreparedView view = preparation->view();
  timed(times ? &times->values_ms : nullptr, compute,
        [&] { detail::lane_values(view, summary.entries, source, values.get(), compute); });
  for (int first = 0; first < summary.planes; first += plane_batch) {
    const int count = std::min(plane_batch, summary.planes - first);
    timed(times ? &times->items_ms : nullptr, compute, [&] { preparation->build_plane_items(first, count, compute); });
    if (times) times->point_planes += preparation->point_planes(compute);
    timed(times ? &times->grid_ms : nullptr, compute, [&] {
      SPIP_CUDA_CHECK(cudaMemsetAsync(grids.get(), 0, count * lanes * cells() * sizeof(cufftComplex), compute));
      detail::grid_points(view, first, grid_shape, lanes, values.get(), grids.get(), compute);
    });
    timed(times ? &times->fft_ms : nullptr, compute, [&] { fft(count * lanes, CUFFT_FORWARD); });
    timed(times ? &times->finish_ms : nullptr, compute, [&] {
      detail::add_planes(grids.get(), lanes, first, count, first == 0, first + count >= summary.planes, grid_shape,
                         x_shifted.get(), correction.get(), acc.get(), targets, compute);
    });
    if (times) ++times->batches;
  }
}

// As Gridder::degrid of the model, a batch of w-planes at a time, then residual
// visibilities = observed - model.
void DeviceImager::Impl::predict_residual(KernelTimes* times) {
  const Slot& slot = active();
  const detail::GridShape grid_shape = shape();
  timed(times ? &times->degrid_ms : nullptr, compute, [&] {
    SPIP_CUDA_CHECK(cudaMemsetAsync(plain.get(), 0, 2 * rows * sizeof(dcomplex), compute));
    SPIP_CUDA_CHECK(cudaMemsetAsync(mirrored.get(), 0, 2 * rows * sizeof(dcomplex), compute));
    for (int first = 0; first < summary.planes && summary.entries > 0; first += plane_batch) {
      const int count = std::min(plane_batch, summary.planes - first);
      preparation->build_plane_items(first, count, compute);
      SPIP_CUDA_CHECK(cudaMemsetAsync(grids.get(), 0, 2 * count * cells() * sizeof(cufftComplex), compute));
      detail::fill_planes(model.get(), first, count, grid_shape, correction.get(), x_shifted.get(), grids.get(),
                          compute);
      fft(2 * count, CUFFT_INVERSE);
      detail::degrid_points(preparation->view(), first, grid_shape, grids.get(), plain.get(), mirrored.get(), compute);
    }
  });
  detail::subtract_model(plain.get(), mirrored.get(), static_cast<long long>(rows), slot.vis.get(),
                         residual_vis.get(), compute);
}

namespace {

// The shared work area's size as cuFFT estimates it for the largest batch; where
// cuFFT cannot say (no driver, as for --plan on a login node) the batch's grids, which
// is what its power-of-two and 2^a 3^b 5^c sizes need.
std::size_t fft_work_bytes(int grid_size, int batch) {
  int n[2] = {grid_size, grid_size};
  const int dist = grid_size * grid_size;
  std::size_t work_bytes = 0;
  if (cufftEstimateMany(2, n, nullptr, 1, dist, nullptr, 1, dist, CUFFT_C2C, batch, &work_bytes) == CUFFT_SUCCESS)
    return work_bytes;
  return batch * static_cast<std::size_t>(dist) * sizeof(cufftComplex);
}

}  // namespace

std::size_t DeviceImager::device_bytes(const imaging::ImageGeometry& geometry, std::size_t max_visibilities,
                                        const imaging::WeightingScheme& weighting) {
  const std::size_t pixels = geometry.pixels();
  const std::size_t cells = static_cast<std::size_t>(geometry.grid_size) * geometry.grid_size;
  const int batch = plane_batch_for(geometry);
  const std::size_t per_visibility =
      2 * raw_bytes_per_visibility                                                  // two buffer sets
      + num_stokes * sizeof(float2)                                                 // residual visibilities
      + 4 * sizeof(dcomplex)                                                        // degridded lanes and mirrors
      + 2 * max_lanes * sizeof(float2)                                              // lane values
      + detail::PointPreparation::bytes_per_row(imaging::max_support, imaging::max_support);  // prepared points
  const std::size_t per_cell = static_cast<std::size_t>(max_lanes) * batch * sizeof(cufftComplex);
  const std::size_t per_pixel = max_lanes * sizeof(dcomplex) + 3 * num_stokes * sizeof(float) + 2 * sizeof(float) +
                                2 * sizeof(double) + sizeof(std::uint8_t) /* the mask */ +
                                detail::MinorCycle::bytes_per_pixel() + detail::ResidualStatistics::bytes_per_pixel();
  constexpr std::size_t margin = 64u << 20;  // CUB scratch, cuFFT and context internals
  return per_visibility * max_visibilities + per_cell * cells + fft_work_bytes(geometry.grid_size, max_lanes * batch) +
         per_pixel * pixels + detail::PointPreparation::fixed_bytes(geometry.grid_size, batch) +
         detail::DensityWeighting::device_bytes(weighting, geometry) + margin;
}

DeviceImager::DeviceImager(int device, const imaging::ImageGeometry& geometry, double accuracy, bool wstacking,
                             std::size_t max_visibilities, const imaging::WeightingScheme& weighting,
                             const imaging::RowGroup* group, int plane_batch)
    : impl_(std::make_unique<Impl>(device, geometry, accuracy, wstacking, max_visibilities, weighting, plane_batch)) {
  impl_->group = group;
}

DeviceImager::~DeviceImager() = default;

ChannelView DeviceImager::staging_area(std::size_t rows) {
  Impl& m = *impl_;
  if (rows > m.max_visibilities)
    SPIP_THROW(Error, "GPU imager: a channel of " + std::to_string(rows) + " rows exceeds the planned " +
                          std::to_string(m.max_visibilities));
  m.staged = -1;  // a channel staged and never made current (a stopped pass) is replaced
  SPIP_CUDA_CHECK(cudaSetDevice(m.device));  // the current device is per host thread
  const int s = m.current == 0 ? 1 : 0;
  Slot& slot = m.slots[s];
  SPIP_CUDA_CHECK(cudaEventSynchronize(slot.upload_end));  // its staging buffer is free again
  m.filling = s;
  slot.rows = rows;
  // Fixed offsets for the largest channel, so that every array stays aligned.
  char* base = slot.staging.get();
  ChannelView view;
  view.rows = rows;
  view.uvw_m = reinterpret_cast<double*>(base);
  view.weights = reinterpret_cast<float*>(base + weights_offset(m.max_visibilities));
  view.vis = reinterpret_cast<std::complex<float>*>(base + vis_offset(m.max_visibilities));
  return view;
}

void DeviceImager::upload(double freq_hz) {
  Impl& m = *impl_;
  if (m.filling < 0) SPIP_THROW(Error, "GPU imager: upload() without staging_area()");
  SPIP_CUDA_CHECK(cudaSetDevice(m.device));
  Slot& slot = m.slots[m.filling];
  slot.freq_hz = freq_hz;
  const char* base = slot.staging.get();
  SPIP_CUDA_CHECK(cudaEventRecord(slot.upload_start, m.upload));
  auto copy = [&](void* to, std::size_t offset, std::size_t bytes) {
    SPIP_CUDA_CHECK(cudaMemcpyAsync(to, base + offset, bytes, cudaMemcpyHostToDevice, m.upload));
    m.stats.upload_bytes += static_cast<double>(bytes);
  };
  copy(slot.uvw_m.get(), 0, 3 * slot.rows * sizeof(double));
  copy(slot.weights.get(), weights_offset(m.max_visibilities), num_stokes * slot.rows * sizeof(float));
  copy(slot.vis.get(), vis_offset(m.max_visibilities), num_stokes * slot.rows * sizeof(float2));
  SPIP_CUDA_CHECK(cudaEventRecord(slot.upload_end, m.upload));
  m.staged = m.filling;
  m.filling = -1;
}

void DeviceImager::next() {
  Impl& m = *impl_;
  if (m.staged < 0) SPIP_THROW(Error, "GPU imager: next() without a staged channel");
  Slot& slot = m.slots[m.staged];
  SPIP_CUDA_CHECK(cudaEventSynchronize(slot.upload_end));
  // The part of this upload that ran while the previous channel was being computed.
  const double up_start = event_ms(m.epoch, slot.upload_start), up_end = event_ms(m.epoch, slot.upload_end);
  m.stats.upload_ms += up_end - up_start;
  if (m.computed) {
    const double busy_start = event_ms(m.epoch, m.compute_start), busy_end = event_ms(m.epoch, m.compute_end);
    m.stats.hidden_ms += std::max(0.0, std::min(up_end, busy_end) - std::max(up_start, busy_start));
  }
  ++m.stats.channels;
  m.current = m.staged;
  m.staged = -1;
  // The imaging weights are made, off-grid rows lose their weight, and the points are
  // laid out, on the device.
  SPIP_CUDA_CHECK(cudaSetDevice(m.device));
  const double scale = slot.freq_hz / speed_of_light;
  m.rows = slot.rows;
  const auto rows = static_cast<long long>(m.rows);
  SPIP_CUDA_CHECK(cudaEventRecord(m.weighting_start, m.compute));
  m.weighting->apply(slot.uvw_m.get(), scale, slot.weights.get(), rows, m.compute, m.group);
  SPIP_CUDA_CHECK(cudaEventRecord(m.preparation_start, m.compute));
  m.summary = m.preparation->prepare(slot.uvw_m.get(), scale, slot.weights.get(), rows, m.compute, m.group);
  SPIP_CUDA_CHECK(cudaEventRecord(m.preparation_end, m.compute));
  SPIP_CUDA_CHECK(cudaEventSynchronize(m.preparation_end));
  m.stats.weighting_ms += event_ms(m.weighting_start, m.preparation_start);
  m.stats.preparation_ms += event_ms(m.preparation_start, m.preparation_end);
}

double DeviceImager::weight_sum(int stokes) const { return impl_->summary.weight_sum[stokes]; }
int DeviceImager::num_w_planes() const { return impl_->summary.planes; }

namespace {
// The Stokes images and the PSF over their weight sums (the PSF's is Stokes I's).
detail::ImageTargets normalised(const double* sums, float* images, float* psf) {
  detail::ImageTargets targets{images, psf, {}, 0.0f};
  for (int s = 0; s < num_stokes; ++s) targets.scale[s] = sums[s] > 0 ? static_cast<float>(1.0 / sums[s]) : 0.0f;
  targets.psf_scale = targets.scale[0];
  return targets;
}
}  // namespace

// deconv::CleanBackend on the device: the images stay there, and the host sees the
// PSF (for the beam fit), the peaks, and the residual only where the noise is estimated
// (clean.auto_threshold), as before the driver was shared.
class DeviceImager::DeviceBackend final : public deconv::CleanBackend {
 public:
  explicit DeviceBackend(Impl& m) : m_(m) {}

  std::vector<float> invert() override {
    const Stopwatch watch;
    const Slot& slot = m_.active();
    const long long pixels = m_.pixels();
    SPIP_CUDA_CHECK(cudaSetDevice(m_.device));
    SPIP_CUDA_CHECK(cudaEventRecord(m_.compute_start, m_.compute));
    // The dirty images and the PSF in one pass over the points.
    m_.grid_images(detail::LaneSource{slot.vis.get(), slot.weights.get(), true},
                   normalised(m_.summary.weight_sum, m_.dirty.get(), m_.psf.get()));
    std::vector<float> psf(pixels);
    m_.download(psf.data(), m_.psf.get(), pixels);
    if (m_.group) {
      sum_over_group(m_.dirty.get(), num_stokes * pixels);
      SPIP_CUDA_CHECK(cudaStreamSynchronize(m_.compute));
      m_.group->sum(psf);
      upload(m_.psf.get(), psf);
    }
    SPIP_CUDA_CHECK(cudaMemcpyAsync(m_.residual.get(), m_.dirty.get(), num_stokes * pixels * sizeof(float),
                                    cudaMemcpyDeviceToDevice, m_.compute));
    SPIP_CUDA_CHECK(cudaMemsetAsync(m_.model.get(), 0, num_stokes * pixels * sizeof(float), m_.compute));
    SPIP_CUDA_CHECK(cudaStreamSynchronize(m_.compute));
    m_.stats.invert_ms += 1e3 * watch.seconds();
    return psf;
  }

  double peak(PeakSearch search) override { return m_.minor->peak(search, m_.residual.get(), mask(), m_.compute); }

  double noise(PeakSearch search) override {
    const Stopwatch watch;
    residual_.resize(num_stokes * m_.pixels());
    m_.download(residual_.data(), m_.residual.get(), num_stokes * m_.pixels());
    SPIP_CUDA_CHECK(cudaStreamSynchronize(m_.compute));
    const double sigma = deconv::search_noise(search, residual_.data(), m_.pixels());
    m_.stats.noise_ms += 1e3 * watch.seconds();
    return sigma;
  }

  std::unique_ptr<deconv::MinorAlgorithm> hogbom() override;
  std::unique_ptr<deconv::MinorAlgorithm> subminor() override;
  std::unique_ptr<deconv::MinorAlgorithm> multiscale(const deconv::MultiscaleSetup& setup) override;

  const imaging::RowGroup* group() const override { return m_.group; }

  void model_from_leader() override {
    modelled_ = true;
    host_.resize(num_stokes * m_.pixels());
    m_.download(host_.data(), m_.model.get(), num_stokes * m_.pixels());
    SPIP_CUDA_CHECK(cudaStreamSynchronize(m_.compute));
    m_.group->from_leader(host_);
    upload(m_.model.get(), host_);
  }

  // The PSF of twice the image's side, for the channels whose PSF asks for it: the
  // host's imaging::wide_psf (as on the CPU) from the channel's coordinates, still in
  // its staging buffer, and its imaging weights, made on the device.
  void make_whole_image_psf() override {
    const Slot& slot = m_.active();
    std::vector<float> weights(num_stokes * slot.rows);
    m_.download(weights.data(), slot.weights.get(), static_cast<long long>(weights.size()));
    const double* uvw_m = reinterpret_cast<const double*>(slot.staging.get());
    const double scale = slot.freq_hz / speed_of_light;
    std::vector<double> uvw_lambda(uvw_m, uvw_m + 3 * slot.rows);
    for (double& x : uvw_lambda) x *= scale;
    std::vector<float> psf = imaging::wide_psf(m_.geometry, deconv::minor_psf_side(m_.geometry.size), m_.accuracy,
                                               uvw_lambda.data(), weights.data(), slot.rows,
                                               m_.summary.weight_sum[0]);
    if (m_.group) m_.group->sum(psf);
    if (!m_.group || m_.group->leads()) upload(m_.wide_psf.get(), psf);  // the leader alone runs the minor cycles
  }

  void keep_model() override {
    SPIP_CUDA_CHECK(cudaMemcpyAsync(m_.kept_model.get(), m_.model.get(), m_.kept_model.bytes(), cudaMemcpyDeviceToDevice,
                                    m_.compute));
  }

  void restore_kept_model() override {
    SPIP_CUDA_CHECK(cudaMemcpyAsync(m_.model.get(), m_.kept_model.get(), m_.kept_model.bytes(), cudaMemcpyDeviceToDevice,
                                    m_.compute));
  }

  // Cotton-Schwab: the model subtracted from the visibilities, and the residual imaged exactly.
  void subtract_model() override {
    m_.predict_residual();
    m_.grid_images(detail::LaneSource{m_.residual_vis.get(), m_.active().weights.get(), false},
                   normalised(m_.summary.weight_sum, m_.residual.get(), nullptr));
    if (m_.group) sum_over_group(m_.residual.get(), num_stokes * m_.pixels());
  }

  void mask_model_pixels() override {
    m_.minor->mask_model_pixels(m_.model.get(), m_.mask.get(), m_.compute);
    masked_ = true;
  }

  void fetch(deconv::ChannelImages& out) override {
    const Stopwatch watch;
    const long long values = num_stokes * m_.pixels();
    double link_s = 0;  // in the staged copies alone, not in filling the host's vectors
    const auto download = [&](std::vector<float>& host, const float* device) {
      host.resize(values);
      const Stopwatch copy;
      m_.download(host.data(), device, values);
      link_s += copy.seconds();
    };
    download(out.dirty, m_.dirty.get());
    if (modelled_) {
      download(out.model, m_.model.get());
      download(out.residual, m_.residual.get());
    } else {  // no minor cycle ran: the residual is the dirty image, the model empty
      out.residual = out.dirty;
      out.model.assign(values, 0.0f);
    }
    m_.stats.images_download_ms += 1e3 * link_s;
    const detail::ResidualStatistics::Values statistics = m_.statistics->measure(m_.residual.get(), m_.compute);
    out.residual_sigma = statistics.sigma;
    out.residual_peak = statistics.peak;
    SPIP_CUDA_CHECK(cudaEventRecord(m_.compute_end, m_.compute));
    SPIP_CUDA_CHECK(cudaStreamSynchronize(m_.compute));
    m_.computed = true;
    m_.stats.compute_ms += event_ms(m_.compute_start, m_.compute_end);
    m_.stats.fetch_ms += 1e3 * watch.seconds();
  }

 private:
  class PointClean;
  class Multiscale;
  const std::uint8_t* mask() const { return masked_ ? m_.mask.get() : nullptr; }
  // A group's images are summed through the host: each member's partial image down, the
  // group's sum (the same bits on every member) up again.
  void sum_over_group(float* images, long long count) {
    host_.resize(static_cast<std::size_t>(count));
    m_.download(host_.data(), images, count);
    SPIP_CUDA_CHECK(cudaStreamSynchronize(m_.compute));
    m_.group->sum(host_);
    upload(images, host_);
  }
  void upload(float* device_images, const std::vector<float>& host) {
    SPIP_CUDA_CHECK(cudaMemcpyAsync(device_images, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice,
                                    m_.compute));
    SPIP_CUDA_CHECK(cudaStreamSynchronize(m_.compute));
  }
  Impl& m_;
  bool masked_ = false;
  bool modelled_ = false;  // a minor cycle ran: the model and the residual are the device's
  std::vector<float> residual_;  // the host's copy, for the noise estimate and multiscale CLEAN
  std::vector<float> host_;      // a group's images on their way through the host
};

// Hogbom or the sub-minor loop as kernels (detail::MinorCycle), on the image's PSF or
// the one of twice its side. The divergence guard watches them between major cycles only.
class DeviceImager::DeviceBackend::PointClean final : public deconv::MinorAlgorithm {
 public:
  using Cycles = int (detail::MinorCycle::*)(PeakSearch, float*, deconv::MinorPsf, int, double, double, int, float*,
                                             const std::uint8_t*, cudaStream_t);
  PointClean(DeviceBackend& backend, Cycles cycles) : b_(backend), cycles_(cycles) {}

  deconv::MinorCycleResult run(const deconv::MinorCycleStep& step) override {
    Impl& m = b_.m_;
    b_.modelled_ = true;
    const int size = m.geometry.size;
    const deconv::MinorPsf psf = step.whole_image_psf
                                     ? deconv::MinorPsf{m.wide_psf.get(), deconv::minor_psf_side(size)}
                                     : deconv::MinorPsf{m.psf.get(), size};
    const int iterations = (m.minor.get()->*cycles_)(step.search, m.residual.get(), psf, size, step.gain,
                                                       step.stop_level, step.max_iterations, m.model.get(), b_.mask(),
                                                       m.compute);
    return {iterations, 0.0, false};
  }

 private:
  DeviceBackend& b_;
  Cycles cycles_;
};

// The multiscale minor cycles are deconv's, on the host, with their convolutions on
// this device (cuFFT): the residual, model and mask go to the host for them and back.
class DeviceImager::DeviceBackend::Multiscale final : public deconv::MinorAlgorithm {
 public:
  Multiscale(DeviceBackend& backend, const deconv::MultiscaleSetup& setup) : b_(backend), setup_(setup) {}

  deconv::MinorCycleResult run(const deconv::MinorCycleStep& step) override {
    Impl& m = b_.m_;
    b_.modelled_ = true;
    const long long values = num_stokes * m.pixels();
    if (!clean_) {
      std::vector<float> psf(m.pixels());
      m.download(psf.data(), m.psf.get(), m.pixels());
      SPIP_CUDA_CHECK(cudaStreamSynchronize(m.compute));
      clean_ = std::make_unique<deconv::MultiscaleClean>(
          psf.data(), m.geometry.size, setup_,
          [&m](int reach) { return make_scale_convolver(m.device, m.geometry.size, reach); });
    }
    std::vector<float>& residual = b_.residual_;
    std::vector<float>& model = b_.host_;
    residual.resize(values);
    model.resize(values);
    m.download(residual.data(), m.residual.get(), values);
    m.download(model.data(), m.model.get(), values);
    std::vector<std::uint8_t> mask_host(b_.masked_ ? m.pixels() : 0);
    if (b_.masked_)
      SPIP_CUDA_CHECK(cudaMemcpyAsync(mask_host.data(), m.mask.get(), mask_host.size(), cudaMemcpyDeviceToHost,
                                      m.compute));
    SPIP_CUDA_CHECK(cudaStreamSynchronize(m.compute));
    const deconv::MinorCycleResult result =
        clean_->run(residual.data(), model.data(), b_.masked_ ? mask_host.data() : nullptr, step.search, step.gain,
                    step.stop_level, step.max_iterations, step.divergence_level);
    b_.upload(m.residual.get(), residual);
    b_.upload(m.model.get(), model);
    return result;
  }
  const deconv::MultiscaleClean* multiscale() const override { return clean_.get(); }

 private:
  DeviceBackend& b_;
  const deconv::MultiscaleSetup setup_;
  std::unique_ptr<deconv::MultiscaleClean> clean_;  // made at the first minor cycle
};

std::unique_ptr<deconv::MinorAlgorithm> DeviceImager::DeviceBackend::hogbom() {
  return std::make_unique<PointClean>(*this, &detail::MinorCycle::run);
}

std::unique_ptr<deconv::MinorAlgorithm> DeviceImager::DeviceBackend::subminor() {
  return std::make_unique<PointClean>(*this, &detail::MinorCycle::run_subminor);
}

std::unique_ptr<deconv::MinorAlgorithm> DeviceImager::DeviceBackend::multiscale(const deconv::MultiscaleSetup& setup) {
  return std::make_unique<Multiscale>(*this, setup);
}

std::unique_ptr<deconv::CleanBackend> DeviceImager::clean_backend() {
  return std::make_unique<DeviceBackend>(*impl_);
}

KernelTimes DeviceImager::time_kernels() {
  Impl& m = *impl_;
  SPIP_CUDA_CHECK(cudaSetDevice(m.device));
  const Slot& slot = m.active();
  KernelTimes times;
  times.visibilities = static_cast<long long>(m.rows) * num_stokes;
  // Again on the weighted rows: the survey and the sort give the same points.
  timed(&times.prepare_ms, m.compute, [&] {
    m.summary = m.preparation->prepare(slot.uvw_m.get(), slot.freq_hz / speed_of_light, slot.weights.get(),
                                       static_cast<long long>(m.rows), m.compute, m.group);
  });
  const detail::LaneSource source{slot.vis.get(), slot.weights.get(), true};
  times.lanes = source.lanes();
  times.planes = m.summary.planes;
  times.support = m.stacking.kernel.support;
  m.grid_images(source, normalised(m.summary.weight_sum, m.dirty.get(), m.psf.get()), &times);
  m.predict_residual(&times);
  SPIP_CUDA_CHECK(cudaStreamSynchronize(m.compute));
  return times;
}

TransferStats DeviceImager::transfer_stats() const { return impl_->stats; }

}  // namespace spip::cuda
