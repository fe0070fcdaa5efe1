#include "spip/imaging/gridder.hpp"

#include <fftw3.h>
#include <omp.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <cmath>
#include <cstdint>
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

// What goes into each complex grid ("lane"). A real image needs only the real part of
// its FFT, so two Stokes parameters a and b share one grid as a + ib, provided every
// visibility is gridded with its Hermitian conjugate: the FFT is then exactly
// image_a + i image_b (times 2). That halves the FFTs for twice the gridding.
struct Lanes {
  const cfloat* vis;
  const float* weight;
  int num_stokes;
  bool packed;
  int count() const { return packed ? (num_stokes + 1) / 2 : num_stokes; }
  cdouble value(std::size_t k, bool conjugate, int lane) const {
    if (!packed) return cdouble(vis[k * num_stokes + lane]) * static_cast<double>(weight[k * num_stokes + lane]);
    const int a = 2 * lane, b = 2 * lane + 1;
    cdouble ca = cdouble(vis[k * num_stokes + a]) * static_cast<double>(weight[k * num_stokes + a]);
    cdouble cb = b < num_stokes
                     ? cdouble(vis[k * num_stokes + b]) * static_cast<double>(weight[k * num_stokes + b])
                     : cdouble{};
    if (conjugate) {
      ca = std::conj(ca);
      cb = std::conj(cb);
    }
    return ca + cdouble(0, 1) * cb;
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

  // Per set_uvw. A point is where a visibility, or its Hermitian conjugate, is gridded.
  struct Point {
    double u, v, w;            // wavelengths; the conjugate's are negated
    cdouble rotation;          // exp(-2 pi i w x0)
    std::uint32_t k;           // visibility index
    bool conjugate;
    Footprint fu, fv;          // kernel over u and v: the same in every w-plane
  };
  std::size_t count = 0;
  std::vector<Point> direct;     // each visibility once, sorted by w
  std::vector<Point> hermitian;  // each visibility and its conjugate, sorted by w
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
  // Points of the sorted list whose w-kernel reaches plane p.
  std::pair<std::size_t, std::size_t> plane_range(const std::vector<Point>& points, int p) const;
  void grid_plane(int p, const std::vector<Point>& points, const Lanes& lanes, cfloat* grids) const;
  void advance_screen(int p) const;
  // Calls f(pixel, cell, sign) for every image pixel: its cell in the centred padded
  // grid and the FFT-centring sign (-1)^(xg + yg) there.
  template <class F>
  void for_each_image_cell(F&& f) const {
    const int n = geo.size, big = geo.grid_size, offset = (big - n) / 2;
#pragma omp parallel for schedule(static)
    for (int y = 0; y < n; ++y)
      for (int x = 0; x < n; ++x) {
        const int xg = x + offset, yg = y + offset;
        f(static_cast<std::size_t>(y) * n + x, static_cast<std::size_t>(yg) * big + xg, ((xg + yg) & 1) ? -1.0 : 1.0);
      }
  }
  void accumulate_plane(const cfloat* grids, int num_lanes, cdouble* images) const;
  void fill_plane(const float* images, int num_stokes, cfloat* grids) const;
  void degrid_plane(int p, const std::vector<Point>& points, const cfloat* grids, int num_lanes, cdouble* out) const;
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

// Measured FFTW plans cost ~1 s per grid size; the wisdom is kept between runs in
// $SPIP_FFTW_WISDOM (default ~/.cache/spip/fftwf-wisdom), written atomically so that
// concurrent ranks never read half a file. A missing or stale file only costs time.
std::string wisdom_path() {
  if (const char* path = std::getenv("SPIP_FFTW_WISDOM")) return path;
  const char* cache = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  if (cache && *cache) return std::string(cache) + "/spip/fftwf-wisdom";
  if (home && *home) return std::string(home) + "/.cache/spip/fftwf-wisdom";
  return {};
}

void save_wisdom(const std::string& path) {
  if (path.empty()) return;
  std::error_code error;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), error);
  char host[256] = "host";
  ::gethostname(host, sizeof host - 1);
  const std::string partial = path + "." + host + "." + std::to_string(::getpid()) + ".partial";
  if (fftwf_export_wisdom_to_filename(partial.c_str())) std::filesystem::rename(partial, path, error);
  std::filesystem::remove(partial, error);
}

void Gridder::Impl::make_plans() {
  std::lock_guard<std::mutex> lock(planner_mutex());
  static const bool threads_ready = fftwf_init_threads() != 0;
  if (threads_ready) fftwf_plan_with_nthreads(threads);
  static const std::string wisdom = wisdom_path();
  static const bool imported = !wisdom.empty() && fftwf_import_wisdom_from_filename(wisdom.c_str());
  (void)imported;
  FftwBuffer scratch(grid_cells());
  auto* data = reinterpret_cast<fftwf_complex*>(scratch.data);
  const int n = geo.grid_size;
  // Measured plans cost ~1 s per size once per process; FFTW_ESTIMATE's threaded
  // plans ran 2.5x slower on the benchmark (docs/benchmarks.md).
  forward = fftwf_plan_dft_2d(n, n, data, data, FFTW_FORWARD, FFTW_MEASURE);
  backward = fftwf_plan_dft_2d(n, n, data, data, FFTW_BACKWARD, FFTW_MEASURE);
  if (!forward || !backward) SPIP_THROW(Error, "FFTW could not plan a " + std::to_string(n) + "^2 transform");
  save_wisdom(wisdom);
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
  const double step = std::max(2.0 * half_range, 1e-300) / (table_size - 1);
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


std::pair<std::size_t, std::size_t> Gridder::Impl::plane_range(const std::vector<Point>& points, int p) const {
  if (!wstacking) return {0, points.size()};
  const double reach = 0.5 * w_kernel.support * dw;
  const double w_lo = w_plane(p) - reach, w_hi = w_plane(p) + reach;
  const auto lo = std::partition_point(points.begin(), points.end(), [&](const Point& q) { return q.w < w_lo; });
  const auto hi = std::partition_point(lo, points.end(), [&](const Point& q) { return q.w <= w_hi; });
  return {static_cast<std::size_t>(lo - points.begin()), static_cast<std::size_t>(hi - points.begin())};
}

// Each thread owns a band of grid rows and adds only to those, so no two threads
// write the same cell and no private grids need reducing; a visibility whose kernel
// straddles a band edge is visited by both threads.
void Gridder::Impl::grid_plane(int p, const std::vector<Point>& points, const Lanes& lanes, cfloat* grids) const {
  const auto [lo, hi] = plane_range(points, p);
  const int n = geo.grid_size;
  const std::size_t cells = grid_cells();
  const int support = kernel.support;
  const int num_lanes = lanes.count();
#pragma omp parallel num_threads(threads)
  {
    const int bands = omp_get_num_threads(), t = omp_get_thread_num();
    const int row_lo = static_cast<int>(static_cast<long>(n) * t / bands);
    const int row_hi = static_cast<int>(static_cast<long>(n) * (t + 1) / bands);
    for (std::size_t i = lo; i < hi; ++i) {
      const Point& point = points[i];
      const int first_row = point.fv.first;
      // Rows first_row .. first_row + W - 1 (mod n) must meet [row_lo, row_hi).
      bool touches = false;
      for (int j = 0; j < support && !touches; ++j) {
        const int row = ((first_row + j) % n + n) % n;
        touches = row >= row_lo && row < row_hi;
      }
      if (!touches) continue;
      const cdouble turn = wstacking ? point.rotation * w_kernel(point.w / dw - (w_first / dw + p)) : cdouble(1.0);
      const Footprint& fu = point.fu;
      const Footprint& fv = point.fv;
      const CellIndices columns(fu.first, support, n), rows(fv.first, support, n);
      for (int q = 0; q < num_lanes; ++q) {
        const cdouble raw = lanes.value(point.k, point.conjugate, q);
        if (raw == cdouble{}) continue;
        const cfloat value = cfloat(raw * turn);
        cfloat* grid = grids + q * cells;
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

void Gridder::Impl::accumulate_plane(const cfloat* grids, int num_lanes, cdouble* images) const {
  const std::size_t pixels = geo.pixels();
  for_each_image_cell([&](std::size_t pixel, std::size_t cell, double sign) {
    const cdouble factor = wstacking ? sign * screen[pixel] : cdouble(sign, 0.0);
    for (int q = 0; q < num_lanes; ++q) images[q * pixels + pixel] += cdouble(grids[q * grid_cells() + cell]) * factor;
  });
}

// Lanes as in grid(): images a + i b when more than one image is predicted.
void Gridder::Impl::fill_plane(const float* images, int num_stokes, cfloat* grids) const {
  const std::size_t pixels = geo.pixels();
  const bool packed = num_stokes > 1;
  const int num_lanes = packed ? (num_stokes + 1) / 2 : 1;
  std::fill(grids, grids + grid_cells() * num_lanes, cfloat{});
  for_each_image_cell([&](std::size_t pixel, std::size_t cell, double sign) {
    const cdouble factor = wstacking ? sign * correction[pixel] * std::conj(screen[pixel])
                                     : cdouble(sign * correction[pixel], 0.0);
    for (int q = 0; q < num_lanes; ++q) {
      const double a = images[(packed ? 2 * q : q) * pixels + pixel];
      const double b = packed && 2 * q + 1 < num_stokes ? images[(2 * q + 1) * pixels + pixel] : 0.0;
      grids[q * grid_cells() + cell] = cfloat(factor * cdouble(a, b));
    }
  });
}

void Gridder::Impl::degrid_plane(int p, const std::vector<Point>& points, const cfloat* grids, int num_lanes,
                                 cdouble* out) const {
  const auto [lo, hi] = plane_range(points, p);
  const int n = geo.grid_size;
  const int support = kernel.support;
#pragma omp parallel for schedule(static)
  for (std::size_t i = lo; i < hi; ++i) {
    const Point& point = points[i];
    const double scale = wstacking ? w_kernel(point.w / dw - (w_first / dw + p)) : 1.0;
    const Footprint& fu = point.fu;
    const Footprint& fv = point.fv;
    const CellIndices columns(fu.first, support, n), rows(fv.first, support, n);
    for (int q = 0; q < num_lanes; ++q) {
      const cfloat* grid = grids + q * grid_cells();
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
      out[i * num_lanes + q] += cdouble(sum) * scale;
    }
  }
}

Gridder::Gridder(const ImageGeometry& geometry, double accuracy, bool wstacking)
    : geometry_(geometry), impl_(std::make_unique<Impl>(geometry, accuracy, wstacking)) {}

Gridder::~Gridder() = default;

void Gridder::set_uvw(const double* uvw_lambda, std::size_t count) {
  Impl& m = *impl_;
  m.count = count;
  m.inside.assign(count, 1);
  m.outside = 0;
  m.direct.clear();
  m.hermitian.clear();
  // Beyond half the grid a visibility would alias onto the other side of the uv plane.
  const double limit = 0.5 * m.geo.grid_size - 1.0;
  double w_reach = 0;
  for (std::size_t k = 0; k < count; ++k) {
    const double* c = uvw_lambda + 3 * k;
    if (std::abs(c[0]) / m.geo.uv_cell() > limit || std::abs(c[1]) / m.geo.uv_cell() > limit) {
      m.inside[k] = 0;
      ++m.outside;
      continue;
    }
    const cdouble rotation = m.wstacking ? std::polar(1.0, -two_pi * c[2] * m.x0) : cdouble(1.0);
    const auto k32 = static_cast<std::uint32_t>(k);
    const double du = m.geo.uv_cell(), half = 0.5 * m.geo.grid_size;
    const Impl::Point point{c[0], c[1], c[2], rotation, k32, false,
                            footprint(m.kernel, -c[0] / du + half), footprint(m.kernel, c[1] / du + half)};
    const Impl::Point mirror{-c[0], -c[1], -c[2], std::conj(rotation), k32, true,
                             footprint(m.kernel, c[0] / du + half), footprint(m.kernel, -c[1] / du + half)};
    m.direct.push_back(point);
    m.hermitian.push_back(point);
    m.hermitian.push_back(mirror);
    w_reach = std::max(w_reach, std::abs(c[2]));
  }
  if (!m.wstacking) {
    m.planes = 1;
    return;
  }
  const auto by_w = [](const Impl::Point& a, const Impl::Point& b) { return a.w < b.w; };
  std::sort(m.direct.begin(), m.direct.end(), by_w);
  std::sort(m.hermitian.begin(), m.hermitian.end(), by_w);
  // Planes span +-max|w| so that conjugates fit; planes no point reaches are skipped.
  m.w_first = -w_reach - 0.5 * m.w_kernel.support * m.dw;
  m.planes = static_cast<int>(std::floor((w_reach - m.w_first) / m.dw + 0.5 * m.w_kernel.support)) + 1;
  m.screen_first.resize(m.geo.pixels());
#pragma omp parallel for schedule(static)
  for (std::size_t pixel = 0; pixel < m.geo.pixels(); ++pixel)
    m.screen_first[pixel] = std::polar(1.0, -two_pi * m.w_first * m.x_shifted[pixel]);
}

void Gridder::grid(const std::complex<float>* vis, const float* weight, int num_stokes, float* images) const {
  const Impl& m = *impl_;
  const std::size_t pixels = m.geo.pixels();
  const Lanes lanes{vis, weight, num_stokes, num_stokes > 1};
  const std::vector<Impl::Point>& points = lanes.packed ? m.hermitian : m.direct;
  const int num_lanes = lanes.count();
  std::vector<cdouble> sum(pixels * num_lanes, cdouble{});
  cfloat* grids = m.scratch(0, m.grid_cells() * num_lanes);
  for (int p = 0; p < m.planes; ++p) {
    m.advance_screen(p);
    const auto [lo, hi] = m.plane_range(points, p);
    if (lo == hi) continue;
    std::fill(grids, grids + m.grid_cells() * num_lanes, cfloat{});
    m.grid_plane(p, points, lanes, grids);
    for (int q = 0; q < num_lanes; ++q) {
      cfloat* grid = grids + q * m.grid_cells();
      fftwf_execute_dft(m.forward, reinterpret_cast<fftwf_complex*>(grid), reinterpret_cast<fftwf_complex*>(grid));
    }
    m.accumulate_plane(grids, num_lanes, sum.data());
  }
  // Packed lanes hold (a + i b) summed over both halves of the uv plane: 2 image_a + 2i image_b.
  for (int s = 0; s < num_stokes; ++s) {
    const cdouble* lane = sum.data() + (lanes.packed ? s / 2 : s) * pixels;
    const bool imaginary = lanes.packed && s % 2 == 1;
    const double scale = lanes.packed ? 0.5 : 1.0;
    for (std::size_t pixel = 0; pixel < pixels; ++pixel)
      images[s * pixels + pixel] =
          static_cast<float>((imaginary ? lane[pixel].imag() : lane[pixel].real()) * scale * m.correction[pixel]);
  }
}

void Gridder::degrid(const float* images, int num_stokes, std::complex<float>* vis) const {
  const Impl& m = *impl_;
  const bool packed = num_stokes > 1;
  const std::vector<Impl::Point>& points = packed ? m.hermitian : m.direct;
  const int num_lanes = packed ? (num_stokes + 1) / 2 : 1;
  std::vector<cdouble> at_point(points.size() * num_lanes, cdouble{});
  cfloat* grids = m.scratch(0, m.grid_cells() * num_lanes);
  for (int p = 0; p < m.planes; ++p) {
    m.advance_screen(p);
    const auto [lo, hi] = m.plane_range(points, p);
    if (lo == hi) continue;
    m.fill_plane(images, num_stokes, grids);
    for (int q = 0; q < num_lanes; ++q) {
      cfloat* grid = grids + q * m.grid_cells();
      fftwf_execute_dft(m.backward, reinterpret_cast<fftwf_complex*>(grid), reinterpret_cast<fftwf_complex*>(grid));
    }
    m.degrid_plane(p, points, grids, num_lanes, at_point.data());
  }
  // D at a point is V_a + i V_b there; at the conjugate point conj(V_a) + i conj(V_b).
  std::vector<cdouble> plain(m.count * num_lanes, cdouble{}), conjugate(m.count * num_lanes, cdouble{});
  for (std::size_t i = 0; i < points.size(); ++i) {
    const Impl::Point& point = points[i];
    for (int q = 0; q < num_lanes; ++q) {
      const cdouble value = at_point[i * num_lanes + q] * std::conj(point.rotation);
      (point.conjugate ? conjugate : plain)[point.k * num_lanes + q] = value;
    }
  }
  std::fill(vis, vis + m.count * num_stokes, std::complex<float>{});
  for (std::size_t k = 0; k < m.count; ++k) {
    if (!m.inside[k]) continue;
    for (int s = 0; s < num_stokes; ++s) {
      if (!packed) {
        vis[k * num_stokes + s] = cfloat(plain[k * num_lanes + s]);
        continue;
      }
      const cdouble d = plain[k * num_lanes + s / 2], e = std::conj(conjugate[k * num_lanes + s / 2]);
      vis[k * num_stokes + s] = cfloat(s % 2 == 0 ? 0.5 * (d + e) : (d - e) / cdouble(0, 2));
    }
  }
}

int Gridder::num_w_planes() const { return impl_->planes; }
std::size_t Gridder::num_outside() const { return impl_->outside; }
bool Gridder::inside(std::size_t k) const { return impl_->inside[k] != 0; }
EsKernel Gridder::uv_kernel() const { return impl_->kernel; }

}  // namespace spip::imaging
