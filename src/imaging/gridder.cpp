#include "spip/imaging/gridder.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>

#include "spip/error.hpp"
#include "spip/imaging/fft.hpp"
#include "spip/imaging/gridding_math.hpp"
#include "spip/imaging/tile_plan.hpp"
#include "spip/imaging/w_layout.hpp"

namespace spip::imaging {
namespace {

using cfloat = std::complex<float>;
using cdouble = std::complex<double>;

// Kernel values over the W cells that a coordinate at grid position `g` touches.
struct Footprint {
  int first = 0;
  float values[max_support];
};

inline Footprint footprint(const EsKernel& kernel, double g) {
  Footprint f;
  f.first = footprint_first(g, kernel.support);
  for (int i = 0; i < kernel.support; ++i) f.values[i] = footprint_value(kernel, f.first, i, g);
  return f;
}

// wrap_cell() for the cells a footprint reaches, at most W/2 past an edge (on_grid()
// keeps visibilities a cell inside): a compare instead of an integer division, which
// cost more than the gridding itself.
inline int wrap_near(int cell, int n) { return cell < 0 ? cell + n : cell >= n ? cell - n : cell; }

// Grid cell indices of a footprint, wrapped at the edges.
struct CellIndices {
  int index[max_support];
  bool contiguous;
  CellIndices(int first, int support, int n) : contiguous(first >= 0 && first + support <= n) {
    for (int i = 0; i < support; ++i) index[i] = wrap_near(first + i, n);
  }
};

// What goes into each complex grid ("lane"): one Stokes parameter, or two packed by
// packed_lane() (half the FFTs for twice the gridding).
struct Lanes {
  const cfloat* vis;
  const float* weight;
  int num_stokes;
  bool packed;
  int count() const { return packed ? (num_stokes + 1) / 2 : num_stokes; }
  cdouble weighted(std::size_t k, int s) const {
    return s < num_stokes ? cdouble(vis[k * num_stokes + s]) * static_cast<double>(weight[k * num_stokes + s])
                          : cdouble{};
  }
  cdouble value(std::size_t k, bool mirror, int lane) const {
    if (!packed) return weighted(k, lane);
    return packed_lane(weighted(k, 2 * lane), weighted(k, 2 * lane + 1), mirror);
  }
};

// Zeroes `count` cells over the OpenMP threads: a grid is tens of MB, and one thread
// clearing it while the others wait cost a tenth of the imaging.
void zero_cells(cfloat* cells, std::size_t count) {
  constexpr std::size_t block = 1 << 16;
  const auto blocks = static_cast<std::ptrdiff_t>((count + block - 1) / block);
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t b = 0; b < blocks; ++b) {
    const std::size_t first = static_cast<std::size_t>(b) * block;
    std::fill(cells + first, cells + std::min(count, first + block), cfloat{});
  }
}

}  // namespace

struct Gridder::Impl {
  ImageGeometry geo;
  WStacking stacking;
  GridCorrection corr;
  int threads = 1;

  // Per set_uvw: the shared point layout (its lists are regrouped below and released),
  // and per point its kernel footprints in u and v (the same in every w-plane) and its
  // rotation exp(-2 pi i w x0).
  PointLayout layout;
  struct Cached {
    cdouble rotation;
    Footprint fu, fv;
  };
  // A point list grouped by the first w-plane each point reaches, and within a group by
  // grid tile: a plane's points are then W_w contiguous groups, and consecutive points
  // touch neighbouring cells (in w order they jump over a grid of tens of MB and miss
  // the cache at every point).
  struct PlaneGroups {
    std::vector<GridPoint> points;
    std::vector<Cached> cache;
    std::vector<std::size_t> start;  // group g (first plane g): points [start[g], start[g + 1])
    // Point i's weight in the w-planes it reaches, first_plane() + j for j < W_w, at
    // [i W_w + j]: an exp each, which evaluated per plane cost a tenth of the imaging.
    std::vector<float> w_weights;
    // Group g's points whose first row lies in tile row r: [row_start[g T + r], row_start[g T + r + 1])
    // for T tile rows; a thread grids only the tile rows that reach its band.
    std::vector<std::size_t> row_start;
  };
  PlaneGroups direct, hermitian;

  const Fft2d& fft;
  Fft2d::Support window;      // the grid rows and columns the image covers
  Fft2d::Support uv_support;  // those the visibilities' kernels reach, per set_uvw

  // w-screens exp(i w_screen_angle(w_p, x_shifted)), advanced plane by plane by a
  // constant step instead of a sincos per pixel and plane. n - 1 is the same at (l, m)
  // and (l, -m), so the rows of one half of the image, N/2 + 1 of them, serve all rows
  // (screen_index()).
  std::vector<cdouble> screen_step;   // plane 1's screen relative to plane 0's
  std::vector<cdouble> screen_first;  // plane 0's, per set_uvw
  std::size_t screen_index(int x, int y) const {
    return static_cast<std::size_t>(std::abs(y - geo.size / 2)) * geo.size + x;
  }
  // x_shifted at the screen's entry `index`.
  double screen_x_shifted(std::size_t index) const {
    const int x = static_cast<int>(index % geo.size), y = geo.size / 2 - static_cast<int>(index / geo.size);
    return corr.x_shifted[static_cast<std::size_t>(y) * geo.size + x];
  }

  // Scratch reused across calls (first touch of fresh pages costs more than the FFTs);
  // one Gridder serves one thread of calls at a time.
  mutable std::vector<std::unique_ptr<FftBuffer>> scratch_grids;
  mutable std::vector<cdouble> screen;
  cfloat* scratch(int slot, std::size_t cells) const {
    if (scratch_grids.size() <= static_cast<std::size_t>(slot)) scratch_grids.resize(slot + 1);
    auto& buffer = scratch_grids[slot];
    if (!buffer || buffer->size() < cells) buffer = std::make_unique<FftBuffer>(cells);
    return buffer->data();
  }

  Impl(const ImageGeometry& g, double accuracy, bool wstacking)
      : geo(g), stacking(make_w_stacking(g, accuracy, wstacking)), corr(make_grid_correction(g, stacking)),
        threads(omp_get_max_threads()), fft(Fft2d::shared(g.grid_size)) {
    window = image_window();
    if (stacking.enabled) {
      screen_step.resize(static_cast<std::size_t>(geo.size / 2 + 1) * geo.size);
      for (std::size_t index = 0; index < screen_step.size(); ++index)
        screen_step[index] = std::polar(1.0, w_screen_angle(stacking.dw, screen_x_shifted(index)));
    }
  }
  int first_plane(const GridPoint& point) const;
  std::vector<Cached> make_cache(const std::vector<GridPoint>& points) const;
  // With `source` (the hermitian groups, which hold every point of the direct list),
  // the cache is copied from it rather than evaluated again.
  PlaneGroups make_groups(const std::vector<GridPoint>& points, const PlaneGroups* source = nullptr) const;
  std::size_t grid_cells() const { return static_cast<std::size_t>(geo.grid_size) * geo.grid_size; }
  int w_support() const { return stacking.enabled ? stacking.w_kernel.support : 1; }
  std::vector<float> make_w_weights(const std::vector<GridPoint>& points) const;
  float plane_weight(const PlaneGroups& groups, std::size_t i, int p) const {
    return groups.w_weights[i * w_support() + (p - first_plane(groups.points[i]))];
  }
  // Points whose w-kernel reaches plane p: those of the groups p - W_w + 1 .. p.
  std::pair<std::size_t, std::size_t> plane_range(const PlaneGroups& groups, int p) const {
    const int first = std::max(0, p - w_support() + 1);
    return {groups.start[first], groups.start[p + 1]};
  }
  // values[i * num_lanes + q]: point i's weighted visibility in lane q, rotated.
  std::vector<cfloat> rotated_values(const PlaneGroups& groups, const Lanes& lanes) const;
  void grid_plane(int p, const PlaneGroups& groups, const cfloat* values, int num_lanes, cfloat* grids) const;
  // Calls f(i) for the points of plane p (plane_range()) whose first row lies in a tile
  // row that holds one of the rows [row_lo - W + 1, row_hi), modulo the grid: those
  // whose footprints can reach the band [row_lo, row_hi).
  template <class F>
  void for_points_near_band(const PlaneGroups& groups, int p, int row_lo, int row_hi, F&& f) const {
    const int n = geo.grid_size, tiles = tiles_per_side(n);
    const int reach = row_lo - (stacking.kernel.support - 1);
    const int first = std::max(reach, 0) / grid_tile, last = (row_hi - 1) / grid_tile;
    // Where the reach wraps below row 0: the top tile rows, those not visited already.
    const int wrapped = reach < 0 ? std::max((reach + n) / grid_tile, last + 1) : tiles;
    for (int g = std::max(0, p - w_support() + 1); g <= p; ++g) {
      const std::size_t* rows = groups.row_start.data() + static_cast<std::size_t>(g) * tiles;
      for (std::size_t i = rows[first]; i < rows[last + 1]; ++i) f(i);
      for (std::size_t i = rows[wrapped]; i < rows[tiles]; ++i) f(i);
    }
  }
  mutable int screen_plane = -1;  // the plane `screen` is at; -1: none yet
  void accumulate_plane(int p, const cfloat* grids, int num_lanes, cfloat* images) const;
  // The nonzero pixels of model images (a CLEAN model is mostly zeros): their grid
  // cells, their lanes' values times the FFT-centring sign and the grid correction,
  // and their w-screen, advanced plane by plane as the image's is.
  struct ModelPixels {
    std::vector<std::size_t> cell, screen_at;
    std::vector<cdouble> value;   // [pixel][lane]
    std::vector<cdouble> screen;  // conj of the current plane's w-screen
    Fft2d::Support support;       // their grid rows and columns
  };
  ModelPixels model_pixels(const float* images, int num_stokes, int num_lanes) const;
  void advance_model_screen(ModelPixels& model, int p) const;
  void fill_plane(const ModelPixels& model, int num_lanes, cfloat* grids) const;
  // The grid rows and columns the image covers (image_cell() centres it).
  Fft2d::Support image_window() const {
    const int offset = (geo.grid_size - geo.size) / 2;
    std::vector<std::uint8_t> lines(geo.grid_size, 0);
    std::fill(lines.begin() + offset, lines.begin() + offset + geo.size, 1);
    return {lines, lines};
  }
  void find_uv_support();
  void degrid_plane(int p, const PlaneGroups& groups, const cfloat* grids, int num_lanes, cdouble* out) const;
};

int Gridder::Impl::first_plane(const GridPoint& q) const {
  return stacking.enabled
             ? first_w_plane(q.w, WPlanes{layout.w_first, layout.planes}, stacking.dw, stacking.w_kernel.support)
             : 0;
}

std::vector<Gridder::Impl::Cached> Gridder::Impl::make_cache(const std::vector<GridPoint>& points) const {
  std::vector<Cached> cache(points.size());
  const double du = geo.uv_cell();
#pragma omp parallel for schedule(static)
  for (std::size_t i = 0; i < points.size(); ++i) {
    const GridPoint& q = points[i];
    cache[i].rotation = stacking.enabled ? std::polar(1.0, w_rotation_angle(q.w, stacking.x0)) : cdouble(1.0);
    cache[i].fu = footprint(stacking.kernel, grid_position_u(q.u, du, geo.grid_size));
    cache[i].fv = footprint(stacking.kernel, grid_position_v(q.v, du, geo.grid_size));
  }
  return cache;
}

std::vector<float> Gridder::Impl::make_w_weights(const std::vector<GridPoint>& points) const {
  const int support = w_support();
  std::vector<float> weights(points.size() * support, 1.0f);
  if (!stacking.enabled) return weights;
#pragma omp parallel for schedule(static)
  for (std::size_t i = 0; i < points.size(); ++i) {
    const int first = first_plane(points[i]);
    for (int j = 0; j < support; ++j)
      weights[i * support + j] =
          static_cast<float>(w_plane_weight(stacking.w_kernel, points[i].w, layout.w_first, stacking.dw, first + j));
  }
  return weights;
}

// The points are sorted by where their footprints start (no kernel value needed), and
// their cache made in that order: it is the larger of the two, and is not copied.
Gridder::Impl::PlaneGroups Gridder::Impl::make_groups(const std::vector<GridPoint>& points,
                                                      const PlaneGroups* source) const {
  const int n = geo.grid_size, tiles = tiles_per_side(n), support = stacking.kernel.support;
  const double du = geo.uv_cell();
  const std::size_t keys_per_plane = static_cast<std::size_t>(tiles) * tiles;
  std::vector<std::size_t> key(points.size()), next(static_cast<std::size_t>(layout.planes) * keys_per_plane + 1, 0);
  for (std::size_t i = 0; i < points.size(); ++i) {
    const GridPoint& q = points[i];
    const int first_u = footprint_first(grid_position_u(q.u, du, n), support);
    const int first_v = footprint_first(grid_position_v(q.v, du, n), support);
    key[i] = static_cast<std::size_t>(first_plane(q)) * keys_per_plane + wrap_near(first_v, n) / grid_tile * tiles +
             wrap_near(first_u, n) / grid_tile;
    ++next[key[i] + 1];
  }
  std::partial_sum(next.begin(), next.end(), next.begin());
  PlaneGroups groups;
  groups.start.resize(layout.planes + 1);
  for (int g = 0; g <= layout.planes; ++g) groups.start[g] = next[g * keys_per_plane];
  groups.row_start.resize(static_cast<std::size_t>(layout.planes) * tiles + 1);
  for (std::size_t r = 0; r < groups.row_start.size(); ++r) groups.row_start[r] = next[r * tiles];
  groups.points.resize(points.size());
  for (std::size_t i = 0; i < points.size(); ++i) groups.points[next[key[i]]++] = points[i];
  if (!source) {
    groups.cache = make_cache(groups.points);
    groups.w_weights = make_w_weights(groups.points);
    return groups;
  }
  // Point (k, mirror) of the source is at at[2 k + mirror].
  std::vector<std::uint32_t> at(2 * static_cast<std::size_t>(layout.inside.size()));
  for (std::size_t i = 0; i < source->points.size(); ++i)
    at[2 * static_cast<std::size_t>(source->points[i].k) + source->points[i].mirror] = static_cast<std::uint32_t>(i);
  const int w_span = w_support();
  groups.cache.resize(points.size());
  groups.w_weights.resize(points.size() * w_span);
#pragma omp parallel for schedule(static)
  for (std::size_t i = 0; i < points.size(); ++i) {
    const std::size_t from = at[2 * static_cast<std::size_t>(groups.points[i].k) + groups.points[i].mirror];
    groups.cache[i] = source->cache[from];
    std::copy_n(source->w_weights.begin() + from * w_span, w_span, groups.w_weights.begin() + i * w_span);
  }
  return groups;
}

// Once per grid() rather than per plane: the visibilities are read in point order, far
// from sequential.
std::vector<cfloat> Gridder::Impl::rotated_values(const PlaneGroups& groups, const Lanes& lanes) const {
  const int num_lanes = lanes.count();
  std::vector<cfloat> values(groups.points.size() * num_lanes);
#pragma omp parallel for schedule(static)
  for (std::size_t i = 0; i < groups.points.size(); ++i)
    for (int q = 0; q < num_lanes; ++q)
      values[i * num_lanes + q] =
          cfloat(lanes.value(groups.points[i].k, groups.points[i].mirror != 0, q) * groups.cache[i].rotation);
  return values;
}

// Each thread owns a band of grid rows and adds only to those, so no two threads
// write the same cell and no private grids need reducing; a visibility whose kernel
// straddles a band edge is visited by both threads. A thread reads only the points
// whose first row is in a tile row that reaches its band (for_points_near_band()).
void Gridder::Impl::grid_plane(int p, const PlaneGroups& groups, const cfloat* values, int num_lanes,
                               cfloat* grids) const {
  const std::vector<Cached>& cache = groups.cache;
  const int n = geo.grid_size;
  const std::size_t cells = grid_cells();
  const int support = stacking.kernel.support;
#pragma omp parallel num_threads(threads)
  {
    const int bands = omp_get_num_threads(), t = omp_get_thread_num();
    const int row_lo = static_cast<int>(static_cast<long>(n) * t / bands);
    const int row_hi = static_cast<int>(static_cast<long>(n) * (t + 1) / bands);
    for_points_near_band(groups, p, row_lo, row_hi, [&](std::size_t i) {
      const Footprint& fu = cache[i].fu;
      const Footprint& fv = cache[i].fv;
      // Rows fv.first .. fv.first + W - 1 (mod n) must meet [row_lo, row_hi).
      bool touches = false;
      for (int j = 0; j < support && !touches; ++j) {
        const int row = wrap_near(fv.first + j, n);
        touches = row >= row_lo && row < row_hi;
      }
      if (!touches) return;
      const float weight = plane_weight(groups, i, p);
      const CellIndices columns(fu.first, support, n), rows(fv.first, support, n);
      for (int q = 0; q < num_lanes; ++q) {
        if (values[i * num_lanes + q] == cfloat{}) continue;
        const cfloat value = values[i * num_lanes + q] * weight;
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
    });
  }
}

// Plane p's image, added to `images`: each pixel's grid cell times the FFT-centring
// sign and plane p's w-screen. The screen is advanced to plane p in the same pass, a
// screen row at a time with the two image rows it serves (screen_index()). In single
// precision, as the grids are: a sum of a dozen planes loses no accuracy, and the pass
// over the images is memory-bound.
void Gridder::Impl::accumulate_plane(int p, const cfloat* grids, int num_lanes, cfloat* images) const {
  const int n = geo.size, half = n / 2, offset = (geo.grid_size - n) / 2;
  const std::size_t pixels = geo.pixels(), cells = grid_cells();
  const int steps = screen_plane < 0 ? p : p - screen_plane;
#pragma omp parallel for schedule(static)
  for (int r = 0; r <= half; ++r) {
    // The products are written out: std::complex's operator* checks for NaN and Inf
    // operands, which keeps the loops from being vectorised.
    double* screen_row = stacking.enabled ? reinterpret_cast<double*>(screen.data() + static_cast<std::size_t>(r) * n)
                                          : nullptr;
    if (screen_row) {
      const std::size_t row = static_cast<std::size_t>(r) * n;
      if (screen_plane < 0) std::copy(screen_first.begin() + row, screen_first.begin() + row + n, screen.begin() + row);
      const auto* step_row = reinterpret_cast<const double*>(screen_step.data() + row);
      for (int step = 0; step < steps; ++step)
        for (int x = 0; x < n; ++x) {
          const double a = screen_row[2 * x], b = screen_row[2 * x + 1];
          const double c = step_row[2 * x], d = step_row[2 * x + 1];
          screen_row[2 * x] = a * c - b * d;
          screen_row[2 * x + 1] = a * d + b * c;
        }
    }
    for (int side = 0; side < (r == 0 ? 1 : 2); ++side) {
      const int y = side == 0 ? half - r : half + r;
      if (y >= n) continue;
      const int yg = y + offset;
      for (int q = 0; q < num_lanes; ++q) {
        const auto* cell_row = reinterpret_cast<const float*>(grids + q * cells + static_cast<std::size_t>(yg) * geo.grid_size + offset);
        auto* image_row = reinterpret_cast<float*>(images + q * pixels + static_cast<std::size_t>(y) * n);
        for (int x = 0; x < n; ++x) {
          const float sign = ((x + offset + yg) & 1) ? -1.0f : 1.0f;
          const float fr = screen_row ? static_cast<float>(screen_row[2 * x]) * sign : sign;
          const float fi = screen_row ? static_cast<float>(screen_row[2 * x + 1]) * sign : 0.0f;
          const float gr = cell_row[2 * x], gi = cell_row[2 * x + 1];
          image_row[2 * x] += gr * fr - gi * fi;
          image_row[2 * x + 1] += gr * fi + gi * fr;
        }
      }
    }
  }
  screen_plane = p;
}

// Lanes as in grid(): images a + i b when more than one image is predicted.
Gridder::Impl::ModelPixels Gridder::Impl::model_pixels(const float* images, int num_stokes, int num_lanes) const {
  const std::size_t pixels = geo.pixels();
  const int n = geo.size, p = geo.grid_size;
  const bool packed = num_stokes > 1;
  ModelPixels model;
  model.support = Fft2d::Support{std::vector<std::uint8_t>(p, 0), std::vector<std::uint8_t>(p, 0)};
  for (int y = 0; y < n; ++y)
    for (int x = 0; x < n; ++x) {
      const std::size_t pixel = static_cast<std::size_t>(y) * n + x;
      bool empty = true;
      for (int s = 0; s < num_stokes; ++s) empty = empty && images[s * pixels + pixel] == 0;
      if (empty) continue;
      const ImageCell at = image_cell(x, y, n, p);
      const auto cell = static_cast<std::size_t>(at.cell);
      model.support.rows[cell / p] = model.support.columns[cell % p] = 1;
      model.cell.push_back(cell);
      model.screen_at.push_back(screen_index(x, y));
      const double scale = at.sign * corr.correction[pixel];
      for (int q = 0; q < num_lanes; ++q) {
        const double a = images[(packed ? 2 * q : q) * pixels + pixel];
        const double b = packed && 2 * q + 1 < num_stokes ? images[(2 * q + 1) * pixels + pixel] : 0.0;
        model.value.push_back(scale * cdouble(a, b));
      }
    }
  model.screen.assign(model.cell.size(), cdouble(1.0));
  return model;
}

void Gridder::Impl::advance_model_screen(ModelPixels& model, int p) const {
  if (!stacking.enabled) return;
  const std::vector<cdouble>& factor = p == 0 ? screen_first : screen_step;
  for (std::size_t e = 0; e < model.cell.size(); ++e)
    model.screen[e] = (p == 0 ? cdouble(1.0) : model.screen[e]) * std::conj(factor[model.screen_at[e]]);
}

void Gridder::Impl::fill_plane(const ModelPixels& model, int num_lanes, cfloat* grids) const {
  zero_cells(grids, grid_cells() * num_lanes);
  const auto count = static_cast<std::ptrdiff_t>(model.cell.size());
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t e = 0; e < count; ++e)
    for (int q = 0; q < num_lanes; ++q)
      grids[q * grid_cells() + model.cell[e]] = cfloat(model.screen[e] * model.value[e * num_lanes + q]);
}

// The hermitian list holds every point of the direct one: the first cells of its
// footprints, then each widened by the kernel.
void Gridder::Impl::find_uv_support() {
  const int n = geo.grid_size, support = stacking.kernel.support;
  std::vector<std::uint8_t> first_column(n, 0), first_row(n, 0);
  for (const Cached& c : hermitian.cache) {
    first_column[wrap_near(c.fu.first, n)] = 1;
    first_row[wrap_near(c.fv.first, n)] = 1;
  }
  uv_support = Fft2d::Support{std::vector<std::uint8_t>(n, 0), std::vector<std::uint8_t>(n, 0)};
  for (int cell = 0; cell < n; ++cell)
    for (int i = 0; i < support; ++i) {
      if (first_column[cell]) uv_support.columns[wrap_near(cell + i, n)] = 1;
      if (first_row[cell]) uv_support.rows[wrap_near(cell + i, n)] = 1;
    }
}

void Gridder::Impl::degrid_plane(int p, const PlaneGroups& groups, const cfloat* grids, int num_lanes,
                                 cdouble* out) const {
  const auto [lo, hi] = plane_range(groups, p);
  const std::vector<Cached>& cache = groups.cache;
  const int n = geo.grid_size;
  const int support = stacking.kernel.support;
#pragma omp parallel for schedule(static)
  for (std::size_t i = lo; i < hi; ++i) {
    const double scale = plane_weight(groups, i, p);
    const Footprint& fu = cache[i].fu;
    const Footprint& fv = cache[i].fv;
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

void Gridder::set_uvw(const double* uvw_lambda, std::size_t count, double w_reach) {
  Impl& m = *impl_;
  m.layout = make_point_layout(uvw_lambda, count, m.geo, m.stacking, w_reach);
  m.hermitian = m.make_groups(m.layout.hermitian);
  m.direct = m.make_groups(m.layout.direct, &m.hermitian);
  m.layout.direct = {};
  m.layout.hermitian = {};
  m.find_uv_support();
  if (!m.stacking.enabled) return;
  m.screen_first.resize(m.screen_step.size());
#pragma omp parallel for schedule(static)
  for (std::size_t index = 0; index < m.screen_first.size(); ++index)
    m.screen_first[index] = std::polar(1.0, w_screen_angle(m.layout.w_first, m.screen_x_shifted(index)));
}

void Gridder::grid(const std::complex<float>* vis, const float* weight, int num_stokes, float* images) const {
  const Impl& m = *impl_;
  const std::size_t pixels = m.geo.pixels();
  const Lanes lanes{vis, weight, num_stokes, num_stokes > 1};
  const Impl::PlaneGroups& groups = lanes.packed ? m.hermitian : m.direct;
  const int num_lanes = lanes.count();
  std::vector<cfloat> sum(pixels * num_lanes, cfloat{});
  cfloat* grids = m.scratch(0, m.grid_cells() * num_lanes);
  const std::vector<cfloat> values = m.rotated_values(groups, lanes);
  m.screen.resize(m.screen_first.size());
  m.screen_plane = -1;
  for (int p = 0; p < m.layout.planes; ++p) {
    const auto [lo, hi] = m.plane_range(groups, p);
    if (lo == hi) continue;
    zero_cells(grids, m.grid_cells() * num_lanes);
    m.grid_plane(p, groups, values.data(), num_lanes, grids);
    for (int q = 0; q < num_lanes; ++q) m.fft.forward(grids + q * m.grid_cells(), m.uv_support, m.window);
    m.accumulate_plane(p, grids, num_lanes, sum.data());
  }
  // Packed lanes hold (a + i b) summed over both halves of the uv plane: 2 image_a + 2i image_b.
  for (int s = 0; s < num_stokes; ++s) {
    const cfloat* lane = sum.data() + (lanes.packed ? s / 2 : s) * pixels;
    const bool imaginary = lanes.packed && s % 2 == 1;
    const double scale = lanes.packed ? 0.5 : 1.0;
#pragma omp parallel for schedule(static)
    for (std::size_t pixel = 0; pixel < pixels; ++pixel)
      images[s * pixels + pixel] =
          static_cast<float>((imaginary ? lane[pixel].imag() : lane[pixel].real()) * scale * m.corr.correction[pixel]);
  }
}

void Gridder::degrid(const float* images, int num_stokes, std::complex<float>* vis) const {
  const Impl& m = *impl_;
  const bool packed = num_stokes > 1;
  const Impl::PlaneGroups& groups = packed ? m.hermitian : m.direct;
  const std::vector<GridPoint>& points = groups.points;
  const int num_lanes = packed ? (num_stokes + 1) / 2 : 1;
  const std::size_t count = m.layout.inside.size();
  std::vector<cdouble> at_point(points.size() * num_lanes, cdouble{});
  cfloat* grids = m.scratch(0, m.grid_cells() * num_lanes);
  Impl::ModelPixels model = m.model_pixels(images, num_stokes, num_lanes);
  for (int p = 0; p < m.layout.planes; ++p) {
    m.advance_model_screen(model, p);
    const auto [lo, hi] = m.plane_range(groups, p);
    if (lo == hi) continue;
    m.fill_plane(model, num_lanes, grids);
    for (int q = 0; q < num_lanes; ++q) m.fft.backward(grids + q * m.grid_cells(), model.support, m.uv_support);
    m.degrid_plane(p, groups, grids, num_lanes, at_point.data());
  }
  std::vector<cdouble> plain(count * num_lanes, cdouble{}), mirrored(count * num_lanes, cdouble{});
#pragma omp parallel for schedule(static)
  for (std::size_t i = 0; i < points.size(); ++i)
    for (int q = 0; q < num_lanes; ++q)
      (points[i].mirror ? mirrored : plain)[points[i].k * num_lanes + q] =
          at_point[i * num_lanes + q] * std::conj(groups.cache[i].rotation);
#pragma omp parallel for schedule(static)
  for (std::size_t k = 0; k < count; ++k) {
    std::fill(vis + k * num_stokes, vis + (k + 1) * num_stokes, std::complex<float>{});
    if (!m.layout.inside[k]) continue;
    for (int s = 0; s < num_stokes; ++s) {
      const std::size_t lane = k * num_lanes + (packed ? s / 2 : s);
      vis[k * num_stokes + s] = cfloat(packed ? unpacked_stokes(plain[lane], mirrored[lane], s % 2 == 1) : plain[lane]);
    }
  }
}

int Gridder::num_w_planes() const { return impl_->layout.planes; }
std::size_t Gridder::num_outside() const { return impl_->layout.outside; }
bool Gridder::inside(std::size_t k) const { return impl_->layout.inside[k] != 0; }
EsKernel Gridder::uv_kernel() const { return impl_->stacking.kernel; }

}  // namespace spip::imaging
