#include "spip/deconv/multiscale.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <utility>

#include "minor_loops.hpp"
#include "spip/error.hpp"

namespace spip::deconv {
namespace {

using detail::Component;
constexpr int num_stokes = 4;

// model_s += flux_s times the kernel about each component, where it falls on the image:
// the model stays exactly zero away from the components, as the auto-mask needs.
void stamp(const ScaleKernel& kernel, const std::vector<Component>& components, int n, float* model) {
  const std::size_t pixels = static_cast<std::size_t>(n) * n;
  for (const Component& c : components) {
    const int px = static_cast<int>(c.pixel % n), py = static_cast<int>(c.pixel / n);
    for (int dy = -kernel.radius; dy <= kernel.radius; ++dy) {
      const int y = py + dy;
      if (y < 0 || y >= n) continue;
      for (int dx = -kernel.radius; dx <= kernel.radius; ++dx) {
        const int x = px + dx;
        if (x < 0 || x >= n) continue;
        const float k = kernel.at(dx, dy);
        for (int s = 0; s < num_stokes; ++s) model[s * pixels + static_cast<std::size_t>(y) * n + x] += c.flux[s] * k;
      }
    }
  }
}

}  // namespace

ScaleKernel scale_kernel(double scale) {
  ScaleKernel kernel;
  if (scale <= 0) {
    kernel.values = {1.0f};
    return kernel;
  }
  kernel.radius = scale_radius(scale);
  const int side = 2 * kernel.radius + 1;
  const double window = kernel.radius + 1;  // the Hann window's zero
  kernel.values.resize(static_cast<std::size_t>(side) * side);
  double sum = 0;
  for (int dy = -kernel.radius; dy <= kernel.radius; ++dy)
    for (int dx = -kernel.radius; dx <= kernel.radius; ++dx) {
      const double r = std::hypot(dx, dy);
      const double hann = r < window ? std::pow(std::cos(std::numbers::pi * r / (2 * window)), 2) : 0.0;
      const double paraboloid = r < scale ? 1 - (r / scale) * (r / scale) : 0.0;
      const double value = hann * paraboloid;
      kernel.values[static_cast<std::size_t>(dy + kernel.radius) * side + dx + kernel.radius] = static_cast<float>(value);
      sum += value;
    }
  for (float& v : kernel.values) v = static_cast<float>(v / sum);
  return kernel;
}

int scale_radius(double scale) { return scale > 0 ? static_cast<int>(std::ceil(scale / 2)) : 0; }

std::vector<double> auto_scales(double beam_fwhm_pixels, int image_size) {
  std::vector<double> scales{0.0};
  // WSClean 3.1 and Radler count from twice the beam, but the count's first step is
  // scale 0, and the doubling comes before the first wide scale: four times the beam.
  for (double scale = 4 * beam_fwhm_pixels; 2 * scale_radius(scale) + 1 <= image_size / 2; scale *= 2)
    scales.push_back(scale);
  return scales;
}

std::vector<double> scale_bias_factors(const std::vector<double>& scales, double scale_bias, double reference) {
  std::vector<double> factors;
  for (double s : scales) factors.push_back(s > 0 ? std::pow(scale_bias, -std::log2(s / reference)) : 1.0);
  return factors;
}

MultiscaleClean::MultiscaleClean(const float* psf, int n, const MultiscaleSetup& setup,
                                 const ConvolverMaker& make_convolver)
    : n_(n), psf_(psf, psf + static_cast<std::size_t>(n) * n), planes_(std::make_unique<SubtractionPlanes>()) {
  std::vector<double> scales = setup.scales;
  if (std::find(scales.begin(), scales.end(), 0.0) == scales.end()) scales.push_back(0.0);
  std::sort(scales.begin(), scales.end());
  const std::vector<double> bias = scale_bias_factors(scales, setup.scale_bias, setup.bias_reference);
  const int widest = scale_kernel(scales.back()).radius;
  if (2 * widest + 1 > n / 2)
    SPIP_THROW(ConfigError, "clean.scales: scale " + std::to_string(scales.back()) +
                                " pixels does not fit in half the image (" + std::to_string(n / 2) + " pixels)");
  // The widest product is the PSF with one kernel (the components' subtraction): it
  // reaches the widest radius beyond the PSF. The twice-convolved PSF (the PSF as an
  // image, a kernel twice over as the filter) needs FFTs of only N plus twice the radius,
  // less, since every kernel fits in N/4. The residual's smoothing, the passes' largest
  // cost, needs only N plus the radius: a second convolver of about half the cells holds
  // the kernels again.
  convolver_ = make_convolver(widest);
  smoother_ = make_convolver(kernel_reach(n, widest));
  psf_filter_ = convolver_->add_filter(psf_.data(), n);
  for (std::size_t k = 0; k < scales.size(); ++k) {
    Scale scale;
    scale.size = scales[k];
    scale.bias = bias[k];
    scale.kernel = scale_kernel(scale.size);
    if (scale.size == 0) {
      scale.twice = psf_;
      scales_.push_back(std::move(scale));
      continue;
    }
    const int side = 2 * scale.kernel.radius + 1;
    scale.filter = convolver_->add_filter(scale.kernel.values.data(), side);
    scale.smoothing = smoother_->add_filter(scale.kernel.values.data(), side);
    std::vector<float> once(psf_.size());
    scale.twice.resize(psf_.size());
    convolver_->convolve(psf_.data(), 1, {{scale.filter}, {scale.filter, scale.filter}}, {once.data(), scale.twice.data()});
    scale.psf_peak = once[static_cast<std::size_t>(n / 2) * n + n / 2];
    if (!(scale.psf_peak >= min_psf_response)) continue;
    for (float& v : scale.twice) v /= scale.psf_peak;
    scales_.push_back(std::move(scale));
  }
  iterations_.assign(scales_.size(), 0);
}

MultiscaleClean::~MultiscaleClean() = default;

MultiscaleClean::ConvolverShape MultiscaleClean::convolver_shape(std::vector<double> scales, int n) {
  if (scales.empty()) {
    const int widest = (n / 2 - 1) / 2;
    return {static_cast<int>(auto_scales(1.0, n).size()), widest, kernel_reach(n, widest)};
  }
  if (std::find(scales.begin(), scales.end(), 0.0) == scales.end()) scales.push_back(0.0);
  const int widest = scale_radius(*std::max_element(scales.begin(), scales.end()));
  return {static_cast<int>(scales.size()), widest, kernel_reach(n, widest)};
}

double MultiscaleClean::bytes_per_pixel(std::vector<double> scales, int n, bool host_convolver) {
  const ConvolverShape shape = convolver_shape(std::move(scales), n);
  const double count = shape.filters;  // one scale per filter: 0 (the PSF's) and each wider one
  const double images = sizeof(float) * (1 + count + num_stokes * (count - 1)) + count;
  const double convolver = host_convolver ? host_convolver_bytes_per_pixel(n, shape.reach, shape.filters) +
                                                host_convolver_bytes_per_pixel(n, shape.smoothing_reach, shape.filters - 1)
                                          : 0;
  return images + convolver + subtraction_planes_bytes_per_pixel + detail::active_set_bytes_per_pixel;
}

std::vector<double> MultiscaleClean::scales() const {
  std::vector<double> sizes;
  for (const Scale& s : scales_) sizes.push_back(s.size);
  return sizes;
}

std::vector<float> MultiscaleClean::cross_term(int j, int k) {
  std::vector<int> product;
  for (int s : {j, k})
    if (scales_[s].filter >= 0) product.push_back(scales_[s].filter);
  std::vector<float> out = psf_;
  if (!product.empty()) convolver_->convolve(psf_.data(), 1, {product}, {out.data()});
  return out;
}

MinorCycleResult MultiscaleClean::run(float* residual, float* model, const std::uint8_t* mask, PeakSearch search_mode,
                                      double gain, double stop_level, int max_iterations, double divergence_level) {
  const std::size_t pixels = psf_.size();
  const int count = scale_count();
  // The residual convolved with each kernel; scale 0's is the residual itself.
  std::vector<std::vector<float>> smoothed(count);
  for (int k = 0; k < count; ++k)
    if (scales_[k].filter >= 0) smoothed[k].resize(num_stokes * pixels);
  auto image_of = [&](int k) { return scales_[k].filter < 0 ? residual : smoothed[k].data(); };
  // Each scale's search pixels: the mask's (or all), less a border of its kernel's radius.
  std::vector<std::vector<std::uint8_t>> search(count);
  auto search_mask = [&](int k) -> const std::uint8_t* {
    if (scales_[k].kernel.radius == 0) return mask;
    std::vector<std::uint8_t>& m = search[k];
    if (m.empty()) {
      const int r = scales_[k].kernel.radius;
      m.assign(pixels, 0);
      for (int y = r; y < n_ - r; ++y)
        for (int x = r; x < n_ - r; ++x) {
          const std::size_t p = static_cast<std::size_t>(y) * n_ + x;
          m[p] = mask ? mask[p] : 1;
        }
    }
    return m.data();
  };
  // WSClean's active scales: a scale whose last biased peak fell well below the best
  // (by more than the loop gain) is not convolved again until the best comes near it.
  std::vector<double> peak(count, 0.0);
  std::vector<bool> active(count, true);
  MinorCycleResult result;
  while (result.iterations < max_iterations) {
    if (divergence_level > 0) {
      const double raw = detail::find_peak(search_mode, residual, pixels, mask).value;
      if (!(raw <= divergence_level)) {
        result.peak = raw;
        result.diverged = true;
        break;
      }
    }
    std::vector<std::vector<int>> products;
    std::vector<float*> outputs;
    for (int k = 0; k < count; ++k)
      if (active[k] && scales_[k].filter >= 0) {
        products.push_back({scales_[k].smoothing});
        outputs.push_back(smoothed[k].data());
      }
    if (!products.empty()) smoother_->convolve(residual, num_stokes, products, outputs);
    int best = -1;
    for (int k = 0; k < count; ++k) {
      if (!active[k]) continue;
      peak[k] = scales_[k].bias * detail::find_peak(search_mode, image_of(k), pixels, search_mask(k)).value;
      if (best < 0 || peak[k] > peak[best]) best = k;
    }
    result.peak = peak[best];
    if (!(peak[best] > stop_level)) {
      // Done only once every scale has been looked at on this residual.
      if (std::all_of(active.begin(), active.end(), [](bool a) { return a; })) break;
      active.assign(count, true);
      continue;
    }
    for (int k = 0; k < count; ++k) active[k] = k == best || peak[k] > (1 - gain) * peak[best];
    const Scale& scale = scales_[best];
    const double level = std::max(stop_level, (1 - subminor_gain) * peak[best]) / scale.bias;
    detail::ActiveSet set = detail::select_active(search_mode, image_of(best), pixels, n_, level, search_mask(best));
    const int before = result.iterations;
    // The kernels sum to 1, so a smoothed residual past the level means the residual is.
    std::vector<Component> found =
        detail::clean_active_set(set, {scale.twice.data(), n_}, search_mode, gain, max_iterations - result.iterations,
                                 result.iterations, divergence_level, &result.diverged);
    if (found.empty()) break;
    iterations_[best] += result.iterations - before;
    // A component of flux F at this scale lifts the smoothed residual by F times the
    // twice-convolved PSF, which the loop holds over psf_peak: F = its value / psf_peak.
    for (Component& c : found)
      for (float& f : c.flux) f /= scale.psf_peak;
    stamp(scale.kernel, found, n_, model);
    if (scale.filter < 0)
      detail::subtract_components(found, convolver_.get(), {psf_filter_}, {psf_.data(), n_}, n_, residual, *planes_);
    else
      detail::subtract_components(found, convolver_.get(), {psf_filter_, scale.filter}, {}, n_, residual,
                                  *planes_);
    if (result.diverged) {
      result.peak = detail::find_peak(search_mode, residual, pixels, mask).value;
      break;
    }
  }
  *planes_ = {};  // not held through the prediction and imaging that follow
  return result;
}

}  // namespace spip::deconv
