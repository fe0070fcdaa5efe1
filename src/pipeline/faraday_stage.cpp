#include "faraday_stage.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numbers>
#include <sstream>

#include "spip/cuda/rm_synthesis.hpp"
#include "spip/error.hpp"
#include "spip/faraday/rm_synthesis.hpp"
#include "spip/parallel/mpi_context.hpp"
#include "spip/pipeline/log.hpp"

namespace spip::pipeline {
namespace {

using cfloat = std::complex<float>;
constexpr const char* quantity_names[] = {"I", "Q", "U", "V", "P"};
constexpr const char* moment_names[] = {"mean", "std", "skew", "kurt"};

// Rows of the image owned by `rank` for the pixel-slab stages.
std::pair<int, int> slab_rows(int rank, int ranks, int ny) {
  return {static_cast<int>(static_cast<long>(ny) * rank / ranks), static_cast<int>(static_cast<long>(ny) * (rank + 1) / ranks)};
}

fits::ImageHeader plain_image(fits::ImageHeader header, const std::string& bunit) {
  header.spectral.reset();
  header.stokes.reset();
  header.bunit = bunit;
  return header;
}

}  // namespace

FaradayStage::FaradayStage(const Config& config, const fits::ImageHeader& base, std::vector<double> freq_hz,
                           std::vector<parallel::ChannelBlock> blocks, int rank, int gpu_device)
    : config_(config),
      base_(base),
      freq_hz_(std::move(freq_hz)),
      blocks_(std::move(blocks)),
      rank_(rank),
      gpu_device_(gpu_device),
      pixels_(static_cast<std::size_t>(base.nx) * base.ny) {
  if (gpu_device_ >= 0)
    device_sums_ = std::make_unique<cuda::StokesPowerSums>(gpu_device_, pixels_);
  else
    host_sums_.emplace(pixels_);
}

double FaradayStage::channel_weight(double noise) const {
  if (noise < 0) return 0.0;  // blanked channel
  if (!config_.faraday.variance_weights) return 1.0;
  return noise > 0 ? 1.0 / (noise * noise) : 0.0;
}

void FaradayStage::add_channel(const std::vector<float>& restored, double noise) {
  const double weight = channel_weight(noise);
  if (device_sums_)
    device_sums_->add_channel(restored.data(), weight);
  else
    host_sums_->add_channel(restored.data(), weight);
  const float* q = restored.data() + pixels_;
  const float* u = restored.data() + 2 * pixels_;
  for (std::size_t i = 0; i < pixels_; ++i) qu_.emplace_back(q[i], u[i]);
  noise_.push_back(noise);
}

void FaradayStage::add_blank_channel() {
  qu_.resize(qu_.size() + pixels_, cfloat{});
  noise_.push_back(-1.0);
}

std::string FaradayStage::path(const std::string& name) const {
  return (std::filesystem::path(config_.output.dir) / (config_.output.prefix + "-" + name + ".fits")).string();
}

std::vector<std::string> FaradayStage::write_moments(const parallel::MpiContext& mpi) const {
  std::vector<double> all = device_sums_ ? device_sums_->values() : host_sums_->values();
  mpi.sum_to_root(all);
  std::vector<std::string> written;
  if (!mpi.is_root()) return written;
  const std::size_t block = faraday::PowerSums::orders * pixels_;
  for (int q = 0; q < faraday::StokesPowerSums::quantities; ++q) {
    faraday::PowerSums reduced(pixels_);
    std::copy_n(all.begin() + q * block, block, reduced.sums.begin());
    const faraday::MomentImages m = faraday::moments(reduced);
    const std::vector<float>* images[] = {&m.mean, &m.std, &m.skew, &m.kurt};
    for (int k = 0; k < 4; ++k) {
      const std::string file = path(std::string("moment-") + moment_names[k] + "-" + quantity_names[q]);
      fits::write_image(file, plain_image(base_, k < 2 ? "Jy/beam" : ""), *images[k]);
      written.push_back(file);
    }
  }
  return written;
}

std::vector<std::string> FaradayStage::finish(const parallel::MpiContext& mpi, const Log& log) {
  const Stopwatch watch;
  std::vector<std::string> written = write_moments(mpi);

  // Channel weights and noise of every imaged channel, in channel order.
  const std::vector<double> noise = mpi.gather_to_all(noise_);
  std::vector<double> weight;
  for (double sigma : noise) weight.push_back(channel_weight(sigma));
  const int usable = static_cast<int>(std::count_if(weight.begin(), weight.end(), [](double w) { return w > 0; }));
  if (usable < 2) {
    log.root("RM synthesis needs at least two imaged channels (" + std::to_string(usable) + " here); skipped");
    return written;
  }
  const faraday::SynthesisSetup setup = faraday::make_setup(freq_hz_, weight, config_.faraday);
  const faraday::FaradayAxis& axis = setup.axis;
  double weight_sum = 0, noise_sum = 0;
  for (std::size_t c = 0; c < weight.size(); ++c) {
    weight_sum += weight[c];
    if (weight[c] > 0) noise_sum += weight[c] * weight[c] * noise[c] * noise[c];
  }
  const double sigma = std::sqrt(noise_sum) / weight_sum;  // of the FDF
  const FaradayConfig& f = config_.faraday;
  const faraday::SpectrumSettings settings = faraday::spectrum_settings(
      setup, sigma, {f.rmclean_gain, f.rmclean_cutoff * sigma, f.rmclean_niter, f.rmclean_xcorr});
  const double phi_max = -axis.phi_first;
  log.root("RM synthesis: lambda0^2 = " + fixed(setup.lambda0_sq, 4) + " m^2, RMSF FWHM " + fixed(settings.fwhm, 3) +
           " rad/m^2, " + std::to_string(axis.count) + " depths of " + fixed(axis.dphi, 3) + " to +-" +
           fixed(phi_max, 1) + " rad/m^2");
  if (phi_max > setup.phi_max_unsmeared)
    log.root("warning: faraday.phi_max " + fixed(phi_max, 1) + " exceeds sqrt(3)/dlambda^2_max = " +
             fixed(setup.phi_max_unsmeared, 1) + " rad/m^2; real data would be bandwidth-depolarised there");

  // Q + iU from channel blocks to pixel slabs.
  const int ranks = mpi.size(), nx = base_.nx, ny = base_.ny;
  const int my_channels = static_cast<int>(noise_.size());
  std::vector<cfloat> send;
  std::vector<int> counts;
  for (int r = 0; r < ranks; ++r) {
    const auto [y0, y1] = slab_rows(r, ranks, ny);
    const std::size_t slab = static_cast<std::size_t>(y1 - y0) * nx;
    for (int c = 0; c < my_channels; ++c) {
      const cfloat* plane = qu_.data() + c * pixels_ + static_cast<std::size_t>(y0) * nx;
      send.insert(send.end(), plane, plane + slab);
    }
    counts.push_back((y1 - y0) * my_channels);  // in image rows
  }
  const std::vector<cfloat> p = mpi.all_to_all(send, counts, nx);  // [channel][slab pixel]
  qu_.clear();
  qu_.shrink_to_fit();
  const auto [y0, y1] = slab_rows(mpi.rank(), ranks, ny);
  const int slab_pixels = (y1 - y0) * nx;
  const int num_chan = static_cast<int>(freq_hz_.size());

  // F = A P, then per pixel RM-CLEAN and peak fitting.
  const std::vector<cfloat> a = faraday::synthesis_matrix(setup, axis);
  const std::vector<cfloat> rmsf_double = faraday::rmsf_for_clean(setup);
  const faraday::SlabSpectra slab =
      gpu_device_ >= 0 ? cuda::synthesise_slab(gpu_device_, a, num_chan, p.data(), slab_pixels, rmsf_double, settings)
                       : faraday::synthesise_slab(a, num_chan, p.data(), slab_pixels, rmsf_double, settings);
  log.info("Faraday slab rows [" + std::to_string(y0) + ", " + std::to_string(y1) + "): " +
           std::to_string(slab.iterations) + " RM-CLEAN iterations, " + fixed(watch.seconds(), 2) + " s");

  // Faraday depth cubes: rank 0 creates them, every rank writes its rows.
  fits::ImageHeader fdf_header = base_;
  fdf_header.stokes.reset();
  fdf_header.spectral.emplace(fits::LinearAxis{"FDEP", "rad/m^2", axis.phi_first, axis.dphi, 1.0, axis.count});
  fdf_header.extra_keys["LAMSQ0"] = setup.lambda0_sq;
  const char* parts[] = {"real", "imag", "amp"};
  std::vector<std::string> cubes;
  for (const char* kind : {"dirty", "clean"})
    for (const char* part : parts) cubes.push_back(path(std::string("fdf-") + part + "-" + kind));
  if (mpi.is_root())
    for (const std::string& cube : cubes) fits::CubeFile::create(cube, fdf_header);
  mpi.barrier();
  for (int which = 0; which < 2; ++which) {
    const std::vector<cfloat>& source = which == 0 ? slab.dirty : slab.clean;
    for (int part = 0; part < 3; ++part) {
      std::vector<float> values(source.size());
      for (std::size_t i = 0; i < source.size(); ++i)
        values[i] = part == 0 ? source[i].real() : part == 1 ? source[i].imag() : std::abs(source[i]);
      fits::CubeFile::write_rows(cubes[which * 3 + part], y0, values);
    }
  }
  const std::vector<double> map_values(slab.maps.begin(), slab.maps.end());
  const std::vector<double> all_maps = mpi.gather_to_root(map_values);
  mpi.barrier();
  if (!mpi.is_root()) return written;
  for (const std::string& cube : cubes) {
    fits::CubeFile::commit(cube);
    written.push_back(cube);
  }

  // Peak maps: gathered slabs are [rank][map][slab pixel]; reassemble per map.
  const char* map_names[] = {"peak-phi", "peak-pi", "peak-chi0", "peak-phi-err", "peak-pi-err", "peak-chi0-err"};
  const char* map_units[] = {"rad/m^2", "Jy/beam", "rad", "rad/m^2", "Jy/beam", "rad"};
  std::size_t offset = 0;
  std::vector<std::vector<float>> images(faraday::peak_map_count, std::vector<float>(pixels_));
  for (int r = 0; r < ranks; ++r) {
    const auto [r0, r1] = slab_rows(r, ranks, ny);
    const std::size_t rows = static_cast<std::size_t>(r1 - r0) * nx;
    for (int m = 0; m < faraday::peak_map_count; ++m)
      for (std::size_t i = 0; i < rows; ++i)
        images[m][static_cast<std::size_t>(r0) * nx + i] = static_cast<float>(all_maps[offset + m * rows + i]);
    offset += faraday::peak_map_count * rows;
  }
  for (int m = 0; m < faraday::peak_map_count; ++m) {
    fits::ImageHeader header = plain_image(base_, map_units[m]);
    header.extra_keys["LAMSQ0"] = setup.lambda0_sq;
    fits::write_image(path(map_names[m]), header, images[m]);
    written.push_back(path(map_names[m]));
  }

  // The RMSF: amplitude as a 1 x 1 x N_phi cube at the phase centre, and as text.
  const auto r = faraday::rmsf(setup, axis);
  fits::ImageHeader rmsf_header = fdf_header;
  rmsf_header.nx = rmsf_header.ny = 1;
  rmsf_header.bunit = "";
  rmsf_header.beam.reset();
  rmsf_header.extra_keys["RMSFFWHM"] = settings.fwhm;
  std::vector<float> amplitude;
  for (const auto& v : r) amplitude.push_back(static_cast<float>(std::abs(v)));
  fits::write_image(path("rmsf"), rmsf_header, amplitude);
  written.push_back(path("rmsf"));
  const std::string text = (std::filesystem::path(config_.output.dir) / (config_.output.prefix + "-rmsf.txt")).string();
  {
    std::ofstream out(text + ".partial");
    out << "# RMSF of spip's RM synthesis; FWHM " << settings.fwhm << " rad/m^2, lambda0^2 " << setup.lambda0_sq << " m^2\n";
    out << "# phi [rad/m^2]  real  imag  amplitude\n";
    out.precision(10);
    for (int k = 0; k < axis.count; ++k)
      out << axis.phi(k) << " " << r[k].real() << " " << r[k].imag() << " " << std::abs(r[k]) << "\n";
  }
  std::filesystem::rename(text + ".partial", text);
  written.push_back(text);
  return written;
}

}  // namespace spip::pipeline
