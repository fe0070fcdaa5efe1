#include "spip/imaging/gridder.hpp"

#include <fftw3.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <numbers>
#include <numeric>

#include "spip/error.hpp"

namespace spip::imaging {
namespace {

using cfloat = std::complex<float>;
using cdouble = std::complex<double>;
constexpr double two_pi = 2.0 * std::numbers::pi;

// FFTW's planner is not thread-safe and its threads are set up once per process.
std::mutex& planner_mutex() {
  static std::mutex mutex;
  return mutex;
}

struct FftwBuffer {
  cfloat* data = nullptr;
  std::size_t size = 0;
  explicit FftwBuffer(std::size_t n) : data(reinterpret_cast<cfloat*>(fftwf_alloc_complex(n))), size(n) {
    if (!data) SPIP_THROW(Error, "cannot allocate an FFT grid of " + std::to_string(n) + " cells");
  }
  ~FftwBuffer() { fftwf_free(data); }
  FftwBuffer(const FftwBuffer&) = delete;
  FftwBuffer& operator=(const FftwBuffer&) = delete;
};

// Kernel values over the W cells that a coordinate at grid position `g` touches,
// times (-1)^cell: the FFT of a centred grid needs the grid multiplied by
// (-1)^(ju + jv), which costs nothing here and a pass over the grid anywhere else.
struct Footprint {
  int first = 0;
  float values[16];
};

inline Footprint footprint(const EsKernel& kernel, double g) {
  Footprint f;
  f.first = static_cast<int>(std::ceil(g - 0.5 * kernel.support));
  for (int i = 0; i < kernel.support; ++i) {
    const float value = static_cast<float>(kernel(f.first + i - g));
    f.values[i] = ((f.first + i) & 1) ? -value : value;
  }
  return f;
}

// Grid cell indices of a footprint. The grid is periodic (it is the DFT's), so a
// kernel that crosses an edge wraps around instead of being cut.
struct CellIndices {
  int index[16];
  bool contiguous;
  CellIndices(int first, int support, int n) : contiguous(first >= 0 && first + support <= n) {
    for (int i = 0; i < support; ++i) index[i] = ((first + i) % n + n) % n;
  }
};

}  // namespace

struct Gridder::Impl {
  ImageGeometry geo;
  EsKernel kernel;          // u, v
  EsKernel w_kernel;        // w (grid of planes oversampled by 2)
  bool wstacking = true;
  int threads = 1;

  // Per-pixel image-domain factors.
  std::vector<double> x_shifted;      // n - 1 - x0 per pixel
  std::vector<double> correction;     // 1 / (psi_u psi_v psi_w) per pixel
  std::vector<double> correction_uv;  // 1 / (psi_u psi_v): the part without w
  double x0 = 0, half_range = 0;      // centre and half-width of n - 1 over the image

  // Per set_uvw.
  const double* uvw = nullptr;
  std::size_t count = 0;
  std::vector<std::size_t> order;     // visibilities sorted by w
  double w_first = 0;
  double dw = 1;                      // plane spacing: planes oversampled by 2 over n - 1
  int planes = 1;
  std::size_t outside = 0;
  std::vector<char> inside;

  fftwf_plan forward = nullptr, backward = nullptr;

  // w-screens exp(-2 pi i w_p (n - 1 - x0)) per pixel, advanced plane by plane by a
  // constant step instead of a sincos per pixel and plane.
  std::vector<cdouble> screen_step;   // exp(-2 pi i dw (n - 1 - x0))
  std::vector<cdouble> screen_first;  // exp(-2 pi i w_first (n - 1 - x0)), per set_uvw
  std::vector<cdouble> rotation;      // exp(-2 pi i w_k x0) per visibility

  // Scratch reused across calls (first touch of fresh pages costs more than the FFTs);
  // one Gridder serves one thread of calls at a time.
  mutable std::vector<std::unique_ptr<FftwBuffer>> scratch_grids;
  mutable std::vector<cdouble> screen;
  cfloat* scratch(int slot, std::size_t cells) const {
    if (scratch_grids.size() <= static_cast<std::size_t>(slot)) scratch_grids.resize(slot + 1);
    auto& buffer = scratch_grids[slot];
    if (!buffer || buffer->size < cells) buffer = std::make_unique<FftwBuffer>(cells);
    return buffer->data;
  }

  Impl(const ImageGeometry& g, double accuracy, bool stacking);
  ~Impl() {
    std::lock_guard<std::mutex> lock(planner_mutex());
    fftwf_destroy_plan(forward);
    fftwf_destroy_plan(backward);
  }

  void make_plans();
  void compute_corrections();
  std::size_t grid_cells() const { return static_cast<std::size_t>(geo.grid_size) * geo.grid_size; }
  double w_plane(int p) const { return w_first + p * dw; }
  // Range of sorted visibilities whose w-kernel reaches plane p.
  std::pair<std::size_t, std::size_t> plane_range(int p) const;
  void grid_plane(int p, const cfloat* vis, const float* weight, int num_stokes, cfloat* grids) const;
  void advance_screen(int p) const;
  void accumulate_plane(const cfloat* grids, int num_stokes, double* images) const;
  void fill_plane(const float* images, int num_stokes, cfloat* grids) const;
  void degrid_plane(int p, const cfloat* grids, int num_stokes, cdouble* vis) const;
};

Gridder::Impl::Impl(const ImageGeometry& g, double accuracy, bool stacking)
    : geo(g), wstacking(stacking), threads(omp_get_max_threads()) {
  if (geo.grid_size % 2 || geo.grid_size < geo.size)
    SPIP_THROW(Error, "grid size must be even and at least the image size");
  kernel = choose_kernel(accuracy, static_cast<double>(geo.grid_size) / geo.size);
  w_kernel = choose_kernel(accuracy, 2.0);
  // n - 1 over the image runs from its value at the farthest corner to 0 at the centre.
  const double l_max = (geo.size / 2) * geo.cell_rad, m_max = l_max;
  const double r2 = std::min(1.0, l_max * l_max + m_max * m_max);
  const double x_min = std::sqrt(1.0 - r2) - 1.0;
  x0 = 0.5 * x_min;
  half_range = -0.5 * x_min;
  make_plans();
  compute_corrections();
}

void Gridder::Impl::make_plans() {
  std::lock_guard<std::mutex> lock(planner_mutex());
  static const bool threads_ready = fftwf_init_threads() != 0;
  if (threads_ready) fftwf_plan_with_nthreads(threads);
  FftwBuffer scratch(grid_cells());
  auto* data = reinterpret_cast<fftwf_complex*>(scratch.data);
  const int n = geo.grid_size;
  // Measured plans cost ~1 s per size once per process; FFTW_ESTIMATE's threaded
  // plans ran 2.5x slower on the benchmark (docs/benchmarks.md).
  forward = fftwf_plan_dft_2d(n, n, data, data, FFTW_FORWARD, FFTW_MEASURE);
  backward = fftwf_plan_dft_2d(n, n, data, data, FFTW_BACKWARD, FFTW_MEASURE);
  if (!forward || !backward) SPIP_THROW(Error, "FFTW could not plan a " + std::to_string(n) + "^2 transform");
}

void Gridder::Impl::compute_corrections() {
  const int n = geo.size;
  std::vector<double> psi(static_cast<std::size_t>(n));
  for (int x = 0; x < n; ++x) psi[x] = kernel_transform(kernel, x - n / 2, geo.grid_size);
  x_shifted.resize(geo.pixels());
  correction.resize(geo.pixels());
  correction_uv.resize(geo.pixels());
  for (int y = 0; y < n; ++y)
    for (int x = 0; x < n; ++x) {
      const double l = geo.l(x), m = geo.m(y);
      const double n_minus_1 = std::sqrt(std::max(0.0, 1.0 - l * l - m * m)) - 1.0;
      const std::size_t pixel = static_cast<std::size_t>(y) * n + x;
      x_shifted[pixel] = n_minus_1 - x0;
      correction_uv[pixel] = 1.0 / (psi[x] * psi[y]);
    }
  if (!wstacking) {
    correction = correction_uv;
    return;
  }
  // The plane spacing depends only on the image, so the w-correction does too. It is
  // smooth in n - 1: a fine table with cubic interpolation is exact to ~1e-12.
  dw = 0.25 / std::max(half_range, 1e-12);
  constexpr int table_size = 4096;
  const double step = 2.0 * half_range / (table_size - 1);
  std::vector<double> table(table_size + 2);
  for (int i = 0; i < table_size + 2; ++i)
    table[i] = kernel_transform(w_kernel, (-half_range + (i - 1) * step) * dw, 1.0);
  screen_step.resize(geo.pixels());
  for (std::size_t pixel = 0; pixel < geo.pixels(); ++pixel)
    screen_step[pixel] = std::polar(1.0, -two_pi * dw * x_shifted[pixel]);
  for (std::size_t pixel = 0; pixel < geo.pixels(); ++pixel) {
    const double t = std::clamp((x_shifted[pixel] + half_range) / step, 0.0, table_size - 1.0);
    const int i = std::min(static_cast<int>(t), table_size - 2);
    const double f = t - i;
    const double* p = &table[i];  // p[0..3] at table positions i-1 .. i+2
    const double psi_w = p[1] + 0.5 * f * (p[2] - p[0] + f * (2 * p[0] - 5 * p[1] + 4 * p[2] - p[3] +
                                                             f * (3 * (p[1] - p[2]) + p[3] - p[0])));
    correction[pixel] = correction_uv[pixel] / psi_w;
  }
}


std::pair<std::size_t, std::size_t> Gridder::Impl::plane_range(int p) const {
  if (!wstacking) return {0, order.size()};
  const double reach = 0.5 * w_kernel.support * dw;
  const double w_lo = w_plane(p) - reach, w_hi = w_plane(p) + reach;
  auto w_of = [this](std::size_t k) { return uvw[3 * k + 2]; };
  const auto lo = std::partition_point(order.begin(), order.end(), [&](std::size_t k) { return w_of(k) < w_lo; });
  const auto hi = std::partition_point(lo, order.end(), [&](std::size_t k) { return w_of(k) <= w_hi; });
  return {static_cast<std::size_t>(lo - order.begin()), static_cast<std::size_t>(hi - order.begin())};
}

// Each thread owns a band of grid rows and adds only to those, so no two threads
// write the same cell and no private grids need reducing; a visibility whose kernel
// straddles a band edge is visited by both threads.
void Gridder::Impl::grid_plane(int p, const cfloat* vis, const float* weight, int num_stokes, cfloat* grids) const {
  const auto [lo, hi] = plane_range(p);
  const int n = geo.grid_size;
  const std::size_t cells = grid_cells();
  const double du = geo.uv_cell();
  const int support = kernel.support;
#pragma omp parallel num_threads(threads)
  {
    const int bands = omp_get_num_threads(), t = omp_get_thread_num();
    const int row_lo = static_cast<int>(static_cast<long>(n) * t / bands);
    const int row_hi = static_cast<int>(static_cast<long>(n) * (t + 1) / bands);
    for (std::size_t i = lo; i < hi; ++i) {
      const std::size_t k = order[i];
      if (!inside[k]) continue;
      const double* c = uvw + 3 * k;
      const double gv = c[1] / du + n / 2;
      const int first_row = static_cast<int>(std::ceil(gv - 0.5 * support));
      // Rows first_row .. first_row + W - 1 (mod n) must meet [row_lo, row_hi).
      bool touches = false;
      for (int j = 0; j < support && !touches; ++j) {
        const int row = ((first_row + j) % n + n) % n;
        touches = row >= row_lo && row < row_hi;
      }
      if (!touches) continue;
      double scale = 1.0;
      cdouble turn(1.0, 0.0);
      if (wstacking) {
        scale = w_kernel(c[2] / dw - (w_first / dw + p));
        turn = rotation[k];
      }
      const Footprint fu = footprint(kernel, -c[0] / du + n / 2);
      const Footprint fv = footprint(kernel, gv);
      const CellIndices columns(fu.first, support, n), rows(fv.first, support, n);
      for (int s = 0; s < num_stokes; ++s) {
        const float wt = weight[k * num_stokes + s];
        if (wt == 0.0f) continue;
        const cfloat value = cfloat(cdouble(vis[k * num_stokes + s]) * turn * (scale * wt));
        cfloat* grid = grids + s * cells;
        for (int j = 0; j < support; ++j) {
          if (rows.index[j] < row_lo || rows.index[j] >= row_hi) continue;
          cfloat* row = grid + static_cast<std::size_t>(rows.index[j]) * n;
          const cfloat row_value = value * fv.values[j];
          if (columns.contiguous) {
            cfloat* cell = row + fu.first;
            for (int i2 = 0; i2 < support; ++i2) cell[i2] += row_value * fu.values[i2];
          } else {
            for (int i2 = 0; i2 < support; ++i2) row[columns.index[i2]] += row_value * fu.values[i2];
          }
        }
      }
    }
  }
}

void Gridder::Impl::advance_screen(int p) const {
  if (!wstacking) return;
  if (p == 0) {
    screen = screen_first;
    return;
  }
#pragma omp parallel for schedule(static)
  for (std::size_t pixel = 0; pixel < screen.size(); ++pixel) screen[pixel] *= screen_step[pixel];
}

void Gridder::Impl::accumulate_plane(const cfloat* grids, int num_stokes, double* images) const {
  const int n = geo.size, big = geo.grid_size, offset = (big - n) / 2;
  const std::size_t pixels = geo.pixels();
#pragma omp parallel for schedule(static)
  for (int y = 0; y < n; ++y)
    for (int x = 0; x < n; ++x) {
      const std::size_t pixel = static_cast<std::size_t>(y) * n + x;
      const int xg = x + offset, yg = y + offset;
      const double sign = ((xg + yg) & 1) ? -1.0 : 1.0;
      const cdouble factor = wstacking ? sign * screen[pixel] : cdouble(sign, 0.0);
      const std::size_t cell = static_cast<std::size_t>(yg) * big + xg;
      for (int s = 0; s < num_stokes; ++s)
        images[s * pixels + pixel] += (cdouble(grids[s * grid_cells() + cell]) * factor).real();
    }
}

void Gridder::Impl::fill_plane(const float* images, int num_stokes, cfloat* grids) const {
  const int n = geo.size, big = geo.grid_size, offset = (big - n) / 2;
  const std::size_t pixels = geo.pixels();
  std::fill(grids, grids + grid_cells() * num_stokes, cfloat{});
#pragma omp parallel for schedule(static)
  for (int y = 0; y < n; ++y)
    for (int x = 0; x < n; ++x) {
      const std::size_t pixel = static_cast<std::size_t>(y) * n + x;
      const int xg = x + offset, yg = y + offset;
      const double sign = ((xg + yg) & 1) ? -1.0 : 1.0;
      const cdouble factor = wstacking ? sign * correction[pixel] * std::conj(screen[pixel])
                                       : cdouble(sign * correction[pixel], 0.0);
      const std::size_t cell = static_cast<std::size_t>(yg) * big + xg;
      for (int s = 0; s < num_stokes; ++s)
        grids[s * grid_cells() + cell] = cfloat(factor * static_cast<double>(images[s * pixels + pixel]));
    }
}

void Gridder::Impl::degrid_plane(int p, const cfloat* grids, int num_stokes, cdouble* vis) const {
  const auto [lo, hi] = plane_range(p);
  const int n = geo.grid_size;
  const double du = geo.uv_cell();
  const int support = kernel.support;
#pragma omp parallel for schedule(static)
  for (std::size_t i = lo; i < hi; ++i) {
    const std::size_t k = order[i];
    if (!inside[k]) continue;
    const double* c = uvw + 3 * k;
    const double scale = wstacking ? w_kernel(c[2] / dw - (w_first / dw + p)) : 1.0;
    const Footprint fu = footprint(kernel, -c[0] / du + n / 2);
    const Footprint fv = footprint(kernel, c[1] / du + n / 2);
    const CellIndices columns(fu.first, support, n), rows(fv.first, support, n);
    for (int s = 0; s < num_stokes; ++s) {
      const cfloat* grid = grids + s * grid_cells();
      cfloat sum{};
      for (int j = 0; j < support; ++j) {
        const cfloat* row = grid + static_cast<std::size_t>(rows.index[j]) * n;
        cfloat row_sum{};
        if (columns.contiguous) {
          const cfloat* cell = row + fu.first;
          for (int i2 = 0; i2 < support; ++i2) row_sum += cell[i2] * fu.values[i2];
        } else {
          for (int i2 = 0; i2 < support; ++i2) row_sum += row[columns.index[i2]] * fu.values[i2];
        }
        sum += row_sum * fv.values[j];
      }
      vis[k * num_stokes + s] += cdouble(sum) * scale;
    }
  }
}

Gridder::Gridder(const ImageGeometry& geometry, double accuracy, bool wstacking)
    : geometry_(geometry), impl_(std::make_unique<Impl>(geometry, accuracy, wstacking)) {}

Gridder::~Gridder() = default;

void Gridder::set_uvw(const double* uvw_lambda, std::size_t count) {
  Impl& m = *impl_;
  m.uvw = uvw_lambda;
  m.count = count;
  m.order.resize(count);
  std::iota(m.order.begin(), m.order.end(), std::size_t{0});
  m.inside.assign(count, 1);
  m.outside = 0;
  // Beyond half the grid a visibility would alias onto the other side of the uv plane.
  const double limit = 0.5 * m.geo.grid_size - 1.0;
  double w_min = 0, w_max = 0;
  for (std::size_t k = 0; k < count; ++k) {
    const double* c = uvw_lambda + 3 * k;
    if (std::abs(c[0]) / m.geo.uv_cell() > limit || std::abs(c[1]) / m.geo.uv_cell() > limit) {
      m.inside[k] = 0;
      ++m.outside;
    }
    w_min = std::min(w_min, c[2]);
    w_max = std::max(w_max, c[2]);
  }
  if (!m.wstacking) {
    m.planes = 1;
    return;
  }
  std::sort(m.order.begin(), m.order.end(), [&](std::size_t a, std::size_t b) { return uvw_lambda[3 * a + 2] < uvw_lambda[3 * b + 2]; });
  m.w_first = w_min - 0.5 * m.w_kernel.support * m.dw;
  m.planes = static_cast<int>(std::floor((w_max - m.w_first) / m.dw + 0.5 * m.w_kernel.support)) + 1;
  m.rotation.resize(count);
  for (std::size_t k = 0; k < count; ++k) m.rotation[k] = std::polar(1.0, -two_pi * uvw_lambda[3 * k + 2] * m.x0);
  m.screen_first.resize(m.geo.pixels());
#pragma omp parallel for schedule(static)
  for (std::size_t pixel = 0; pixel < m.geo.pixels(); ++pixel)
    m.screen_first[pixel] = std::polar(1.0, -two_pi * m.w_first * m.x_shifted[pixel]);
}

void Gridder::grid(const std::complex<float>* vis, const float* weight, int num_stokes, float* images) const {
  const Impl& m = *impl_;
  const std::size_t pixels = m.geo.pixels();
  std::vector<double> sum(pixels * num_stokes, 0.0);
  cfloat* grids = m.scratch(0, m.grid_cells() * num_stokes);
  for (int p = 0; p < m.planes; ++p) {
    std::fill(grids, grids + m.grid_cells() * num_stokes, cfloat{});
    m.grid_plane(p, vis, weight, num_stokes, grids);
    for (int s = 0; s < num_stokes; ++s) {
      cfloat* grid = grids + s * m.grid_cells();
      fftwf_execute_dft(m.forward, reinterpret_cast<fftwf_complex*>(grid), reinterpret_cast<fftwf_complex*>(grid));
    }
    m.advance_screen(p);
    m.accumulate_plane(grids, num_stokes, sum.data());
  }
  for (int s = 0; s < num_stokes; ++s)
    for (std::size_t pixel = 0; pixel < pixels; ++pixel)
      images[s * pixels + pixel] = static_cast<float>(sum[s * pixels + pixel] * m.correction[pixel]);
}

void Gridder::degrid(const float* images, int num_stokes, std::complex<float>* vis) const {
  const Impl& m = *impl_;
  std::vector<cdouble> sum(m.count * num_stokes, cdouble{});
  cfloat* grids = m.scratch(0, m.grid_cells() * num_stokes);
  for (int p = 0; p < m.planes; ++p) {
    m.advance_screen(p);
    m.fill_plane(images, num_stokes, grids);
    for (int s = 0; s < num_stokes; ++s) {
      cfloat* grid = grids + s * m.grid_cells();
      fftwf_execute_dft(m.backward, reinterpret_cast<fftwf_complex*>(grid), reinterpret_cast<fftwf_complex*>(grid));
    }
    m.degrid_plane(p, grids, num_stokes, sum.data());
  }
  for (std::size_t k = 0; k < m.count; ++k) {
    const cdouble turn = m.wstacking ? std::conj(m.rotation[k]) : cdouble(1.0, 0.0);
    for (int s = 0; s < num_stokes; ++s) vis[k * num_stokes + s] = cfloat(sum[k * num_stokes + s] * turn);
  }
}

int Gridder::num_w_planes() const { return impl_->planes; }
std::size_t Gridder::num_outside() const { return impl_->outside; }
bool Gridder::inside(std::size_t k) const { return impl_->inside[k] != 0; }
EsKernel Gridder::uv_kernel() const { return impl_->kernel; }

}  // namespace spip::imaging
