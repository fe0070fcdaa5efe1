#include "product_compare.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <vector>

#include "spip/fits/fits_image.hpp"

namespace spip::test {

double peak_of(const std::vector<float>& values) {
  double peak = 0;
  for (float v : values)
    if (std::isfinite(v)) peak = std::max(peak, static_cast<double>(std::abs(v)));
  return peak;
}

double median_of(std::vector<float> values) {
  std::erase_if(values, [](float v) { return !std::isfinite(v); });
  if (values.empty()) return 0;
  std::nth_element(values.begin(), values.begin() + values.size() / 2, values.end());
  return values[values.size() / 2];
}

namespace {

namespace fs = std::filesystem;

// The angle is derotated to lambda^2 = 0 by phi lambda0^2, so that it carries the
// depth's differences times lambda0^2: it is judged on the largest derotation of the
// pixels compared (polarised intensity above `bright`), as the depth on its largest.
double derotation(const fs::path& reference, const std::vector<float>& pi, double bright) {
  const auto phi = spip::fits::read_image((reference / "demo-peak-phi.fits").string());
  double largest = 0;
  for (std::size_t i = 0; i < phi.data.size(); ++i)
    if (pi[i] > bright && std::isfinite(phi.data[i]))
      largest = std::max(largest, std::abs(static_cast<double>(phi.data[i])));
  return phi.number("LAMSQ0") * largest;
}

}  // namespace

// Every product of `grouped` against `reference`, to `tolerance` of its scale. Everywhere:
// the channel images (dirty, PSF, model, residual, restored) and the moments' means and
// spreads over them, of the restored Stokes I peak, as residuals are judged (a run on
// another imager's cubes has no channel images: its moments, of Stokes I's mean); the Faraday
// depth cubes and the peak polarised intensity, of their own peak; the PI error map
// (each pixel's noise from its residual images, which Hogbom's choices between
// near-equal peaks move), of the PI peak, the scale of what it qualifies. The rest are
// non-linear in the data, so a change in the last bits of a faint pixel's spectrum
// moves them freely: they are compared where a source is, of their own peak: the maps
// from the Faraday depth of peak (depth, angle, their errors, fractional polarisation,
// m2, RM-CLEAN iterations, sigma_add, Stokes I's spectral index) where the polarised intensity is 20 times its median, the
// angle of its largest derotation instead (see derotation); and skewness and kurtosis
// (ratios of moments, as large for noise as for a source) where the Stokes parameter's
// spread over the channels is 3 % of Stokes I's largest or more: nowhere in V, which
// holds only noise in the sample. The Faraday products are blanked where a pixel's
// Stokes I fit is, and a faint pixel at the fit's threshold may be blanked in one run
// only (the GPU's atomic sums change last bits): never a bright one, nor more than one
// value in a thousand; a channel image is never blanked in one run only, but for a
// primary-beam corrected one, at beam.limit, within the same one in a thousand. Returns the
// products compared.
int expect_equal_products(const fs::path& reference, const fs::path& grouped, const std::string& what,
                          double tolerance) {
  const bool faraday = fs::exists(reference / "demo-peak-pi.fits");
  const std::vector<float> pi =
      faraday ? spip::fits::read_image((reference / "demo-peak-pi.fits").string()).data : std::vector<float>{};
  const double bright = faraday ? 20 * median_of(pi) : 0;
  const fs::path stokes_i = fs::exists(reference / "demo-image-I.fits") ? reference / "demo-image-I.fits"
                                                                       : reference / "demo-moment-mean-I.fits";
  const double restored_peak = peak_of(spip::fits::read_image(stokes_i.string()).data);
  int compared = 0;
  double worst_all = 0;
  for (const auto& entry : fs::directory_iterator(reference)) {
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() != ".fits" || name.find("catalogue") != std::string::npos ||
        name.find("rmtable") != std::string::npos)
      continue;
    const std::vector<float> a = spip::fits::read_image(entry.path().string()).data;
    const std::vector<float> b = spip::fits::read_image((grouped / name).string()).data;
    EXPECT_EQ(a.size(), b.size()) << name;
    if (a.size() != b.size()) continue;
    const auto has = [&](const char* part) { return name.find(part) != std::string::npos; };
    const bool image = has("-dirty-") || has("-psf") || has("-model-") || has("-residual-") || has("-image-") ||
                       has("-moment-mean-") || has("-moment-std-");
    const bool shape = has("-moment-skew-") || has("-moment-kurt-");
    // A primary-beam corrected cube is blank below beam.limit; a mosaic's response there
    // comes from its pointings' noise, whose last bits can move a pixel at the limit.
    const bool corrected = has("-image-pb-");
    const bool from_peak = (has("-peak-") && !has("-peak-pi")) || has("-fdf-m2") || has("-rmclean-iterations") ||
                           has("-sigma-add") || has("-stokes-i-alpha");
    std::vector<float> spread;
    double signal = 0;
    if (shape) {
      spread = spip::fits::read_image((reference / ("demo-moment-std-" + name.substr(name.size() - 6, 1) + ".fits"))
                                          .string())
                   .data;
      signal = 0.03 * peak_of(spip::fits::read_image((reference / "demo-moment-std-I.fits").string()).data);
    }
    // The FDF noise map's values lie far below its peak FDF's: its differences are the
    // clean FDF's, measured against the polarised intensity, as the PI error's are.
    const double scale = image                                          ? restored_peak
                         : has("-peak-pi-err") || has("-fdf-noise-mad") ? peak_of(pi)
                         : has("-peak-chi0.fits")                       ? derotation(reference, pi, bright)
                                                                        : peak_of(a);
    double worst = 0;
    std::size_t values = 0, one_sided_nan = 0, one_sided_bright = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (std::isfinite(a[i]) != std::isfinite(b[i])) {
        ++one_sided_nan;
        one_sided_bright += (image && !corrected) || (faraday && pi[i % pi.size()] > bright);
      }
      if (!std::isfinite(a[i]) || !std::isfinite(b[i])) continue;
      if ((from_peak && !(pi[i % pi.size()] > bright)) || (shape && !(spread[i] >= signal))) continue;
      worst = std::max(worst, std::abs(static_cast<double>(a[i]) - b[i]));
      ++values;
    }
    const double relative = scale > 0 ? worst / scale : worst;
    std::cout << "[ measured ] " << what << " " << name << ": max difference " << relative << " of its scale over "
              << values << " values; " << one_sided_nan << " blanked in one run only\n";
    EXPECT_EQ(one_sided_bright, 0u) << what << " " << name;
    EXPECT_LE(one_sided_nan, a.size() / 1000) << what << " " << name;
    // One channel has no spread, and V no source.
    if (!shape || (faraday && !has("-V."))) {
      EXPECT_GT(values, 0u) << what << " " << name;
    }
    // sigma_add is a percentile of a posterior sampled on a grid that spans the residuals'
    // range: the last bits of one residual move the grid, and the percentile by ~1e-3.
    const bool sampled = has("-sigma-add");
    EXPECT_LE(relative, sampled ? std::max(tolerance, 1e-2) : tolerance) << what << " " << name;
    if (!sampled) worst_all = std::max(worst_all, relative);
    ++compared;
  }
  std::cout << "[ measured ] " << what << ": largest difference of " << compared << " products " << worst_all
            << " of their peaks\n";
  return compared;
}


double image_difference(const fs::path& reference, const fs::path& other, const std::string& name) {
  const auto x = spip::fits::read_image((reference / name).string()).data;
  const auto y = spip::fits::read_image((other / name).string()).data;
  EXPECT_EQ(x.size(), y.size()) << name;
  double difference = 0;
  for (std::size_t k = 0; k < x.size() && k < y.size(); ++k) {
    EXPECT_EQ(std::isnan(x[k]), std::isnan(y[k])) << name << " pixel " << k;
    if (std::isnan(x[k]) || std::isnan(y[k])) continue;
    difference = std::max(difference, std::abs(static_cast<double>(x[k]) - y[k]));
  }
  return difference / peak_of(x);
}

}  // namespace spip::test
