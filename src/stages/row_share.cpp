#include "spip/stages/row_share.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "spip/common/constants.hpp"
#include "spip/imaging/tile_plan.hpp"
#include "spip/imaging/w_layout.hpp"
#include "spip/job/log.hpp"

namespace spip::pipeline {
namespace {

// What a member's share of the rows costs it per major cycle, in rows: each row it
// grids and degrids (W^2 cells on each of W_w planes), and each w-plane its rows reach
// (an FFT and a pass over the grid: about as much as grid_cells / (W^2 W_w) rows). A
// band of |w| reaches the planes about +|w| and, through the Hermitian mirror points,
// about -|w|. The planes are those of the highest imaged frequency, where w is largest
// in wavelengths. A share beyond largest_row_share() of the rows costs too much: the
// memory plan counts on none being larger.
class ShareCost {
 public:
  ShareCost(const Plan& plan, const imaging::WStacking& stacking, const std::vector<double>& abs_w_m, int members)
      : stacking_(stacking),
        to_lambda_(*std::max_element(plan.freq_hz.begin(), plan.freq_hz.end()) / speed_of_light),
        planes_(imaging::w_planes(abs_w_m.back() * to_lambda_, stacking.w_kernel.support, stacking.dw)),
        rows_per_plane_(static_cast<double>(plan.geometry.grid_size) * plan.geometry.grid_size /
                        (static_cast<double>(stacking.kernel.support) * stacking.kernel.support *
                         std::max(1, stacking.w_kernel.support))),
        row_cap_(static_cast<std::size_t>(std::ceil(largest_row_share(members) * static_cast<double>(abs_w_m.size())))),
        abs_w_m_(abs_w_m) {}

  // Rows [first, last) of the rows ordered by |w|.
  double operator()(std::size_t first, std::size_t last) const {
    if (last <= first) return 0;
    if (last - first > row_cap_) return std::numeric_limits<double>::infinity();
    return static_cast<double>(last - first) + rows_per_plane_ * planes(abs_w_m_[first], abs_w_m_[last - 1]);
  }

 private:
  int planes(double lo_m, double hi_m) const {
    if (!stacking_.enabled) return 1;
    const int reach = stacking_.w_kernel.support;
    const auto first = [&](double w_m) {
      return imaging::first_w_plane(w_m * to_lambda_, planes_, stacking_.dw, reach);
    };
    const int last_plane = planes_.planes - 1;
    const int up_begin = first(lo_m), up_end = std::min(last_plane, first(hi_m) + reach - 1);
    const int down_begin = first(-hi_m), down_end = std::min(last_plane, first(-lo_m) + reach - 1);
    const int overlap = std::max(0, std::min(up_end, down_end) - std::max(up_begin, down_begin) + 1);
    return (up_end - up_begin + 1) + (down_end - down_begin + 1) - overlap;
  }

  imaging::WStacking stacking_;
  double to_lambda_;
  imaging::WPlanes planes_;
  double rows_per_plane_;
  std::size_t row_cap_;
  const std::vector<double>& abs_w_m_;
};

// Cuts the rows ordered by |w| into `members` contiguous shares whose largest cost is
// least: the smallest cost limit with which consecutive shares, each filled up to it,
// take every row. Returns the members + 1 boundaries.
std::vector<std::size_t> balanced_cuts(const ShareCost& cost, double whole_cost, std::size_t rows, int members) {
  const auto fill = [&](double limit, std::vector<std::size_t>& cuts) {
    cuts.assign(1, 0);
    for (int m = 0; m + 1 < members; ++m) {
      std::size_t lo = cuts.back(), hi = rows;
      while (lo < hi) {
        const std::size_t mid = (lo + hi + 1) / 2;
        if (cost(cuts.back(), mid) <= limit)
          lo = mid;
        else
          hi = mid - 1;
      }
      cuts.push_back(lo);
    }
    cuts.push_back(rows);  // the last share takes the rest
    return cost(cuts[cuts.size() - 2], rows) <= limit;
  };
  double low = 0, high = whole_cost;  // no share costs more than the whole channel
  std::vector<std::size_t> cuts;
  for (int step = 0; step < 50; ++step) {
    const double limit = 0.5 * (low + high);
    (fill(limit, cuts) ? high : low) = limit;
  }
  fill(high, cuts);
  return cuts;
}

}  // namespace

RankRows rank_rows(const Plan& plan, const ImageConfig& image, int members, int member) {
  RankRows rows;
  std::vector<std::size_t> input_rows;
  rows.uvw_m = inputs_uvw_m(plan, &input_rows);
  const std::size_t total = rows.uvw_m.size() / 3;
  rows.input_rows = input_rows;
  if (members <= 1 || total == 0) return rows;
  std::vector<std::size_t> by_w(total);
  std::iota(by_w.begin(), by_w.end(), std::size_t{0});
  const auto abs_w = [&](std::size_t k) { return std::abs(rows.uvw_m[3 * k + 2]); };
  std::stable_sort(by_w.begin(), by_w.end(), [&](std::size_t a, std::size_t b) { return abs_w(a) < abs_w(b); });
  std::vector<double> sorted_w(total);
  for (std::size_t i = 0; i < total; ++i) sorted_w[i] = abs_w(by_w[i]);
  const imaging::WStacking stacking = imaging::make_w_stacking(plan.geometry, image.accuracy, image.wstacking);
  const ShareCost cost(plan, stacking, sorted_w, members);
  const double whole = ShareCost(plan, stacking, sorted_w, 1)(0, total);
  const std::vector<std::size_t> cuts = balanced_cuts(cost, whole, total, members);
  const std::size_t first = cuts[static_cast<std::size_t>(member)], last = cuts[static_cast<std::size_t>(member) + 1];
  std::vector<char> mine(total, 0);
  for (std::size_t i = first; i < last; ++i) mine[by_w[i]] = 1;

  std::vector<double> own;
  std::size_t k = 0;
  for (std::size_t input_total : input_rows) {
    rows.shares.emplace_back(mine.begin() + static_cast<std::ptrdiff_t>(k),
                             mine.begin() + static_cast<std::ptrdiff_t>(k + input_total));
    rows.input_rows[rows.shares.size() - 1] =
        static_cast<std::size_t>(std::count(rows.shares.back().begin(), rows.shares.back().end(), 1));
    for (std::size_t end = k + input_total; k < end; ++k)
      if (mine[k]) own.insert(own.end(), rows.uvw_m.begin() + 3 * k, rows.uvw_m.begin() + 3 * k + 3);
  }
  rows.summary = "member " + std::to_string(member) + " of a group of " + std::to_string(members) + ": " +
                 std::to_string(last - first) + " of each channel's " + std::to_string(total) + " rows, |w| " +
                 (last > first ? fixed(sorted_w[first], 1) + " to " + fixed(sorted_w[last - 1], 1) + " m"
                               : std::string("none")) +
                 ", planned cost " + fixed(cost(first, last) / whole, 2) + " of the channel's";
  rows.uvw_m = std::move(own);
  return rows;
}

}  // namespace spip::pipeline
