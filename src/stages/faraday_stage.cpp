#include "spip/stages/faraday_stage.hpp"

#include <algorithm>
#include <cmath>
#include <complex>
#include <limits>
#include <numeric>
#include <optional>
#include <span>
#include <sstream>
#include <tuple>

#include "spip/common/constants.hpp"
#include "spip/common/number_text.hpp"
#include "spip/cuda/rm_synthesis.hpp"
#include "spip/faraday/complexity.hpp"
#include "spip/faraday/moments.hpp"
#include "spip/faraday/spectral_model.hpp"
#include "spip/job/log.hpp"
#include "spip/job/stop_request.hpp"
#include "spip/job/text_file.hpp"
#include "spip/parallel/mpi_context.hpp"
#include "spip/stages/catalogue_stage.hpp"
#include "spip/stages/channel_cubes.hpp"

namespace spip::pipeline {
namespace {

using cfloat = std::complex<float>;
constexpr int stokes_i = 0, stokes_q = 1, stokes_u = 2, stokes_v = 3, quantity_p = 4;
constexpr const char* map_units[] = {"rad/m^2", "Jy/beam", "rad", "rad/m^2", "Jy/beam", "rad", "rad/m^2", "Jy/beam", ""};
constexpr const char* map_types[] = {"Rotation Measure", "Intensity", "", "", "", "", "", "", ""};
static_assert(std::size(map_units) == faraday::pixel_map_count && std::size(map_types) == faraday::pixel_map_count);
// A Faraday-thin peak of a pixel's residual FDF at this many times its expected noise
// is a source CLEAN left there, not noise (pixel_noise()): noise alone reaches it in
// about 1e-3 of the pixels of a 300-RMSF-wide axis (exp(-12.5) per independent depth).
constexpr double thin_residual_detection = 5;
// What a stop inside the stage leaves: its inputs (channel images or cubes) are whole.
constexpr const char* left_partial = "the Faraday products are left partial and a resumed run makes them again";

fits::ImageHeader plain_image(fits::ImageHeader header, const std::string& bunit, const std::string& btype) {
  header.spectral.reset();
  header.stokes.reset();
  header.bunit = bunit;
  header.btype = btype;
  return header;
}

// A per-pixel map of the Faraday stage: LAMSQ0 says which lambda^2 its angles refer to.
fits::ImageHeader faraday_map(const fits::ImageHeader& base, const std::string& bunit, const std::string& btype,
                              double lambda0_sq) {
  fits::ImageHeader header = plain_image(base, bunit, btype);
  header.extra_keys["LAMSQ0"] = lambda0_sq;
  return header;
}

// One FDF cube of faraday.cubes ("real-dirty"): which spectra, and which part of them.
struct CubeChoice {
  std::string name;
  bool clean = false;
  int part = 0;  // 0 real, 1 imaginary, 2 amplitude
};

CubeChoice cube_choice(const std::string& name) {
  const std::string part = name.substr(0, name.find('-'));
  return {name, name.ends_with("-clean"), part == "real" ? 0 : part == "imag" ? 1 : 2};
}

// The header of the Faraday depth cubes and the RMSF: the image's WCS with an FDEP axis.
fits::ImageHeader fdf_header(fits::ImageHeader header, const faraday::SynthesisSetup& setup) {
  header.stokes.reset();
  const faraday::FaradayAxis& axis = setup.axis;
  header.spectral.emplace(fits::LinearAxis{"FDEP", "rad/m^2", axis.phi_first, axis.dphi, 1.0, axis.count});
  header.extra_keys["LAMSQ0"] = setup.lambda0_sq;
  return header;
}

float part_of(cfloat value, int part) {
  return part == 0 ? value.real() : part == 1 ? value.imag() : std::abs(value);
}

}  // namespace

// What RM synthesis of every row group needs, made once per run.
struct FaradayStage::Synthesis {
  faraday::SynthesisSetup setup;
  faraday::SpectrumSettings settings;
  std::vector<cfloat> a, rmsf_double;
  std::vector<CubeChoice> cubes;
  std::vector<double> log_nu_ratio;  // ln(nu_c / nu0), nu0 = c / lambda0: with faraday.fractional
  std::vector<double> channel_sigma; // each channel's noise in Q and U (Jy/beam), for sigma_add
};

FaradayStage::FaradayStage(const Config& config, const ProductRegistry& products, const fits::ImageHeader& base,
                           std::vector<double> freq_hz, std::vector<double> data_freq_hz, double group_bytes, int gpu_device, std::size_t gpu_bytes,
                           std::unique_ptr<FaradayRows> rows, std::optional<beam::PrimaryBeam> primary_beam,
                           beam::Pointings pointings, std::vector<ms::ObservingTime> pointing_times)
    : config_(config),
      products_(products),
      base_(base),
      freq_hz_(std::move(freq_hz)),
      data_freq_hz_(std::move(data_freq_hz)),
      group_bytes_(group_bytes),
      gpu_device_(gpu_device),
      gpu_bytes_(gpu_bytes),
      rows_(std::move(rows)),
      beam_(std::move(primary_beam)),
      pointings_(std::move(pointings)),
      pointing_times_(std::move(pointing_times)),
      grid_{base_.nx, base_.cell_rad, {base_.ra_rad, base_.dec_rad}, pointings_.centres.empty() ? Direction{base_.ra_rad, base_.dec_rad} : pointings_.centres.front()} {}

int FaradayStage::group_rows(double group_bytes, int num_chan, int num_phi, int nx, int slab_rows,
                             std::size_t gpu_bytes) {
  const double row_bytes = bytes_per_pixel(num_chan, num_phi) * nx;
  const int rows = std::clamp(static_cast<int>(group_bytes / row_bytes), 1, std::max(1, slab_rows));
  if (gpu_bytes == 0 || num_phi == 0) return rows;
  // The device's slab is affine in its pixels.
  const double fixed_bytes = static_cast<double>(cuda::slab_bytes(num_phi, num_chan, 0));
  const double device_row_bytes = static_cast<double>(cuda::slab_bytes(num_phi, num_chan, nx)) - fixed_bytes;
  return std::clamp(static_cast<int>((static_cast<double>(gpu_bytes) - fixed_bytes) / device_row_bytes), 1, rows);
}

std::pair<int, int> FaradayStage::slab_rows(int rank, int ranks, int ny) {
  return {static_cast<int>(static_cast<long>(ny) * rank / ranks), static_cast<int>(static_cast<long>(ny) * (rank + 1) / ranks)};
}

double FaradayStage::bytes_per_pixel(int num_chan, int num_phi) {
  // Per channel: the six kept planes (restored I, Q, U, V, residual Q, U) sent to the
  // other slab owners, as many received, and unpacked into the group's planes, all three
  // at once in FaradayRows::fetch, then P complex; per depth the dirty and clean spectra
  // and one part of them for writing; the power sums and their centre, moments, pixel
  // noise and pixel maps with sigma_add's three.
  return 80.0 * num_chan + 20.0 * num_phi + 8.0 * (faraday::PowerSums::orders + 1) +
         4.0 * (6 + faraday::pixel_map_count + 3);
}

faraday::FaradayAxis FaradayStage::planned_axis(const std::vector<double>& freq_hz, const FaradayConfig& config) {
  return faraday::make_setup(freq_hz, std::vector<double>(freq_hz.size(), 1.0), config).axis;
}

std::vector<std::string> FaradayStage::axis_warnings(const std::vector<double>& freq_hz, const FaradayConfig& config,
                                                     std::vector<double> weight) {
  std::vector<std::string> warnings;
  if (weight.empty()) weight.assign(freq_hz.size(), 1.0);
  if (std::count_if(weight.begin(), weight.end(), [](double w) { return w > 0; }) < 2) return warnings;
  const faraday::SynthesisSetup setup = faraday::make_setup(freq_hz, weight, config);
  // What was asked for, not the axis's end, which may lie up to half a step beyond it:
  // the default on a band such as OVRO-LWA's is the limit itself.
  // Left at 0, phi_max is RM-Tools' floor of 10 RMSF widths: the warning names that, not a key the user never set.
  const std::string range = config.phi_max > 0
                                ? "faraday.phi_max " + fixed(setup.phi_max, 1) + " rad/m^2"
                                : "the default Faraday depth range (faraday.phi_max 0: 10 RMSF FWHM, as RM-Tools) of " +
                                      fixed(setup.phi_max, 1) + " rad/m^2";
  if (setup.phi_max > setup.phi_max_unsmeared)
    warnings.push_back("warning: " + range + " exceeds sqrt(3)/dlambda^2_max = " + fixed(setup.phi_max_unsmeared, 1) +
                       " rad/m^2; real data would be bandwidth-depolarised there");
  // RM-CLEAN puts its components on the depth samples: a bright thin source between two
  // is split over both, and on a coarse axis its peak reads low and its components
  // spread (RmClean.AThinSourceBetweenCoarseDepthsReadsLowAndSpreads). Every channel
  // counts alike here: the noise weights that move the FWHM are known only once imaged.
  const double fwhm = faraday::measured_fwhm(setup);
  // Left at 0, dphi is the FWHM over samples_per_fwhm: the warning names that key.
  const std::string step = config.dphi > 0 ? "faraday.dphi " + number_text(setup.axis.dphi, 4) + " rad/m^2"
                                           : "the depth step of " + number_text(setup.axis.dphi, 4) +
                                                 " rad/m^2 (faraday.dphi 0, faraday.samples_per_fwhm " +
                                                 number_text(config.samples_per_fwhm, 3) + ")";
  if (const double per_fwhm = fwhm / setup.axis.dphi; per_fwhm < 5)
    warnings.push_back(
        "warning: " + step + " samples the RMSF FWHM (" +
        number_text(fwhm, 4) + " rad/m^2, every channel weighted alike) " + fixed(per_fwhm, 1) +
        " times: a bright Faraday-thin source between two depths reads up to 6 % low in peak PI at 2.5 samples "
        "(2 % at 4) and RM-CLEAN spreads its components (m2), which can flag it complex; 5 or more keep that "
        "under 1 % (faraday.dphi 0 samples it faraday.samples_per_fwhm times, 10 by default, as RM-Tools)");
  return warnings;
}

double FaradayStage::channel_weight(double noise) const {
  if (noise < 0) return 0.0;  // blanked channel
  if (!config_.faraday.variance_weights) return 1.0;
  return noise > 0 ? 1.0 / (noise * noise) : 0.0;
}

// The four moment images of one quantity over the channels of `planes` [channel][pixel],
// written as rows of their partial images; returns the mean.
std::vector<float> FaradayStage::write_moment_rows(int quantity, int first_row, const std::vector<float>& planes,
                                     const std::vector<double>& weight) const {
  if (!products_.has_moments(quantity)) return {};
  const std::size_t pixels = planes.size() / weight.size();
  faraday::PowerSums sums(pixels);
  for (std::size_t c = 0; c < weight.size(); ++c)
    if (weight[c] > 0) sums.add(planes.data() + c * pixels, weight[c]);
  const faraday::MomentImages m = faraday::moments(sums);
  const std::vector<float>* images[] = {&m.mean, &m.std, &m.skew, &m.kurt};
  for (int k = 0; k < moment_orders; ++k) writer_->rows(products_.moment(quantity, k), first_row, *images[k]);
  return m.mean;
}

// Each pixel's FDF noise from its residual Q and U (faraday::residual_noise(), which
// takes out a Faraday-thin source CLEAN left there), `expected` its noise from the
// channels' (noise_floor()). With `flattening` (faraday.fractional), each residual is
// scaled as the pixel's spectrum was. Empty without residual cubes.
std::vector<float> FaradayStage::pixel_noise(const Synthesis& synthesis, const RowBatch& group,
                                             const std::vector<float>& expected, const Flattening& flattening) const {
  if (!group.has_residuals()) return {};
  const int pixels = group.rows * base_.nx;
  // With leakage the corrected images, not the residuals, lose their leaked Stokes I
  // (correct_for_beam()): the two differ by more than the model.
  const bool model_known = !(beam_ && beam_->has_leakage());
  return faraday::residual_noise(synthesis.setup, synthesis.a,
                                 {group.residual(stokes_q).data(), group.residual(stokes_u).data(), pixels, flattening,
                                  model_known ? group.image(stokes_q).data() : nullptr,
                                  model_known ? group.image(stokes_u).data() : nullptr},
                                 synthesis.channel_sigma, expected, thin_residual_detection);
}

// The residual planes are divided too, so that each pixel's FDF noise, and with it the
// catalogue's local noise, rises towards the edge as the corrected images' noise does.
// The beam narrows with frequency: a pixel below beam.limit in any channel that counts
// is blank in all of them, so that no pixel's spectrum or moments use some channels
// only. A channel of weight 0 (blank, a gap, diverged) does not narrow the field.
void FaradayStage::correct_for_beam(RowBatch& group, const std::vector<double>& weight) const {
  if (!beam_) return;
  const std::size_t pixels = static_cast<std::size_t>(group.rows) * base_.nx;
  group.outside.assign(pixels, false);
  group.response.resize(freq_hz_.size() * pixels);
  for (std::size_t c = 0; c < freq_hz_.size(); ++c) {
    const std::vector<float> response = beam::effective_response_rows(
        *beam_, grid_, pointings_, static_cast<int>(c), freq_hz_[c], group.first_row, group.rows);
    std::copy(response.begin(), response.end(), group.response.begin() + static_cast<std::ptrdiff_t>(c * pixels));
    float* image[4];
    for (int stokes : {stokes_i, stokes_q, stokes_u, stokes_v})  // the planes begin with them
      image[stokes] = group.planes[static_cast<std::size_t>(stokes)].data() + c * pixels;
    beam::correct_stokes(image, response,
                         beam::leakage_rows(*beam_, grid_, freq_hz_[c], group.first_row, group.rows),
                         config_.beam.limit);
    // The residuals' leaked Stokes I is a beam leakage's fraction (~1 %) of their noise: they are only divided.
    for (std::size_t k = 4; k < group.planes.size(); ++k)
      beam::divide_by_response(group.planes[k].data() + c * pixels, pixels, response, config_.beam.limit);
    if (weight[c] > 0)
      for (std::size_t i = 0; i < pixels; ++i)
        if (!(response[i] >= config_.beam.limit)) group.outside[i] = true;
  }
  for (std::vector<float>& plane : group.planes)
    for (std::size_t i = 0; i < plane.size(); ++i)
      if (group.outside[i % pixels]) plane[i] = std::numeric_limits<float>::quiet_NaN();
}

// An all-sky image's corners lie beyond the horizon (l^2 + m^2 > 1 about the SIN
// projection's centre), where it holds no sky and its WCS no position. They are made
// blank (blank_unmeasured() then blanks them in every product), so that no spectrum,
// moment or catalogue source comes from them.
void FaradayStage::blank_beyond_horizon(RowBatch& group) const {
  const double cell = base_.cell_rad, x0 = base_.reference_x(), y0 = base_.reference_y();
  const auto beyond = [&](double x, double y) {
    const double l = (x - x0) * cell, m = (y - y0) * cell;
    return l * l + m * m > 1;
  };
  if (!beyond(0, 0) && !beyond(base_.nx - 1, 0) && !beyond(0, base_.ny - 1) && !beyond(base_.nx - 1, base_.ny - 1))
    return;
  const std::size_t pixels = static_cast<std::size_t>(group.rows) * base_.nx;
  for (int r = 0; r < group.rows; ++r)
    for (int x = 0; x < base_.nx; ++x)
      if (beyond(x, group.first_row + r))
        for (std::vector<float>& plane : group.planes)
          for (std::size_t at = static_cast<std::size_t>(r) * base_.nx + x; at < plane.size(); at += pixels)
            plane[at] = std::numeric_limits<float>::quiet_NaN();
}

// A pixel blank (NaN) in Q or U of a channel that counts, as another imager's cubes are
// beyond a mosaic's edge or where its beam narrows with frequency, is blank in every
// channel: no pixel's spectrum or moments use some channels only. The primary beam's
// limit (correct_for_beam) blanks the same way.
void FaradayStage::blank_unmeasured(RowBatch& group, const std::vector<double>& weight) const {
  const std::size_t pixels = static_cast<std::size_t>(group.rows) * base_.nx;
  std::vector<bool> blank(pixels, false);
  bool any = false;
  for (int stokes : {stokes_q, stokes_u}) {
    const std::vector<float>& plane = group.image(stokes);
    for (std::size_t c = 0; c < weight.size(); ++c)
      if (weight[c] > 0)
        for (std::size_t i = 0; i < pixels; ++i)
          if (!std::isfinite(plane[c * pixels + i]) && !(group.outside.size() > i && group.outside[i])) {
            blank[i] = true;
            any = true;
          }
  }
  if (!any) return;
  if (group.outside.empty()) group.outside.assign(pixels, false);
  for (std::size_t i = 0; i < pixels; ++i)
    if (blank[i]) group.outside[i] = true;
  for (std::vector<float>& plane : group.planes)
    for (std::size_t i = 0; i < plane.size(); ++i)
      if (blank[i % pixels]) plane[i] = std::numeric_limits<float>::quiet_NaN();
}

void FaradayStage::process_rows(const RowBatch& group, const std::vector<double>& weight, const Synthesis* synthesis,
                                long long& iterations) const {
  const int first_row = group.first_row;
  const std::size_t pixels = static_cast<std::size_t>(group.rows) * base_.nx;
  const std::vector<float>& stokes_i_rows = group.image(stokes_i);
  const std::vector<float> mean_i = write_moment_rows(stokes_i, first_row, stokes_i_rows, weight);
  write_moment_rows(stokes_v, first_row, group.image(stokes_v), weight);
  const std::vector<float> expected = synthesis ? noise_floor(*synthesis, group, weight, {}) : std::vector<float>();
  const std::vector<float> sigmas = synthesis ? pixel_noise(*synthesis, group, expected, {}) : std::vector<float>();
  // With a primary beam the channels' noise, carried to each pixel, rises towards the
  // edge; where CLEAN emptied a pixel's residuals (at a source) they fall below it.
  const std::vector<float> floor = beam_ ? expected : std::vector<float>();
  std::vector<float> pixel_sigmas = floor.empty() ? sigmas : floor;  // unflattened
  if (!floor.empty() && !sigmas.empty())
    for (std::size_t x = 0; x < pixels; ++x) pixel_sigmas[x] = std::max(sigmas[x], floor[x]);
  const std::vector<float>& q = group.image(stokes_q);
  const std::vector<float>& u = group.image(stokes_u);
  write_moment_rows(stokes_q, first_row, q, weight);
  write_moment_rows(stokes_u, first_row, u, weight);
  {
    std::vector<float> p(q.size());
    for (std::size_t i = 0; i < p.size(); ++i) p[i] = faraday::polarised_intensity(q[i], u[i]);
    write_moment_rows(quantity_p, first_row, p, weight);
  }
  if (!synthesis) return;

  // Blanked channels are NaN in the cubes; with zero weight they must add nothing. Pixels
  // outside the primary beam's limit keep a zero spectrum.
  const auto outside = [&](std::size_t i) { return !group.outside.empty() && group.outside[i % pixels]; };
  std::vector<cfloat> p(q.size());
  for (std::size_t c = 0; c < weight.size(); ++c)
    if (weight[c] > 0)
      for (std::size_t i = c * pixels; i < (c + 1) * pixels; ++i)
        if (!outside(i)) p[i] = cfloat(q[i], u[i]);
  // With faraday.fractional: each pixel's Stokes I at nu0 and spectral index, NaN where blanked.
  std::vector<float> i0, alpha;
  std::vector<float> fdf_sigmas = pixel_sigmas;  // of the spectra as synthesised
  if (!synthesis->log_nu_ratio.empty()) {
    i0 = flatten_spectra(*synthesis, stokes_i_rows, mean_i, weight, pixel_sigmas, p, alpha);
    fdf_sigmas = flattened_noise(*synthesis, group, weight, {&alpha, &synthesis->log_nu_ratio});
  }
  const int num_chan = static_cast<int>(weight.size());
  faraday::SlabCubes kept{false, false};
  for (const CubeChoice& cube : synthesis->cubes) (cube.clean ? kept.clean : kept.dirty) = true;
  const faraday::SlabSpectra slab =
      gpu_device_ >= 0 ? cuda::synthesise_slab(gpu_device_, synthesis->a, num_chan, p.data(), static_cast<int>(pixels),
                                               synthesis->rmsf_double, synthesis->settings, fdf_sigmas, kept)
                       : faraday::synthesise_slab(synthesis->a, num_chan, p.data(), static_cast<int>(pixels),
                                                  synthesis->rmsf_double, synthesis->settings, fdf_sigmas, kept);
  iterations += slab.iterations;
  // A blanked pixel (NaN i0, or outside the beam) has a zero spectrum; its products say
  // it was not measured.
  auto measured = [&](std::size_t i, float value) {
    return !outside(i) && (i0.empty() || !std::isnan(i0[i % pixels])) ? value : NAN;
  };
  std::vector<float> values(synthesis->cubes.empty() ? 0 : static_cast<std::size_t>(synthesis->settings.axis.count) * pixels);
  for (const CubeChoice& cube : synthesis->cubes) {
    const std::vector<cfloat>& source = cube.clean ? slab.clean : slab.dirty;
    for (std::size_t i = 0; i < source.size(); ++i) values[i] = measured(i, part_of(source[i], cube.part));
    writer_->rows(products_.fdf_cube(cube.name), first_row, values);
  }
  // The FDF noise is known wherever the pixel was imaged, also where faraday.fractional
  // found no power law to divide by: the catalogue's local noise, measured on it over
  // boxes, would otherwise see only the pixels of bright Stokes I and their
  // deconvolution errors (3 times the noise on the sample).
  std::vector<float> maps(slab.maps.size());
  for (std::size_t i = 0; i < maps.size(); ++i)
    maps[i] = i / pixels == static_cast<std::size_t>(faraday::map_pi_err) ? (outside(i) ? NAN : slab.maps[i]) : measured(i, slab.maps[i]);
  for (int m = 0; m < faraday::pixel_map_count; ++m)
    writer_->rows(products_.pixel_map(m), first_row, std::span<const float>(maps).subspan(m * pixels, pixels));
  const std::vector<float> complexity = sigma_add_rows(*synthesis, group, p, maps, alpha, weight, sigmas, floor);
  for (int k = 0; k < 3; ++k)
    writer_->rows(products_.sigma_add_map(k), first_row, std::span<const float>(complexity).subspan(k * pixels, pixels));
  if (i0.empty()) return;
  std::vector<float> fracpol(pixels);
  for (std::size_t x = 0; x < pixels; ++x) fracpol[x] = maps[faraday::map_pi * pixels + x] / i0[x];
  writer_->rows(products_.fracpol_map(), first_row, fracpol);
  for (std::size_t x = 0; x < pixels; ++x) alpha[x] = measured(x, alpha[x]);
  writer_->rows(products_.alpha_map(), first_row, alpha);
}

// faraday.fractional: each pixel's Q + iU divided by its Stokes I power law and scaled
// to I at nu0, so that the spectra keep Jy/beam and the peak is PI at nu0. Pixels whose
// mean I (the moment) is below faraday.fractional_threshold times their FDF noise get a
// zero spectrum. Returns I at nu0 per pixel, NaN where blanked. The factor is 1 at nu0,
// so the FDF noise keeps its value to the extent the spectrum changes across the band.
std::vector<float> FaradayStage::flatten_spectra(const Synthesis& synthesis, const std::vector<float>& stokes_i_rows,
                                                 const std::vector<float>& mean_i, const std::vector<double>& weight,
                                                 const std::vector<float>& sigmas, std::vector<cfloat>& p,
                                                 std::vector<float>& alpha) const {
  const std::size_t pixels = mean_i.size();
  std::vector<float> i0(pixels, NAN);
  alpha.assign(pixels, NAN);
  std::vector<double> index(pixels, NAN);  // as fitted, in double: the factors' bits
  for (std::size_t x = 0; x < pixels; ++x) {
    const double sigma = faraday::pixel_sigma(synthesis.settings.sigma, sigmas.empty() ? nullptr : sigmas.data(),
                                              static_cast<long long>(x));
    const auto law = mean_i[x] > config_.faraday.fractional_threshold * sigma
                         ? faraday::fit_power_law(stokes_i_rows.data() + x, pixels, synthesis.log_nu_ratio, weight)
                         : std::nullopt;
    if (law) {
      i0[x] = static_cast<float>(law->i0);
      alpha[x] = static_cast<float>(law->alpha);
      index[x] = law->alpha;
    }
  }
  // Channel by channel, along the planes: a pixel at a time, each channel's sample was a
  // cache line of its own, and this loop took as long as RM synthesis.
  for (std::size_t c = 0; c < weight.size(); ++c) {
    cfloat* plane = p.data() + c * pixels;
    for (std::size_t x = 0; x < pixels; ++x)
      plane[x] *= std::isnan(index[x]) ? 0.0f : static_cast<float>(std::exp(-index[x] * synthesis.log_nu_ratio[c]));
  }
  return i0;
}

// Each pixel's FDF noise from the channels' noise over the field, K sqrt(sum_c w_c^2
// sigma_c^2 f_c^2 / B_c^2): each channel's scaled as the pixel's spectrum was (f_c, with
// `flattening`) and divided by the primary beam's response there (B_c, with a beam), as
// the channel images were. Where CLEAN took components the residuals (pixel_noise())
// fall below it; without a beam or flattening it is the field's FDF noise itself.
std::vector<float> FaradayStage::noise_floor(const Synthesis& synthesis, const RowBatch& group,
                                             const std::vector<double>& weight, const Flattening& flattening) const {
  const std::size_t pixels = static_cast<std::size_t>(group.rows) * base_.nx;
  std::vector<double> channel_variance(weight.size(), 0.0);  // of each channel's part of the FDF
  double plain = 0;
  for (std::size_t c = 0; c < weight.size(); ++c)
    if (weight[c] > 0) plain += channel_variance[c] = weight[c] * weight[c] * synthesis.channel_sigma[c] * synthesis.channel_sigma[c];
  std::vector<float> floor(pixels, static_cast<float>(synthesis.settings.sigma));
  if (!(plain > 0) || (group.response.empty() && !flattening.alpha)) return floor;
  std::vector<double> scaled(pixels, 0.0);  // channel by channel: each channel's responses are contiguous
  for (std::size_t c = 0; c < weight.size(); ++c) {
    if (!(weight[c] > 0)) continue;
    for (std::size_t x = 0; x < pixels; ++x) {
      const double f = flattening.factor(x, c), b = group.response.empty() ? 1.0 : group.response[c * pixels + x];
      scaled[x] += channel_variance[c] * f * f / (b * b);
    }
  }
  for (std::size_t x = 0; x < pixels; ++x)
    floor[x] = static_cast<float>(synthesis.settings.sigma * std::sqrt(scaled[x] / plain));
  return floor;
}

// faraday.fractional: each pixel's FDF noise once its channels' noise is scaled as its
// spectrum was, by (nu_c / nu0)^-alpha: the residuals' pixel_noise() with the same
// factors, or noise_floor() where that is higher (never less than the unflattened
// field's: pixel_sigma() keeps that floor for every pixel). Unscaled where no power law
// was fitted; a spectrum steeper than its noise (a faint pixel's fitted alpha far from
// the source's) then keeps its excess out of the detections.
std::vector<float> FaradayStage::flattened_noise(const Synthesis& synthesis, const RowBatch& group,
                                                 const std::vector<double>& weight,
                                                 const Flattening& flattening) const {
  std::vector<float> sigma = noise_floor(synthesis, group, weight, flattening);
  const std::vector<float> residual = pixel_noise(synthesis, group, sigma, flattening);
  for (std::size_t x = 0; x < residual.size(); ++x) sigma[x] = std::max(sigma[x], residual[x]);
  return sigma;
}

// sigma_add and its lower and upper errors per pixel ([3][pixel]) of the residuals of Q
// and U from the Faraday-thin source of the peak fit (PI, chi0, phi), each over its
// channel's noise at the pixel, in the channels that count: the channel's noise over the
// field, scaled as the spectrum was with faraday.fractional and divided by the primary
// beam's response there, and by the pixel's FDF noise over that floor (noise_floor(),
// `floor`; the field's without a beam) where the residuals give more (`sigmas`: rising
// near bright sources). NaN where the peak is below 5 sigma (the fit, and with it the
// model, is noise), and with a primary beam but no residuals, where the noise at a pixel
// is not known.
std::vector<float> FaradayStage::sigma_add_rows(const Synthesis& synthesis, const RowBatch& group,
                                                const std::vector<cfloat>& p, const std::vector<float>& maps,
                                                const std::vector<float>& alpha, const std::vector<double>& weight,
                                                const std::vector<float>& sigmas,
                                                const std::vector<float>& floor) const {
  const std::size_t pixels = maps.size() / faraday::pixel_map_count;
  const std::vector<double>& lambda_sq = synthesis.setup.lambda_sq;
  std::vector<float> out(3 * pixels, NAN);
  if (beam_ && sigmas.empty()) return out;
  const double field = synthesis.settings.sigma;
#pragma omp parallel
  {
    std::vector<double> residuals;
#pragma omp for schedule(dynamic, 64)
    for (std::size_t x = 0; x < pixels; ++x) {
      const double pi = maps[faraday::map_pi * pixels + x], chi0 = maps[faraday::map_chi0 * pixels + x];
      const double phi = maps[faraday::map_phi * pixels + x];
      if (!(pi >= 5 * maps[faraday::map_pi_err * pixels + x]) || (!alpha.empty() && std::isnan(alpha[x]))) continue;
      residuals.clear();
      const double floor_here = floor.empty() ? field : floor[x];
      const double here = sigmas.empty() || !(floor_here > 0) ? 1.0 : std::max(1.0, sigmas[x] / floor_here);
      for (std::size_t c = 0; c < weight.size(); ++c) {
        const double response = group.response.empty() ? 1.0 : group.response[c * pixels + x];
        const double scale =
            here * (alpha.empty() ? 1.0 : std::exp(-alpha[x] * synthesis.log_nu_ratio[c])) / response;
        const double sigma = synthesis.channel_sigma[c] * scale;
        if (!(weight[c] > 0) || !(sigma > 0)) continue;
        const double angle = 2 * (chi0 + phi * lambda_sq[c]);
        const cfloat value = p[c * pixels + x];
        residuals.push_back((value.real() - pi * std::cos(angle)) / sigma);
        residuals.push_back((value.imag() - pi * std::sin(angle)) / sigma);
      }
      const faraday::SigmaAdd s = faraday::sigma_add(residuals);
      out[x] = static_cast<float>(s.value);
      out[pixels + x] = static_cast<float>(s.minus);
      out[2 * pixels + x] = static_cast<float>(s.plus);
    }
  }
  return out;
}

std::vector<std::string> FaradayStage::finish(const std::vector<double>& channel_noise,
                                              const parallel::MpiContext& mpi, const Log& log, StopRequest& stop) {
  const Stopwatch watch;
  // Channel weights of every imaged channel, in channel order.
  const std::vector<double> noise = mpi.gather_to_all(channel_noise);
  std::vector<double> weight;
  for (double sigma : noise) weight.push_back(channel_weight(sigma));
  const std::optional<Synthesis> synthesis = plan_synthesis(weight, noise, log);
  if (mpi.is_root()) create_products(synthesis ? &*synthesis : nullptr);
  mpi.barrier();
  synthesise_slab(weight, synthesis ? &*synthesis : nullptr, mpi, log, stop, watch);
  writer_->close();
  // Also the barrier before rank 0 commits what every rank wrote.
  stop.leave_if_requested(left_partial);
  if (!mpi.is_root()) return {};
  std::vector<std::string> written = commit_products(synthesis ? &*synthesis : nullptr);
  if (!synthesis) return written;
  for (const std::string& file : write_rmsf(*synthesis)) written.push_back(file);
  if (products_.has_catalogue()) {
    std::vector<std::string> maps;
    for (int map = 0; map < faraday::pixel_map_count; ++map) maps.push_back(products_.pixel_map(map));
    CatalogueInputs inputs{maps,
                                 products_.moment(stokes_i, 0),
                                 synthesis->log_nu_ratio.empty() ? "" : products_.fracpol_map(),
                                 synthesis->settings.fwhm,
                                 beam_,
                                 pointings_.centres,
                                 speed_of_light / std::sqrt(synthesis->setup.lambda0_sq),
                                 {products_.sigma_add_map(0), products_.sigma_add_map(1), products_.sigma_add_map(2)},
                                 synthesis->log_nu_ratio.empty() ? "" : products_.alpha_map(),
                                 {},
                                 freq_hz_};
    std::vector<double> used_noise;
    for (std::size_t c = 0; c < weight.size(); ++c)
      if (weight[c] > 0) {
        inputs.channel_freq_hz.push_back(data_freq_hz_[c]);
        used_noise.push_back(noise[c]);
      }
    std::nth_element(used_noise.begin(), used_noise.begin() + static_cast<long>(used_noise.size() / 2), used_noise.end());
    inputs.noise_chan = used_noise[used_noise.size() / 2];
    inputs.fdf_sigma = synthesis->settings.sigma;
    inputs.pointing_times = pointing_times_;
    if (products_.has_moments(stokes_v)) inputs.mean_v = products_.moment(stokes_v, 0);
    for (const std::string& file : write_catalogue(config_, base_, inputs, products_, log)) written.push_back(file);
  }
  return written;
}

// The Faraday depth axis, the RMSF and RM-CLEAN's settings from the channels' weights
// and noise; none with fewer than two usable channels.
std::optional<FaradayStage::Synthesis> FaradayStage::plan_synthesis(const std::vector<double>& weight,
                                                                    const std::vector<double>& noise,
                                                                    const Log& log) const {
  const int usable = static_cast<int>(std::count_if(weight.begin(), weight.end(), [](double w) { return w > 0; }));
  if (usable < 2) {
    log.root("RM synthesis needs at least two imaged channels (" + std::to_string(usable) + " here); skipped");
    return std::nullopt;
  }
  Synthesis s;
  s.setup = faraday::make_setup(data_freq_hz_, weight, config_.faraday);
  double weight_sum = 0, noise_sum = 0;
  for (std::size_t c = 0; c < weight.size(); ++c) {
    weight_sum += weight[c];
    if (weight[c] > 0) noise_sum += weight[c] * weight[c] * noise[c] * noise[c];
  }
  const double sigma = std::sqrt(noise_sum) / weight_sum;  // of the FDF
  const FaradayConfig& f = config_.faraday;
  s.settings = faraday::spectrum_settings(s.setup, sigma,
                                          {f.rmclean_gain, f.rmclean_cutoff * sigma, f.rmclean_niter, f.rmclean_xcorr});
  s.channel_sigma = noise;
  s.a = faraday::synthesis_matrix(s.setup, s.setup.axis);
  s.rmsf_double = faraday::rmsf_for_clean(s.setup);
  for (const std::string& name : config_.faraday.cubes) s.cubes.push_back(cube_choice(name));
  if (config_.faraday.fractional) {
    const double nu0 = speed_of_light / std::sqrt(s.setup.lambda0_sq);
    for (double nu : data_freq_hz_) s.log_nu_ratio.push_back(std::log(nu / nu0));
    log.root("faraday.fractional: Q and U divided by each pixel's Stokes I power law, PI at nu0 = " +
             fixed(nu0 / 1e6, 3) + " MHz");
  }
  const faraday::FaradayAxis& axis = s.setup.axis;
  log.root("RM synthesis: lambda0^2 = " + number_text(s.setup.lambda0_sq, 5) + " m^2, RMSF FWHM " +
           number_text(s.settings.fwhm, 4) + " rad/m^2, " + std::to_string(axis.count) + " depths from " +
           number_text(axis.phi_first, 4) + " to +" + number_text(-axis.phi_first, 4) + " rad/m^2 in steps of " +
           number_text(axis.dphi, 4));
  return s;
}

// Rank 0 creates every product as a partial file; each rank then writes its rows.
void FaradayStage::create_products(const Synthesis* synthesis) const {
  for (int quantity = 0; quantity < moment_quantities; ++quantity)
    for (int order = 0; order < moment_orders; ++order)  // mean and std in Jy/beam; skew, kurt dimensionless
      if (products_.has_moments(quantity))
        fits::CubeFile::create(products_.moment(quantity, order),
                               plain_image(base_, order < 2 ? "Jy/beam" : "", order == 0 ? "Intensity" : ""));
  if (!synthesis) return;
  for (const CubeChoice& cube : synthesis->cubes) {
    // A degenerate STOKES axis after FDEP says which part a cube holds, as POSSUM and
    // RM-Tools write them: the real part Q, the imaginary part U. FITS has no code for
    // |P| (RM-Tools writes 0, outside the standard), so amplitude cubes keep three axes.
    fits::ImageHeader fdf = fdf_header(base_, synthesis->setup);
    if (cube.part < 2) fdf.stokes = cube.part == 0 ? fits::Stokes::Q : fits::Stokes::U;
    fits::CubeFile::create(products_.fdf_cube(cube.name), fdf);
  }
  const double lambda0_sq = synthesis->setup.lambda0_sq;
  for (int m = 0; m < faraday::pixel_map_count; ++m)
    fits::CubeFile::create(products_.pixel_map(m), faraday_map(base_, map_units[m], map_types[m], lambda0_sq));
  for (int k = 0; k < 3; ++k) fits::CubeFile::create(products_.sigma_add_map(k), faraday_map(base_, "", "", lambda0_sq));
  if (!synthesis->log_nu_ratio.empty()) {
    fits::CubeFile::create(products_.fracpol_map(), faraday_map(base_, "", "", lambda0_sq));
    fits::CubeFile::create(products_.alpha_map(), faraday_map(base_, "", "Spectral Index", lambda0_sq));
  }
}

// This rank's slab of image rows, a row group at a time. Every rank takes part in every
// round of the exchange (the slabs differ by at most a row, so in at most one round),
// and all stop together at a round's start when any is asked to.
void FaradayStage::synthesise_slab(const std::vector<double>& weight, const Synthesis* synthesis,
                                   const parallel::MpiContext& mpi, const Log& log, StopRequest& stop,
                                   const Stopwatch& watch) {
  const auto [y0, y1] = slab_rows(mpi.rank(), mpi.size(), base_.ny);
  const int num_phi = synthesis ? synthesis->setup.axis.count : 0;
  depths_ = num_phi;
  const int num_chan = static_cast<int>(freq_hz_.size());
  const double row_bytes = bytes_per_pixel(num_chan, num_phi) * base_.nx;
  const double read_before = fits::CubeFile::bytes_read();
  const int widest = (base_.ny + mpi.size() - 1) / mpi.size();
  const int own_rows = FaradayStage::group_rows(group_bytes_, num_chan, num_phi, base_.nx, widest,
                                                gpu_device_ >= 0 ? gpu_bytes_ : 0);
  const int group_rows = static_cast<int>(-mpi.max(-static_cast<double>(own_rows)));  // the same on every rank
  const int rounds = (widest + group_rows - 1) / group_rows;
  long long iterations = 0;
  int groups = 0, rows_done = 0;
  Stopwatch since_progress;
  for (int round = 0; round < rounds; ++round) {
    stop.leave_if_requested(std::string(left_partial) + " (" + std::to_string(rows_done) + " of this rank's " +
                            std::to_string(y1 - y0) + " rows were done, in " + fixed(watch.seconds(), 1) + " s)");
    RowBatch group = rows_->fetch(round, group_rows, mpi);
    if (group.rows == 0) continue;
    correct_for_beam(group, weight);
    blank_beyond_horizon(group);
    blank_unmeasured(group, weight);
    process_rows(group, weight, synthesis, iterations);
    ++groups;
    rows_done += group.rows;
    // A stage of many row groups may take hours: its progress every 10 s or so.
    if (since_progress.seconds() >= 10 && rows_done < y1 - y0) {
      const double rate = rows_done / watch.seconds();
      log.info("Faraday stage: " + std::to_string(rows_done) + " of this rank's " + std::to_string(y1 - y0) +
               " rows in " + fixed(watch.seconds(), 1) + " s, ETA " + fixed((y1 - y0 - rows_done) / rate, 0) + " s");
      since_progress = Stopwatch();
    }
  }
  product_bytes_read_ = fits::CubeFile::bytes_read() - read_before;
  log.info("Faraday slab rows [" + std::to_string(y0) + ", " + std::to_string(y1) + ") in " + std::to_string(groups) +
           " group(s) of up to " + std::to_string(group_rows) + " rows (" + fixed(group_rows * row_bytes / 1e6, 1) +
           " MB): " + std::to_string(iterations) + " RM-CLEAN iterations, " + fixed(watch.seconds(), 2) + " s; " +
           fixed(rows_->mpi_bytes() / 1e6, 1) + " MB sent over MPI (exchange " + fixed(rows_->exchange_seconds(), 2) + " s), " +
           fixed(product_bytes_read_ / 1e6, 1) + " MB of products read");
}

std::string FaradayStage::done_text(double seconds) const {
  return std::string(depths_ > 0 ? "Faraday moments, RM synthesis and RM-CLEAN" : "Faraday moments") + " in " +
         fixed(seconds, 2) + " s";
}

// Rank 0, once every rank has written its rows: the partial products renamed, those
// of RM synthesis only where it ran.
std::vector<std::string> FaradayStage::commit_products(const Synthesis* synthesis) const {
  std::vector<std::string> written;
  for (const Product& product : products_.all())
    if (product.kind == ProductKind::moment_image ||
        (synthesis && (product.kind == ProductKind::fdf_cube || product.kind == ProductKind::pixel_map))) {
      fits::CubeFile::commit(product.path);
      written.push_back(product.path);
    }
  return written;
}

// The RMSF: amplitude as a 1 x 1 x N_phi cube at the phase centre, as text, and as
// RM-Tools' per-pixel RMSF width map, which rmtools_peakfitcube opens beside an FDF
// cube (spip's RMSF is the same for every pixel).
std::vector<std::string> FaradayStage::write_rmsf(const Synthesis& synthesis) const {
  const faraday::SynthesisSetup& setup = synthesis.setup;
  const faraday::FaradayAxis& axis = setup.axis;
  const auto r = faraday::rmsf(setup, axis);
  fits::ImageHeader rmsf_header = fdf_header(base_, setup);
  rmsf_header.bunit = "";
  rmsf_header.btype = "";
  rmsf_header.nx = rmsf_header.ny = 1;
  rmsf_header.reference_pixel.reset();  // its one pixel at the reference direction, whatever the image's
  rmsf_header.beam.reset();
  rmsf_header.extra_keys["RMSFFWHM"] = synthesis.settings.fwhm;
  std::vector<float> amplitude;
  for (const auto& v : r) amplitude.push_back(static_cast<float>(std::abs(v)));
  fits::write_image(products_.rmsf_cube(), rmsf_header, amplitude);
  std::ostringstream text;
  text << "# RMSF of spip's RM synthesis; FWHM " << synthesis.settings.fwhm << " rad/m^2, lambda0^2 "
       << setup.lambda0_sq << " m^2\n";
  text << "# phi [rad/m^2]  real  imag  amplitude\n";
  text.precision(10);
  for (int k = 0; k < axis.count; ++k)
    text << axis.phi(k) << " " << r[k].real() << " " << r[k].imag() << " " << std::abs(r[k]) << "\n";
  write_text_atomically(products_.rmsf_text(), text.str());
  fits::write_image(products_.rmsf_fwhm_map(), faraday_map(base_, "rad/m^2", "", setup.lambda0_sq),
                    std::vector<float>(static_cast<std::size_t>(base_.nx) * base_.ny,
                                       static_cast<float>(synthesis.settings.fwhm)));
  return {products_.rmsf_cube(), products_.rmsf_text(), products_.rmsf_fwhm_map()};
}

}  // namespace spip::pipeline
