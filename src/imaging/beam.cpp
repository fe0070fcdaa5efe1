#include "spip/imaging/beam.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <cstdint>
#include <numbers>
#include <vector>

#include "spip/error.hpp"
#include "spip/imaging/fft.hpp"

namespace spip::imaging {
namespace {

constexpr double half_power_log = 0.69314718055994531;  // ln 2

// Pixels connected to the centre with values above `level`.
std::vector<int> main_lobe(const float* psf, const ImageGeometry& g, float level) {
  const int n = g.size;
  std::vector<char> seen(g.pixels(), 0);
  std::vector<int> lobe, stack = {(n / 2) * n + n / 2};
  seen[stack.front()] = 1;
  while (!stack.empty()) {
    const int pixel = stack.back();
    stack.pop_back();
    lobe.push_back(pixel);
    const int x = pixel % n, y = pixel / n;
    const int neighbours[4][2] = {{x - 1, y}, {x + 1, y}, {x, y - 1}, {x, y + 1}};
    for (const auto& [nx, ny] : neighbours) {
      if (nx < 0 || ny < 0 || nx >= n || ny >= n) continue;
      const int next = ny * n + nx;
      if (!seen[next] && psf[next] > level) {
        seen[next] = 1;
        stack.push_back(next);
      }
    }
  }
  return lobe;
}

// exp(-4 ln2 (d_major^2 / major^2 + d_minor^2 / minor^2)) at offset (dl, dm).
struct GaussianBeam {
  double a, b, c;  // quadratic form in (dl, dm)
  explicit GaussianBeam(const Beam& beam) {
    const double s = std::sin(beam.pa_rad), co = std::cos(beam.pa_rad);
    const double p = 4 * half_power_log / (beam.major_rad * beam.major_rad);
    const double q = 4 * half_power_log / (beam.minor_rad * beam.minor_rad);
    // Major axis along (sin pa, cos pa) in (l, m): east of north.
    a = p * s * s + q * co * co;
    b = 2 * (p - q) * s * co;
    c = p * co * co + q * s * s;
  }
  double operator()(double dl, double dm) const { return std::exp(-(a * dl * dl + b * dl * dm + c * dm * dm)); }
};

}  // namespace

namespace {

// The normal equations of -log(psf) = a dl^2 + b dl dm + c dm^2 over `pixels`.
struct NormalEquations {
  double ata[3][3] = {}, atb[3] = {};
};

NormalEquations normal_equations(const float* psf, const ImageGeometry& g, const std::vector<int>& pixels) {
  const int n = g.size;
  NormalEquations eq;
  for (int pixel : pixels) {
    const double dl = g.l(pixel % n), dm = g.m(pixel / n);
    const double row[3] = {dl * dl, dl * dm, dm * dm};
    const double target = -std::log(static_cast<double>(psf[pixel]));
    for (int i = 0; i < 3; ++i) {
      eq.atb[i] += row[i] * target;
      for (int j = 0; j < 3; ++j) eq.ata[i][j] += row[i] * row[j];
    }
  }
  return eq;
}

double det3(const double m[3][3]) {
  return m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0]) +
         m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);
}

// No ellipse is determined: the pixels lie on a line, or are the centre and two pairs
// about it (a lobe of 5 pixels of a point-symmetric PSF gives two distinct equations).
bool singular(const NormalEquations& eq) {
  const double scale = eq.ata[0][0] + eq.ata[1][1] + eq.ata[2][2];
  return !(std::abs(det3(eq.ata)) > 1e-12 * scale * scale * scale);
}

}  // namespace

std::optional<Beam> fit_beam(const float* psf, const ImageGeometry& g) {
  const int n = g.size;
  if (!(psf[(n / 2) * n + n / 2] > 0.99f && psf[(n / 2) * n + n / 2] < 1.01f))
    SPIP_THROW(Error, "internal error: the PSF is not normalised to 1 at the centre");
  NormalEquations eq = normal_equations(psf, g, main_lobe(psf, g, 0.35f));
  if (singular(eq)) {
    // Pixels nearly as large as the beam (a lobe of 5 pixels or fewer, or one pixel wide
    // along an axis): fit the positive 3 x 3 neighbourhood, which holds four distinct
    // equations. A circular beam of 1.6-2.3 pixels took the theoretical beam before.
    std::vector<int> neighbourhood;
    for (int dy = -1; dy <= 1; ++dy)
      for (int dx = -1; dx <= 1; ++dx) {
        const int pixel = (n / 2 + dy) * n + n / 2 + dx;
        if (psf[pixel] > 0) neighbourhood.push_back(pixel);
      }
    eq = normal_equations(psf, g, neighbourhood);
  }
  if (singular(eq)) return std::nullopt;  // a line, no ellipse
  const double det = det3(eq.ata);
  const double (&ata)[3][3] = eq.ata;
  const double (&atb)[3] = eq.atb;
  double coefficients[3];
  for (int k = 0; k < 3; ++k) {
    double m[3][3];
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) m[i][j] = j == k ? atb[i] : ata[i][j];
    coefficients[k] = det3(m) / det;
  }
  const double a = coefficients[0], b = coefficients[1], c = coefficients[2];
  // Eigen-decomposition of [[a, b/2], [b/2, c]]: the smaller eigenvalue is the major axis.
  const double mean = 0.5 * (a + c), spread = std::hypot(0.5 * (a - c), 0.5 * b);
  const double small = mean - spread, large = mean + spread;
  if (!(small > 0)) return std::nullopt;
  Beam beam;
  beam.major_rad = 2 * std::sqrt(half_power_log / small);
  beam.minor_rad = 2 * std::sqrt(half_power_log / large);
  // Major-axis direction (el, em) solves (Q - small) e = 0; PA from north through east.
  // Either row of the singular matrix gives it; take the better conditioned one.
  double el = 0.5 * b, em = small - a;
  if (std::hypot(c - small, 0.5 * b) > std::hypot(el, em)) {
    el = c - small;
    em = -0.5 * b;
  }
  double pa = spread > 0 ? std::atan2(el, em) : 0.0;  // a circular beam has no direction
  while (pa <= -std::numbers::pi / 2) pa += std::numbers::pi;
  while (pa > std::numbers::pi / 2) pa -= std::numbers::pi;
  beam.pa_rad = pa;
  return beam;
}

Beam theoretical_beam(double max_uv_wavelengths, double taper_fwhm_rad) {
  const double fwhm = std::hypot(1.0 / max_uv_wavelengths, taper_fwhm_rad);
  return Beam{fwhm, fwhm, 0.0};
}

namespace {

// A beam's half-power ellipse as the symmetric matrix S = a^2 u u^T + b^2 v v^T (a, b
// its semi-axes, u its major axis (east, north) = (sin pa, cos pa)): the ellipse of S
// holds that of T where S - T has no negative eigenvalue.
struct Ellipse {
  double xx = 0, xy = 0, yy = 0;
};

Ellipse ellipse_of(const Beam& beam) {
  const double a = beam.major_rad / 2, b = beam.minor_rad / 2;
  const double ux = std::sin(beam.pa_rad), uy = std::cos(beam.pa_rad);
  return {a * a * ux * ux + b * b * uy * uy, (a * a - b * b) * ux * uy, a * a * uy * uy + b * b * ux * ux};
}

// Eigenvalues (larger first) of a symmetric 2 x 2 matrix, and the unit eigenvector of the larger.
struct Eigen {
  double large = 0, small = 0, x = 0, y = 1;
};
Eigen eigen(const Ellipse& e) {
  const double mean = 0.5 * (e.xx + e.yy), half_gap = std::hypot(0.5 * (e.xx - e.yy), e.xy);
  Eigen out{mean + half_gap, mean - half_gap, 0, 1};
  const double angle = 0.5 * std::atan2(2 * e.xy, e.xx - e.yy);  // of the larger's axis from x
  out.x = std::cos(angle);
  out.y = std::sin(angle);
  return out;
}

// A symmetric matrix from its eigenvalues and the larger one's unit eigenvector.
Ellipse compose(double large, double small, double x, double y) {
  return {large * x * x + small * y * y, (large - small) * x * y, large * y * y + small * x * x};
}

// S^(1/2) and S^(-1/2) of a positive definite S.
Ellipse power(const Ellipse& s, double p) {
  const Eigen e = eigen(s);
  return compose(std::pow(e.large, p), std::pow(e.small, p), e.x, e.y);
}

Ellipse product(const Ellipse& a, const Ellipse& b, const Ellipse& c) {  // a b c, a symmetric result here
  const double m00 = a.xx * b.xx + a.xy * b.xy, m01 = a.xx * b.xy + a.xy * b.yy;
  const double m10 = a.xy * b.xx + a.yy * b.xy, m11 = a.xy * b.xy + a.yy * b.yy;
  return {m00 * c.xx + m01 * c.xy, 0.5 * (m00 * c.xy + m01 * c.yy + m10 * c.xx + m11 * c.xy), m10 * c.xy + m11 * c.yy};
}

bool holds(const Ellipse& outer, const Ellipse& inner) {
  const Ellipse gap{outer.xx - inner.xx, outer.xy - inner.xy, outer.yy - inner.yy};
  return eigen(gap).small >= -1e-12 * (outer.xx + outer.yy);
}

double area(const Ellipse& e) { return e.xx * e.yy - e.xy * e.xy; }  // its square, in units of pi^2

// The least-area ellipse about the origin that holds every one of `ellipses`, as
// radio_beam (RACS-tools) finds it: Khachiyan's iteration on points of the boundary of
// their union (in each of a fixed set of directions, the point of the ellipse that
// reaches furthest, however many ellipses there are), then scaled by the most any
// ellipse still reaches past it between the points, so that it holds every one exactly.
Ellipse least_enclosing(const std::vector<Ellipse>& ellipses) {
  constexpr int directions = 256;
  std::vector<std::array<double, 2>> points;
  for (int k = 0; k < directions; ++k) {
    const double t = 2 * std::numbers::pi * k / directions, dx = std::cos(t), dy = std::sin(t);
    const Ellipse* furthest = &ellipses.front();
    double support = 0;  // squared: d^T S d
    for (const Ellipse& e : ellipses)
      if (const double h = e.xx * dx * dx + 2 * e.xy * dx * dy + e.yy * dy * dy; h > support) support = h, furthest = &e;
    // The point of that ellipse where its tangent is normal to d: S d / sqrt(d^T S d).
    const double norm = std::sqrt(support);
    points.push_back({(furthest->xx * dx + furthest->xy * dy) / norm, (furthest->xy * dx + furthest->yy * dy) / norm});
  }
  // Weights u over the points; X = sum u p p^T; the ellipse x^T (X / d)^-1 x <= 1 with d = 2.
  std::vector<double> u(points.size(), 1.0 / static_cast<double>(points.size()));
  Ellipse x;
  for (int iteration = 0; iteration < 100000; ++iteration) {
    x = {};
    for (std::size_t j = 0; j < points.size(); ++j) {
      x.xx += u[j] * points[j][0] * points[j][0];
      x.xy += u[j] * points[j][0] * points[j][1];
      x.yy += u[j] * points[j][1] * points[j][1];
    }
    const double det = area(x);
    std::size_t far = 0;
    double reach = 0;  // p^T X^-1 p
    for (std::size_t j = 0; j < points.size(); ++j) {
      const double px = points[j][0], py = points[j][1];
      const double m = (x.yy * px * px - 2 * x.xy * px * py + x.xx * py * py) / det;
      if (m > reach) reach = m, far = j;
    }
    if (reach <= 2 * (1 + 1e-7)) break;  // the scaling below makes it hold exactly
    const double step = (reach - 2) / (2 * (reach - 1));
    for (double& weight : u) weight *= 1 - step;
    u[far] += step;
  }
  Ellipse common{2 * x.xx, 2 * x.xy, 2 * x.yy};
  const Ellipse inverse_root = power(common, -0.5);
  double scale = 0;
  for (const Ellipse& e : ellipses) scale = std::max(scale, eigen(product(inverse_root, e, inverse_root)).large);
  return {scale * common.xx, scale * common.xy, scale * common.yy};
}

}  // namespace

Beam enclosing_beam(const std::vector<Beam>& beams) {
  if (beams.empty()) return {};
  const auto largest = std::max_element(beams.begin(), beams.end(), [](const Beam& a, const Beam& b) {
    return a.major_rad * a.minor_rad < b.major_rad * b.minor_rad;
  });
  std::vector<Ellipse> ellipses;
  for (const Beam& beam : beams) ellipses.push_back(ellipse_of(beam));
  const Ellipse first = ellipse_of(*largest);
  if (std::all_of(ellipses.begin(), ellipses.end(), [&](const Ellipse& e) { return holds(first, e); }))
    return *largest;  // as given: a circular beam keeps its position angle
  const Ellipse common = least_enclosing(ellipses);
  const Eigen axes = eigen(common);
  double pa = std::atan2(axes.x, axes.y);  // the major axis (east, north) from north through east
  while (pa <= -std::numbers::pi / 2) pa += std::numbers::pi;
  while (pa > std::numbers::pi / 2) pa -= std::numbers::pi;
  return {2 * std::sqrt(axes.large), 2 * std::sqrt(std::max(0.0, axes.small)), pa};
}

bool holds(const Beam& outer, const Beam& inner) { return holds(ellipse_of(outer), ellipse_of(inner)); }

bool alike(const Beam& a, const Beam& b) {
  const Ellipse x = ellipse_of(a), y = ellipse_of(b);
  const double tolerance = 1e-5 * (x.xx + x.yy);
  return std::abs(x.xx - y.xx) <= tolerance && std::abs(x.xy - y.xy) <= tolerance && std::abs(x.yy - y.yy) <= tolerance;
}

namespace {

// The smoothing kernel's covariance in pixels^2, on the grid's axes (x = -l, y = m): the
// difference of the two beams' (a half-power semi-axis a is a Gaussian's sigma times
// sqrt(2 ln 2)), rounding's negative eigenvalue taken as zero.
Ellipse kernel_covariance(const Beam& from, const Beam& to, double cell_rad) {
  const Ellipse outer = ellipse_of(to), inner = ellipse_of(from);
  const double to_pixels = 1 / (2 * half_power_log * cell_rad * cell_rad);
  const Eigen gap = eigen({outer.xx - inner.xx, outer.xy - inner.xy, outer.yy - inner.yy});
  const Ellipse kernel = compose(std::max(0.0, gap.large) * to_pixels, std::max(0.0, gap.small) * to_pixels, gap.x, gap.y);
  return {kernel.xx, -kernel.xy, kernel.yy};
}

// A kernel narrower than this (sigma^2, pixels^2) leaves an image as it is.
constexpr double alike_sigma_sq = 1e-6;

// How far past the image a kernel of largest variance `sigma_sq` (pixels^2) reaches:
// to 5.7 sigma, where it is below 1e-7 of its peak. A circular convolution on a grid
// that much wider than the image wraps nothing onto it.
int smoothing_reach(double sigma_sq) { return static_cast<int>(std::ceil(5.7 * std::sqrt(sigma_sq))) + 1; }

// The share of the kernel's weight on measured pixels below which a pixel is blank.
constexpr float least_weight = 0.99f;

// The grid's transform of a (real part) and b, or where b is null a's mask of measured
// pixels (imaginary part), convolved with the kernel: one transform for both, since the
// kernel is real and even and so is its transform. Pixels off the image are unmeasured.
void convolve_into(const float* a, const float* b, int nx, int ny, const Fft2d& fft,
                   const std::vector<float>& transform, std::complex<float>* grid) {
  const std::size_t pitch = fft.pitch();
  const int p = fft.size();
  Fft2d::Support image{std::vector<std::uint8_t>(p, 0), std::vector<std::uint8_t>(p, 0)};
  std::fill_n(image.rows.begin(), ny, 1);
  std::fill_n(image.columns.begin(), nx, 1);
  const Fft2d::Support all = Fft2d::full(p);
  std::fill(grid, grid + fft.cells(), std::complex<float>(0));
#pragma omp parallel for
  for (int y = 0; y < ny; ++y)
    for (int x = 0; x < nx; ++x) {
      const std::size_t pixel = static_cast<std::size_t>(y) * nx + x;
      const bool measured = std::isfinite(a[pixel]);
      grid[y * pitch + x] = {measured ? a[pixel] : 0.0f, b ? b[pixel] : (measured ? 1.0f : 0.0f)};
    }
  fft.forward(grid, image, all);
  for (std::size_t c = 0; c < fft.cells(); ++c) grid[c] *= transform[c];
  fft.backward(grid, all, image);
}

// A measured pixel's convolved value over the kernel's weight on measured pixels.
float normalised(float convolved, float weight, float gain) {
  return weight >= least_weight ? gain * convolved / weight : NAN;
}

}  // namespace

int smoothing_grid(int nx, int ny, double cell_rad, const std::vector<Beam>& from, const Beam& to) {
  double widest = 0;
  for (const Beam& beam : from) widest = std::max(widest, eigen(kernel_covariance(beam, to, cell_rad)).large);
  return good_fft_size(std::max(nx, ny) + (widest < alike_sigma_sq ? 0 : smoothing_reach(widest)));
}

void convolve_to_beam(float* planes, int count, int nx, int ny, double cell_rad, const Beam& from, const Beam& to,
                      int grid) {
  if (!holds(to, from)) SPIP_THROW(Error, "internal error: convolving an image to a beam that does not hold its own");
  if (grid < smoothing_grid(nx, ny, cell_rad, {from}, to))
    SPIP_THROW(Error, "internal error: a smoothing grid too small for its kernel");
  const float gain = static_cast<float>((to.major_rad * to.minor_rad) / (from.major_rad * from.minor_rad));
  const std::size_t pixels = static_cast<std::size_t>(nx) * ny;
  const Ellipse kernel = kernel_covariance(from, to, cell_rad);
  if (eigen(kernel).large < alike_sigma_sq) {  // a change of units at most
    std::for_each(planes, planes + pixels * count, [gain](float& v) { v *= gain; });
    return;
  }
  const Fft2d& fft = Fft2d::shared(grid);
  const int p = fft.size();
  const std::size_t pitch = fft.pitch();
  // exp(-2 pi^2 f^T C f) at frequencies f (cycles per pixel), with FFTW's 1 / p^2. The
  // Nyquist row and column stand for +1/2 and -1/2 alike: there the mean of the two, so
  // that the transform stays even and the kernel real, and a plane's mask in the
  // imaginary part does not leak into its values through a tilted kernel.
  std::vector<float> transform(fft.cells(), 0.0f);
  const double norm = 1.0 / (static_cast<double>(p) * p), two_pi_sq = 2 * std::numbers::pi * std::numbers::pi;
  for (int j = 0; j < p; ++j)
    for (int i = 0; i < p; ++i) {
      const double fx = static_cast<double>(i <= p / 2 ? i : i - p) / p;
      const double fy = static_cast<double>(j <= p / 2 ? j : j - p) / p;
      const double even = std::exp(-two_pi_sq * (kernel.xx * fx * fx + kernel.yy * fy * fy));
      const double cross = 2 * two_pi_sq * kernel.xy * fx * fy;
      const bool nyquist = 2 * i == p || 2 * j == p;
      transform[static_cast<std::size_t>(j) * pitch + i] =
          static_cast<float>(norm * even * (nyquist ? std::cosh(cross) : std::exp(-cross)));
    }
  FftBuffer buffer(fft.cells());
  std::complex<float>* cells = buffer.data();
  const auto at = [&](std::size_t pixel) { return cells[(pixel / nx) * pitch + pixel % nx]; };
  // A plane with blanks goes beside its own mask. The first without goes beside the
  // image's mask, which gives the weight on measured pixels of every plane without
  // blanks; those then go in pairs.
  std::vector<float> weight;
  float* waiting = nullptr;
  for (int k = 0; k < count; ++k) {
    float* plane = planes + k * pixels;
    const bool blanks = std::any_of(plane, plane + pixels, [](float v) { return !std::isfinite(v); });
    if (blanks || weight.empty()) {
      convolve_into(plane, nullptr, nx, ny, fft, transform, cells);
      if (!blanks) weight.resize(pixels);
      for (std::size_t i = 0; i < pixels; ++i) {
        if (!blanks) weight[i] = at(i).imag();
        if (std::isfinite(plane[i])) plane[i] = normalised(at(i).real(), at(i).imag(), gain);
      }
    } else if (waiting) {
      convolve_into(waiting, plane, nx, ny, fft, transform, cells);
      for (std::size_t i = 0; i < pixels; ++i) {
        waiting[i] = normalised(at(i).real(), weight[i], gain);
        plane[i] = normalised(at(i).imag(), weight[i], gain);
      }
      waiting = nullptr;
    } else {
      waiting = plane;
    }
  }
  if (waiting) {
    convolve_into(waiting, nullptr, nx, ny, fft, transform, cells);
    for (std::size_t i = 0; i < pixels; ++i) waiting[i] = normalised(at(i).real(), weight[i], gain);
  }
}

RestoringBeam common_restoring_beam(const std::vector<RestoringBeam>& beams) {
  const bool any_fitted = std::any_of(beams.begin(), beams.end(),
                                      [](const RestoringBeam& b) { return b.origin != BeamOrigin::theoretical; });
  std::vector<Beam> counted;
  BeamOrigin origin = BeamOrigin::theoretical;
  for (const RestoringBeam& b : beams)
    if ((b.origin != BeamOrigin::theoretical) == any_fitted) {
      counted.push_back(b.beam);
      origin = b.origin;
    }
  return {enclosing_beam(counted), origin};
}

RestoringBeam restoring_beam(const std::optional<Beam>& fit, double max_uv_wavelengths, double taper_fwhm_rad,
                             const ImageGeometry& geometry, const std::optional<Beam>& chosen) {
  if (chosen) return {*chosen, BeamOrigin::chosen};
  const Beam theoretical = theoretical_beam(max_uv_wavelengths, taper_fwhm_rad);
  const bool is_beam = fit && fit->major_rad <= max_beam_elongation * theoretical.major_rad &&
                       fit->major_rad <= geometry.size * geometry.cell_rad;
  return is_beam ? RestoringBeam{*fit, BeamOrigin::fitted} : RestoringBeam{theoretical, BeamOrigin::theoretical};
}

namespace {

// How far a component's beam reaches, in pixels: to where it falls below 1e-7 of its
// peak, and no further than anywhere else in the image.
int beam_reach(const Beam& beam, const ImageGeometry& g) {
  return static_cast<int>(std::min(static_cast<double>(g.size - 1), std::ceil(beam.major_rad / g.cell_rad * 2.4) + 1));
}

// The beam at pixel offsets |dx|, |dy| <= reach.
struct SampledBeam {
  int reach = 0;
  std::vector<double> values;  // [dy + reach][dx + reach]

  SampledBeam(const Beam& beam, const ImageGeometry& g)
      : reach(beam_reach(beam, g)), values(static_cast<std::size_t>(2 * reach + 1) * (2 * reach + 1)) {
    const GaussianBeam gaussian(beam);
    for (int dy = -reach; dy <= reach; ++dy)
      for (int dx = -reach; dx <= reach; ++dx) values[index(dx, dy)] = gaussian(-dx * g.cell_rad, dy * g.cell_rad);
  }
  std::size_t index(int dx, int dy) const { return static_cast<std::size_t>(dy + reach) * (2 * reach + 1) + dx + reach; }
  double operator()(int dx, int dy) const { return values[index(dx, dy)]; }
};

void restore_directly(const float* model, int n, const SampledBeam& beam, float* image) {
  const int reach = beam.reach;
  for (int y = 0; y < n; ++y)
    for (int x = 0; x < n; ++x) {
      const float flux = model[static_cast<std::size_t>(y) * n + x];
      if (flux == 0) continue;
      for (int yy = std::max(0, y - reach); yy <= std::min(n - 1, y + reach); ++yy)
        for (int xx = std::max(0, x - reach); xx <= std::min(n - 1, x + reach); ++xx)
          image[static_cast<std::size_t>(yy) * n + xx] += static_cast<float>(flux * beam(xx - x, yy - y));
    }
}

// The same sums as circular convolutions on a 2N grid, where offsets of up to N - 1
// either way never wrap onto each other; planes 2k and 2k + 1 share one transform as
// its real and imaginary parts.
void restore_by_fft(const float* model, const ImageGeometry& g, const Beam& beam, float* image, int planes) {
  const int n = g.size, p = 2 * n, reach = beam_reach(beam, g);
  const Fft2d& fft = Fft2d::shared(p);
  const std::size_t cells = fft.cells(), pixels = g.pixels(), pitch = fft.pitch();
  const Fft2d::Support all = Fft2d::full(p);
  Fft2d::Support image_part{std::vector<std::uint8_t>(p, 0), std::vector<std::uint8_t>(p, 0)};
  std::fill_n(image_part.rows.begin(), n, 1);
  std::fill_n(image_part.columns.begin(), n, 1);

  FftBuffer kernel(cells), plane(cells);
  std::complex<float>* k = kernel.data();
  std::fill(k, k + cells, std::complex<float>(0));
  const GaussianBeam gaussian(beam);
  for (int dy = -reach; dy <= reach; ++dy)
    for (int dx = -reach; dx <= reach; ++dx)
      k[static_cast<std::size_t>((dy + p) % p) * pitch + (dx + p) % p] =
          static_cast<float>(gaussian(-dx * g.cell_rad, dy * g.cell_rad));
  fft.forward(k, all, all);
  const float norm = 1.0f / (static_cast<float>(p) * static_cast<float>(p));
  for (std::size_t c = 0; c < cells; ++c) k[c] = k[c].real() * norm;  // real: the beam is even

  std::complex<float>* q = plane.data();
  for (int first = 0; first < planes; first += 2) {
    const bool pair = first + 1 < planes;
    const float* a = model + first * pixels;
    const float* b = pair ? a + pixels : nullptr;
    std::fill(q, q + cells, std::complex<float>(0));
    for (int y = 0; y < n; ++y)
      for (int x = 0; x < n; ++x) {
        const std::size_t pixel = static_cast<std::size_t>(y) * n + x;
        q[static_cast<std::size_t>(y) * pitch + x] = {a[pixel], b ? b[pixel] : 0.0f};
      }
    fft.forward(q, image_part, all);
    for (std::size_t c = 0; c < cells; ++c) q[c] *= k[c].real();
    fft.backward(q, all, image_part);
    float* out_a = image + first * pixels;
    float* out_b = pair ? out_a + pixels : nullptr;
    for (int y = 0; y < n; ++y)
      for (int x = 0; x < n; ++x) {
        const std::size_t pixel = static_cast<std::size_t>(y) * n + x;
        const std::complex<float> value = q[static_cast<std::size_t>(y) * pitch + x];
        out_a[pixel] += value.real();
        if (out_b) out_b[pixel] += value.imag();
      }
  }
}

}  // namespace

void restore(const float* model, const ImageGeometry& g, const Beam& beam, float* image, int planes) {
  const std::size_t pixels = g.pixels() * planes;
  const double components = static_cast<double>(std::count_if(model, model + pixels, [](float f) { return f != 0; }));
  if (components == 0) return;
  // Multiply-adds of the direct sums against about 5 p^2 log2 p flops for each transform
  // of a p = 2N grid: one for the beam and two for each pair of planes.
  const double side = 2.0 * beam_reach(beam, g) + 1, p = 2.0 * g.size;
  const double transforms = 1 + 2 * std::ceil(planes / 2.0);
  if (components * side * side <= 2.5 * transforms * p * p * std::log2(p)) {
    const SampledBeam sampled(beam, g);
#pragma omp parallel for schedule(dynamic)
    for (int plane = 0; plane < planes; ++plane)
      restore_directly(model + plane * g.pixels(), g.size, sampled, image + plane * g.pixels());
  } else {
    restore_by_fft(model, g, beam, image, planes);
  }
}

void plan_restoring(const ImageGeometry& geometry) { Fft2d::shared(2 * geometry.size); }

}  // namespace spip::imaging
