// casacore side of the DFT reference; compiled as C++17.
#include "ms_dft.hpp"

#include <casacore/casa/Arrays/Array.h>
#include <casacore/casa/Arrays/Matrix.h>
#include <casacore/casa/Arrays/Vector.h>
#include <casacore/tables/Tables/ArrayColumn.h>
#include <casacore/tables/Tables/ScalarColumn.h>
#include <casacore/tables/Tables/Table.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <stdexcept>

namespace spip::test {
namespace {

namespace cc = casacore;
using cdouble = std::complex<double>;
constexpr double speed_of_light = 299792458.0;
constexpr double two_pi = 6.283185307179586476925;

// S = factor (c[a] + sign c[b]) / 2 for one Stokes parameter.
struct Rule {
  int a = -1, b = -1;
  double sign = 1;
  cdouble factor = 1;
};

int slot(const cc::Vector<int>& corr_types, int code) {
  for (std::size_t k = 0; k < corr_types.size(); ++k)
    if (corr_types[k] == code) return static_cast<int>(k);
  return -1;
}

// CORR_TYPE codes: RR 5, RL 6, LR 7, LL 8, XX 9, XY 10, YX 11, YY 12.
std::array<Rule, 4> rules_for(const cc::Vector<int>& corr) {
  const cdouble minus_i(0, -1);
  if (slot(corr, 9) >= 0 || slot(corr, 12) >= 0)
    return {Rule{slot(corr, 9), slot(corr, 12), 1, 1}, Rule{slot(corr, 9), slot(corr, 12), -1, 1},
            Rule{slot(corr, 10), slot(corr, 11), 1, 1}, Rule{slot(corr, 10), slot(corr, 11), -1, minus_i}};
  return {Rule{slot(corr, 5), slot(corr, 8), 1, 1}, Rule{slot(corr, 6), slot(corr, 7), 1, 1},
          Rule{slot(corr, 6), slot(corr, 7), -1, minus_i}, Rule{slot(corr, 5), slot(corr, 8), -1, 1}};
}

struct Sample {
  double u, v, w;  // wavelengths
  cdouble value;
  double weight;
};

std::array<std::vector<double>, 4> stokes_dft(const std::string& ms, const std::vector<int>& channels,
                                              const DftGrid& grid, const std::vector<DftPixel>& pixels, bool unit);

}  // namespace

int channel_count(const std::string& ms) {
  return static_cast<int>(cc::ArrayColumn<double>(cc::Table(ms + "/SPECTRAL_WINDOW"), "CHAN_FREQ")(0).nelements());
}

double longest_baseline_wavelengths(const std::string& ms, int channel) {
  const cc::Table main(ms);
  const cc::Matrix<double> uvw = cc::ArrayColumn<double>(main, "UVW").getColumn();
  const cc::Vector<bool> flag_row = cc::ScalarColumn<bool>(main, "FLAG_ROW").getColumn();
  double longest = 0;
  for (std::size_t r = 0; r < flag_row.size(); ++r)
    if (!flag_row[r]) longest = std::max(longest, std::hypot(uvw(0, r), uvw(1, r)));
  const double freq = cc::ArrayColumn<double>(cc::Table(ms + "/SPECTRAL_WINDOW"), "CHAN_FREQ")(0)(cc::IPosition(1, channel));
  return longest * freq / speed_of_light;
}

std::array<std::vector<double>, 4> direct_dft(const std::string& ms, int channel, const DftGrid& grid,
                                              const std::vector<DftPixel>& pixels) {
  return direct_dft(ms, std::vector<int>{channel}, grid, pixels);
}

std::array<std::vector<double>, 4> direct_dft(const std::string& ms, const std::vector<int>& channels,
                                              const DftGrid& grid, const std::vector<DftPixel>& pixels) {
  return stokes_dft(ms, channels, grid, pixels, false);
}

std::vector<double> direct_psf(const std::string& ms, const std::vector<int>& channels, const DftGrid& grid,
                               const std::vector<DftPixel>& pixels) {
  return stokes_dft(ms, channels, grid, pixels, true)[0];
}

namespace {

// Each sample's value is 1 for a PSF (`unit`).
std::array<std::vector<double>, 4> stokes_dft(const std::string& ms, const std::vector<int>& channels,
                                              const DftGrid& grid, const std::vector<DftPixel>& pixels, bool unit) {
  const cc::Table main(ms);
  const cc::Vector<int> corr = cc::ArrayColumn<int>(cc::Table(ms + "/POLARIZATION"), "CORR_TYPE")(0);
  const std::array<Rule, 4> rules = rules_for(corr);
  const cc::Matrix<double> uvw = cc::ArrayColumn<double>(main, "UVW").getColumn();
  const cc::Vector<int> ant1 = cc::ScalarColumn<int>(main, "ANTENNA1").getColumn();
  const cc::Vector<int> ant2 = cc::ScalarColumn<int>(main, "ANTENNA2").getColumn();
  const cc::Vector<bool> flag_row = cc::ScalarColumn<bool>(main, "FLAG_ROW").getColumn();
  const bool spectrum = main.tableDesc().isColumn("WEIGHT_SPECTRUM") &&
                        cc::ArrayColumn<float>(main, "WEIGHT_SPECTRUM").isDefined(0);

  std::array<std::vector<Sample>, 4> samples;
  std::array<double, 4> weight_sum{};
  for (int channel : channels) {
    const double freq = cc::ArrayColumn<double>(cc::Table(ms + "/SPECTRAL_WINDOW"), "CHAN_FREQ")(0)(cc::IPosition(1, channel));
    const cc::Slicer one_channel(cc::IPosition(2, 0, channel), cc::IPosition(2, corr.size(), 1));
    const cc::Array<cc::Complex> data = cc::ArrayColumn<cc::Complex>(main, "DATA").getColumn(one_channel);
    const cc::Array<bool> flags = cc::ArrayColumn<bool>(main, "FLAG").getColumn(one_channel);
    const cc::Array<float> weight = spectrum ? cc::ArrayColumn<float>(main, "WEIGHT_SPECTRUM").getColumn(one_channel)
                                             : cc::ArrayColumn<float>(main, "WEIGHT").getColumn();
    const double per_metre = freq / speed_of_light;
    for (int s = 0; s < 4; ++s) {
      const Rule& rule = rules[s];
      if (rule.a < 0 || rule.b < 0) continue;
      for (std::size_t r = 0; r < ant1.size(); ++r) {
        if (ant1[r] == ant2[r] || flag_row[r]) continue;
        const auto at = [&](int c) { return spectrum ? cc::IPosition(3, c, 0, r) : cc::IPosition(2, c, r); };
        if (flags(cc::IPosition(3, rule.a, 0, r)) || flags(cc::IPosition(3, rule.b, 0, r))) continue;
        const double wa = weight(at(rule.a)), wb = weight(at(rule.b));
        if (!(wa > 0) || !(wb > 0)) continue;
        const cdouble va = data(cc::IPosition(3, rule.a, 0, r)), vb = data(cc::IPosition(3, rule.b, 0, r));
        const double w = 4 * wa * wb / (wa + wb);
        samples[s].push_back({uvw(0, r) * per_metre, uvw(1, r) * per_metre, uvw(2, r) * per_metre,
                              unit ? cdouble(1) : rule.factor * (va + rule.sign * vb) / 2.0, w});
        weight_sum[s] += w;
      }
    }
  }

  std::array<std::vector<double>, 4> images;
  for (int s = 0; s < 4; ++s) {
    if (rules[s].a < 0 || rules[s].b < 0) continue;
    if (weight_sum[s] == 0) throw std::runtime_error(ms + ": no unflagged samples in the channels asked for");
    images[s].reserve(pixels.size());
    for (const DftPixel& p : pixels) {
      const double l = (p.x + 1 - grid.crpix1) * grid.cdelt1_rad;
      const double m = (p.y + 1 - grid.crpix2) * grid.cdelt2_rad;
      const double n_minus_1 = -(l * l + m * m) / (1 + std::sqrt(1 - l * l - m * m));
      double sum = 0;
      for (const Sample& k : samples[s]) {
        const double phase = two_pi * (k.u * l + k.v * m + k.w * n_minus_1);
        sum += k.weight * (k.value.real() * std::cos(phase) + k.value.imag() * std::sin(phase));
      }
      images[s].push_back(sum / weight_sum[s]);
    }
  }
  return images;
}

}  // namespace
}  // namespace spip::test
