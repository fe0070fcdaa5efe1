#include "spip/catalogue/source_finder.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numbers>

#include "spip/common/constants.hpp"
#include "spip/common/number_text.hpp"
#include "spip/error.hpp"
#include "spip/faraday/spectrum_math.hpp"

namespace spip::catalogue {
namespace {

constexpr float nan = std::numeric_limits<float>::quiet_NaN();

// Mesh coordinates: 0, step, 2 step, ... and the last pixel.
std::vector<int> mesh(int n, int step) {
  std::vector<int> nodes;
  for (int c = 0; c < n - 1; c += step) nodes.push_back(c);
  nodes.push_back(n - 1);
  return nodes;
}

float rms_in_box(const Map& map, int cx, int cy, int half) {
  double sum = 0;
  long count = 0;
  for (int y = std::max(0, cy - half); y <= std::min(map.ny - 1, cy + half); ++y)
    for (int x = std::max(0, cx - half); x <= std::min(map.nx - 1, cx + half); ++x)
      if (const double v = map.at(x, y); std::isfinite(v)) {
        sum += v * v;
        ++count;
      }
  return count ? static_cast<float>(std::sqrt(sum / count)) : nan;
}

// For each pixel along an axis: the mesh interval it falls in and its weight towards
// the interval's upper node.
struct Interpolation {
  std::vector<int> lower;
  std::vector<float> weight;
};
Interpolation interpolation(int n, const std::vector<int>& nodes) {
  Interpolation in;
  std::size_t i = 0;
  for (int p = 0; p < n; ++p) {
    while (i + 2 < nodes.size() && p > nodes[i + 1]) ++i;
    const int span = nodes.size() > 1 ? nodes[i + 1] - nodes[i] : 1;
    in.lower.push_back(static_cast<int>(i));
    in.weight.push_back(nodes.size() > 1 ? static_cast<float>(p - nodes[i]) / static_cast<float>(span) : 0.0f);
  }
  return in;
}

// -inf outside the image and where PI was not measured, so such pixels are never peaks.
float pi_or_floor(const Map& pi, int x, int y) {
  if (x < 0 || y < 0 || x >= pi.nx || y >= pi.ny) return -std::numeric_limits<float>::infinity();
  const float value = pi.at(x, y);
  return std::isfinite(value) ? value : -std::numeric_limits<float>::infinity();
}

// RM-Tools' snrDoBiasCorrect: below it, PI is listed as measured.
constexpr double bias_correction_snr = 5;

// Whether a peak stands clear of the image's edge and of blank regions, beyond which its
// source may lie unmeasured: none of its four neighbours is off the image, or blank with
// the pixel beyond it blank too. A lone blank pixel (one bad pixel of a cube) is no
// region: measure() refines the peak along the other axis only.
bool measured_around(const Map& pi, int x, int y) {
  const auto inside = [&](int px, int py) { return px >= 0 && py >= 0 && px < pi.nx && py < pi.ny; };
  for (const auto& [dx, dy] : {std::pair{-1, 0}, std::pair{1, 0}, std::pair{0, -1}, std::pair{0, 1}}) {
    if (!inside(x + dx, y + dy)) return false;
    if (!std::isfinite(pi_or_floor(pi, x + dx, y + dy)) && !std::isfinite(pi_or_floor(pi, x + 2 * dx, y + 2 * dy)))
      return false;
  }
  return true;
}

// Whether two sources lie at least a beam's FWHM apart along the line joining them:
// beyond the ellipse of the beam's full widths (x runs west, as RA falls). At the
// positions listed, between pixels: their peak pixels can be a FWHM apart when they are not.
bool beam_apart(const FinderSettings& settings, const Source& a, const Source& b) {
  const double east = -(a.x - b.x), north = a.y - b.y;
  const double sin_pa = std::sin(settings.beam_pa_rad), cos_pa = std::cos(settings.beam_pa_rad);
  const double along = (east * sin_pa + north * cos_pa) / settings.beam_major_pix;
  const double across = (east * cos_pa - north * sin_pa) / settings.beam_minor_pix;
  return along * along + across * across >= 1;
}

bool is_local_maximum(const Map& pi, int x, int y) {
  const float value = pi.at(x, y);
  for (int dy = -1; dy <= 1; ++dy)
    for (int dx = -1; dx <= 1; ++dx)
      if ((dx || dy) && pi_or_floor(pi, x + dx, y + dy) > value) return false;
  return true;
}

// Islands as lists of pixel indices, 8-connected.
std::vector<std::vector<int>> islands_of(const std::vector<char>& mask, int nx, int ny) {
  std::vector<std::vector<int>> islands;
  std::vector<char> seen(mask.size(), 0);
  std::vector<int> stack;
  for (int start = 0; start < nx * ny; ++start) {
    if (!mask[start] || seen[start]) continue;
    std::vector<int> island;
    stack.assign(1, start);
    seen[start] = 1;
    while (!stack.empty()) {
      const int p = stack.back();
      stack.pop_back();
      island.push_back(p);
      const int x = p % nx, y = p / nx;
      for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx) {
          const int xx = x + dx, yy = y + dy;
          if (xx < 0 || yy < 0 || xx >= nx || yy >= ny) continue;
          const int q = yy * nx + xx;
          if (mask[q] && !seen[q]) {
            seen[q] = 1;
            stack.push_back(q);
          }
        }
    }
    islands.push_back(std::move(island));
  }
  return islands;
}

void require_shape(const Map& map, const Map& reference, const char* name) {
  if (map.nx != reference.nx || map.ny != reference.ny ||
      map.values.size() != static_cast<std::size_t>(reference.nx) * reference.ny)
    SPIP_THROW(Error, std::string("source finder: the ") + name + " map is " + std::to_string(map.nx) + " x " +
                          std::to_string(map.ny) + ", the PI map " + std::to_string(reference.nx) + " x " +
                          std::to_string(reference.ny));
}

// The source's nearest pointing and its distance from it, or from the projection's
// centre where there are no pointings.
void place_in_beam(Source& s, const SinProjection& projection, const FinderSettings& settings) {
  const Direction d{s.ra_deg / rad_to_deg, s.dec_deg / rad_to_deg};
  const std::vector<Direction> pointings = settings.pointings.empty()
                                               ? std::vector<Direction>{{projection.ra_rad, projection.dec_rad}}
                                               : settings.pointings;
  s.pointing = static_cast<int>(nearest_direction(pointings, d));
  s.beamdist_deg = angular_distance_rad(pointings[static_cast<std::size_t>(s.pointing)], d) * rad_to_deg;
}

// A map's value at (x + dx, y + dy) on parabolas through its own neighbours, as PI's
// peak is measured: Stokes I where PI peaks, so that their ratio does not depend on
// where the source lies within its pixel. The pixel's own value along an axis without
// an offset, or without neighbours (an edge, a blank).
double at_offset(const Map& map, int x, int y, double dx, double dy) {
  const double at = map.at(x, y);
  const auto along = [at](double offset, double before, double after) {
    const double change = 0.5 * offset * (after - before) + 0.5 * offset * offset * (before - 2 * at + after);
    return offset != 0 && std::isfinite(change) ? change : 0.0;
  };
  return at + along(dx, x > 0 ? map.at(x - 1, y) : nan, x + 1 < map.nx ? map.at(x + 1, y) : nan) +
         along(dy, y > 0 ? map.at(x, y - 1) : nan, y + 1 < map.ny ? map.at(x, y + 1) : nan);
}

// The source at pixel (x, y): with `refine`, a PI peak, placed and measured at the vertex
// of parabolas through its neighbours; without, at the pixel itself.
Source measure(const PixelMaps& maps, const Map& sigma, int x, int y, const SinProjection& projection,
               const FinderSettings& settings, bool refine = true) {
  const Map& pi = maps.pi;
  Source s;
  // A peak at the edge, or next to a blank pixel, stays on its pixel (NaN neighbours).
  const double at = pi.at(x, y);
  const auto vertex = [&](float before, float after) {
    return refine ? faraday::parabola_vertex(before, at, after) : faraday::Vertex{0.0, at};
  };
  const faraday::Vertex along_x = vertex(x > 0 ? pi.at(x - 1, y) : nan, x + 1 < pi.nx ? pi.at(x + 1, y) : nan);
  const faraday::Vertex along_y = vertex(y > 0 ? pi.at(x, y - 1) : nan, y + 1 < pi.ny ? pi.at(x, y + 1) : nan);
  s.x = x + along_x.offset;
  s.y = y + along_y.offset;
  double ra = 0, dec = 0;
  projection.world(s.x, s.y, ra, dec);
  s.ra_deg = ra * rad_to_deg;
  s.dec_deg = dec * rad_to_deg;
  s.name = source_name(s.ra_deg, s.dec_deg);
  place_in_beam(s, projection, settings);

  // PI (and Stokes I, below) at the peak between pixels; the others are the peak pixel's. The maps'
  // bias correction and errors used the pixel's own noise; redo them with the local one,
  // or the pixel's where that is higher (near a bright source's deconvolution errors).
  // Every error is proportional to sigma. As RM-Tools' measure_FDF_parms, the bias is
  // corrected only at a signal-to-noise of 5 or more.
  const double pixel_sigma = maps.pi_err.at(x, y);
  s.sigma = std::fmax(sigma.at(x, y), pixel_sigma);
  const double peak = along_x.height + along_y.height - at;
  // A map value of 0 was clipped there: what was measured below sqrt(2.3) sigma is not known.
  const double measured = peak > 0 ? std::sqrt(peak * peak + 2.3 * pixel_sigma * pixel_sigma) : 0.0;
  s.pi = measured >= bias_correction_snr * s.sigma ? std::sqrt(measured * measured - 2.3 * s.sigma * s.sigma) : measured;
  const double scale = pixel_sigma > 0 ? s.sigma / pixel_sigma : 1.0;
  s.pi_err = s.sigma;
  s.phi = maps.phi.at(x, y);
  s.phi_err = maps.phi_err.at(x, y) * scale;
  s.chi0_deg = maps.chi0.at(x, y) * rad_to_deg;
  s.chi0_err_deg = maps.chi0_err.at(x, y) * scale * rad_to_deg;
  s.snr = s.pi / s.sigma;
  const double per_fwhm = s.pi > 0 ? projection.cell_rad * rad_to_deg * s.sigma / (2 * s.pi)
                                   : std::numeric_limits<double>::infinity();
  const double along_major = settings.beam_major_pix * per_fwhm, along_minor = settings.beam_minor_pix * per_fwhm;
  const double sin_pa = std::sin(settings.beam_pa_rad), cos_pa = std::cos(settings.beam_pa_rad);
  s.ra_err_deg = std::hypot(along_major * sin_pa, along_minor * cos_pa);
  s.dec_err_deg = std::hypot(along_major * cos_pa, along_minor * sin_pa);
  s.position_err_deg = along_major;
  s.stokes_i = at_offset(maps.stokes_i, x, y, along_x.offset, along_y.offset);
  s.frac_pol = s.stokes_i > 0 ? s.pi / s.stokes_i : std::numeric_limits<double>::quiet_NaN();
  s.m2 = maps.m2.at(x, y);
  s.faraday_complex = s.m2 > settings.complexity * settings.rmsf_fwhm;
  return s;
}

// A source's PI cannot exceed its Stokes I. A PI peak above the mean I by more than the
// noise allows is a deconvolution artefact near a bright source (where I is often
// negative), or polarised emission without compact I, which this catalogue does not
// list. The mean-I moment's noise is that of the FDF: both are the same weighted mean
// over the channels.
bool has_stokes_i(const Source& s) { return s.stokes_i >= s.pi - 3 * s.sigma; }

}  // namespace

bool SinProjection::pixel(double ra, double dec, double& x, double& y) const {
  const double d_ra = ra - ra_rad;
  const double l = std::cos(dec) * std::sin(d_ra);
  const double m = std::sin(dec) * std::cos(dec_rad) - std::cos(dec) * std::sin(dec_rad) * std::cos(d_ra);
  const double n = std::sin(dec) * std::sin(dec_rad) + std::cos(dec) * std::cos(dec_rad) * std::cos(d_ra);
  x = ref_x - l / cell_rad;
  y = ref_y + m / cell_rad;
  return n > 0;
}

void SinProjection::world(double x, double y, double& ra, double& dec) const {
  const double l = -(x - ref_x) * cell_rad, m = (y - ref_y) * cell_rad;
  const double n = std::sqrt(std::max(0.0, 1 - l * l - m * m));
  dec = std::asin(m * std::cos(dec_rad) + n * std::sin(dec_rad));
  ra = std::fmod(ra_rad + std::atan2(l, n * std::cos(dec_rad) - m * std::sin(dec_rad)) + 2 * std::numbers::pi,
                 2 * std::numbers::pi);
}

Map local_noise(const Map& noise, int box) {
  const int half = std::max(1, box / 2);
  const std::vector<int> mx = mesh(noise.nx, half), my = mesh(noise.ny, half);
  std::vector<float> node(mx.size() * my.size());
  for (std::size_t j = 0; j < my.size(); ++j)
    for (std::size_t i = 0; i < mx.size(); ++i) node[j * mx.size() + i] = rms_in_box(noise, mx[i], my[j], half);
  // A box with nothing measured takes the median of the others.
  std::vector<float> finite;
  for (float v : node)
    if (std::isfinite(v)) finite.push_back(v);
  if (!finite.empty()) {
    const auto middle = finite.begin() + static_cast<std::ptrdiff_t>(finite.size() / 2);
    std::nth_element(finite.begin(), middle, finite.end());
    for (float& v : node)
      if (!std::isfinite(v)) v = *middle;
  }
  const Interpolation ix = interpolation(noise.nx, mx), iy = interpolation(noise.ny, my);
  Map local{noise.nx, noise.ny, std::vector<float>(noise.values.size())};
  const std::size_t stride = mx.size();
  for (int y = 0; y < noise.ny; ++y) {
    const std::size_t j = static_cast<std::size_t>(iy.lower[y]);
    const float ty = iy.weight[y];
    const std::size_t j1 = std::min(j + 1, my.size() - 1);
    for (int x = 0; x < noise.nx; ++x) {
      const std::size_t i = static_cast<std::size_t>(ix.lower[x]);
      const std::size_t i1 = std::min(i + 1, mx.size() - 1);
      const float tx = ix.weight[x];
      const float below = (1 - tx) * node[j * stride + i] + tx * node[j * stride + i1];
      const float above = (1 - tx) * node[j1 * stride + i] + tx * node[j1 * stride + i1];
      local.values[static_cast<std::size_t>(y) * noise.nx + x] = (1 - ty) * below + ty * above;
    }
  }
  return local;
}

std::vector<Source> find_sources(const PixelMaps& maps, const SinProjection& projection,
                                 const FinderSettings& settings, int* truncated) {
  const Map& pi = maps.pi;
  for (const auto& [map, name] : {std::pair{&maps.phi, "phi"}, {&maps.chi0, "chi0"}, {&maps.phi_err, "phi error"},
                                  {&maps.pi_err, "PI error"}, {&maps.chi0_err, "chi0 error"}, {&maps.m2, "m2"},
                                  {&maps.stokes_i, "Stokes I"}})
    require_shape(*map, pi, name);
  const Map sigma = local_noise(maps.pi_err, settings.box);
  // Above the threshold in the pixel's own FDF noise too: it exceeds the box's where a
  // bright source's deconvolution errors, or with faraday.fractional a faint pixel's
  // steep fitted spectrum, raise it, and peaks there are those errors amplified.
  std::vector<char> mask(pi.values.size());
  for (std::size_t p = 0; p < mask.size(); ++p)
    mask[p] = pi.values[p] > settings.threshold * sigma.values[p] && sigma.values[p] > 0 &&
              !(pi.values[p] <= settings.threshold * maps.pi_err.values[p]);

  // Islands numbered brightest first: by their peaks, each island's pixels sorted by
  // falling PI, which is also the order their components are sought in.
  std::vector<std::vector<int>> islands = islands_of(mask, pi.nx, pi.ny);
  for (std::vector<int>& island : islands)
    std::sort(island.begin(), island.end(), [&](int a, int b) { return pi.values[a] > pi.values[b]; });
  std::sort(islands.begin(), islands.end(),
            [&](const auto& a, const auto& b) { return pi.values[a.front()] > pi.values[b.front()]; });

  std::vector<Source> sources;
  if (truncated) *truncated = 0;
  for (std::size_t n = 0; n < islands.size(); ++n) {
    std::vector<Source> kept;
    for (int p : islands[n]) {
      if (!is_local_maximum(pi, p % pi.nx, p / pi.nx)) continue;
      // A cut-off peak is left out before it can hide fainter components near it.
      if (!measured_around(pi, p % pi.nx, p / pi.nx)) {
        if (truncated) ++*truncated;
        continue;
      }
      Source s = measure(maps, sigma, p % pi.nx, p / pi.nx, projection, settings);
      if (std::all_of(kept.begin(), kept.end(), [&](const Source& k) { return beam_apart(settings, s, k); }))
        kept.push_back(std::move(s));
    }
    int component = 0;
    for (Source& s : kept) {
      if (!has_stokes_i(s)) continue;
      s.island = static_cast<int>(n + 1);
      s.component = ++component;
      sources.push_back(std::move(s));
    }
  }
  std::stable_sort(sources.begin(), sources.end(), [](const Source& a, const Source& b) { return a.pi > b.pi; });
  return sources;
}

std::vector<Source> sources_at(const PixelMaps& maps, const SinProjection& projection, const FinderSettings& settings,
                               const std::vector<SourcePosition>& positions, LeftOut* left_out) {
  const Map& pi = maps.pi;
  const Map sigma = local_noise(maps.pi_err, settings.box);
  std::vector<Source> sources;
  const auto leave_out = [left_out](const SourcePosition& position, std::vector<std::string> LeftOut::*kind) {
    if (!left_out) return;
    (left_out->*kind).push_back(
        position.id.empty() ? number_text(position.ra_deg, 8) + ", " + number_text(position.dec_deg, 8) : position.id);
  };
  for (const SourcePosition& position : positions) {
    double x = 0, y = 0;
    const bool seen = projection.pixel(position.ra_deg / rad_to_deg, position.dec_deg / rad_to_deg, x, y);
    const long px = std::lround(x), py = std::lround(y);
    if (!seen || px < 0 || py < 0 || px >= pi.nx || py >= pi.ny) {
      leave_out(position, &LeftOut::off_image);
      continue;
    }
    if (!std::isfinite(pi.at(static_cast<int>(px), static_cast<int>(py)))) {
      leave_out(position, &LeftOut::blank);
      continue;
    }
    Source s = measure(maps, sigma, static_cast<int>(px), static_cast<int>(py), projection, settings, false);
    s.x = x;
    s.y = y;
    s.ra_deg = position.ra_deg;
    s.dec_deg = position.dec_deg;
    place_in_beam(s, projection, settings);
    s.position_err_deg = s.ra_err_deg = s.dec_err_deg = std::numeric_limits<double>::quiet_NaN();  // the list's
    s.name = position.id.empty() ? source_name(s.ra_deg, s.dec_deg) : position.id;
    s.island = static_cast<int>(sources.size()) + 1;
    s.component = 1;
    sources.push_back(std::move(s));
  }
  return sources;
}

std::string source_name(double ra_deg, double dec_deg) {
  const long ra_tenths = static_cast<long>(std::floor(std::fmod(ra_deg + 360.0, 360.0) / 15.0 * 36000.0));
  const long dec_seconds = static_cast<long>(std::floor(std::abs(dec_deg) * 3600.0));
  char text[64];
  std::snprintf(text, sizeof text, "SPIP J%02ld%02ld%02ld.%01ld%c%02ld%02ld%02ld", ra_tenths / 36000,
                ra_tenths / 600 % 60, ra_tenths / 10 % 60, ra_tenths % 10, dec_deg < 0 ? '-' : '+', dec_seconds / 3600,
                dec_seconds / 60 % 60, dec_seconds % 60);
  return text;
}

}  // namespace spip::catalogue
