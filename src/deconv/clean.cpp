#include "spip/deconv/clean.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <limits>

#include "spip/deconv/clean_math.hpp"

namespace spip::deconv {
namespace {

using imaging::num_stokes;

struct Peak {
  double value = -1;  // search value (Jy/beam)
  std::size_t pixel = 0;
};

Peak find_peak(PeakSearch search, const float* residual, std::size_t pixels) {
  float best_squared = -1;
  std::size_t best_pixel = 0;
#pragma omp parallel
  {
    float mine = -1;
    std::size_t at = 0;
#pragma omp for schedule(static) nowait
    for (std::size_t p = 0; p < pixels; ++p) {
      const float value = squared_search_value(search, residual, p, pixels);
      if (value > mine) {
        mine = value;
        at = p;
      }
    }
#pragma omp critical
    if (mine > best_squared || (mine == best_squared && at < best_pixel)) {
      best_squared = mine;
      best_pixel = at;
    }
  }
  return Peak{std::sqrt(static_cast<double>(best_squared)), best_pixel};
}

// residual_s -= flux_s * psf shifted to `pixel`, over the part of the PSF inside the
// image: rows and columns [lo, hi) where psf_pixel_under() is defined.
void subtract_component(float* residual, const float* psf, int n, std::size_t pixel, const float flux[num_stokes]) {
  const int px = static_cast<int>(pixel % n), py = static_cast<int>(pixel / n);
  const int dx = px - n / 2, dy = py - n / 2;
  const std::size_t plane = static_cast<std::size_t>(n) * n;
  const int y_lo = std::max(0, dy), y_hi = std::min(n, n + dy);
  const int x_lo = std::max(0, dx), x_hi = std::min(n, n + dx);
#pragma omp parallel for schedule(static)
  for (int y = y_lo; y < y_hi; ++y) {
    const float* psf_row = psf + psf_pixel_under(x_lo, y, px, py, n) - x_lo;
    for (int s = 0; s < num_stokes; ++s) {
      if (flux[s] == 0) continue;
      float* row = residual + s * plane + static_cast<std::size_t>(y) * n;
      for (int x = x_lo; x < x_hi; ++x) row[x] -= flux[s] * psf_row[x];
    }
  }
}

double residual_peak(const std::vector<float>& residual) {
  double peak = 0;
  for (float v : residual) peak = std::max(peak, static_cast<double>(std::abs(v)));
  return peak;
}

}  // namespace

double mad_sigma(const float* image, std::size_t count) {
  if (count == 0) return 0;
  std::vector<float> values(image, image + count);
  auto middle = values.begin() + count / 2;
  std::nth_element(values.begin(), middle, values.end());
  const float median = *middle;
  for (float& v : values) v = std::abs(v - median);
  std::nth_element(values.begin(), middle, values.end());
  return 1.4826 * *middle;
}

MinorCycleResult hogbom(float* residual, const float* psf, const imaging::ImageGeometry& geometry,
                        PeakSearch search, double gain, double stop_level, int max_iterations, float* model) {
  const std::size_t pixels = geometry.pixels();
  MinorCycleResult result;
  while (result.iterations < max_iterations) {
    const Peak peak = find_peak(search, residual, pixels);
    result.peak = peak.value;
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

ChannelImages image_channel(const imaging::ChannelImager& imager, const std::vector<std::complex<float>>& vis,
                            const CleanConfig& clean, const std::optional<imaging::Beam>& restoring_beam,
                            std::vector<float> psf) {
  const imaging::ImageGeometry& g = imager.geometry();
  const std::size_t pixels = g.pixels();
  ChannelImages out;
  out.dirty.resize(num_stokes * pixels);
  out.model.assign(num_stokes * pixels, 0.0f);
  imager.dirty(vis.data(), out.dirty.data());
  if (psf.size() == pixels) {
    out.psf = std::move(psf);
  } else {
    out.psf.resize(pixels);
    imager.psf(out.psf.data());
  }
  out.fitted_beam = imaging::fit_beam(out.psf.data(), g);
  out.restoring_beam = restoring_beam.value_or(out.fitted_beam);
  out.residual = out.dirty;

  std::vector<std::complex<float>> model_vis(vis.size()), residual_vis(vis.size());
  for (int cycle = 0; clean.niter > 0; ++cycle) {
    const double sigma = clean.auto_threshold > 0 ? search_noise(clean.peak, out.residual.data(), pixels) : 0.0;
    const MinorCycleLimits limits =
        minor_cycle_limits(clean, sigma, find_peak(clean.peak, out.residual.data(), pixels).value);
    out.search_noise = sigma;
    out.clean_threshold = limits.floor;
    out.threshold_reached = !limits.run;
    if (!limits.run || cycle == clean.max_major || out.iterations >= clean.niter) break;
    const MinorCycleResult minor = hogbom(out.residual.data(), out.psf.data(), g, clean.peak, clean.gain, limits.stop,
                                          clean.niter - out.iterations, out.model.data());
    out.iterations += minor.iterations;
    ++out.major_cycles;
    // Cotton-Schwab: subtract the model from the visibilities and re-image exactly.
    imager.predict(out.model.data(), model_vis.data());
    for (std::size_t k = 0; k < vis.size(); ++k) residual_vis[k] = vis[k] - model_vis[k];
    imager.dirty(residual_vis.data(), out.residual.data());
    if (minor.iterations == 0) break;
  }
  restore_channel(out, g);
  return out;
}

MinorCycleLimits minor_cycle_limits(const CleanConfig& clean, double sigma, double start) {
  const double floor = std::max(clean.threshold_jy, clean.auto_threshold * sigma);
  return MinorCycleLimits{start > floor, std::max(floor, (1.0 - clean.mgain) * start), floor};
}

double search_noise(PeakSearch search, const float* residual, std::size_t pixels) {
  const auto variance = [&](int s) { return std::pow(mad_sigma(residual + s * pixels, pixels), 2); };
  switch (search) {
    case PeakSearch::stokes_i: return std::sqrt(variance(0));
    case PeakSearch::linear_pol: return std::sqrt(variance(1) + variance(2));
    case PeakSearch::full_stokes: return std::sqrt(variance(0) + variance(1) + variance(2) + variance(3));
  }
  return 0;
}

void restore_channel(ChannelImages& out, const imaging::ImageGeometry& geometry) {
  const std::size_t pixels = geometry.pixels();
  out.restored = out.residual;
  for (int s = 0; s < num_stokes; ++s)
    imaging::restore(out.model.data() + s * pixels, geometry, out.restoring_beam, out.restored.data() + s * pixels);
  out.residual_sigma = mad_sigma(out.residual.data(), pixels);
  out.residual_peak = residual_peak(out.residual);
}

}  // namespace spip::deconv
