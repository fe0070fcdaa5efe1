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

// The kernel's values over the W cells that a coordinate at grid position `g` touches.
inline void footprint(const EsKernel& kernel, double g, float* values) {
  const int first = footprint_first(g, kernel.support);
  for (int i = 0; i < kernel.support; ++i) values[i] = footprint_value(kernel, first, i, g);
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
    if (!packed) return mirror ? std::conj(weighted(k, lane)) : weighted(k, lane);
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

  // Per set_uvw: the shared point layout (its lists are regrouped below and released).
  PointLayout layout;
  // A point's first cells in u and v and the first w-plane it reaches.
  struct FirstCells {
    int u, v, plane;
  };
  // A point list grouped by the first w-plane each point reaches, and within a group by
  // grid tile: a plane's points are then W_w contiguous groups, and consecutive points
  // touch neighbouring cells (in w order they jump over a grid of tens of MB and miss
  // the cache at every point).
  struct PlaneGroups {
    std::vector<GridPoint> points;
    // Per point, what every w-plane shares: its first cells, its kernel values in u and v
    // (taps[i 2W + j], u then v: W floats each, which the gridding loops stream at every
    // plane) and its rotation exp(-2 pi i w x0).
    std::vector<FirstCells> first;
    std::vector<float> taps;
    std::vector<cdouble> rotation;
    std::vector<std::size_t> start;  // group g (first plane g): points [start[g], start[g + 1])
    // Point i's weight in the w-planes it reaches, first_plane() + j for j < W_w, at
    // [i W_w + j]: an exp each, which evaluated per plane cost a tenth of the imaging.
    std::vector<float> w_weights;
    // Group g's points whose first row lies in tile row r: [row_start[g T + r], row_start[g T + r + 1])
    // for T tile rows; a thread grids only the tile rows that reach its band.
    std::vector<std::size_t> row_start;
    std::vector<std::uint32_t> first_rows;  // [g n + row]: group g's points whose footprints start there
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
  void evaluate_kernels(PlaneGroups& groups) const;
  void mirror_kernels(PlaneGroups& groups, const PlaneGroups& source) const;
  // With `source` (the direct groups, which hold every visibility once), each point's
  // kernel values are copied from its own or its mirror's there rather than evaluated.
  PlaneGroups make_groups(const std::vector<GridPoint>& points, const PlaneGroups* source = nullptr) const;
  std::size_t grid_cells() const { return fft.cells(); }  // one lane's, rows fft.pitch() apart
  int w_support() const { return stacking.enabled ? stacking.w_kernel.support : 1; }
  float plane_weight(const PlaneGroups& groups, std::size_t i, int p) const {
    return groups.w_weights[i * w_support() + (p - groups.first[i].plane)];
  }
  const float* u_taps(const PlaneGroups& groups, std::size_t i) const {
    return groups.taps.data() + i * 2 * stacking.kernel.support;
  }
  const float* v_taps(const PlaneGroups& groups, std::size_t i) const {
    return u_taps(groups, i) + stacking.kernel.support;
  }
  // Points whose w-kernel reaches plane p: those of the groups p - W_w + 1 .. p.
  std::pair<std::size_t, std::size_t> plane_range(const PlaneGroups& groups, int p) const {
    const int first = std::max(0, p - w_support() + 1);
    return {groups.start[first], groups.start[p + 1]};
  }
  // values[i * num_lanes + q]: point i's weighted visibility in lane q, rotated.
  std::vector<cfloat> rotated_values(const PlaneGroups& groups, const Lanes& lanes) const;
  void grid_plane(int p, const PlaneGroups& groups, const cfloat* values, int num_lanes, cfloat* grids) const;
  std::vector<int> band_edges(const PlaneGroups& groups, int p, int bands) const;
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

void Gridder::Impl::evaluate_kernels(PlaneGroups& groups) const {
  const int support = stacking.kernel.support, w_span = w_support();
  const double du = geo.uv_cell();
  const auto count = static_cast<std::ptrdiff_t>(groups.points.size());
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t i = 0; i < count; ++i) {
    const GridPoint& q = groups.points[i];
    float* taps = groups.taps.data() + i * 2 * support;
    footprint(stacking.kernel, grid_position_u(q.u, du, geo.grid_size), taps);
    footprint(stacking.kernel, grid_position_v(q.v, du, geo.grid_size), taps + support);
    groups.rotation[i] = stacking.enabled ? std::polar(1.0, w_rotation_angle(q.w, stacking.x0)) : cdouble(1.0);
    for (int j = 0; j < w_span; ++j)
      groups.w_weights[i * w_span + j] =
          stacking.enabled ? static_cast<float>(w_plane_weight(stacking.w_kernel, q.w, layout.w_first, stacking.dw,
                                                                groups.first[i].plane + j))
                           : 1.0f;
  }
}

// A point's mirror (-u, -v, -w) sits at grid position P - g, so its footprint starts
// at P - first - W + 1 with the same values reversed, and the planes, centred on w = 0
// (w_planes()), mirror too: plane p's weights are those of plane planes - 1 - p. Only
// where the mirror's first cell is elsewhere (g - W/2 an integer, where the two sides'
// rounding decides) or a plane lies past the source's are the values evaluated.
void Gridder::Impl::mirror_kernels(PlaneGroups& groups, const PlaneGroups& source) const {
  const int n = geo.grid_size, support = stacking.kernel.support, w_span = w_support();
  const double du = geo.uv_cell();
  std::vector<std::uint32_t> at(layout.inside.size());  // visibility k's point in the source
  for (std::size_t i = 0; i < source.points.size(); ++i) at[source.points[i].k] = static_cast<std::uint32_t>(i);
  const auto count = static_cast<std::ptrdiff_t>(groups.points.size());
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t i = 0; i < count; ++i) {
    const GridPoint& q = groups.points[i];
    const std::size_t from = at[q.k];
    const bool same = source.points[from].mirror == q.mirror;
    const FirstCells& mine = groups.first[i];
    const FirstCells& theirs = source.first[from];
    float* taps = groups.taps.data() + i * 2 * support;
    const float* source_taps = source.taps.data() + from * 2 * support;
    const auto copy_axis = [&](int axis, int first, int source_first, double g) {
      if (same) {
        std::copy_n(source_taps + axis * support, support, taps + axis * support);
      } else if (first == n - source_first - support + 1) {
        std::reverse_copy(source_taps + axis * support, source_taps + (axis + 1) * support, taps + axis * support);
      } else {
        footprint(stacking.kernel, g, taps + axis * support);
      }
    };
    copy_axis(0, mine.u, theirs.u, grid_position_u(q.u, du, n));
    copy_axis(1, mine.v, theirs.v, grid_position_v(q.v, du, n));
    groups.rotation[i] = same ? source.rotation[from] : std::conj(source.rotation[from]);
    for (int j = 0; j < w_span; ++j) {
      const int plane = mine.plane + j;
      const int source_j = (same ? plane : layout.planes - 1 - plane) - theirs.plane;
      groups.w_weights[i * w_span + j] =
          source_j >= 0 && source_j < w_span
              ? source.w_weights[from * w_span + source_j]
              : static_cast<float>(w_plane_weight(stacking.w_kernel, q.w, layout.w_first, stacking.dw, plane));
    }
  }
}

// The points are sorted by where their footprints start and the plane they start at
// (no kernel value needed), and their kernel values found in that order.
Gridder::Impl::PlaneGroups Gridder::Impl::make_groups(const std::vector<GridPoint>& points,
                                                      const PlaneGroups* source) const {
  const int n = geo.grid_size, tiles = tiles_per_side(n), support = stacking.kernel.support;
  const double du = geo.uv_cell();
  const std::size_t keys_per_plane = static_cast<std::size_t>(tiles) * tiles;
  std::vector<std::size_t> key(points.size()), next(static_cast<std::size_t>(layout.planes) * keys_per_plane + 1, 0);
  std::vector<FirstCells> first(points.size());
  const auto count = static_cast<std::ptrdiff_t>(points.size());
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t i = 0; i < count; ++i) {
    const GridPoint& q = points[i];
    first[i] = FirstCells{footprint_first(grid_position_u(q.u, du, n), support),
                          footprint_first(grid_position_v(q.v, du, n), support), first_plane(q)};
    key[i] = static_cast<std::size_t>(first[i].plane) * keys_per_plane +
             wrap_near(first[i].v, n) / grid_tile * tiles + wrap_near(first[i].u, n) / grid_tile;
  }
  for (std::size_t k : key) ++next[k + 1];
  std::partial_sum(next.begin(), next.end(), next.begin());
  PlaneGroups groups;
  groups.start.resize(layout.planes + 1);
  for (int g = 0; g <= layout.planes; ++g) groups.start[g] = next[g * keys_per_plane];
  groups.row_start.resize(static_cast<std::size_t>(layout.planes) * tiles + 1);
  for (std::size_t r = 0; r < groups.row_start.size(); ++r) groups.row_start[r] = next[r * tiles];
  groups.points.resize(points.size());
  groups.first.resize(points.size());
  for (std::size_t i = 0; i < points.size(); ++i) {
    const std::size_t to = next[key[i]]++;
    groups.points[to] = points[i];
    groups.first[to] = first[i];
  }
  groups.first_rows.assign(static_cast<std::size_t>(layout.planes) * n, 0);
  for (const FirstCells& c : groups.first) ++groups.first_rows[static_cast<std::size_t>(c.plane) * n + wrap_near(c.v, n)];
  groups.taps.resize(points.size() * 2 * support);
  groups.rotation.resize(points.size());
  groups.w_weights.resize(points.size() * w_support());
  if (source)
    mirror_kernels(groups, *source);
  else
    evaluate_kernels(groups);
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
          cfloat(lanes.value(groups.points[i].k, groups.points[i].mirror != 0, q) * groups.rotation[i]);
  return values;
}

// Bands of rows, edges[t] .. edges[t + 1] - 1 for thread t, where about as many of
// plane p's points start: w follows v for most arrays, so a plane's
// points crowd into some of the rows, and equal bands left one thread with nearly all
// of them (all of them for the direct list, whose points have w >= 0).
std::vector<int> Gridder::Impl::band_edges(const PlaneGroups& groups, int p, int bands) const {
  const int n = geo.grid_size;
  std::vector<std::size_t> below(n + 1, 0);  // points that start in the rows below each
  for (int g = std::max(0, p - w_support() + 1); g <= p; ++g) {
    const std::uint32_t* rows = groups.first_rows.data() + static_cast<std::size_t>(g) * n;
    for (int r = 0; r < n; ++r) below[r + 1] += rows[r];
  }
  std::partial_sum(below.begin(), below.end(), below.begin());
  std::vector<int> edges(bands + 1, n);
  edges[0] = 0;
  for (int b = 1; b < bands; ++b) {
    const double share = static_cast<double>(below[n]) * b / bands;
    int r = edges[b - 1];
    while (r < n && static_cast<double>(below[r]) < share) ++r;
    edges[b] = r;
  }
  return edges;
}

// Each thread owns a band of grid rows (band_edges()) and adds only to those, so no two
// threads write the same cell and no private grids need reducing; a visibility whose
// kernel straddles a band edge is visited by both threads. A thread reads only the points
// whose first row is in a tile row that reaches its band (for_points_near_band()).
void Gridder::Impl::grid_plane(int p, const PlaneGroups& groups, const cfloat* values, int num_lanes,
                               cfloat* grids) const {
  const int n = geo.grid_size, pitch = fft.pitch();
  const std::size_t cells = grid_cells();
  const int support = stacking.kernel.support;
  std::vector<int> edges;
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num();
#pragma omp single
    edges = band_edges(groups, p, omp_get_num_threads());
    const int row_lo = edges[t], row_hi = edges[t + 1];
    for_points_near_band(groups, p, row_lo, row_hi, [&](std::size_t i) {
      const FirstCells& first = groups.first[i];
      const float* fu = u_taps(groups, i);
      const float* fv = v_taps(groups, i);
      // Rows first.v .. first.v + W - 1 (mod n) must meet [row_lo, row_hi).
      bool touches = false;
      for (int j = 0; j < support && !touches; ++j) {
        const int row = wrap_near(first.v + j, n);
        touches = row >= row_lo && row < row_hi;
      }
      if (!touches) return;
      const float weight = plane_weight(groups, i, p);
      const CellIndices columns(first.u, support, n), rows(first.v, support, n);
      // The u values twice each, beside a cell's real and imaginary parts: the row loop
      // is then a plain multiply-add on floats, which the compiler vectorises without
      // taking complex numbers apart and putting them together again.
      float fu_pairs[2 * max_support];
      for (int i2 = 0; i2 < support; ++i2) fu_pairs[2 * i2] = fu_pairs[2 * i2 + 1] = fu[i2];
      for (int q = 0; q < num_lanes; ++q) {
        if (values[i * num_lanes + q] == cfloat{}) continue;
        const cfloat value = values[i * num_lanes + q] * weight;
        cfloat* grid = grids + q * cells;
        for (int j = 0; j < support; ++j) {
          if (rows.index[j] < row_lo || rows.index[j] >= row_hi) continue;
          cfloat* row = grid + static_cast<std::size_t>(rows.index[j]) * pitch;
          const cfloat row_value = value * fv[j];
          if (columns.contiguous) {
            float* cell = reinterpret_cast<float*>(row + first.u);
            const float re = row_value.real(), im = row_value.imag();
            for (int i2 = 0; i2 < support; ++i2) {
              cell[2 * i2] += re * fu_pairs[2 * i2];
              cell[2 * i2 + 1] += im * fu_pairs[2 * i2 + 1];
            }
          } else {
            for (int i2 = 0; i2 < support; ++i2) row[columns.index[i2]] += row_value * fu[i2];
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
#pragma omp parallel
  {
    // A screen row as floats times the FFT-centring sign, which is the same in both image
    // rows it serves (they lie an even number of rows apart), in separate real and
    // imaginary parts: the pixel loops are then plain float arithmetic that the compiler
    // vectorises. The products are written out: std::complex's operator* checks for NaN
    // and Inf operands, which keeps loops from being vectorised.
    std::vector<float> factor_re(n), factor_im(n);
#pragma omp for schedule(static)
    for (int r = 0; r <= half; ++r) {
      double* screen_row =
          stacking.enabled ? reinterpret_cast<double*>(screen.data() + static_cast<std::size_t>(r) * n) : nullptr;
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
      const int parity = (offset + half - r + offset) & 1;  // of x + yg at x = 0
      for (int x = 0; x < n; ++x) {
        const float sign = ((x + parity) & 1) ? -1.0f : 1.0f;
        factor_re[x] = screen_row ? static_cast<float>(screen_row[2 * x]) * sign : sign;
        factor_im[x] = screen_row ? static_cast<float>(screen_row[2 * x + 1]) * sign : 0.0f;
      }
      for (int side = 0; side < (r == 0 ? 1 : 2); ++side) {
        const int y = side == 0 ? half - r : half + r;
        if (y >= n) continue;
        const int yg = y + offset;
        for (int q = 0; q < num_lanes; ++q) {
          const auto* cell_row =
              reinterpret_cast<const float*>(grids + q * cells + static_cast<std::size_t>(yg) * fft.pitch() + offset);
          auto* image_row = reinterpret_cast<float*>(images + q * pixels + static_cast<std::size_t>(y) * n);
          for (int x = 0; x < n; ++x) {
            const float fr = factor_re[x], fi = factor_im[x];
            const float gr = cell_row[2 * x], gi = cell_row[2 * x + 1];
            image_row[2 * x] += gr * fr - gi * fi;
            image_row[2 * x + 1] += gr * fi + gi * fr;
          }
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
      const auto row = static_cast<std::size_t>(at.cell / p), column = static_cast<std::size_t>(at.cell % p);
      model.support.rows[row] = model.support.columns[column] = 1;
      model.cell.push_back(row * fft.pitch() + column);
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
  for (const FirstCells& c : hermitian.first) {
    first_column[wrap_near(c.u, n)] = 1;
    first_row[wrap_near(c.v, n)] = 1;
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
  const int n = geo.grid_size, pitch = fft.pitch();
  const int support = stacking.kernel.support;
#pragma omp parallel for schedule(static)
  for (std::size_t i = lo; i < hi; ++i) {
    const double scale = plane_weight(groups, i, p);
    const FirstCells& first = groups.first[i];
    const float* fu = u_taps(groups, i);
    const float* fv = v_taps(groups, i);
    const CellIndices columns(first.u, support, n), rows(first.v, support, n);
    for (int q = 0; q < num_lanes; ++q) {
      const cfloat* grid = grids + q * grid_cells();
      cfloat sum{};
      for (int j = 0; j < support; ++j) {
        const cfloat* row = grid + static_cast<std::size_t>(rows.index[j]) * pitch;
        cfloat row_sum{};
        if (columns.contiguous) {
          const cfloat* cell = row + first.u;
          for (int i2 = 0; i2 < support; ++i2) row_sum += cell[i2] * fu[i2];
        } else {
          for (int i2 = 0; i2 < support; ++i2) row_sum += row[columns.index[i2]] * fu[i2];
        }
        sum += row_sum * fv[j];
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
  m.direct = {};  // the last channel's, released before this one's are made
  m.hermitian = {};
  m.layout = make_point_layout(uvw_lambda, count, m.geo, m.stacking, w_reach);
  m.direct = m.make_groups(m.layout.direct);
  m.hermitian = m.make_groups(m.layout.hermitian, &m.direct);
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
  // Zeroed once; after each plane only the lines its transform wrote.
  zero_cells(grids, m.grid_cells() * num_lanes);
  for (int p = 0; p < m.layout.planes; ++p) {
    const auto [lo, hi] = m.plane_range(groups, p);
    if (lo == hi) continue;
    m.grid_plane(p, groups, values.data(), num_lanes, grids);
    for (int q = 0; q < num_lanes; ++q) m.fft.forward(grids + q * m.grid_cells(), m.uv_support, m.window);
    m.accumulate_plane(p, grids, num_lanes, sum.data());
    for (int q = 0; q < num_lanes; ++q) m.fft.clear(grids + q * m.grid_cells(), m.uv_support, m.window);
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
  zero_cells(grids, m.grid_cells() * num_lanes);  // once, as in grid()
  for (int p = 0; p < m.layout.planes; ++p) {
    m.advance_model_screen(model, p);
    const auto [lo, hi] = m.plane_range(groups, p);
    if (lo == hi) continue;
    m.fill_plane(model, num_lanes, grids);
    for (int q = 0; q < num_lanes; ++q) m.fft.backward(grids + q * m.grid_cells(), model.support, m.uv_support);
    m.degrid_plane(p, groups, grids, num_lanes, at_point.data());
    for (int q = 0; q < num_lanes; ++q) m.fft.clear(grids + q * m.grid_cells(), model.support, m.uv_support);
  }
  std::vector<cdouble> plain(count * num_lanes, cdouble{}), mirrored(count * num_lanes, cdouble{});
#pragma omp parallel for schedule(static)
  for (std::size_t i = 0; i < points.size(); ++i)
    for (int q = 0; q < num_lanes; ++q)
      (points[i].mirror ? mirrored : plain)[points[i].k * num_lanes + q] =
          at_point[i * num_lanes + q] * std::conj(groups.rotation[i]);
#pragma omp parallel for schedule(static)
  for (std::size_t k = 0; k < count; ++k) {
    std::fill(vis + k * num_stokes, vis + (k + 1) * num_stokes, std::complex<float>{});
    if (!m.layout.inside[k]) continue;
    for (int s = 0; s < num_stokes; ++s) {
      const std::size_t lane = k * num_lanes + (packed ? s / 2 : s);
      // Unpacked, a visibility is at one of its two points, and a real image's is the
      // conjugate at the mirror.
      vis[k * num_stokes + s] = cfloat(packed ? unpacked_stokes(plain[lane], mirrored[lane], s % 2 == 1)
                                              : plain[lane] + std::conj(mirrored[lane]));
    }
  }
}

double Gridder::bytes_per_visibility(const ImageGeometry& geometry, double accuracy, bool wstacking) {
  const WStacking stacking = make_w_stacking(geometry, accuracy, wstacking);
  const double per_point = sizeof(GridPoint) + sizeof(Impl::FirstCells) + sizeof(cdouble) +
                           2 * stacking.kernel.support * sizeof(float) +
                           (stacking.enabled ? stacking.w_kernel.support : 1) * sizeof(float);
  // While the hermitian list is grouped, the layout's lists and that sort's keys and
  // first cells are held as well.
  const double grouping = 3 * sizeof(GridPoint) + 2 * (sizeof(std::size_t) + sizeof(Impl::FirstCells));
  return 3 * per_point + grouping;
}

int Gridder::num_w_planes() const { return impl_->layout.planes; }
std::size_t Gridder::num_outside() const { return impl_->layout.outside; }
bool Gridder::inside(std::size_t k) const { return impl_->layout.inside[k] != 0; }
EsKernel Gridder::uv_kernel() const { return impl_->stacking.kernel; }

}  // namespace spip::imaging
