#include "spip/sim/sky_model.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "spip/common/constants.hpp"
#include "spip/common/number_text.hpp"
#include "spip/error.hpp"

namespace spip::sim {
namespace {

constexpr double pi = 3.14159265358979323846;
constexpr double deg = pi / 180.0;
constexpr double arcsec = deg / 3600.0;

std::string trim(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r\"");
  if (first == std::string::npos) return {};
  const auto last = text.find_last_not_of(" \t\r\"");
  return text.substr(first, last - first + 1);
}

// OSKAR separates fields by commas or, in a line without one, by spaces.
std::vector<std::string> split_fields(const std::string& line) {
  std::vector<std::string> fields;
  std::stringstream stream(line);
  std::string field;
  if (line.find(',') == std::string::npos) {
    while (stream >> field) fields.push_back(trim(field));
    return fields;
  }
  while (std::getline(stream, field, ',')) fields.push_back(trim(field));
  if (!line.empty() && line.back() == ',') fields.emplace_back();
  return fields;
}

// OSKAR's default column order, for files without a Format line.
const std::vector<std::string> default_format = {
    "RaD", "DecD", "I", "Q", "U", "V", "ReferenceFrequency", "SpectralIndex", "RotationMeasure",
    "MajorAxis", "MinorAxis", "Orientation"};

struct Row {
  std::map<std::string, std::string> values;
  std::string where;

  bool has(const std::string& key) const {
    auto it = values.find(key);
    return it != values.end() && !it->second.empty();
  }
  double number(const std::string& key, double fallback = 0) const {
    if (!has(key)) return fallback;
    const std::string& text = values.at(key);
    try {
      std::size_t used = 0;
      const double value = std::stod(text, &used);
      if (used == text.size() && std::isfinite(value)) return value;
    } catch (const std::exception&) {
    }
    SPIP_THROW(InputError, where + ": column " + key + " = '" + text + "' is not a finite number");
  }
};

Component component_from(const Row& row, std::size_t index) {
  Component c;
  c.name = row.has("Name") ? row.values.at("Name") : "component" + std::to_string(index);
  if (!row.has("RaD") || !row.has("DecD") || !row.has("I"))
    SPIP_THROW(InputError, row.where + ": RaD, DecD and I are required");
  c.ra_rad = row.number("RaD") * deg;
  c.dec_rad = row.number("DecD") * deg;
  if (std::abs(row.number("DecD")) > 90)
    SPIP_THROW(InputError, row.where + ": DecD = " + row.values.at("DecD") + " is outside [-90, 90] degrees");
  c.i0_jy = row.number("I");
  c.v0_jy = row.number("V");
  c.ref_freq_hz = row.number("ReferenceFrequency");
  c.spectral_index = row.number("SpectralIndex");
  c.rm_rad_m2 = row.number("RotationMeasure");
  c.major_fwhm_rad = row.number("MajorAxis") * arcsec;
  c.minor_fwhm_rad = row.number("MinorAxis") * arcsec;
  c.pa_rad = row.number("Orientation") * deg;
  if (row.has("PolarizedFraction")) {
    c.pol_frac = row.number("PolarizedFraction");
    c.chi0_rad = row.number("PolarizationAngle") * deg;
  } else if (row.has("Q") || row.has("U")) {
    // Q, U given at the reference frequency: derotate to lambda^2 = 0. Without one,
    // OSKAR neither scales nor rotates them, which no Faraday depth describes.
    const double q = row.number("Q"), u = row.number("U");
    if (q == 0 && u == 0) return c;  // unpolarised (OSKAR's default columns give every row Q and U)
    if (c.i0_jy == 0)
      SPIP_THROW(InputError, row.where + ": Q and U need I other than 0 (polarisation is kept as a fraction of I)");
    if (c.rm_rad_m2 != 0 && !(c.ref_freq_hz > 0))
      SPIP_THROW(InputError, row.where + ": RotationMeasure with Q and U needs the ReferenceFrequency they are given at");
    const double lambda_sq_ref =
        c.ref_freq_hz > 0 ? std::pow(speed_of_light / c.ref_freq_hz, 2) : 0.0;
    c.pol_frac = std::hypot(q, u) / c.i0_jy;
    c.chi0_rad = 0.5 * std::atan2(u, q) - c.rm_rad_m2 * lambda_sq_ref;
  }
  if (!(c.pol_frac >= 0 && c.pol_frac <= 1))
    SPIP_THROW(InputError, row.where + ": a polarised fraction of " + number_text(c.pol_frac, 4) +
                               " (PolarizedFraction, or sqrt(Q^2 + U^2) / I); expected 0 to 1, a source being at most "
                               "wholly polarised");
  return c;
}

}  // namespace

double Component::stokes_i(double freq_hz) const {
  if (ref_freq_hz <= 0) return i0_jy;
  return i0_jy * std::pow(freq_hz / ref_freq_hz, spectral_index);
}

double Component::stokes_v(double freq_hz) const {
  if (ref_freq_hz <= 0) return v0_jy;
  return v0_jy * std::pow(freq_hz / ref_freq_hz, spectral_index);
}

std::complex<double> Component::linear_pol(double freq_hz) const {
  const double lambda_sq = std::pow(speed_of_light / freq_hz, 2);
  return pol_frac * stokes_i(freq_hz) * std::polar(1.0, 2.0 * (chi0_rad + rm_rad_m2 * lambda_sq));
}

SkyModel read_sky_model(const std::string& path) {
  std::ifstream file(path);
  if (!file) SPIP_THROW(InputError, path + ": cannot open the sky model");
  std::vector<std::string> format = default_format;
  SkyModel sky;
  std::string line;
  for (int line_number = 1; std::getline(file, line); ++line_number) {
    const std::string content = trim(line);
    if (content.empty() || content[0] == '#') continue;
    if (content.rfind("Format", 0) == 0 && content.find('=') != std::string::npos) {
      format = split_fields(content.substr(content.find('=') + 1));
      continue;
    }
    const std::vector<std::string> fields = split_fields(content);
    Row row;
    row.where = path + ":" + std::to_string(line_number);
    if (fields.size() > format.size())
      SPIP_THROW(InputError, row.where + ": " + std::to_string(fields.size()) +
                                 " columns but the format names " + std::to_string(format.size()));
    for (std::size_t k = 0; k < fields.size(); ++k) row.values[format[k]] = fields[k];
    sky.components.push_back(component_from(row, sky.components.size()));
  }
  if (sky.components.empty()) SPIP_THROW(InputError, path + ": the sky model has no components");
  return sky;
}

Lmn direction_cosines(double ra, double dec, double ra0, double dec0) {
  const double d_ra = ra - ra0;
  const double l = std::cos(dec) * std::sin(d_ra);
  const double m = std::sin(dec) * std::cos(dec0) - std::cos(dec) * std::sin(dec0) * std::cos(d_ra);
  const double n = std::sin(dec) * std::sin(dec0) + std::cos(dec) * std::cos(dec0) * std::cos(d_ra);
  return {l, m, n};
}

namespace {

// exp(-(A u^2 + B u v + C v^2)) for a FWHM ellipse (u, v in wavelengths).
struct GaussianTaper {
  double a = 0, b = 0, c = 0;
  explicit GaussianTaper(const Component& comp) {
    if (comp.major_fwhm_rad <= 0) return;
    const double k = pi * pi / (4.0 * std::log(2.0));
    const double k_major = k * comp.major_fwhm_rad * comp.major_fwhm_rad;
    const double k_minor = k * comp.minor_fwhm_rad * comp.minor_fwhm_rad;
    const double s = std::sin(comp.pa_rad), cs = std::cos(comp.pa_rad);
    a = k_minor * cs * cs + k_major * s * s;
    b = std::sin(2 * comp.pa_rad) * (k_major - k_minor);
    c = k_minor * s * s + k_major * cs * cs;
  }
  double operator()(double u, double v) const { return std::exp(-(a * u * u + b * u * v + c * v * v)); }
};

}  // namespace

void predict(const SkyModel& sky, double ra0, double dec0, const double* uvw_m, std::size_t num_rows,
             const std::vector<double>& freq_hz, std::complex<float>* vis, const beam::PrimaryBeam* primary_beam) {
  const std::size_t num_chan = freq_hz.size();
  const std::size_t num_comp = sky.components.size();
  std::vector<Lmn> lmn(num_comp);
  std::vector<GaussianTaper> taper;
  // Brightness [I+Q, U+iV, U-iV, I-Q] per component and channel.
  std::vector<std::complex<double>> brightness(num_comp * num_chan * 4);
  for (std::size_t s = 0; s < num_comp; ++s) {
    const Component& comp = sky.components[s];
    lmn[s] = direction_cosines(comp.ra_rad, comp.dec_rad, ra0, dec0);
    taper.emplace_back(comp);
    for (std::size_t c = 0; c < num_chan; ++c) {
      const double seen = primary_beam ? primary_beam->response(lmn[s].l, lmn[s].m, freq_hz[c]) : 1.0;
      const double i = seen * comp.stokes_i(freq_hz[c]);
      std::complex<double> p = seen * comp.linear_pol(freq_hz[c]);
      double v = seen * comp.stokes_v(freq_hz[c]);
      if (primary_beam && primary_beam->has_leakage()) {
        const auto leaked = [&](int stokes) { return primary_beam->leakage(stokes, lmn[s].l, lmn[s].m, freq_hz[c]) * i; };
        p += std::complex<double>(leaked(1), leaked(2));
        v += leaked(3);
      }
      const std::complex<double> iv(0.0, v);
      std::complex<double>* b = &brightness[(s * num_chan + c) * 4];
      b[0] = i + p.real();
      b[1] = p.imag() + iv;
      b[2] = p.imag() - iv;
      b[3] = i - p.real();
    }
  }
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t r = 0; r < static_cast<std::ptrdiff_t>(num_rows); ++r) {
    const double* uvw = uvw_m + 3 * r;
    for (std::size_t c = 0; c < num_chan; ++c) {
      const double inv_lambda = freq_hz[c] / speed_of_light;
      std::complex<double> sum[4] = {};
      for (std::size_t s = 0; s < num_comp; ++s) {
        const double phase = 2.0 * pi * inv_lambda *
                             (uvw[0] * lmn[s].l + uvw[1] * lmn[s].m + uvw[2] * (lmn[s].n - 1.0));
        const double g = taper[s](uvw[0] * inv_lambda, uvw[1] * inv_lambda);
        const std::complex<double> fringe = g * std::polar(1.0, phase);
        const std::complex<double>* b = &brightness[(s * num_chan + c) * 4];
        for (int k = 0; k < 4; ++k) sum[k] += b[k] * fringe;
      }
      std::complex<float>* out = vis + (r * num_chan + c) * 4;
      for (int k = 0; k < 4; ++k) out[k] = std::complex<float>(sum[k]);
    }
  }
}

}  // namespace spip::sim
