#include "spip/deconv/clean.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <unordered_map>

#include "minor_loops.hpp"
#include "spip/deconv/convolver.hpp"
#include "spip/deconv/major_cycle.hpp"
#include "spip/deconv/multiscale.hpp"
#include "spip/deconv/clean_math.hpp"

namespace spip::deconv {
namespace detail {

using imaging::num_stokes;

Peak find_peak(PeakSearch search, const float* residual, std::size_t pixels, const std::uint8_t* mask) {
  PeakCandidate best{-1.0f, 0};
#pragma omp parallel
  {
    PeakCandidate mine{-1.0f, 0};
#pragma omp for schedule(static) nowait
    for (std::size_t p = 0; p < pixels; ++p) {
      const float value = mask && !mask[p] ? 0.0f : squared_search_value(search, residual, p, pixels);
      if (value > mine.value) mine = {value, static_cast<long long>(p)};
    }
#pragma omp critical
    best = stronger_peak(best, mine);
  }
  return Peak{std::sqrt(static_cast<double>(best.value)), static_cast<std::size_t>(best.pixel)};
}

void subtract_component(float* residual, MinorPsf psf, int n, std::size_t pixel, const float flux[4]) {
  const int px = static_cast<int>(pixel % n), py = static_cast<int>(pixel / n);
  const int dx = px - psf.side / 2, dy = py - psf.side / 2;
  const std::size_t plane = static_cast<std::size_t>(n) * n;
  const int y_lo = std::max(0, dy), y_hi = std::min(n, psf.side + dy);
  const int x_lo = std::max(0, dx), x_hi = std::min(n, psf.side + dx);
#pragma omp parallel for schedule(static)
  for (int y = y_lo; y < y_hi; ++y) {
    const float* psf_row = psf.data + psf_pixel_under(x_lo, y, px, py, psf.side) - x_lo;
    for (int s = 0; s < num_stokes; ++s) {
      if (flux[s] == 0) continue;
      float* row = residual + s * plane + static_cast<std::size_t>(y) * n;
      for (int x = x_lo; x < x_hi; ++x) row[x] -= flux[s] * psf_row[x];
    }
  }
}

namespace {
// At most this many pixels take part, so that a sub-minor iteration costs a small,
// fixed fraction of a full-image one however much emission lies above the stop.
std::size_t max_active_pixels(std::size_t pixels) { return std::max<std::size_t>(pixels / 16, 1024); }
}  // namespace

ActiveSet select_active(PeakSearch search, const float* residual, std::size_t pixels, int n, double stop_level,
                        const std::uint8_t* mask) {
  const float stop_squared = static_cast<float>(stop_level * stop_level);
  const auto is_above = [&](std::size_t p) {
    return (!mask || mask[p]) && squared_search_value(search, residual, p, pixels) > stop_squared;
  };
  // Counted first, so that the list holds exactly its pixels: growing it could hold
  // three times as many bytes at once (active_set_bytes_per_pixel).
  std::size_t above_count = 0;
  for (std::size_t p = 0; p < pixels; ++p) above_count += is_above(p) ? 1 : 0;
  std::vector<std::pair<float, std::size_t>> above;
  above.reserve(above_count);
  for (std::size_t p = 0; p < pixels; ++p)
    if (is_above(p)) above.emplace_back(squared_search_value(search, residual, p, pixels), p);
  ActiveSet set;
  set.level = stop_level;
  const std::size_t cap = max_active_pixels(pixels);
  if (above.size() > cap) {
    // Keep the brightest `cap`; the loop then stops at the brightest one left out.
    std::nth_element(above.begin(), above.begin() + cap, above.end(), std::greater<>());
    set.level = std::sqrt(static_cast<double>(above[cap].first));
    above.resize(cap);
  }
  const std::size_t count = above.size();
  set.values.resize(num_stokes * count);
  set.pixel.reserve(count);
  set.x.reserve(count);
  set.y.reserve(count);
  for (const auto& [value, p] : above) {
    const std::size_t i = set.pixel.size();
    set.pixel.push_back(p);
    set.x.push_back(static_cast<int>(p % n));
    set.y.push_back(static_cast<int>(p / n));
    for (int s = 0; s < num_stokes; ++s) set.values[s * count + i] = residual[s * pixels + p];
  }
  return set;
}

std::vector<Component> clean_active_set(ActiveSet& set, MinorPsf psf, PeakSearch search, double gain,
                                        int max_iterations, int& iterations, double divergence_level, bool* diverged) {
  const std::size_t count = set.size();
  std::vector<Component> components;
  std::unordered_map<std::size_t, std::size_t> component_of;
  int done = 0;
  while (done < max_iterations) {
    float best = -1;
    std::size_t at = 0;
    for (std::size_t i = 0; i < count; ++i) {
      const float value = squared_search_value(search, set.values.data(), i, count);
      if (value > best) {
        best = value;
        at = i;
      }
    }
    if (best < 0) break;  // an empty set
    if (divergence_level > 0 && !(std::sqrt(static_cast<double>(best)) <= divergence_level)) {
      *diverged = true;
      break;
    }
    if (!(std::sqrt(static_cast<double>(best)) > set.level)) break;
    float flux[num_stokes];
    for (int s = 0; s < num_stokes; ++s) flux[s] = static_cast<float>(gain * set.values[s * count + at]);
    const auto [slot, fresh] = component_of.try_emplace(set.pixel[at], components.size());
    if (fresh) components.push_back(Component{set.pixel[at], {}});
    for (int s = 0; s < num_stokes; ++s) components[slot->second].flux[s] += flux[s];
    const int px = set.x[at], py = set.y[at];
#pragma omp parallel for schedule(static) if (count > 8192)
    for (std::size_t i = 0; i < count; ++i) {
      const long long under = psf_pixel_under(set.x[i], set.y[i], px, py, psf.side);
      if (under < 0) continue;
      for (int s = 0; s < num_stokes; ++s) set.values[s * count + i] -= flux[s] * psf.data[under];
    }
    ++done;
  }
  iterations += done;
  return components;
}

void subtract_components(const std::vector<Component>& components, Convolver* convolver,
                         const std::vector<int>& product, MinorPsf psf, int n, float* residual,
                         SubtractionPlanes& planes) {
  if (psf.data && components.size() <= direct_subtraction_limit) {
    for (const Component& c : components) subtract_component(residual, psf, n, c.pixel, c.flux.data());
    return;
  }
  const std::size_t pixels = static_cast<std::size_t>(n) * n;
  std::vector<float>& deltas = planes.deltas;
  std::vector<float>& response = planes.response;
  deltas.assign(num_stokes * pixels, 0.0f);
  response.resize(num_stokes * pixels);
  for (const Component& c : components)
    for (int s = 0; s < num_stokes; ++s) deltas[s * pixels + c.pixel] += c.flux[s];
  convolver->convolve(deltas.data(), num_stokes, {product}, {response.data()});
#pragma omp parallel for schedule(static)
  for (std::size_t i = 0; i < response.size(); ++i) residual[i] -= response[i];
}

}  // namespace detail

namespace {

using namespace detail;

// clean.auto_mask's mask: every pixel that holds a component in any Stokes plane.
std::vector<std::uint8_t> auto_mask_of(const std::vector<float>& model, std::size_t pixels) {
  std::vector<std::uint8_t> mask(pixels, 0);
  for (int s = 0; s < num_stokes; ++s)
    for (std::size_t p = 0; p < pixels; ++p) mask[p] |= model[s * pixels + p] != 0;
  return mask;
}

// A search peak above the divergence level (0: none), or not a number.
bool diverging(double peak, double divergence_level) {
  return divergence_level > 0 && !(peak <= divergence_level);
}

// How much further than an image-sized PSF one of `side` reaches, for the convolver.
int psf_reach(int side, int n) { return std::max(0, (side - n) / 2); }

// subminor_hogbom() with the PSF's convolution kept by the caller: it is built on first
// need and serves every major cycle of the channel.
MinorCycleResult subminor_cycles(float* residual, MinorPsf psf, const imaging::ImageGeometry& geometry,
                                 PeakSearch search, double gain, double stop_level, int max_iterations, float* model,
                                 const std::uint8_t* mask, double divergence_level, PsfConvolution& convolution) {
  const std::size_t pixels = geometry.pixels();
  const int n = geometry.size;
  MinorCycleResult result;
  while (result.iterations < max_iterations) {
    result.peak = find_peak(search, residual, pixels, mask).value;
    if (diverging(result.peak, divergence_level)) {
      result.diverged = true;
      break;
    }
    if (!(result.peak > stop_level)) break;
    ActiveSet set = select_active(search, residual, pixels, n, stop_level, mask);
    const std::vector<Component> components = clean_active_set(
        set, psf, search, gain, max_iterations - result.iterations, result.iterations, divergence_level, &result.diverged);
    for (const Component& c : components)
      for (int s = 0; s < num_stokes; ++s) model[s * pixels + c.pixel] += c.flux[s];
    if (components.empty()) break;
    if (!convolution.convolver && components.size() > direct_subtraction_limit) {
      convolution.convolver = make_host_convolver(n, psf_reach(psf.side, n));
      convolution.psf = convolution.convolver->add_filter(psf.data, psf.side);
    }
    subtract_components(components, convolution.convolver.get(), {convolution.psf}, psf, n, residual,
                        convolution.planes);
    if (result.diverged) {  // within the pass: the model and residual agree, the peak is the residual's
      result.peak = find_peak(search, residual, pixels, mask).value;
      break;
    }
  }
  convolution.planes = {};  // not held through the prediction and imaging that follow
  return result;
}

// An unsigned key that orders as the float does (-0 just below +0).
std::uint32_t order_key(float v) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  return bits & 0x80000000u ? ~bits : bits | 0x80000000u;
}

// The k-th smallest of value(0) .. value(count - 1), the value std::nth_element puts at
// k, without sorting or copying them all: a histogram of the keys' top 16 bits finds
// the bin that holds it, and nth_element runs among that bin's values only. Two passes
// over the values; a map of noise has a few thousand values in the bin at most.
template <class Value>
float kth_smallest(std::size_t count, std::size_t k, Value value) {
  constexpr int shift = 16;
  std::vector<std::size_t> histogram(std::size_t{1} << (32 - shift), 0);
  for (std::size_t i = 0; i < count; ++i) ++histogram[order_key(value(i)) >> shift];
  std::size_t below = 0, bin = 0;
  while (below + histogram[bin] <= k) below += histogram[bin++];
  std::vector<float> in_bin;
  in_bin.reserve(histogram[bin]);
  for (std::size_t i = 0; i < count; ++i) {
    const float v = value(i);
    if (order_key(v) >> shift == bin) in_bin.push_back(v);
  }
  const auto at = in_bin.begin() + static_cast<std::ptrdiff_t>(k - below);
  std::nth_element(in_bin.begin(), at, in_bin.end());
  return *at;
}

double residual_peak(const std::vector<float>& residual) {
  double peak = 0;
  for (float v : residual) peak = std::max(peak, static_cast<double>(std::abs(v)));
  return peak;
}

}  // namespace

double minor_psf_bytes_per_pixel(const imaging::ImageGeometry& geometry) {
  const double padding = static_cast<double>(geometry.grid_size) / geometry.size;
  return 4 * sizeof(float) + 4 * (32 + sizeof(std::complex<float>) * padding * padding);
}

double minor_psf_bytes_per_row(const imaging::ImageGeometry& geometry, double accuracy) {
  const imaging::ImageGeometry wide = imaging::ImageGeometry::make(
      minor_psf_side(geometry.size), geometry.cell_rad, static_cast<double>(geometry.grid_size) / geometry.size);
  constexpr double gridded = 3 * sizeof(double) + 4 * sizeof(float) + sizeof(std::complex<float>) + sizeof(float);
  return imaging::Gridder::bytes_per_visibility(wide, accuracy, false) + gridded;
}

double subminor_bytes_per_pixel(int n) {
  return host_convolver_bytes_per_pixel(n, psf_reach(minor_psf_side(n), n), 1) + subtraction_planes_bytes_per_pixel +
         detail::active_set_bytes_per_pixel;
}

const char* clean_stop_name(CleanStop stop) {
  switch (stop) {
    case CleanStop::none: return "none";
    case CleanStop::threshold: return "threshold";
    case CleanStop::niter: return "niter";
    case CleanStop::max_major: return "max_major";
    case CleanStop::no_components: return "no_components";
    case CleanStop::diverged: return "diverged";
    case CleanStop::degenerate_psf: return "degenerate_psf";
  }
  return "none";
}

std::optional<PsfSidelobe> degenerate_sidelobe(const float* psf, int n) {
  // Squared distances in integers: a square root per pixel of a 1024^2 PSF cost a
  // channel ~15 ms, as much as the GPU's whole imaging of it.
  const auto distance_sq = [n](int x, int y) {
    const long long dx = x - n / 2, dy = y - n / 2;
    return dx * dx + dy * dy;
  };
  // The nearest pixel below half the peak, ring by ring (squares about the centre) until
  // no further ring can hold a nearer one: a few rings for any PSF with a lobe.
  long long half_width_sq = std::numeric_limits<long long>::max();
  const auto consider = [&](long long x, long long y) {
    if (x < 0 || y < 0 || x >= n || y >= n) return;
    if (psf[static_cast<std::size_t>(y) * n + x] < 0.5f)
      half_width_sq = std::min(half_width_sq, distance_sq(static_cast<int>(x), static_cast<int>(y)));
  };
  const long long c = n / 2;
  for (long long r = 0; r <= n && r * r <= half_width_sq; ++r)
    for (long long t = -r; t <= r; ++t) {
      consider(c + t, c - r);
      consider(c + t, c + r);
      if (t != -r && t != r) {
        consider(c - r, c + t);
        consider(c + r, c + t);
      }
    }
  // An undersampled lobe's neighbours may sit near the peak; two pixels out they cannot
  // (1.5 pixels: a squared distance above 2.25, so of 3 or more).
  const long long beyond_sq = std::max(half_width_sq, 2LL);
  const float peak = psf[static_cast<std::size_t>(n / 2) * n + n / 2];
  // The highest such pixel, of equals the first in row order (stronger_peak, the
  // components' rule), on the process's threads: a GPU makes a channel's PSF in less
  // time than one thread takes to read it.
  PeakCandidate best{-1.0f, -1};
#pragma omp parallel
  {
    PeakCandidate mine{-1.0f, -1};
#pragma omp for schedule(static) nowait
    for (int y = 0; y < n; ++y)
      for (int x = 0; x < n; ++x) {
        const float at = psf[static_cast<std::size_t>(y) * n + x];
        if (peak > 0 && at < 0.99f * peak) continue;  // far from the test below, without a division
        const float value = at / peak;
        if (value >= 1 - 1e-3 && distance_sq(x, y) > beyond_sq)
          mine = stronger_peak(mine, {value, static_cast<long long>(y) * n + x});
      }
#pragma omp critical(spip_sidelobe_merge)
    best = stronger_peak(best, mine);
  }
  if (best.pixel < 0) return std::nullopt;
  const auto x = static_cast<int>(best.pixel % n), y = static_cast<int>(best.pixel / n);
  return PsfSidelobe{best.value, std::sqrt(static_cast<double>(distance_sq(x, y)))};
}

// On the process's threads, as degenerate_sidelobe(), and over the far pixels alone.
double far_sidelobe(const float* psf, int n) {
  const int centre = n / 2, reach = n / 4;
  double far = 0;
#pragma omp parallel for schedule(static) reduction(max : far)
  for (int y = 0; y < n; ++y) {
    const float* row = psf + static_cast<std::size_t>(y) * n;
    float most = 0;
    const auto scan = [&](int from, int to) {
      for (int x = from; x < to; ++x) most = std::max(most, std::abs(row[x]));
    };
    if (std::abs(y - centre) >= reach) {
      scan(0, n);
    } else {  // the pixels at least `reach` left and right of the centre
      scan(0, centre - reach + 1);
      scan(centre + reach, n);
    }
    far = std::max(far, static_cast<double>(most));
  }
  return far;
}

double mad_sigma(const float* image, std::size_t count) {
  if (count == 0) return 0;
  const float median = kth_smallest(count, count / 2, [image](std::size_t i) { return image[i]; });
  const float deviation =
      kth_smallest(count, count / 2, [image, median](std::size_t i) { return std::abs(image[i] - median); });
  return sigma_per_mad * deviation;
}

MinorCycleResult hogbom(float* residual, MinorPsf psf, const imaging::ImageGeometry& geometry, PeakSearch search,
                        double gain, double stop_level, int max_iterations, float* model, const std::uint8_t* mask,
                        double divergence_level) {
  const std::size_t pixels = geometry.pixels();
  MinorCycleResult result;
  while (result.iterations < max_iterations) {
    const Peak peak = find_peak(search, residual, pixels, mask);
    result.peak = peak.value;
    if (diverging(peak.value, divergence_level)) {
      result.diverged = true;
      break;
    }
    if (!(peak.value > stop_level)) break;
    float flux[num_stokes];
    for (int s = 0; s < num_stokes; ++s) {
      flux[s] = static_cast<float>(gain * residual[s * pixels + peak.pixel]);
      model[s * pixels + peak.pixel] += flux[s];
    }
    subtract_component(residual, psf, geometry.size, peak.pixel, flux);
    ++result.iterations;
  }
  return result;
}

MinorCycleResult subminor_hogbom(float* residual, MinorPsf psf, const imaging::ImageGeometry& geometry,
                                 PeakSearch search, double gain, double stop_level, int max_iterations, float* model,
                                 const std::uint8_t* mask, double divergence_level) {
  PsfConvolution convolution;
  return subminor_cycles(residual, psf, geometry, search, gain, stop_level, max_iterations, model, mask,
                         divergence_level, convolution);
}

HostCleanBackend::HostCleanBackend(const imaging::ChannelImager& imager, const std::vector<std::complex<float>>& vis,
                                   const imaging::RowGroup* group)
    : imager_(imager), vis_(vis), group_(group) {}

HostCleanBackend::~HostCleanBackend() = default;

std::vector<float> HostCleanBackend::invert() {
  const std::size_t pixels = imager_.geometry().pixels();
  residual_.resize(num_stokes * pixels);
  image_residual(vis_.data());
  dirty_ = residual_;
  psf_.resize(pixels);
  imager_.psf(psf_.data());
  if (group_) group_->sum(psf_);
  model_.assign(num_stokes * pixels, 0.0f);
  return psf_;
}

double HostCleanBackend::peak(PeakSearch search) {
  return find_peak(search, residual_.data(), psf_.size(), mask_.empty() ? nullptr : mask_.data()).value;
}

double HostCleanBackend::noise(PeakSearch search) { return search_noise(search, residual_.data(), psf_.size()); }

HostCleanBackend::MinorImages HostCleanBackend::minor_images(const MinorCycleStep& step) {
  const int n = imager_.geometry().size;
  return {residual_.data(), model_.data(), mask_.empty() ? nullptr : mask_.data(),
          step.whole_image_psf ? MinorPsf{wide_psf_.data(), minor_psf_side(n)} : MinorPsf{psf_.data(), n}};
}

class HostCleanBackend::Hogbom final : public MinorAlgorithm {
 public:
  explicit Hogbom(HostCleanBackend& images) : images_(images) {}
  MinorCycleResult run(const MinorCycleStep& step) override {
    const MinorImages on = images_.minor_images(step);
    return deconv::hogbom(on.residual, on.psf, images_.imager_.geometry(), step.search, step.gain, step.stop_level,
                          step.max_iterations, on.model, on.mask, step.divergence_level);
  }

 private:
  HostCleanBackend& images_;
};

// The sub-minor loop, with its PSF convolution kept over the channel's major cycles.
class HostCleanBackend::Subminor final : public MinorAlgorithm {
 public:
  explicit Subminor(HostCleanBackend& images) : images_(images) {}
  MinorCycleResult run(const MinorCycleStep& step) override {
    const MinorImages on = images_.minor_images(step);
    return subminor_cycles(on.residual, on.psf, images_.imager_.geometry(), step.search, step.gain, step.stop_level,
                           step.max_iterations, on.model, on.mask, step.divergence_level, convolution_);
  }

 private:
  HostCleanBackend& images_;
  PsfConvolution convolution_;
};

// Multiscale CLEAN on the image's PSF, its scales made at the first minor cycle.
class HostCleanBackend::Multiscale final : public MinorAlgorithm {
 public:
  Multiscale(HostCleanBackend& images, const MultiscaleSetup& setup) : images_(images), setup_(setup) {}
  MinorCycleResult run(const MinorCycleStep& step) override {
    const int n = images_.imager_.geometry().size;
    if (!clean_)
      clean_ = std::make_unique<MultiscaleClean>(images_.psf_.data(), n, setup_,
                                                 [n](int reach) { return make_host_convolver(n, reach); });
    const MinorImages on = images_.minor_images(step);
    return clean_->run(on.residual, on.model, on.mask, step.search, step.gain, step.stop_level, step.max_iterations,
                       step.divergence_level);
  }
  const MultiscaleClean* multiscale() const override { return clean_.get(); }

 private:
  HostCleanBackend& images_;
  const MultiscaleSetup setup_;
  std::unique_ptr<MultiscaleClean> clean_;
};

std::unique_ptr<MinorAlgorithm> HostCleanBackend::hogbom() { return std::make_unique<Hogbom>(*this); }

std::unique_ptr<MinorAlgorithm> HostCleanBackend::subminor() { return std::make_unique<Subminor>(*this); }

std::unique_ptr<MinorAlgorithm> HostCleanBackend::multiscale(const MultiscaleSetup& setup) {
  return std::make_unique<Multiscale>(*this, setup);
}

void HostCleanBackend::make_whole_image_psf() { wide_psf_ = imager_.psf(minor_psf_side(imager_.geometry().size), group_); }

void HostCleanBackend::model_from_leader() { group_->from_leader(model_); }

// Cotton-Schwab: the model subtracted from the visibilities, and the residual imaged exactly.
void HostCleanBackend::subtract_model() {
  residual_vis_.resize(vis_.size());
  imager_.predict(model_.data(), residual_vis_.data());
  for (std::size_t k = 0; k < vis_.size(); ++k) residual_vis_[k] = vis_[k] - residual_vis_[k];
  image_residual(residual_vis_.data());
}

void HostCleanBackend::image_residual(const std::complex<float>* vis) {
  imager_.dirty(vis, residual_.data());
  if (group_) group_->sum(residual_);
}

void HostCleanBackend::mask_model_pixels() { mask_ = auto_mask_of(model_, psf_.size()); }

void HostCleanBackend::fetch(ChannelImages& out) {
  out.dirty = std::move(dirty_);
  out.model = std::move(model_);
  out.residual = std::move(residual_);
  set_residual_statistics(out);
}

ChannelImages image_channel(const imaging::ChannelImager& imager, const std::vector<std::complex<float>>& vis,
                            const CleanConfig& clean) {
  HostCleanBackend backend(imager, vis);
  return clean_channel(backend, clean, imager.geometry(), 0.0);
}

MinorCycleLimits minor_cycle_limits(const CleanConfig& clean, double sigma, double start) {
  const double floor = std::max(clean.threshold_jy, clean.auto_threshold * sigma);
  const double stop = std::max(floor, (1.0 - clean.mgain) * start);
  return MinorCycleLimits{start > floor, stop, floor, stop == floor};
}

double search_noise(PeakSearch search, const float* residual, std::size_t pixels) {
  const std::vector<int> stokes = search == PeakSearch::stokes_i     ? std::vector<int>{0}
                                  : search == PeakSearch::linear_pol ? std::vector<int>{1, 2}
                                                                     : std::vector<int>{0, 1, 2, 3};
  // One parameter per thread: each estimate is a pass of nth_element over the image.
  std::vector<double> variance(stokes.size());
#pragma omp parallel for schedule(dynamic)
  for (std::size_t i = 0; i < stokes.size(); ++i) variance[i] = std::pow(mad_sigma(residual + stokes[i] * pixels, pixels), 2);
  return std::sqrt(std::accumulate(variance.begin(), variance.end(), 0.0));
}

void set_residual_statistics(ChannelImages& out) {
  out.residual_sigma = mad_sigma(out.residual.data(), out.psf.size());
  out.residual_peak = residual_peak(out.residual);
}

std::vector<float> restore_channel(const float* model, const float* residual, const imaging::ImageGeometry& geometry,
                                   const imaging::Beam& beam) {
  const std::size_t pixels = geometry.pixels();
  std::vector<float> restored(residual, residual + num_stokes * pixels);
  imaging::restore(model, geometry, beam, restored.data(), num_stokes);
  return restored;
}

}  // namespace spip::deconv
